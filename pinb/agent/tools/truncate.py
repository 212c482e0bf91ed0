"""Head and tail truncation of tool output to Pi's limits (2000 lines / 50 KiB) and its size notices."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from pinb.core.js.wire import utf16_len, utf16_truncate

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "UNLIMITED_LINES",
    "TruncationResult",
    "format_size",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "utf8_len",
]

#: Most lines a tool result shows (Pi's ``DEFAULT_MAX_LINES``).
DEFAULT_MAX_LINES = 2000
#: Most UTF-8 bytes a tool result shows (Pi's ``DEFAULT_MAX_BYTES``, 50 KiB).
DEFAULT_MAX_BYTES = 50 * 1024
#: Longest grep line, in UTF-16 code units, before it is cut.
GREP_MAX_LINE_LENGTH = 500
#: "No line limit": JavaScript's ``Number.MAX_SAFE_INTEGER``, as Pi writes it in ``details``.
UNLIMITED_LINES = 2**53 - 1

TruncatedBy = Literal["lines", "bytes"]


def utf8_len(text: str) -> int:
    """Length of ``text`` in UTF-8 bytes (Node's ``Buffer.byteLength``)."""
    if text.isascii():
        return len(text)
    # A lone surrogate counts three bytes, as Node encodes it as U+FFFD.
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class TruncationResult:
    """What a truncation kept and why: Pi's ``TruncationResult``.

    Attributes
    ----------
    content:
        The text that was kept (whole lines, except a tail cut inside one long line).
    truncated:
        Whether anything was dropped.
    truncated_by:
        ``"lines"`` or ``"bytes"``: the limit that was hit first; None when nothing was cut.
    total_lines, total_bytes:
        Size of the original text (a trailing newline does not start a new line).
    output_lines, output_bytes:
        Size of ``content``.
    last_line_partial:
        Tail truncation only: ``content`` is the end of a single line longer than the limit.
    first_line_exceeds_limit:
        Head truncation only: the first line alone is over the byte limit, so nothing was kept.
    max_lines, max_bytes:
        The limits that were applied.
    """

    content: str
    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def to_details(self) -> dict[str, Any]:
        """The camelCase object Pi stores under ``details.truncation``."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def format_size(num_bytes: int) -> str:
    """A byte count as Pi prints it: ``512B``, ``50.0KB``, ``1.5MB``.

    Rounds half up like JavaScript's ``toFixed(1)``.

    >>> format_size(512), format_size(51200), format_size(1280), format_size(3 * 1024 * 1024)
    ('512B', '50.0KB', '1.3KB', '3.0MB')
    """
    if num_bytes < 1024:
        return f"{num_bytes}B"
    if num_bytes < 1024 * 1024:
        return f"{_to_fixed_1(num_bytes / 1024)}KB"
    return f"{_to_fixed_1(num_bytes / (1024 * 1024))}MB"


def _to_fixed_1(value: float) -> str:
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _split_lines(content: str) -> list[str]:
    # Lines as counted for limits: a trailing newline ends the last line, it does not add one.
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def _untruncated(
    content: str, lines: int, size: int, max_lines: int, max_bytes: int
) -> TruncationResult:
    return TruncationResult(
        content, False, None, lines, size, lines, size, False, False, max_lines, max_bytes
    )


def truncate_head(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first whole lines of ``content`` within both limits (for file reads).

    Never returns part of a line: when the first line alone is over ``max_bytes`` the
    result is empty with ``first_line_exceeds_limit`` set.

    Parameters
    ----------
    content:
        The text to cut.
    max_lines, max_bytes:
        The limits; whichever is hit first wins.

    Returns
    -------
    TruncationResult
    """
    total_bytes = utf8_len(content)
    lines = _split_lines(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    if utf8_len(lines[0]) > max_bytes:
        return TruncationResult(
            "", True, "bytes", total_lines, total_bytes, 0, 0, False, True, max_lines, max_bytes
        )

    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    for index, line in enumerate(lines[:max_lines]):
        size = utf8_len(line) + (1 if index > 0 else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    output = "\n".join(kept)
    return TruncationResult(
        output,
        True,
        truncated_by,
        total_lines,
        total_bytes,
        len(kept),
        utf8_len(output),
        False,
        False,
        max_lines,
        max_bytes,
    )


def truncate_tail(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the last lines of ``content`` within both limits (for command output).

    When the very last line alone is over ``max_bytes``, its end is kept and
    ``last_line_partial`` is set.

    Parameters
    ----------
    content:
        The text to cut.
    max_lines, max_bytes:
        The limits; whichever is hit first wins.

    Returns
    -------
    TruncationResult
    """
    total_bytes = utf8_len(content)
    lines = _split_lines(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = utf8_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            if not kept:
                tail = _utf8_tail(line, max_bytes)
                kept.append(tail)
                used = utf8_len(tail)
                partial = True
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    kept.reverse()
    output = "\n".join(kept)
    return TruncationResult(
        output,
        True,
        truncated_by,
        total_lines,
        total_bytes,
        len(kept),
        utf8_len(output),
        partial,
        False,
        max_lines,
        max_bytes,
    )


def _utf8_tail(text: str, max_bytes: int) -> str:
    """The longest end of ``text`` that fits in ``max_bytes`` without splitting a character."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return text
    start = len(raw) - max_bytes
    while start < len(raw) and (raw[start] & 0xC0) == 0x80:
        start += 1
    return raw[start:].decode("utf-8", "surrogatepass")


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut one line to ``max_chars`` UTF-16 units, marking the cut with ``... [truncated]``.

    Returns the text and whether it was cut. An astral character is never split in half.
    """
    if utf16_len(line) <= max_chars:
        return line, False
    cut = utf16_truncate(line, max_chars)
    if cut and "\ud800" <= cut[-1] <= "\udbff":
        cut = cut[:-1]
    return f"{cut}... [truncated]", True
