"""The listing catalog: session rows kept in a rebuildable SQLite sidecar, for a fast ``ls``.

The sidecar file and its tables are owned here; the full-text index of the entries
(:mod:`pinb.analysis.index`) builds on it and shares its file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from ..core.listing import Progress, SessionInfo, read_session_info
from ..core.paths import agent_dir, sessions_root
from ..errors import PinbError

__all__ = [
    "SCHEMA_VERSION",
    "ListingCatalog",
    "RefreshStats",
    "SearchIndexError",
    "default_index_path",
]

#: Bumped whenever the tables change; an index of another version is rebuilt.
SCHEMA_VERSION = 5


# One row per session file (is_session = 0 for a .jsonl that is not one, so it is not
# read again): what a listing shows, kept by size and mtime. Then, built only when a search
# needs it, one row per searchable entry, the entries' text in FTS5 (same rowid), and the
# tools and files of tool calls for the tool: and file: filters; entries_key says which
# version of the file (size:mtime_ns) the session's entries come from (NULL: none yet),
# entries_size / entries_lines / entries_tail where those bytes ended (their size, line
# count and a digest of their last bytes), so a file that only grew is read from there.
# The full-text index is contentless: it holds the words, not the text (the session files
# do), so it is smaller than the text; a hit's snippet is cut from its line, read again.
# Its rows are never deleted (FTS5 cannot without the old text): an entry that is gone
# leaves words that no longer join to an entry row (rowids are never reused), and the
# index is rebuilt when such words outnumber the live ones.
_SCHEMA = """
CREATE TABLE sessions(
  rowid INTEGER PRIMARY KEY,
  path TEXT UNIQUE NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  is_session INTEGER NOT NULL,
  id TEXT, cwd TEXT, name TEXT, parent_session_path TEXT,
  created REAL, modified REAL, message_count INTEGER, first_message TEXT,
  entries_key TEXT, entries_size INTEGER, entries_lines INTEGER, entries_tail TEXT
);
CREATE TABLE entries(
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,
  session INTEGER NOT NULL,
  line INTEGER NOT NULL,
  entry_id TEXT, type TEXT NOT NULL, role TEXT, timestamp REAL,
  digest TEXT NOT NULL
);
CREATE INDEX entries_by_session ON entries(session);
CREATE INDEX entries_by_digest ON entries(digest);
CREATE TABLE entry_tools(entry INTEGER NOT NULL, tool TEXT NOT NULL);
CREATE INDEX entry_tools_by_entry ON entry_tools(entry);
CREATE TABLE entry_files(entry INTEGER NOT NULL, path TEXT NOT NULL);
CREATE INDEX entry_files_by_entry ON entry_files(entry);
"""
_TEXTS = (
    "CREATE VIRTUAL TABLE entry_texts USING fts5(body, content='',"
    " tokenize='unicode61 remove_diacritics 2')"
)
_SCHEMA += _TEXTS + ";\n"

_TABLES = ("sessions", "entries", "entry_tools", "entry_files", "entry_texts", "texts")

#: The session columns :func:`_info` reads, in its order (the text or ``''`` follows).
_SESSION_COLUMNS = (
    "s.rowid, s.path, s.size, s.mtime_ns, s.is_session, s.id, s.cwd, s.name,"
    " s.parent_session_path, s.created, s.modified, s.message_count, s.first_message"
)

#: Files read and written per transaction while the listing rows are refreshed.
_BATCH = 100


class SearchIndexError(PinbError):
    """The search index cannot be used (for example SQLite lacks FTS5)."""


def default_index_path() -> Path:
    """``<agentDir>/pinb-cache/index.sqlite``: pinb's own cache, beside Pi's files."""
    return agent_dir() / "pinb-cache" / "index.sqlite"


@dataclass(frozen=True)
class RefreshStats:
    """What a refresh did: files seen, (re)read, removed from the index."""

    scanned: int
    updated: int
    removed: int


log = logging.getLogger("pinb.analysis")

_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str | None) -> str | None:
    """Text SQLite can store: a lone surrogate (valid JSON, unencodable) becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", value) if value is not None else None


def _scan(folder: Path, depth: int) -> dict[str, tuple[int, int]]:
    """``{path: (size, mtime_ns)}`` of ``*.jsonl`` files ``depth`` folders below ``folder``."""
    found: dict[str, tuple[int, int]] = {}
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for item in entries:
        if depth > 0:
            if item.is_dir():
                found.update(_scan(Path(item.path), depth - 1))
        elif item.name.endswith(".jsonl") and item.is_file():
            if _SURROGATE.search(item.path):
                # A name that is not valid UTF-8 cannot be a key of the index; say so, once.
                log.warning("%r: file name is not valid UTF-8; not listed", item.path)
                continue
            try:
                st = item.stat()
            except OSError:
                continue
            found[item.path] = (st.st_size, st.st_mtime_ns)
    return found


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, tz=UTC) if value is not None else None


