"""A rebuildable SQLite FTS5 sidecar index of session listings and texts, for fast ``ls`` and search."""

from __future__ import annotations

import contextlib
import html
import logging
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.listing import SessionInfo, read_session_info
from ..core.paths import agent_dir, sessions_root
from ..errors import PinbError

__all__ = [
    "SCHEMA_VERSION",
    "RefreshStats",
    "SearchHit",
    "SearchIndexError",
    "SearchResults",
    "SessionCatalog",
    "default_index_path",
    "list_indexed",
    "search",
]

#: Bumped whenever the tables change; an index of another version is rebuilt.
SCHEMA_VERSION = 1

_MARK_START, _MARK_END = "\x02", "\x03"

_SCHEMA = """
CREATE TABLE sessions(
  rowid INTEGER PRIMARY KEY,
  path TEXT UNIQUE NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  is_session INTEGER NOT NULL,
  id TEXT, cwd TEXT, name TEXT, parent_session_path TEXT,
  created REAL, modified REAL, message_count INTEGER, first_message TEXT
);
CREATE VIRTUAL TABLE texts USING fts5(name, body, tokenize='unicode61 remove_diacritics 2');
"""


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


@dataclass(frozen=True)
class SearchHit:
    """One session matching a search, with a snippet around the match.

    ``snippet`` marks matched words with ``«`` and ``»``.
    """

    info: SessionInfo
    snippet: str
    score: float

    @property
    def path(self) -> Path:
        return self.info.path


