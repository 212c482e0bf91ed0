"""What is kept of a provider's error body: its message, at most a few KB, and its size.

A server may answer with a 10 MB error body; kept whole, it went into ``errorMessage`` of
each of four attempts (a 40 MB session file) and onto the error line. Only the first
`ERROR_BODY_READ` bytes are read and `ERROR_KEEP` characters of the message kept::

    >>> error_detail(b'{"error": {"message": "model not found"}}')
    'model not found'
    >>> error_detail(b"x" * 5000)[-59:]
    'x … [error body of 4.9 KB; its first 4,000 characters kept]'
"""

from __future__ import annotations

import json
from typing import Any

from pinb.llm.providers.assemble import parse_partial_json

__all__ = [
    "ERROR_BODY_READ",
    "ERROR_KEEP",
    "TOOL_CHOICE_HINT",
    "empty_server_error",
    "error_detail",
]

#: Characters of a provider's error message kept in ``errorMessage`` (and shown).
ERROR_KEEP = 4000
#: Bytes of an error body read at all.
ERROR_BODY_READ = 64 * 1024


def _size(count: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def error_detail(raw: bytes, total: int | None = None) -> str:
    """The human part of a provider error body (``error.message`` when there is one).

    At most `ERROR_KEEP` characters are kept, with a note of the body's size when it was
    cut: a 10 MB error body would otherwise be saved whole in every failed reply.
    ``total`` is the body's size when only its start was read (``raw``).
    """
    size = len(raw) if total is None else total
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return "status code (no body)"
    detail = text
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError):
        # only the start of a large body was read: close it to find its message
        data = parse_partial_json(text) if size > len(raw) else None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            detail = str(err["message"])
        elif isinstance(err, str):
            detail = err
    if len(detail) > ERROR_KEEP or size > len(raw):
        more = "more than " if total is None and size > len(raw) else ""
        detail = (
            f"{detail[:ERROR_KEEP]} … [error body of {more}{_size(size)}; its first "
            f"{min(len(detail), ERROR_KEEP):,} characters kept]"
        )
    return detail


#: What an empty 500 to ``tool_choice: "required"`` means (llama-cpp-python 0.3).
TOOL_CHOICE_HINT = (
    ' (the server failed on tool_choice "required" without saying why; llama-cpp-python '
    "does: name the tool instead, e.g. --tool-choice read, and start it with "
    "--chat_format chatml-function-calling)"
)


def empty_server_error(status: int | None, error: str | None) -> bool:
    """A 5xx whose body said nothing: ``"500 "`` or ``"500 status code (no body)"``."""
    if status is None or status < 500 or error is None:
        return False
    return error[len(str(status)) :].strip() in ("", "status code (no body)")
