"""The sidecar SQLite file of the listing and search index, as a cache: where it may be
written, which of its errors mean damage, and Ctrl-C and a deadline for its statements.

Everything here serves one rule (:class:`pinb.analysis.searching.catalog.ListingCatalog` applies
it): the index is a cache. A file that is damaged is removed and built again; any other
trouble (a full disk, an I/O error, a read-only folder, a lock held too long) leaves the
file alone, and the work is done without it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ...errors import PinbError

__all__ = [
    "LOCK_WAIT",
    "SearchIndexError",
    "SearchTimeoutError",
    "Watch",
    "describe",
    "is_busy",
    "is_damage",
    "patiently",
    "read_only_reason",
    "remove_files",
]

T = TypeVar("T")

#: Seconds a write waits for another process's transaction before the index is let go.
LOCK_WAIT = 30.0
#: Seconds SQLite itself waits on a lock before answering "busy" (then :func:`patiently`
#: waits in Python, where Ctrl-C is seen).
BUSY_STEP = 0.5
#: Virtual machine steps between two looks at the deadline and Ctrl-C.
_STEPS = 2_000

# SQLite's primary result codes (the low byte of an extended code).
_BUSY, _LOCKED, _INTERRUPT, _CORRUPT, _NOTADB = 5, 6, 9, 11, 26


class SearchIndexError(PinbError):
    """The search index cannot be used (for example SQLite lacks FTS5)."""


class SearchTimeoutError(SearchIndexError):
    """A search ran past its deadline and was stopped."""


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite says the file is damaged or not a database at all (and nothing else:
    a full disk or an I/O error is not damage, and never a reason to remove the file)."""
    return _code(exc) in (_CORRUPT, _NOTADB)


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether another connection holds a lock this one needs."""
    return _code(exc) in (_BUSY, _LOCKED)


def describe(exc: sqlite3.Error, wait: float = LOCK_WAIT) -> str:
    """SQLite's message, or what a lock held too long (``wait`` seconds) means here."""
    if is_busy(exc):
        return f"locked by another process for over {wait:g} s"
    return str(exc) or type(exc).__name__


def patiently(step: Callable[[], T], wait: float = LOCK_WAIT) -> T:
    """``step()``, tried again while another process holds the lock, for up to ``wait``
    seconds; the waits are Python sleeps, so Ctrl-C stops them."""
    deadline = time.monotonic() + wait
    delay = 0.01
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _writable(path: Path) -> bool:
    # Mode bits count even for root (who could write anyway), as for session files: a
    # folder or file the user made read-only is not written to.
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return bool(mode & 0o222) and os.access(path, os.W_OK)


def read_only_reason(path: Path) -> str | None:
    """Why the cache file at ``path`` cannot be written (``None``: it can be): the file,
    or the folder it is in (or would be made in), is read-only."""
    if path.exists() and not _writable(path):
        return f"{path} is read-only"
    folder = path.parent
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    if not _writable(folder):
        return f"{folder} is read-only"
    return None


def remove_files(path: Path) -> None:
    """Remove a database file and the journal files SQLite keeps beside it."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(os.fspath(path) + suffix).unlink()


class Watch:
    """Ctrl-C and a deadline for the statements of a connection.

    Python runs a signal handler only between bytecodes, so a KeyboardInterrupt waits
    until a long SQLite statement ends. SQLite calls :meth:`_tick` every few thousand
    steps: the handler runs there, and the statement is stopped (SQLite answers
    "interrupted"); so is a statement past the deadline. :meth:`stopped` says which.
    """

    def __init__(self) -> None:
        self._deadline: float | None = None
        self._seconds = 0.0
        self._expired = False

    def attach(self, db: sqlite3.Connection) -> None:
        """Watch the statements of ``db``."""
        db.set_progress_handler(self._tick, _STEPS)

    def _tick(self) -> int:
        try:
            if self._deadline is not None and time.monotonic() > self._deadline:
                self._expired = True
                return 1
        except KeyboardInterrupt:
            return 1  # the statement stops; :meth:`stopped` raises it again
        return 0

    @contextlib.contextmanager
    def deadline(self, seconds: float | None) -> Iterator[None]:
        """Stop statements that run past ``seconds`` from now (``None``: no deadline)."""
        self._deadline = time.monotonic() + seconds if seconds is not None else None
        self._seconds = seconds or 0.0
        self._expired = False
        try:
            yield
        finally:
            self._deadline = None

    def stopped(self, exc: sqlite3.Error) -> BaseException | None:
        """What to raise for a statement this watch stopped (``None``: it stopped none).

        SQLite reports a handler that raised by stopping the statement; the handler's
        own exception is lost, so an interruption that is not the deadline is Ctrl-C.
        """
        if _code(exc) != _INTERRUPT:
            return None
        if self._expired:
            self._expired = False
            return SearchTimeoutError(
                f"the search took longer than {self._seconds:g} s and was stopped; "
                "narrow it with more words or filters (role:, after:, file:), "
                "or give it more time (timeout=, --timeout)"
            )
        return KeyboardInterrupt()