class ListingCatalog:
    """Session listing backed by a sidecar SQLite file of one row per session file.

    The file lives in pinb's cache folder and is keyed by each file's size and
    modification time: a refresh re-reads only new or changed files and forgets deleted
    ones. Session files are only ever read. Deleting the file is always safe; it is
    rebuilt on next use (also when it is corrupt or from another schema version).
    :class:`pinb.analysis.index.SessionCatalog` adds full-text search to it.

    Parameters
    ----------
    index_path:
        The SQLite file (default :func:`default_index_path`); ``":memory:"`` for none.
    root:
        The sessions root (default ``<agentDir>/sessions``).
    progress:
        ``progress(what, done, total)``, called as files are read: ``"listing"`` while the
        listing rows are brought up to date.

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
    ) -> None:
        self.index_path = Path(index_path) if index_path is not None else default_index_path()
        self.root = Path(root) if root is not None else sessions_root()
        self.progress = progress
        self._db = self._connect()

    # -- connection -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        memory = os.fspath(self.index_path) == ":memory:"
        if not memory:
            self.index_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = self._open_db(memory)
        except sqlite3.DatabaseError:
            if memory:
                raise
            # Not a database, or a damaged one: it is only a cache, so start again.
            self._remove_files()
            db = self._open_db(memory)
        return db

    def _open_db(self, memory: bool) -> sqlite3.Connection:
        db = sqlite3.connect(
            ":memory:" if memory else os.fspath(self.index_path), timeout=30, isolation_level=None
        )
        try:
            if not memory:
                db.execute("PRAGMA journal_mode=WAL")
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

    def _create(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            for table in _TABLES:
                db.execute(f"DROP TABLE IF EXISTS {table}")  # names from the code
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
            except sqlite3.OperationalError as exc:
                if "fts5" in str(exc).lower():
                    raise SearchIndexError(
                        "this Python's SQLite has no FTS5; full-text search needs it "
                        "(listing still works with `pinb ls` without the index)"
                    ) from exc
                raise
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(os.fspath(self.index_path) + suffix).unlink()

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rebuild(self) -> RefreshStats:
        """Forget everything and index all files again."""
        self._create(self._db)
        return self.refresh()

    # -- refresh --------------------------------------------------------------------------

    def _scope(self, folder: str | os.PathLike[str] | None) -> tuple[Path, int]:
        if folder is None:
            return self.root, 1
        return Path(folder), 0

    def refresh(self, folder: str | os.PathLike[str] | None = None) -> RefreshStats:
        """Bring the index up to date for the root (or one project folder).

        Files whose size and modification time match the index are not opened.
        """
        base, depth = self._scope(folder)
        scanned = _scan(base, depth)
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
        for start in range(0, len(changed), _BATCH):
            # Files are read before the write transaction, a batch at a time.
            batch = [
                (p, *scanned[p], read_session_info(p, text=False))
                for p in changed[start : start + _BATCH]
            ]
            with self._transaction():
                for item in batch:
                    self._upsert(*item)
            self._report("listing", start + len(batch), len(changed))
        return RefreshStats(len(scanned), len(changed), len(removed))

    def _report(self, what: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(what, done, total)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
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

    def _upsert(self, path: str, size: int, mtime: int, info: SessionInfo | None) -> None:
        """The listing row of a new or changed file; its indexed entries (if any) stay,
        stale by their ``entries_key``, until a search reads the file again."""
        db = self._db
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
        )
        if old is not None:
            db.execute(
                "UPDATE sessions SET size = ?, mtime_ns = ?, is_session = 1, id = ?, cwd = ?,"
                " name = ?, parent_session_path = ?, created = ?, modified = ?,"
                " message_count = ?, first_message = ? WHERE rowid = ?",
                (*row, old[0]),
            )
            return
        db.execute(
            "INSERT INTO sessions(path, size, mtime_ns, is_session, id, cwd, name,"
            " parent_session_path, created, modified, message_count, first_message)"
            " VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        self.refresh(folder)
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        rows = self._db.execute(
            f"SELECT {_SESSION_COLUMNS}, '' FROM sessions s"
            " WHERE s.is_session = 1 AND s.path >= ? AND s.path < ?"
            " ORDER BY s.modified DESC, s.path DESC",
            (prefix, prefix + "\U0010ffff"),
        ).fetchall()
        infos = [_info(row) for row in rows if _in_scope(row[1], prefix, depth)]
        if with_text:
            infos = [_with_text(info) for info in infos]
        return infos

    def __iter__(self) -> Iterator[SessionInfo]:
        return iter(self.sessions())


def _with_text(info: SessionInfo) -> SessionInfo:
    """The row with its ``all_messages_text``, read from the file."""
    full = read_session_info(info.path)
    if full is None:
        return info
    return dataclasses.replace(info, all_messages_text=full.all_messages_text)


def _in_scope(path: str, prefix: str, depth: int) -> bool:
    rest = path[len(prefix) :]
    return rest.count(os.sep) == depth


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
