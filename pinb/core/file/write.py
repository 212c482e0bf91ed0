"""Byte-level bookkeeping of one session file: what was read, locked appends, whole-file writes."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ...errors import SessionFileError
from ..format.problems import Problem
from ..js.wire import loads
from .atomic import replace_file
from .read import (
    LoadedFile,
    atomic_write_lines,
    locked_append,
    parse_lines,
    read_new_bytes,
)

__all__ = ["FileReplacedError", "SessionFile"]


class FileReplacedError(SessionFileError):
    """The file at the session's path is not the one that was read (a new inode, or shorter)."""


class SessionFile:
    """Where a session stands in its file: bytes read, lines counted, file identity.

    Appends go through :meth:`lock` and :meth:`append`; lines other processes appended are
    read with :meth:`read_new`, which only reads bytes after :attr:`offset`.
    """

    def __init__(self, path: Path, loaded: LoadedFile | None = None) -> None:
        self.path = path
        self.offset = loaded.complete_size if loaded else 0
        self.size = loaded.size if loaded else 0
        self.newlines = loaded.newlines if loaded else 0
        self.ends_with_newline = loaded.ends_with_newline if loaded else True
        self.identity = self._stat_identity() if loaded else None

    def _stat_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino)

    @property
    def has_torn_tail(self) -> bool:
        """The file ends with an incomplete line that was left unread."""
        return self.offset < self.size

    def check_writable(self) -> None:
        """Refuse read-only files, even for root (who could write them anyway)."""
        if not os.stat(self.path).st_mode & 0o222:
            raise SessionFileError(
                "the file is read-only; pinb will not append to it", path=self.path
            )

    @contextmanager
    def lock(self) -> Iterator[IO[bytes]]:
        """The exclusive append lock every pinb writer takes."""
        with locked_append(self.path) as handle:
            yield handle

    def read_new(self) -> tuple[list[tuple[Any, int]], list[Problem]]:
        """Parse the complete lines appended since the last read (by anyone)."""
        size = os.path.getsize(self.path)  # FileNotFoundError: the caller says where it went
        if self._stat_identity() != self.identity or size < self.offset:
            raise FileReplacedError(
                "the session file was replaced by another program since it was opened",
                path=self.path,
            )
        self.size = size
        if size == self.offset:
            return [], []
        data = read_new_bytes(self.path, self.offset)
        consumed = data[: data.rfind(b"\n") + 1]
        tail = data[len(consumed) :]
        if tail:
            # Pi writes whole lines, so an unterminated tail that parses is complete;
            # anything else is a write in progress or a torn line, left for later.
            try:
                loads(tail.decode("utf-8", errors="replace"))
                consumed = data
            except ValueError:
                pass
        problems: list[Problem] = []
        values, numbers = parse_lines(consumed, self.path, self.newlines + 1, problems)
        parsed = list(zip(values, numbers, strict=True))
        self.offset += len(consumed)
        self.newlines += consumed.count(b"\n")
        if consumed:
            self.ends_with_newline = consumed.endswith(b"\n")
        return parsed, problems

    def append(self, handle: IO[bytes], line: bytes) -> int:
        """Write one serialized line (under :meth:`lock`); returns its line number.

        A torn or unterminated last line is ended first, so ours is always whole. The
        write is checked byte for byte: if the disk is full or a size limit stops it
        part-way, the partial bytes are cut off again and :class:`SessionFileError` is
        raised, so the file ends exactly as it did before.
        """
        if self.has_torn_tail or not self.ends_with_newline:
            line = b"\n" + line
        _write_fully(handle, line, self.path, self.size)
        if self.has_torn_tail or not self.ends_with_newline:
            self.offset = self.size
        self.offset += len(line)
        self.size = self.offset
        self.newlines += line.count(b"\n")
        self.ends_with_newline = True
        return self.newlines

    def seal(self, handle: IO[bytes]) -> None:
        """End the last line with a newline (under :meth:`lock`), a torn one included.

        Nothing is appended onto a torn line: it stays a line of its own that every reader
        skips, and the next line starts whole.
        """
        _write_fully(handle, b"\n", self.path, self.size)
        self.offset = self.size = self.size + 1
        self.newlines += 1
        self.ends_with_newline = True

    def write_all(self, lines: list[bytes], *, exclusive: bool) -> None:
        """Write the whole file at once (a new session's first flush)."""
        atomic_write_lines(self.path, lines, exclusive=exclusive)
        self._wrote(lines)

    def upgrade(self, upgraded: Callable[[bytes], list[bytes]]) -> Path:
        """Rewrite an old-version file in version 3 form, keeping the original as a backup.

        ``upgraded`` turns the file's bytes into the new lines. Pi takes no lock, so the
        file's size and identity are checked again right before the rename; when another
        program appended meanwhile, the file is read and upgraded again.
        """
        backup = self.path.with_name(f"{self.path.name}.pre-v3.bak")
        if not backup.exists():
            try:
                os.link(self.path, backup)
            except OSError:
                shutil.copy2(self.path, backup)
        for _attempt in range(5):
            before = os.stat(self.path)
            data = self.path.read_bytes()
            lines = upgraded(data)

            def unchanged(before: os.stat_result = before, size: int = len(data)) -> bool:
                now = os.stat(self.path)
                return (now.st_dev, now.st_ino, now.st_size) == (before.st_dev, before.st_ino, size)

            if replace_file(self.path, b"".join(lines), unchanged=unchanged) is not None:
                self._wrote(lines)
                return backup
        raise SessionFileError(
            "the file kept changing while pinb upgraded it to version 3; try again",
            path=self.path,
        )

    def _wrote(self, lines: list[bytes]) -> None:
        self.offset = self.size = sum(len(line) for line in lines)
        self.newlines = len(lines)
        self.ends_with_newline = True
        self.identity = self._stat_identity()


def _write_fully(handle: IO[bytes], data: bytes, path: Path, size_before: int) -> None:
    """Write all of ``data`` at the end of the file, or leave the file as it was and raise."""
    written = 0
    error: OSError | None = None
    try:
        while written < len(data):
            count = handle.write(data[written:])
            if not count:
                break
            written += count
    except OSError as exc:
        error = exc
    if written == len(data):
        return
    with contextlib.suppress(OSError):
        os.ftruncate(handle.fileno(), size_before)
    reason = f" ({error.strerror})" if error is not None and error.strerror else ""
    raise SessionFileError(
        f"could not append to the session: only {written} of {len(data)} bytes were "
        f"written{reason}; the partial line was removed and nothing was recorded "
        "(is the disk full?)",
        path=path,
    ) from error