class SearchResults(list[SearchHit]):
    """Search hits, best first, that display as a table in a notebook (escaped)."""

    def __init__(self, hits: Sequence[SearchHit] = (), query: str = "") -> None:
        super().__init__(hits)
        self.query = query

    def __repr__(self) -> str:
        lines = [f"{len(self)} session(s) matching {self.query!r}"]
        for hit in self:
            title = hit.info.name or hit.info.first_message
            lines.append(f"{hit.info.modified:%Y-%m-%d %H:%M}  {_short(title, 50):50}  {hit.path}")
            lines.append(f"    {_short(hit.snippet, 110)}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = []
        for hit in self:
            snippet = html.escape(hit.snippet).replace("«", "<mark>").replace("»", "</mark>")
            title = hit.info.name or hit.info.first_message
            rows.append(
                f"<tr><td>{hit.info.modified:%Y-%m-%d %H:%M}</td>"
                f"<td>{html.escape(_short(title, 60))}</td><td>{snippet}</td>"
                f"<td><code>{html.escape(str(hit.path))}</code></td></tr>"
            )
        table = (
            f"<p>{len(self)} session(s) matching <code>{html.escape(self.query)}</code></p>"
            "<table><tr><th>modified</th><th>session</th><th>match</th><th>file</th></tr>"
            + "".join(rows)
            + "</table>"
        )
        return {"text/plain": repr(self), "text/html": table}


def _short(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _fts_query(text: str) -> str:
    """Every word of ``text`` as a quoted FTS5 string (all must match; no operators)."""
    words = text.split()
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


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


class SessionCatalog:
    """Session listing and full-text search backed by a sidecar SQLite FTS5 index.

    The index lives in pinb's cache folder and is keyed by each file's size and
    modification time: a refresh re-reads only new or changed files and forgets deleted
    ones. Session files are only ever read. Deleting the index file is always safe; it is
    rebuilt on next use (also when it is corrupt or from another schema version).

    Parameters
    ----------
    index_path:
        The SQLite file (default :func:`default_index_path`); ``":memory:"`` for none.
    root:
        The sessions root (default ``<agentDir>/sessions``).

    Examples
    --------
    >>> with SessionCatalog() as catalog:  # doctest: +SKIP
    ...     hits = catalog.search("flaky test")
    """

    def __init__(
        self,
        index_path: str | os.PathLike[str] | None = None,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        self.index_path = Path(index_path) if index_path is not None else default_index_path()
        self.root = Path(root) if root is not None else sessions_root()
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
            db.execute("DROP TABLE IF EXISTS sessions")
            db.execute("DROP TABLE IF EXISTS texts")
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

    def __enter__(self) -> SessionCatalog:
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
        updates = [(p, scanned[p], read_session_info(p)) for p in changed]
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for rowid in removed:
                db.execute("DELETE FROM sessions WHERE rowid = ?", (rowid,))
                db.execute("DELETE FROM texts WHERE rowid = ?", (rowid,))
            for path, (size, mtime), info in updates:
                self._upsert(path, size, mtime, info)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return RefreshStats(len(scanned), len(changed), len(removed))

    def _upsert(self, path: str, size: int, mtime: int, info: SessionInfo | None) -> None:
        db = self._db
        old = db.execute("SELECT rowid FROM sessions WHERE path = ?", (path,)).fetchone()
        if old is not None:
            db.execute("DELETE FROM sessions WHERE rowid = ?", (old[0],))
            db.execute("DELETE FROM texts WHERE rowid = ?", (old[0],))
        if info is None:
            db.execute(
                "INSERT INTO sessions(path, size, mtime_ns, is_session) VALUES (?, ?, ?, 0)",
                (path, size, mtime),
            )
            return
        cursor = db.execute(
            "INSERT INTO sessions(path, size, mtime_ns, is_session, id, cwd, name,"
            " parent_session_path, created, modified, message_count, first_message)"
            " VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                path,
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
            ),
        )
        db.execute(
            "INSERT INTO texts(rowid, name, body) VALUES (?, ?, ?)",
            (cursor.lastrowid, _text(info.name) or "", _text(info.all_messages_text)),
        )

    # -- queries --------------------------------------------------------------------------

    def sessions(
        self, folder: str | os.PathLike[str] | None = None, *, with_text: bool = False
    ) -> list[SessionInfo]:
        """Sessions of the root (or one project folder), newest first, as ``SessionInfo``.

        The index is refreshed first. ``all_messages_text`` is filled only with
        ``with_text=True`` (it is the bulk of the index); otherwise it is ``""``.
        """
        self.refresh(folder)
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        text_column = "t.body" if with_text else "''"
        rows = self._db.execute(
            f"SELECT s.*, {text_column} FROM sessions s"  # a fixed column choice
            " LEFT JOIN texts t ON t.rowid = s.rowid"
            " WHERE s.is_session = 1 AND s.path >= ? AND s.path < ?"
            " ORDER BY s.modified DESC, s.path DESC",
            (prefix, prefix + "\U0010ffff"),
        ).fetchall()
        return [_info(row) for row in rows if _in_scope(row[1], prefix, depth)]

    def search(
        self,
        text: str,
        folder: str | os.PathLike[str] | None = None,
        *,
        limit: int = 50,
        raw: bool = False,
    ) -> SearchResults:
        """Sessions whose name or user/assistant text contains every word of ``text``.

        Parameters
        ----------
        text:
            Words to find (case- and accent-insensitive, whole words; ``raw=True`` passes
            FTS5 query syntax through instead, e.g. ``"refactor*"`` or ``a OR b``).
        folder:
            Limit to one project folder (default: every project under the root).
        limit:
            At most this many hits, best first.
        """
        self.refresh(folder)
        query = text if raw else _fts_query(text)
        if not query.strip():
            return SearchResults([], text)
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        try:
            rows = self._db.execute(
                "SELECT s.*, '', snippet(texts, -1, ?, ?, '…', 16), bm25(texts)"
                " FROM texts JOIN sessions s ON s.rowid = texts.rowid"
                " WHERE texts MATCH ? AND s.path >= ? AND s.path < ?"
                " ORDER BY bm25(texts) LIMIT ?",
                (_MARK_START, _MARK_END, query, prefix, prefix + "\U0010ffff", limit * 4),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            raise SearchIndexError(f"bad search query {text!r}: {exc}") from exc
        hits = [
            SearchHit(
                _info(row[:-2]),
                row[-2].replace(_MARK_START, "«").replace(_MARK_END, "»"),
                float(row[-1]),
            )
            for row in rows
            if _in_scope(row[1], prefix, depth)
        ]
        return SearchResults(hits[:limit], text)

    def __iter__(self) -> Iterator[SessionInfo]:
        return iter(self.sessions())


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


def list_indexed(
    folder: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    with_text: bool = False,
) -> list[SessionInfo]:
    """Indexed listing: the same rows as ``pinb.core.listing``, fast once warm.

    ``folder`` limits to one project folder; by default every project under the root.
    """
    with SessionCatalog(root=root) as catalog:
        return catalog.sessions(folder, with_text=with_text)


def search(
    text: str,
    folder: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    limit: int = 50,
    raw: bool = False,
) -> SearchResults:
    """Full-text search over sessions (see :meth:`SessionCatalog.search`).

    Examples
    --------
    >>> search("sqlite migration")  # doctest: +SKIP
    """
    with SessionCatalog(root=root) as catalog:
        return catalog.search(text, folder, limit=limit, raw=raw)
