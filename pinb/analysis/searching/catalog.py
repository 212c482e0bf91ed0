"""The listing catalog: session rows kept in a rebuildable SQLite sidecar, for a fast ``ls``.

The sidecar file is owned here, as a cache (:mod:`pinb.analysis.searching.sidecar`), its tables in
:mod:`pinb.analysis.searching.schema`; the full-text index of the entries
(:mod:`pinb.analysis.searching.index`) builds on it and shares its file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, TypeVar

from ...core.file.listing import (
    ListingMark,
    ListingRead,
    Progress,
    SessionInfo,
    Skipped,
    read_listing,
    read_session_info,
)
from ...core.file.paths import agent_dir, sessions_root
from .schema import _MARK_COLUMNS, _SESSION_COLUMNS, SCHEMA_VERSION, make_tables
from .sidecar import (
    BUSY_STEP,
    LOCK_WAIT,
    SearchIndexError,
    SearchTimeoutError,
    Watch,
    describe,
    is_busy,
    is_damage,
    patiently,
    read_only_reason,
    remove_files,
)

__all__ = [
    "SCHEMA_VERSION",
    "ListingCatalog",
    "RefreshStats",
    "SearchIndexError",
    "SearchTimeoutError",
    "default_index_path",
]

T = TypeVar("T")

#: Files read and written per transaction while the listing rows are refreshed.
_BATCH = 100


def default_index_path() -> Path:
    """``<agentDir>/pinb-cache/index.sqlite``: pinb's own cache, beside Pi's files."""
    return agent_dir() / "pinb-cache" / "index.sqlite"


@dataclass(frozen=True)
class RefreshStats:
    """What a refresh did: files seen, (re)read, removed from the index; of those read,
    how many were read only from where an earlier read ended (they grew), and the bytes
    of session files read."""

    scanned: int
    updated: int
    removed: int
    grown: int = 0
    bytes_read: int = 0


log = logging.getLogger("pinb.analysis")

_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str | None) -> str | None:
    """Text SQLite can store: a lone surrogate (valid JSON, unencodable) becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", value) if value is not None else None


def _scan(
    folder: Path | str, depth: int, skipped: list[Skipped] | None = None
) -> dict[str, tuple[int, int]]:
    """``{path: (size, mtime_ns)}`` of the readable ``*.jsonl`` files ``depth`` folders
    below ``folder``; what is left out and why is appended to ``skipped`` (a looping or
    broken link, a FIFO or device, a file or folder that cannot be read)."""
    found: dict[str, tuple[int, int]] = {}
    _walk(os.fspath(folder), depth, found, skipped if skipped is not None else [])
    return found


def _walk(
    folder: str, depth: int, found: dict[str, tuple[int, int]], skipped: list[Skipped]
) -> None:
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return  # no sessions yet (or a project folder removed meanwhile)
    except OSError as exc:
        skipped.append(Skipped(folder, f"the folder cannot be read ({_why(exc)})"))
        return
    if depth > 0:
        for item in entries:
            try:
                is_dir = item.is_dir()  # follows a link; a looping one raises
            except OSError as exc:
                skipped.append(Skipped(item.path, _link_trouble(item, exc)))
                continue
            if is_dir:
                if item.is_symlink() and _contains(item.path, folder):
                    skipped.append(Skipped(item.path, "a link to a folder above it (a loop)"))
                    continue
                _walk(item.path, depth - 1, found, skipped)
            elif item.is_symlink():
                try:
                    os.stat(item.path)  # a link to a file here is no project folder
                except OSError as exc:
                    skipped.append(Skipped(item.path, _link_trouble(item, exc)))
        return
    for item in entries:
        if not item.name.endswith(".jsonl"):
            continue
        path = item.path
        try:
            regular = item.is_file()  # follows a link; a looping one raises
        except OSError as exc:
            skipped.append(Skipped(path, _link_trouble(item, exc)))
            continue
        if not regular:
            # Never opened: a FIFO would block the read, a device never end.
            skipped.append(Skipped(path, _not_regular(item)))
            continue
        if not path.isascii() and _SURROGATE.search(path):
            # A name that is not valid UTF-8 cannot be a key of the index; say so, once.
            log.warning("%r: file name is not valid UTF-8; not listed", path)
            continue
        try:
            st = item.stat()
        except OSError as exc:
            skipped.append(Skipped(path, _why(exc)))
            continue
        if not os.access(path, os.R_OK):
            # Mode bits as the kernel applies them to this process (root reads anything).
            skipped.append(Skipped(path, "cannot be read (permission denied)"))
            continue
        found[path] = (st.st_size, st.st_mtime_ns)


