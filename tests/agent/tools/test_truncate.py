"""Head and tail truncation at Pi's limits, its size format and the grep line cut."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pinb.agent.tools.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TruncationResult,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
    utf8_len,
)


def numbered(count: int) -> str:
    return "\n".join(f"line {n}" for n in range(1, count + 1))


@pytest.mark.parametrize("cut", [truncate_head, truncate_tail])
def test_text_within_both_limits_is_untouched(cut: Callable[[str], TruncationResult]) -> None:
    text = numbered(DEFAULT_MAX_LINES) + "\n"
    result = cut(text)
    assert not result.truncated and result.truncated_by is None
    assert result.content == text
    assert result.total_lines == result.output_lines == DEFAULT_MAX_LINES  # trailing "\n" adds none


def test_head_keeps_the_first_lines_when_there_are_too_many() -> None:
    result = truncate_head(numbered(DEFAULT_MAX_LINES + 1))
    assert result.truncated and result.truncated_by == "lines"
    assert result.output_lines == DEFAULT_MAX_LINES and result.total_lines == DEFAULT_MAX_LINES + 1
    assert result.content.splitlines()[-1] == f"line {DEFAULT_MAX_LINES}"
    assert result.content.startswith("line 1\n")


def test_tail_keeps_the_last_lines_when_there_are_too_many() -> None:
    result = truncate_tail(numbered(DEFAULT_MAX_LINES + 5))
    assert result.truncated_by == "lines" and result.output_lines == DEFAULT_MAX_LINES
    assert result.content.startswith("line 6\n") and result.content.endswith(
        f"line {DEFAULT_MAX_LINES + 5}"
    )


def test_byte_limit_is_exact() -> None:
    exact = "x" * DEFAULT_MAX_BYTES
    assert not truncate_head(exact).truncated
    over = "a\n" + "x" * (DEFAULT_MAX_BYTES - 1)  # 51201 bytes
    result = truncate_head(over)
    assert result.truncated_by == "bytes" and result.content == "a" and result.output_bytes == 1


def test_bytes_are_utf8_bytes_not_characters() -> None:
    line = "é" * 100  # 200 bytes
    text = "\n".join([line] * 300)  # 60299 bytes, 300 lines
    result = truncate_head(text)
    assert result.truncated_by == "bytes"
    assert result.output_lines == 254  # 200 + 201 * 253 = 51053 <= 51200 < 200 + 201 * 254
    assert result.output_bytes == utf8_len(result.content) <= DEFAULT_MAX_BYTES


def test_head_with_an_oversized_first_line_keeps_nothing() -> None:
    result = truncate_head("y" * (DEFAULT_MAX_BYTES + 1) + "\nshort")
    assert result.first_line_exceeds_limit and result.content == "" and result.output_lines == 0


def test_tail_with_an_oversized_last_line_keeps_its_end_without_splitting_characters() -> None:
    text = "first\n" + "€" * 20000  # 60000 bytes on the last line
    result = truncate_tail(text)
    assert result.last_line_partial and result.truncated_by == "bytes"
    assert result.output_bytes <= DEFAULT_MAX_BYTES
    assert set(result.content) == {"€"}  # no replacement characters from a cut character
    assert result.output_bytes == 3 * (DEFAULT_MAX_BYTES // 3)


def test_details_use_pis_camel_case_keys() -> None:
    details = truncate_head(numbered(2500)).to_details()
    assert set(details) == {
        "content",
        "truncated",
        "truncatedBy",
        "totalLines",
        "totalBytes",
        "outputLines",
        "outputBytes",
        "lastLinePartial",
        "firstLineExceedsLimit",
        "maxLines",
        "maxBytes",
    }
    assert details["maxLines"] == DEFAULT_MAX_LINES and details["maxBytes"] == DEFAULT_MAX_BYTES


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (1280, "1.3KB"),
        (51200, "50.0KB"),
        (60000, "58.6KB"),
        (1024 * 1024, "1.0MB"),
        (int(2.25 * 1024 * 1024), "2.3MB"),
    ],
)
def test_format_size_rounds_like_javascript(size: int, text: str) -> None:
    assert format_size(size) == text


def test_truncate_line_counts_utf16_units_and_keeps_surrogate_pairs_whole() -> None:
    assert truncate_line("short") == ("short", False)
    text, cut = truncate_line("a" * 600)
    assert cut and text == "a" * 500 + "... [truncated]"
    text, cut = truncate_line("a" * 499 + "😀" + "b" * 10)  # the emoji straddles unit 500
    assert cut and text == "a" * 499 + "... [truncated]"
