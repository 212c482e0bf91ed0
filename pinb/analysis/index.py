"""A rebuildable SQLite FTS5 sidecar index of sessions and their entries: fast ``ls`` and citable search."""

from __future__ import annotations

import contextlib
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
from .cite import Citation, IndexedEntry
from .hits import MARK_END as _MARK_END
from .hits import MARK_START as _MARK_START
from .hits import SearchHit, SearchResults
from .query import SearchQuery, parse_query, sql_filters

__all__ = [
    "SCHEMA_VERSION",
    "Citation",
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
SCHEMA_VERSION = 2


# One row per session file (is_session = 0 for a .jsonl that is not one, so it is not
# read again), one per searchable entry, the entries' text in FTS5 (same rowid), and the
# tools and files of tool calls for the tool: and file: filters.
_SCHEMA = """
CREATE TABLE sessions(
  rowid INTEGER PRIMARY KEY,
  path TEXT UNIQUE NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  is_session INTEGER NOT NULL,
  id TEXT, cwd TEXT, name TEXT, parent_session_path TEXT,
  created REAL, modified REAL, message_count INTEGER, first_message TEXT, body TEXT
);
CREATE TABLE entries(
  rowid INTEGER PRIMARY KEY,
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
CREATE VIRTUAL TABLE entry_texts USING fts5(body, tokenize='unicode61 remove_diacritics 2');
"""

_TABLES = ("sessions", "entries", "entry_tools", "entry_files", "entry_texts", "texts")

#: The session columns :func:`_info` reads, in its order (``body`` or ``''`` follows).
_SESSION_COLUMNS = (
    "s.rowid, s.path, s.size, s.mtime_ns, s.is_session, s.id, s.cwd, s.name,"
    " s.parent_session_path, s.created, s.modified, s.message_count, s.first_message"
)

#: Files read and written per transaction while refreshing.
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
        with self._transaction():
            for rowid in removed:
                self._forget(rowid)
        for start in range(0, len(changed), _BATCH):
            # Files are read before the write transaction, a batch at a time.
            batch = [(p, *scanned[p], *_read(p)) for p in changed[start : start + _BATCH]]
            with self._transaction():
                for item in batch:
                    self._upsert(*item)
        return RefreshStats(len(scanned), len(changed), len(removed))

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
        db = self._db
        entries = "SELECT rowid FROM entries WHERE session = ?"
        db.execute(f"DELETE FROM entry_texts WHERE rowid IN ({entries})", (rowid,))
        db.execute(f"DELETE FROM entry_tools WHERE entry IN ({entries})", (rowid,))
        db.execute(f"DELETE FROM entry_files WHERE entry IN ({entries})", (rowid,))
        db.execute("DELETE FROM entries WHERE session = ?", (rowid,))
        db.execute("DELETE FROM sessions WHERE rowid = ?", (rowid,))

    def _upsert(
        self,
        path: str,
        size: int,
        mtime: int,
        info: SessionInfo | None,
        entries: Sequence[IndexedEntry],
    ) -> None:
        db = self._db
        old = db.execute("SELECT rowid FROM sessions WHERE path = ?", (path,)).fetchone()
        if old is not None:
            self._forget(old[0])
        if info is None:
            db.execute(
                "INSERT INTO sessions(path, size, mtime_ns, is_session) VALUES (?, ?, ?, 0)",
                (path, size, mtime),
            )
            return
        cursor = db.execute(
            "INSERT INTO sessions(path, size, mtime_ns, is_session, id, cwd, name,"
            " parent_session_path, created, modified, message_count, first_message, body)"
            " VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                _text(info.all_messages_text),
            ),
        )
        session = cursor.lastrowid
        for item in entries:
            row = db.execute(
                "INSERT INTO entries(session, line, entry_id, type, role, timestamp, digest)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session, item.line, _text(item.entry_id), _text(item.type), _text(item.role),
                 item.timestamp, item.digest),
            ).lastrowid  # fmt: skip
            db.execute(
                "INSERT INTO entry_texts(rowid, body) VALUES (?, ?)", (row, _text(item.body))
            )
            db.executemany(
                "INSERT INTO entry_tools(entry, tool) VALUES (?, ?)",
                [(row, _text(t)) for t in item.tools],
            )
            db.executemany(
                "INSERT INTO entry_files(entry, path) VALUES (?, ?)",
                [(row, _text(f)) for f in item.files],
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
        text_column = "s.body" if with_text else "''"
        rows = self._db.execute(
            f"SELECT {_SESSION_COLUMNS}, {text_column} FROM sessions s"  # fixed column choices
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
        fold: bool = True,
    ) -> SearchResults:
        """Entries matching a query, best first, each citable as ``path:line#entry-id``.

        Parameters
        ----------
        text:
            A query: words (all must occur in one entry; case- and accent-insensitive,
            whole words, ``refact*`` a prefix), ``"exact phrases"``, ``-excluded`` words,
            and ``role:``, ``tool:``, ``file:``, ``session:``, ``after:``, ``before:``
            filters (:mod:`pinb.analysis.query`). ``raw=True`` passes FTS5 query syntax
            through instead (``a OR b``, ``NEAR(a b)``), without filters.
        folder:
            Limit to one project folder (default: every project under the root).
        limit:
            At most this many hits, best first.
        fold:
            Fold repeats and fork copies (the same role and text) into one hit, the
            earliest, with the others in :attr:`SearchHit.copies`.

        Raises
        ------
        SearchQueryError
            A filter's value is not usable (an unknown role, a date that is not one).
        SearchIndexError
            A raw query that FTS5 rejects.
        """
        self.refresh(folder)
        query = SearchQuery(text) if raw else parse_query(text)
        if (raw and not text.strip()) or (not raw and query.empty):
            return SearchResults([], text, query, root=self.root)
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        match = _text(text) if raw else query.match()
        clauses, params = ([], []) if raw else sql_filters(query)
        # The session is in scope: under the folder, at the depth of its session files.
        where = [
            "s.path >= ?",
            "s.path < ?",
            "length(s.path) - length(replace(s.path, ?, '')) = ?",
            *clauses,
        ]
        values: list[object] = [prefix, prefix + "\U0010ffff", os.sep,
                                prefix.count(os.sep) + depth, *params]  # fmt: skip
        excluded = None if raw or match is not None else query.excluded()
        if excluded is not None:
            where.append("e.rowid NOT IN (SELECT rowid FROM entry_texts WHERE entry_texts MATCH ?)")
            values.append(excluded)
        # Only fixed SQL fragments are joined here; every value of the query is a parameter.
        # First the best groups (a digest is the same role and text: repeats, fork copies),
        # ranked in SQLite, then every member of those groups. The inner LIMIT -1 keeps
        # SQLite from flattening the subquery, where bm25() could not run.
        group = "e.digest" if fold else "e.rowid"
        joined = " FROM entries e JOIN sessions s ON s.rowid = e.session"
        if match is not None:
            ranked = (
                f"SELECT g, min(score), max(t) FROM (SELECT {group} AS g, bm25(entry_texts) AS"
                f" score, e.timestamp AS t FROM entry_texts JOIN entries e ON e.rowid ="
                " entry_texts.rowid JOIN sessions s ON s.rowid = e.session"
                f" WHERE entry_texts MATCH ? AND {' AND '.join(where)} LIMIT -1)"
                " GROUP BY g ORDER BY 2, 3 DESC, g LIMIT ?"
            )
            ranked_values = [match, *values, max(limit, 0)]
        else:
            ranked = (
                f"SELECT {group}, 0.0, max(e.timestamp) AS t{joined} WHERE {' AND '.join(where)}"
                f" GROUP BY {group} ORDER BY t IS NULL, t DESC, {group} LIMIT ?"
            )
            ranked_values = [*values, max(limit, 0)]
        try:
            best = self._db.execute(ranked, ranked_values).fetchall()
            keys = [row[0] for row in best]
            members = (
                f"SELECT e.rowid, {group}, e.timestamp, s.created, s.path, e.line, e.entry_id"
                f"{joined} WHERE {' AND '.join(where)}"
                + (" AND e.rowid IN (SELECT rowid FROM entry_texts WHERE entry_texts MATCH ?)"
                   if match is not None else "")
                + f" AND {group} IN "
            )  # fmt: skip
            before = [*values, match] if match is not None else values
            rows = list(self._select(members, keys, before))
        except sqlite3.OperationalError as exc:
            raise SearchIndexError(f"bad search query {text!r}: {exc}") from exc
        groups = _fold(rows, [(key, score) for key, score, _ in best])
        return SearchResults(self._hits(groups, match), text, query, root=self.root)

    def _hits(
        self, groups: list[tuple[float, list[tuple[Any, ...]]]], match: str | None
    ) -> list[SearchHit]:
        """The hits of ranked groups of rows: the earliest row of each, the rest as copies."""
        primaries = [group[0][0] for _, group in groups]
        details = {r[0]: r for r in self._select(
            f"SELECT e.rowid, e.line, e.entry_id, e.role, e.timestamp, {_SESSION_COLUMNS}, ''"
            " FROM entries e JOIN sessions s ON s.rowid = e.session WHERE e.rowid IN ", primaries)}  # fmt: skip
        if match is not None:
            snippets = {r[0]: r[1] for r in self._select(
                "SELECT rowid, snippet(entry_texts, 0, ?, ?, '…', 16) FROM entry_texts"
                " WHERE entry_texts MATCH ? AND rowid IN ", primaries,
                (_MARK_START, _MARK_END, match))}  # fmt: skip
        else:
            snippets = {r[0]: r[1] for r in self._select(
                "SELECT rowid, substr(body, 1, 200) FROM entry_texts WHERE rowid IN ", primaries)}  # fmt: skip
        hits = []
        paths: dict[str, Path] = {}  # one Path per file, however many copies cite it

        def path(text: str) -> Path:
            found = paths.get(text)
            if found is None:
                found = paths[text] = Path(text)
            return found

        for score, group in groups:
            first = details[group[0][0]]
            marked = snippets.get(first[0]) or ""
            copies = tuple(Citation(path(r[4]), r[5], r[6]) for r in group[1:])
            hits.append(
                SearchHit(
                    info=_info(first[5:]),
                    line=first[1],
                    entry_id=first[2],
                    role=first[3],
                    timestamp=_dt(first[4]),
                    snippet=marked.replace(_MARK_START, "«").replace(_MARK_END, "»"),
                    score=float(score),
                    copies=copies,
                    _marked=marked,
                )
            )
        return hits

    def _select(
        self, sql: str, rowids: Sequence[int], before: Sequence[object] = ()
    ) -> Iterator[tuple[Any, ...]]:
        """``sql`` ending in ``… IN `` for ``rowids`` (or other keys), a few hundred at a time."""
        for start in range(0, len(rowids), 500):
            chunk = list(rowids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            yield from self._db.execute(f"{sql}({marks})", [*before, *chunk])

    def __iter__(self) -> Iterator[SessionInfo]:
        return iter(self.sessions())


def _read(path: str) -> tuple[SessionInfo | None, list[IndexedEntry]]:
    """A file's listing row and searchable entries (``None, []`` when it is not a session)."""
    info = read_session_info(path)
    if info is None:
        return None, []
    from .cite import indexed_entries
    from .frames import open_session

    try:
        return info, indexed_entries(open_session(path))
    except (PinbError, OSError, ValueError) as exc:
        # Listed (Pi lists it too), but its entries cannot be read: say so, once.
        log.warning("%s: entries not indexed: %s", path, exc)
        return info, []


def _fold(
    rows: list[tuple[Any, ...]], ranking: list[tuple[Any, float]]
) -> list[tuple[float, list[tuple[Any, ...]]]]:
    """The ranked groups with their rows, each group's earliest entry first.

    Rows are ``(rowid, group, timestamp, created, path, line, entry_id)``. The earliest
    entry is the original, before its copies: by time, then the older session, then path
    and line.
    """
    never = float("inf")
    members: dict[Any, list[tuple[Any, ...]]] = {}
    for row in rows:
        members.setdefault(row[1], []).append(row)

    def earliest(row: tuple[Any, ...]) -> tuple[float, float, str, int]:
        stamp = row[2] if row[2] is not None else never
        created = row[3] if row[3] is not None else never
        return (stamp, created, row[4], row[5])

    return [(score, sorted(members[key], key=earliest)) for key, score in ranking if key in members]


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
    fold: bool = True,
) -> SearchResults:
    """Full-text search over session entries (see :meth:`SessionCatalog.search`).

    Examples
    --------
    >>> hits = search('"flaky test" role:assistant -retry')  # doctest: +SKIP
    >>> hits[0].cite  # doctest: +SKIP
    '/home/me/.pi/agent/sessions/--home-me-app--/2026-…_….jsonl:42#a1b2c3d4'
    """
    with SessionCatalog(root=root) as catalog:
        return catalog.search(text, folder, limit=limit, raw=raw, fold=fold)
