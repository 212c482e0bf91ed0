"""The read-ahead thread hands over a file's bytes in order, and stops and closes cleanly."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest

from pinb.core import Session
from pinb.core.file.readahead import read_ahead


def _threads() -> int:
    return sum(t.name == "pinb-read-ahead" for t in threading.enumerate())


def test_the_pieces_are_the_file_in_order_and_the_file_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(3 << 20) + b"tail"
    path.write_bytes(data)
    handle = open(path, "rb", buffering=0)  # noqa: SIM115 - read_ahead closes it
    pieces = list(read_ahead(handle))
    assert b"".join(pieces) == data
    assert len(pieces[0]) == 1 << 20 and len(pieces[1]) == 2 << 20  # small first, then larger
    for _ in range(100):
        if handle.closed:
            break
        threading.Event().wait(0.01)
    assert handle.closed


def test_a_reader_that_stops_early_stops_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * (40 << 20))
    handle = open(path, "rb", buffering=0)  # noqa: SIM115 - read_ahead closes it
    pieces = read_ahead(handle)
    next(pieces)
    pieces.close()
    for _ in range(200):
        if handle.closed and not _threads():
            break
        threading.Event().wait(0.01)
    assert handle.closed and not _threads()


class _FailingFile(io.RawIOBase):
    """A file whose second read fails, as a disk error would."""

    def __init__(self) -> None:
        self.reads = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads > 1:
            raise OSError(5, "Input/output error")
        return b"{" * size


def test_a_read_error_is_raised_to_the_reader() -> None:
    pieces = read_ahead(_FailingFile())  # type: ignore[arg-type]
    assert next(pieces)
    with pytest.raises(OSError, match="Input/output error"):
        next(pieces)


def test_a_big_session_opens_through_the_read_ahead_as_it_reads_whole(tmp_path: Path) -> None:
    from pinb.testing.generate import SessionShape, generate_session

    path = generate_session(
        tmp_path / "big.jsonl",
        SessionShape(entries=6000, main_depth=4000, compaction_every=1000, branch_every=50),
        seed=9,
    )
    assert path.stat().st_size > 4 << 20  # above the read-ahead's threshold
    with path.open("ab") as out:
        out.write(b'{"type":"message","id":"torn","parentId":null,"mess')  # a torn last line
    opened = Session.open(path)
    whole = Session.from_bytes(path.read_bytes())
    assert [(e.line, e.id, e.parent_id) for e in opened.entries] == [
        (e.line, e.id, e.parent_id) for e in whole.entries
    ]
    assert [(p.kind, p.line) for p in opened.problems] == [(p.kind, p.line) for p in whole.problems]
    assert opened.problems[-1].kind == "torn-line"
    assert opened.loaded is not None and whole.loaded is not None
    for field in ("size", "complete_size", "newlines", "ends_with_newline"):
        assert getattr(opened.loaded, field) == getattr(whole.loaded, field), field
    assert opened.build_context().messages == whole.build_context().messages