def _why(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()


def _link_trouble(item: os.DirEntry[str], exc: OSError) -> str:
    """What is wrong with a link that leads to nothing usable."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link that loops"
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        try:
            target = os.readlink(item.path)
        except OSError:
            return "a broken symbolic link"
        return f"a broken symbolic link (to {target})"
    return f"cannot be read ({_why(exc)})"


def _not_regular(item: os.DirEntry[str]) -> str:
    """Why a ``*.jsonl`` name that is no regular file is not a session file."""
    try:
        mode = os.stat(item.path).st_mode
    except OSError as exc:
        return _link_trouble(item, exc)
    kind = (
        "a folder" if stat.S_ISDIR(mode)
        else "a FIFO" if stat.S_ISFIFO(mode)
        else "a socket" if stat.S_ISSOCK(mode)
        else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )  # fmt: skip
    via = " (through a symbolic link)" if item.is_symlink() else ""
    return f"{kind}{via}, not a session file"


def _contains(link: str, folder: str) -> bool:
    """Whether the folder ``link`` leads to holds ``folder`` (walking it would loop)."""
    target = os.path.realpath(link)
    here = os.path.realpath(folder)
    return here == target or here.startswith(os.path.join(target, ""))


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=UTC) if value is not None else None


class ListingCatalog:
    """Session listing backed by a sidecar SQLite file of one row per session file.

    The file lives in pinb's cache folder and is keyed by each file's size and
    modification time: a refresh re-reads only new or changed files (a file that only
    grew, from where it was read up to) and forgets deleted ones. Session files are only
    ever read. :class:`pinb.analysis.searching.index.SessionCatalog` adds full-text search to it.

    The file is a cache, in every path. A damaged one is removed and built again. Any
    other SQLite error (a full disk, an I/O error, a read-only file or folder, a lock
    held too long) leaves it as it is: the work is done again in memory, without it, with
    one warning, and the file is used again next time it can be. The answers are the same
    either way.

    Parameters
    ----------
    index_path:
        The SQLite file (default :func:`default_index_path`); ``":memory:"`` for none.
    root:
        The sessions root (default ``<agentDir>/sessions``).
    progress:
        ``progress(what, done, total)``, called as files are read: ``"listing"`` while the
        listing rows are brought up to date.
    lock_wait:
        Seconds to wait for another process's write to the file before going on without
        it (this time).

    Attributes
    ----------
    degraded:
        Why the index file is not used this time (``None``: it is, or none was asked for).
    skipped:
        What the last listing or search left out, and why (:class:`~pinb.core.file.listing.Skipped`:
        a looping or broken link, a FIFO or device, a file or folder that cannot be read);
        each is also logged as one warning line.

    Notes
    -----
    A listing reads what its rows show (no JSON of message contents beyond the first user
    message).
    """

    def __init__(
        self,
        index_path: str | os.PathLike[str] | None = None,
        root: str | os.PathLike[str] | None = None,
        *,
        progress: Progress | None = None,
        lock_wait: float = LOCK_WAIT,
    ) -> None:
        self.index_path = Path(index_path) if index_path is not None else default_index_path()
        self.root = Path(root) if root is not None else sessions_root()
        self.progress = progress
        self.lock_wait = lock_wait
        self.degraded: str | None = None
        self._in_memory = os.fspath(self.index_path) == ":memory:"
        self._warned = False
        self.skipped: list[Skipped] = []
        self._noted: set[str] = set()
        self._watch = Watch()
        self._db = self._connect()

    # -- connection -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._in_memory:
            return self._open(":memory:")
        reason = read_only_reason(self.index_path)
        if reason is not None:
            return self._fall_back(reason)
        try:
            self.index_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return self._fall_back(f"{self.index_path.parent}: {exc.strerror or exc}")
        try:
            return self._open(os.fspath(self.index_path))
        except sqlite3.Error as exc:
            self._raise_if_stopped(exc)
            if not is_damage(exc):
                return self._fall_back(describe(exc, self.lock_wait))
            damage = exc
        # Not a database, or a damaged one: it is only a cache, so it is started again.
        try:
            remove_files(self.index_path)
            db = self._open(os.fspath(self.index_path))
        except (OSError, sqlite3.Error) as exc:
            return self._fall_back(f"damaged ({damage}), and not made again: {exc}")
        self._warn(f"the search index {self.index_path} was damaged ({damage}); it is built again")
        return db

    def _open(self, target: str) -> sqlite3.Connection:
        db = sqlite3.connect(target, timeout=BUSY_STEP, isolation_level=None)
        try:
            self._watch.attach(db)
            if target == ":memory:":
                db.execute("PRAGMA temp_store=MEMORY")  # a full disk must not stop it
            else:
                patiently(lambda: db.execute("PRAGMA journal_mode=WAL"), self.lock_wait)
            db.execute("PRAGMA synchronous=NORMAL")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                self._create(db)
            else:
                db.execute("SELECT count(*) FROM sessions").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _fall_back(self, reason: str) -> sqlite3.Connection:
        """An index in memory for this time, after one warning saying why."""
        self.degraded = reason
        self._warn(
            f"the search index {self.index_path} is not used ({reason}); "
            "reading the session files without it this time"
        )
        return self._open(":memory:")

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("%s", message)

    def _skip(self, item: Skipped) -> None:
        """Note a file left out: in :attr:`skipped`, and as a warning line (once each)."""
        if item.path not in self._noted:
            self._noted.add(item.path)
            self.skipped.append(item)
            log.warning("note: %s; left out of listings and searches", item)

    def _walked(self, folder: str | os.PathLike[str] | None) -> dict[str, tuple[int, int]]:
        """The session files of a scope (:func:`_scan`), what it left out noted."""
        left: list[Skipped] = []
        found = _scan(*self._scope(folder), left)
        for item in left:
            self._skip(item)
        return found

    def _begin(self) -> None:
        """A new listing or search: what it leaves out is said again."""
        self.skipped = []
        self._noted = set()

    def _create(self, db: sqlite3.Connection, *, force: bool = False) -> None:
        patiently(lambda: db.execute("BEGIN IMMEDIATE"), self.lock_wait)
        try:
            # Another process may have made the tables while this one waited for the lock.
            if force or db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                make_tables(db)
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            raise

    def _raise_if_stopped(self, exc: sqlite3.Error) -> None:
        stopped = self._watch.stopped(exc)
        if stopped is not None:
            raise stopped from exc

    def _guarded(self, work: Callable[[], T]) -> T:
        """``work()`` on the index file; after any SQLite error (but Ctrl-C and the
        deadline), again on an index in memory (:meth:`_let_go`)."""
        waited = time.monotonic() + self.lock_wait
        while True:
            try:
                return work()
            except sqlite3.Error as exc:
                self._raise_if_stopped(exc)
                if self._in_memory or self.degraded is not None:
                    raise SearchIndexError(f"the search index in memory failed: {exc}") from exc
                if is_busy(exc) and time.monotonic() < waited:
                    time.sleep(0.05)  # another process is writing: wait for it, a while
                    continue
                failure = exc
            try:
                self._let_go(failure)
            except sqlite3.Error as exc:
                self._raise_if_stopped(exc)
                raise SearchIndexError(f"the search index in memory failed: {exc}") from exc

    def _let_go(self, exc: sqlite3.Error) -> None:
        """Stop using the index file after ``exc``: it is removed when damaged (only
        then), and the work goes on in memory."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        reason = describe(exc, self.lock_wait)
        if is_damage(exc):
            try:
                remove_files(self.index_path)
                reason += "; it was removed and is built again next time"
            except OSError:
                pass
        self._db = self._fall_back(reason)

    def close(self) -> None:
        """Close the database connection."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rebuild(self) -> RefreshStats:
        """Forget everything and index all files again."""

        def work() -> RefreshStats:
            self._create(self._db, force=True)
            return self._refresh(None)

        self._begin()
        return self._guarded(work)

    # -- refresh --------------------------------------------------------------------------

    def _scope(self, folder: str | os.PathLike[str] | None) -> tuple[Path, int]:
        if folder is None:
            return self.root, 1
        return Path(folder), 0

    def refresh(self, folder: str | os.PathLike[str] | None = None) -> RefreshStats:
        """Bring the index up to date for the root (or one project folder).

        Files whose size and modification time match the index are not opened; a file
        that only grew is read from where it was read up to.
        """
        self._begin()
        return self._guarded(lambda: self._refresh(folder))

    def _refresh(
        self,
        folder: str | os.PathLike[str] | None,
        scanned: dict[str, tuple[int, int]] | None = None,
    ) -> RefreshStats:
        """:meth:`refresh`; ``scanned``: the files of the folder as :func:`_scan` just
        found them (else they are looked up)."""
        base, depth = self._scope(folder)
        if scanned is None:
            scanned = self._walked(folder)
        prefix = os.path.join(os.fspath(base), "")
        stored = {
            path: (size, mtime, rowid)
            for path, size, mtime, rowid in self._db.execute(
                "SELECT path, size, mtime_ns, rowid FROM sessions WHERE path >= ? AND path < ?",
                (prefix, prefix + "\U0010ffff"),
            )
            if _in_scope(path, prefix, depth)
        }
        changed = [p for p, key in scanned.items() if stored.get(p, (None, None))[:2] != key]
        removed = [row[2] for p, row in stored.items() if p not in scanned]
        if not changed and not removed:
            return RefreshStats(len(scanned), 0, 0)
        with self._transaction():
            for rowid in removed:
                self._forget(rowid)
        grown = read = 0
        for start in range(0, len(changed), _BATCH):
            paths = changed[start : start + _BATCH]
            marks = self._marks([stored[p][2] for p in paths if p in stored])
            # Files are read before the write transaction, a batch at a time.
            batch = [(p, *scanned[p], read_listing(p, since=marks.get(p))) for p in paths]
            for path, _, _, listed in batch:
                if listed.error is not None:
                    self._skip(Skipped(path, f"cannot be read ({listed.error.lower()})"))
            batch = [item for item in batch if item[3].error is None]  # tried again next time
            grown += sum(item[3].resumed for item in batch)
            read += sum(item[3].bytes_read for item in batch)
            with self._transaction():
                for item in batch:
                    self._upsert(*item)
            self._report("listing", start + len(batch), len(changed))
        return RefreshStats(len(scanned), len(changed), len(removed), grown, read)

    def _marks(self, rowids: list[int]) -> dict[str, tuple[SessionInfo, ListingMark]]:
        """The rows and listing marks of these sessions, by path (those with a mark)."""
        found: dict[str, tuple[SessionInfo, ListingMark]] = {}
        for start in range(0, len(rowids), 500):
            chunk = rowids[start : start + 500]
            rows = self._db.execute(
                f"SELECT {_SESSION_COLUMNS}, '', {_MARK_COLUMNS} FROM sessions s"
                f" WHERE s.is_session = 1 AND s.list_end IS NOT NULL"
                f" AND s.rowid IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            for row in rows:
                end, lines, digest, file_id, latest, first = row[14:]
                mark = ListingMark(end, lines, digest, file_id, latest, bool(first))
                found[row[1]] = (_info(row[:14]), mark)
        return found

    def _report(self, what: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(what, done, total)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        db = self._db
        patiently(lambda: db.execute("BEGIN IMMEDIATE"), self.lock_wait)
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            raise

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """One read transaction: its statements see one state of the index, whatever
        other processes write meanwhile."""
        db = self._db
        patiently(lambda: db.execute("BEGIN"), self.lock_wait)
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            raise

    def _forget(self, rowid: int) -> None:
        self._forget_entries(rowid)
        self._db.execute("DELETE FROM sessions WHERE rowid = ?", (rowid,))

    def _forget_entries(self, rowid: int) -> None:
        db = self._db
        entries = "SELECT rowid FROM entries WHERE session = ?"
        # entry_texts keeps their words; without an entries row they match nothing.
        db.execute(f"DELETE FROM entry_tools WHERE entry IN ({entries})", (rowid,))
        db.execute(f"DELETE FROM entry_files WHERE entry IN ({entries})", (rowid,))
        db.execute("DELETE FROM entries WHERE session = ?", (rowid,))

    def _upsert(self, path: str, size: int, mtime: int, read: ListingRead) -> None:
        """The listing row of a new or changed file; its indexed entries (if any) stay,
        stale by their ``entries_key``, until a search reads the file again."""
        db = self._db
        info, mark = read.info, read.mark
        if mark is not None and not -(2**63) <= mark.latest < 2**63:
            mark = None  # a time past SQLite's integers (an odd file): read whole next time
        old = db.execute("SELECT rowid FROM sessions WHERE path = ?", (path,)).fetchone()
        if info is None:
            if old is not None:
                self._forget(old[0])
            db.execute(
                "INSERT INTO sessions(path, size, mtime_ns, is_session) VALUES (?, ?, ?, 0)",
                (path, size, mtime),
            )
            return
        row = (
            size,
            mtime,
            _text(info.id),
            _text(info.cwd),
            _text(info.name),
            _text(info.parent_session_path),
            _ts(info.created),
            _ts(info.modified),
            info.message_count,
            _text(info.first_message),
            *(
                (
                    mark.file_id,
                    mark.end,
                    mark.lines,
                    mark.digest,
                    mark.latest,
                    int(mark.first_found),
                )
                if mark is not None
                else (None,) * 6
            ),
        )
        if old is not None:
            db.execute(
                "UPDATE sessions SET size = ?, mtime_ns = ?, is_session = 1, id = ?, cwd = ?,"
                " name = ?, parent_session_path = ?, created = ?, modified = ?,"
                " message_count = ?, first_message = ?, list_file = ?, list_end = ?,"
                " list_lines = ?, list_digest = ?, list_latest = ?, list_first = ?"
                " WHERE rowid = ?",
                (*row, old[0]),
            )
            return
        db.execute(
            "INSERT INTO sessions(path, size, mtime_ns, is_session, id, cwd, name,"
            " parent_session_path, created, modified, message_count, first_message,"
            " list_file, list_end, list_lines, list_digest, list_latest, list_first)"
            " VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (path, *row),
        )

    # -- queries --------------------------------------------------------------------------

    def sessions(
        self, folder: str | os.PathLike[str] | None = None, *, with_text: bool = False
    ) -> list[SessionInfo]:
        """Sessions of the root (or one project folder), newest first, as ``SessionInfo``.

        The listing rows are refreshed first (the full-text index is not touched).
        ``all_messages_text`` is filled only with ``with_text=True``, read from the files
        (it is not kept in the index); otherwise it is ``""``.
        """
        self._begin()
        infos = self._guarded(lambda: self._sessions(folder))
        if with_text:
            infos = [_with_text(info) for info in infos]
        return infos

    def _sessions(self, folder: str | os.PathLike[str] | None) -> list[SessionInfo]:
        self._refresh(folder)
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        rows = self._db.execute(
            f"SELECT {_SESSION_COLUMNS}, '' FROM sessions s"
            " WHERE s.is_session = 1 AND s.path >= ? AND s.path < ?"
            " ORDER BY s.modified DESC, s.path DESC",
            (prefix, prefix + "\U0010ffff"),
        ).fetchall()
        return [_info(row) for row in rows if _in_scope(row[1], prefix, depth)]

    def __iter__(self) -> Iterator[SessionInfo]:
        return iter(self.sessions())


def _roll_back(db: sqlite3.Connection) -> None:
    """End a failed transaction; a failure to do so must not hide the first error (SQLite
    ends some transactions itself, a full disk's among them)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


def _with_text(info: SessionInfo) -> SessionInfo:
    """The row with its ``all_messages_text``, read from the file."""
    full = read_session_info(info.path)
    if full is None:
        return info
    return dataclasses.replace(info, all_messages_text=full.all_messages_text)


def _in_scope(path: str, prefix: str, depth: int) -> bool:
    rest = path[len(prefix) :]
    return rest.count(os.sep) == depth


def _stored_info(info: SessionInfo) -> SessionInfo:
    """A listing row as the catalog gives it back: each field as stored, and read again
    (the row of a session a scan found, equal to the one of the index)."""
    return _info((None, os.fspath(info.path), None, None, None, _text(info.id), _text(info.cwd),
                  _text(info.name), _text(info.parent_session_path), _ts(info.created),
                  _ts(info.modified), info.message_count, _text(info.first_message), ""))  # fmt: skip


def _info(row: Sequence[Any]) -> SessionInfo:
    (_, path, _, _, _, sid, cwd, name, parent, created, modified, count, first, text) = row
    return SessionInfo(
        path=Path(path),
        id=sid,
        cwd=cwd,
        name=name,
        parent_session_path=parent,
        created=_dt(created),
        modified=_dt(modified) or datetime.fromtimestamp(0, tz=UTC),
        message_count=count,
        first_message=first,
        all_messages_text=text or "",
    )
