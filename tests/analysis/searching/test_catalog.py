"""A listing reads only the new tail of a grown file, and a search hit's snippet only its
line: neither holds a big session whole, and the rows are those of a whole read."""

from __future__ import annotations

import dataclasses
import json
import os
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.searching.index import SessionCatalog, search
from pinb.core.file import listing
from pinb.core.file.listing import read_listing, read_session_info, session_info_from_bytes
from pinb.core.file.paths import sessions_root
from tests.core.file.test_listing import _corpus

_MB = 1 << 20


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode() + b"\n"


def _message(number: int, role: str, text: str) -> bytes:
    return _line(
        {
            "type": "message",
            "id": f"m{number:07d}",
            "parentId": f"m{number - 1:07d}" if number else None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {
                "role": role,
                "content": [{"type": "text", "text": text}],
                "timestamp": 1_767_225_600_000 + number,
            },
        }
    )


def _big_session(path: Path, megabytes: int) -> int:
    """A session of about ``megabytes`` MB, in lines of 50 kB; returns its line count
    (the header's included)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 3, "id": "big-session",
              "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/big"}  # fmt: skip
    filler = " ".join(f"word{i % 997}" for i in range(7_000))
    count = megabytes * _MB // len(filler)
    with open(path, "wb") as handle:
        handle.write(_line(header))
        handle.write(_message(0, "user", "the first question"))
        for number in range(1, count):
            handle.write(_message(number, "assistant" if number % 2 else "user", filler))
    return count + 1


def _bytes_read() -> int:
    """What this process has read through system calls so far (Linux's own count)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@contextmanager
def _measured() -> Iterator[dict[str, int]]:
    """Bytes read (the kernel's count) and the peak of Python's allocations inside."""
    found: dict[str, int] = {}
    tracemalloc.start()
    before = _bytes_read()
    try:
        yield found
    finally:
        found["read"] = _bytes_read() - before
        found["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_a_grown_file_is_read_from_where_its_listing_ended() -> None:
    path = sessions_root() / "--big--" / "big.jsonl"
    lines = _big_session(path, 60)
    size = path.stat().st_size
    with _measured() as first, SessionCatalog() as catalog:
        assert catalog.refresh().bytes_read == size
    # Read in pieces: never the whole file, nor a list of its lines.
    assert first["peak"] < 12 * _MB, first
    _append(path, _message(lines, "user", "one more line about zanzibar"))
    with _measured() as grown, SessionCatalog() as catalog:
        stats = catalog.refresh()
        [row] = catalog.sessions()
    assert (stats.updated, stats.grown) == (1, 1)
    assert stats.bytes_read < 4096  # the new line and the bytes checked before it
    assert grown["read"] < _MB and grown["peak"] < 4 * _MB, grown
    whole = read_listing(path).info
    assert whole is not None
    assert row == whole and row.message_count == lines and row.name is None
    assert row.modified == whole.modified and row.first_message == "the first question"


def test_a_rewritten_replaced_or_unfinished_file_is_read_whole(tmp_path: Path) -> None:
    folder = sessions_root() / "--p--"
    path = folder / "s.jsonl"
    lines = _big_session(path, 1)

    def listed() -> tuple[int, Any]:
        with SessionCatalog() as catalog:
            stats = catalog.refresh()
            [row] = catalog.sessions()
        assert row == read_listing(path).info  # always the row of a whole read
        return stats.grown, row

    listed()
    _append(path, _message(lines, "user", "grown"))
    assert listed()[0] == 1
    # Rewritten in place, longer: the header, or the last line read, changed.
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"cwd": "/big"', b'"cwd": "/new"') + b"\n")
    grown, row = listed()
    assert grown == 0 and row.cwd == "/new"
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"text": "grown"', b'"text": "GROWN!"'))
    assert listed()[0] == 0
    # Replaced by a rename (another file, however alike): read whole.
    other = tmp_path / "copy.jsonl"
    other.write_bytes(path.read_bytes() + _message(lines + 1, "user", "renamed"))
    os.replace(other, path)
    assert listed()[0] == 0
    # A last line still being written leaves no mark: the next listing reads it whole.
    _append(path, _message(lines + 2, "user", "half")[:30])
    assert listed()[0] == 1
    _append(path, _message(lines + 2, "user", "half")[30:])
    grown, row = listed()
    assert grown == 0 and row.message_count == lines + 2
    # Shrunk: read whole.
    path.write_bytes(path.read_bytes()[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")
    assert listed()[0] == 0


@pytest.mark.parametrize("text", [False, True])
def test_a_row_brought_forward_is_the_row_of_a_whole_read(tmp_path: Path, text: bool) -> None:
    # Every file of the core listing's corpus (odd ones included), cut at several line
    # ends: the row read from the cut and brought forward is the whole read's.
    root = _corpus(tmp_path)
    checked = 0
    for path in sorted((root / "sessions").glob("*/*.jsonl")):
        data = path.read_bytes()
        ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
        for end in ends[:: max(1, len(ends) // 5)]:
            path.write_bytes(data[:end])
            before = read_listing(path, text=text)
            _append(path, data[end:])
            if before.info is None:
                assert read_listing(path, text=text).info is None or before.mark is None
                continue
            assert before.mark is not None
            after = read_listing(path, text=text, since=(before.info, before.mark))
            whole = read_listing(path, text=text)
            assert after.resumed and after.bytes_read <= len(data) - end + 2 * 256
            assert after.info == whole.info, (path.name, end)
            assert after.info is not None and whole.info is not None
            assert after.info.problems == whole.info.problems
            assert after.mark == whole.mark
            mtime = path.stat().st_mtime
            assert whole.info == session_info_from_bytes(data, path, mtime, text=text)
            checked += 1
    assert checked > 100


def test_the_process_cache_reads_a_grown_file_from_where_it_was() -> None:
    path = sessions_root() / "--big--" / "big.jsonl"
    lines = _big_session(path, 20)
    listing._cache.clear()
    first = read_session_info(path)
    assert first is not None
    _append(path, _message(lines, "user", "late words"))
    with _measured() as grown:
        row = read_session_info(path)
    assert grown["read"] < _MB, grown
    whole = read_listing(path, text=True).info
    assert row == whole and row is not None
    assert row.all_messages_text.endswith(" late words")
    assert row.all_messages_text == dataclasses.replace(whole).all_messages_text


def test_a_snippet_reads_only_its_line() -> None:
    path = sessions_root() / "--big--" / "big.jsonl"
    lines = _big_session(path, 60)
    _append(path, _message(lines, "assistant", "the zanzibar plan, in short"))
    assert [hit.line for hit in search("zanzibar", using="index")] == [lines + 1]  # builds it
    with _measured() as found:
        [hit] = search("zanzibar")
    assert hit.snippet == "the «zanzibar» plan, in short"
    assert hit.cite == f"{path}:{lines + 1}#m{lines:07d}"
    # The hit's line (and the index's pages), not the 60 MB file.
    assert found["peak"] < 4 * _MB and found["read"] < 16 * _MB, found


def test_the_same_hits_and_rows_after_appends_as_from_a_scan() -> None:
    path = sessions_root() / "--big--" / "big.jsonl"
    lines = _big_session(path, 2)
    rows: Callable[[SessionCatalog], list[Any]] = lambda c: c.sessions()  # noqa: E731
    for round_ in range(3):
        _append(path, _message(lines + round_, "user", f"append number {round_} of word17"))
        with SessionCatalog() as cached, SessionCatalog(":memory:") as scan:
            assert rows(cached) == rows(scan)
            for query in ("word17", f'"append number {round_}"', "role:user word17"):
                ours, theirs = cached.search(query), scan.search(query)
                assert [(h.cite, h.copies, h.snippet) for h in ours] == [
                    (h.cite, h.copies, h.snippet) for h in theirs
                ]
