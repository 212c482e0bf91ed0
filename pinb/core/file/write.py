"""Writing a session file: Pi's lines, locked appends, whole-file writes, and where a file stands.

pinb writes a session file three ways, all here: one line appended under an exclusive
``flock`` (:func:`locked_append`, :meth:`SessionFile.append`), checked byte for byte; a new
session's whole file created at once, never over another (:func:`atomic_write_lines`); and
an old version's file rewritten in version 3 form with a backup beside it
(:meth:`SessionFile.upgrade`, :func:`upgraded_lines`). Every line is written as Pi writes
it (:func:`serialize_line`). :class:`SessionFile` keeps the byte-level bookkeeping of one
file (bytes read, lines counted, its identity) and reads what other writers appended.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ...errors import SessionFileError, SessionLockError
from ..format.problems import Problem
from ..js.wire import dumps, loads, loads_line
from .atomic import replace_file, write_new_file
from .read import LoadedFile, parse_lines, read_new_bytes

try:  # POSIX advisory locks; on other platforms appends are not serialised across processes.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FileReplacedError",
    "SessionFile",
    "atomic_write_lines",
    "locked_append",
    "serialize_line",
    "upgraded_lines",
]


def serialize_line(value: Any) -> bytes:
    """One JSONL line as Pi writes it (``JSON.stringify`` + ``\\n``), UTF-8 encoded."""
    return (dumps(value) + "\n").encode("utf-8")


def upgraded_lines(data: bytes, values: dict[int, Any]) -> list[bytes]:
    """A file's lines after a migration, every line kept in its place.

    ``values`` maps a 1-based line number to the value now standing for it (the migrated
    header and entries). Such a line is written as Pi writes it, unless the migration
    left its value as it was: then its bytes stay as they were, so number forms and
    escapes ``JSON.stringify`` would change (``1E+2``, an integer of 5,000 digits, which
    it writes as ``null``) are not lost. Every other line (blank, not JSON, a value Pi
    skips) is kept verbatim: a rewrite never drops what the file held.
    """
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    out: list[bytes] = []
    for number, raw in enumerate(lines, start=1):
        if number not in values:
            out.append(raw + b"\n")
            continue
        line = serialize_line(values[number])
        try:
            unchanged = serialize_line(loads_line(raw)) == line
        except (ValueError, TypeError):
            unchanged = False
        out.append(raw + b"\n" if unchanged else line)
    return out


@contextlib.contextmanager
def locked_append(
    path: Path, *, timeout: float = 10.0, create: bool = False
) -> Iterator[IO[bytes]]:
    """Open ``path`` for appending under an exclusive advisory lock.

    Every pinb writer takes this lock, so two kernels (or a kernel and the CLI) append
    one whole line at a time. Pi itself does not lock; its appends are single
    ``write`` calls, which ``O_APPEND`` keeps from interleaving with ours.
    """
    flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, 0o644)
    handle = os.fdopen(fd, "ab", buffering=0)
    try:
        if fcntl is not None:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() > deadline:
                        raise SessionLockError(
                            f"{path}: another process held the session lock for {timeout:g}s"
                        ) from exc
                    time.sleep(0.001)
        yield handle
    finally:
        handle.close()  # closing releases the lock


def atomic_write_lines(path: Path, lines: list[bytes], *, exclusive: bool = False) -> None:
    """Write a whole file atomically (:mod:`pinb.core.file.atomic`): temp file, fsync, rename.

    With ``exclusive=True`` the target must not exist yet (first flush of a new session):
    the file appears only with its whole content, and an existing one is never touched.
    Replacing an existing file keeps its permission bits, and a symbolic link keeps
    pointing where it did (the file it names is replaced, not the link).
    """
    data = b"".join(lines)
    if not exclusive:
        replace_file(path, data)
        return
    try:
        write_new_file(path, data)
    except FileExistsError as exc:
        raise SessionFileError(
            "a file already exists where this new session was to be written", path=path
        ) from exc


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
