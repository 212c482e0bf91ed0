"""The full-text search index of session entries (SQLite FTS5, in the listing's sidecar):
built on first search, incremental, resumable, citable hits with snippets.

It also keeps the public names of the listing catalog (:mod:`pinb.analysis.catalog`)
importable from here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core.listing import Progress, SessionInfo
from ..errors import PinbError
from .catalog import (
    _SESSION_COLUMNS,
    _TEXTS,
    SCHEMA_VERSION,
    ListingCatalog,
    RefreshStats,
    SearchIndexError,
    _dt,
    _in_scope,
    _info,
    _text,
    default_index_path,
)
from .cite import Citation, IndexedEntry
from .hits import MARK_END as _MARK_END
from .hits import MARK_START as _MARK_START
from .hits import SearchHit, SearchResults
from .query import SearchQuery, parse_query, sql_filters

__all__ = [
    "SCHEMA_VERSION",
    "Citation",
    "Progress",
    "RefreshStats",
    "SearchHit",
    "SearchIndexError",
    "SearchResults",
    "SessionCatalog",
    "default_index_path",
    "list_indexed",
    "search",
]

#: Words of gone entries tolerated before the full-text index is started again.
_STALE_SLACK = 10_000
#: Files whose entries are read and written per transaction while indexing.
_ENTRY_BATCH = 20

log = logging.getLogger("pinb.analysis")


class SessionCatalog(ListingCatalog):
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
    progress:
        ``progress(what, done, total)``, called as files are read: ``"listing"`` while the
        listing rows are brought up to date, ``"indexing"`` while the search index is.

    Notes
    -----
    A listing reads what its rows show (no JSON of message contents beyond the first user
    message); the full-text index is built when a search first needs it, file by file in
    small transactions, so an interrupted build resumes with the files it had not done.

    Examples
    --------
    >>> with SessionCatalog() as catalog:  # doctest: +SKIP
    ...     hits = catalog.search("flaky test")
    """

    def _drop_words_if_stale(self) -> bool:
        """Start the full-text index again when words of entries that are gone (files
        rewritten or removed) outnumber the live ones two to one; whether it did."""
        db = self._db
        words = db.execute("SELECT count(*) FROM entry_texts_docsize").fetchone()[0]
        live = db.execute("SELECT count(*) FROM entries").fetchone()[0]
        if words <= 2 * live + _STALE_SLACK:
            return False
        with self._transaction():
            for table in ("entries", "entry_tools", "entry_files"):
                db.execute(f"DELETE FROM {table}")  # names from the code
            db.execute("DROP TABLE entry_texts")
            db.execute(_TEXTS)
            db.execute(
                "UPDATE sessions SET entries_key = NULL, entries_size = NULL,"
                " entries_lines = NULL, entries_tail = NULL"
            )
        return True

    def refresh_search(self, folder: str | os.PathLike[str] | None = None) -> RefreshStats:
        """Bring the listing and then the full-text index up to date (what a search needs).

        Only sessions whose file changed since their entries were indexed (or that were
        never indexed) are read, a few files per transaction: a build that is interrupted
        keeps what it finished and goes on from there next time.
        """
        listed = self.refresh(folder)
        stale = self._stale(folder)
        self._index_entries(stale)
        # Words of entries that are gone pile up only when files were read again or
        # removed; then (and only then: two counts of every row) they are looked at.
        if (stale or listed.removed) and self._drop_words_if_stale():
            stale = self._stale(folder)  # every file is read again
            self._index_entries(stale)
        return RefreshStats(listed.scanned, listed.updated + len(stale), listed.removed)

    def _index_entries(self, stale: list[tuple[Any, ...]]) -> None:
        """Index the entries of ``stale`` sessions (:meth:`_stale`), a batch at a time."""
        for start in range(0, len(stale), _ENTRY_BATCH):
            batch = []
            for rowid, path, key, ended in stale[start : start + _ENTRY_BATCH]:
                grown = _appended(path, *ended) if ended[0] else None
                batch.append((rowid, key, grown is not None, grown or _entries(path)))
            with self._transaction():
                for rowid, key, appended, (entries, end) in batch:
                    if not appended:
                        self._forget_entries(rowid)
                    self._insert_entries(rowid, entries)
                    self._db.execute(
                        "UPDATE sessions SET entries_key = ?, entries_size = ?,"
                        " entries_lines = ?, entries_tail = ? WHERE rowid = ?",
                        (key, *end, rowid),
                    )
            self._report("indexing", start + len(batch), len(stale))

    def _stale(self, folder: str | os.PathLike[str] | None) -> list[tuple[Any, ...]]:
        """``(rowid, path, key, (size, lines, tail))`` of the sessions in scope whose
        entries were indexed from another version of their file, or never."""
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        # The key is the listing's "size:mtime_ns", made in SQLite so an index that is up
        # to date costs one scan of the sessions' keys and no row in Python.
        return [
            (rowid, path, key, tuple(ended))
            for rowid, path, key, *ended in self._db.execute(
                "SELECT rowid, path, key, entries_size, entries_lines, entries_tail FROM"
                " (SELECT *, size || ':' || mtime_ns AS key FROM sessions WHERE is_session = 1"
                " AND path >= ? AND path < ?) WHERE entries_key IS NOT key",
                (prefix, prefix + "\U0010ffff"),
            )
            if _in_scope(path, prefix, depth)
        ]

    def _insert_entries(self, session: int, entries: Sequence[IndexedEntry]) -> None:
        db = self._db
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

    # -- search ---------------------------------------------------------------------------

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
        self.refresh_search(folder)
        query = SearchQuery(text) if raw else parse_query(text)
        if (raw and not text.strip()) or (not raw and query.empty):
            return SearchResults([], text, query, root=self.root)
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        match = _text(text) if raw else query.match()
        clauses, params = ([], []) if raw else sql_filters(query)
        # The session is in scope: under the folder, at the depth of its session files.
        # With words to match, as a set of sessions found once (a condition on the path of
        # each matching row was a quarter of a search that matches most entries), and a +
        # that keeps SQLite from reading entries by session: the search goes from its
        # matches (or from the digests of the best groups). A search of filters alone goes
        # from the sessions in scope.
        if match is not None:
            where = [
                "+e.session IN (SELECT sc.rowid FROM sessions sc WHERE sc.path >= ?"
                " AND sc.path < ? AND length(sc.path) - length(replace(sc.path, ?, '')) = ?)",
                *clauses,
            ]
        else:
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
                # Each member checked against the query on its own (FTS5 looks up one rowid):
                # a list of every match was most of this step when most entries match.
                + (" AND EXISTS (SELECT 1 FROM entry_texts WHERE entry_texts MATCH ?"
                   " AND entry_texts.rowid = e.rowid)" if match is not None else "")
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
        bodies = _bodies([(rowid, row[6], row[1]) for rowid, row in details.items()])
        if match is not None:
            snippets = self._snippets(bodies, match)
        else:
            snippets = {rowid: body[:200] for rowid, body in bodies.items()}
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

    def _snippets(self, bodies: dict[int, str], match: str) -> dict[int, str]:
        """FTS5's own snippets of the hits' texts, from a scratch table of just those."""
        db = self._db
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.hit_texts"
            " USING fts5(body, tokenize='unicode61 remove_diacritics 2')"
        )
        db.execute("DELETE FROM temp.hit_texts")
        db.executemany(
            "INSERT INTO temp.hit_texts(rowid, body) VALUES (?, ?)", list(bodies.items())
        )
        return dict(
            db.execute(
                "SELECT rowid, snippet(hit_texts, 0, ?, ?, '…', 16) FROM temp.hit_texts"
                " WHERE hit_texts MATCH ?",
                (_MARK_START, _MARK_END, match),
            ).fetchall()
        )

    def _select(
        self, sql: str, rowids: Sequence[int], before: Sequence[object] = ()
    ) -> Iterator[tuple[Any, ...]]:
        """``sql`` ending in ``… IN `` for ``rowids`` (or other keys), a few hundred at a time."""
        for start in range(0, len(rowids), 500):
            chunk = list(rowids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            yield from self._db.execute(f"{sql}({marks})", [*before, *chunk])


#: Bytes at the end of what was indexed that must be unchanged for a file to count as grown.
_TAIL = 256

_Ended = tuple[int | None, int | None, str | None]


def _end_of(data: bytes) -> _Ended:
    """Where indexed bytes end: size, lines and tail digest (``None`` s for a file whose
    last line is unterminated, which is read whole next time)."""
    if not data.endswith(b"\n"):
        return None, None, None
    return len(data), data.count(b"\n"), _digest_tail(data)


def _entries(path: str) -> tuple[list[IndexedEntry], _Ended]:
    """A session file's searchable entries (``[]`` when they cannot be read), and where
    the bytes they came from end."""
    from .cite import index_entries
    from .frames import open_session_bytes

    try:
        data = Path(path).read_bytes()
        return index_entries(open_session_bytes(data, path).entries, path), _end_of(data)
    except (PinbError, OSError, ValueError) as exc:
        # Listed (Pi lists it too), but its entries cannot be read: say so, once.
        log.warning("%s: entries not indexed: %s", path, exc)
        return [], (None, None, None)


def _appended(
    path: str, size: int, lines: int, tail: str
) -> tuple[list[IndexedEntry], _Ended] | None:
    """The entries of the lines appended to a file since ``size`` bytes of it were indexed,
    or ``None`` when it did not just grow (then it is read whole)."""
    from ..core.entries import Entry
    from ..core.store import parse_lines
    from .cite import index_entries

    try:
        with open(path, "rb") as handle:
            header = handle.readline()
            start = max(0, size - _TAIL)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return None
    kept, new = data[: size - start], data[size - start :]
    if (
        not new.endswith(b"\n")
        or len(kept) != size - start
        or hashlib.sha1(kept).hexdigest() != tail
        or not _current_header(header)
    ):
        return None
    values, numbers = parse_lines(new, Path(path), lines + 1, [])
    entries = [
        Entry(value, line)
        for value, line in zip(values, numbers, strict=True)
        if value.__class__ is dict and value.get("type") != "session"
    ]
    return index_entries(entries, path), (
        size + len(new),
        lines + new.count(b"\n"),
        _digest_tail(data),
    )


def _digest_tail(data: bytes) -> str:
    return hashlib.sha1(data[-_TAIL:]).hexdigest()


def _current_header(line: bytes) -> bool:
    """A version 3 header: the file's entries are read as they stand (no migration)."""
    from ..core.store import is_valid_header
    from ..core.wire import loads_line

    try:
        header = loads_line(line)
    except (ValueError, RecursionError):
        return False
    return is_valid_header(header) and header.get("version") == 3


def _bodies(hits: list[tuple[int, str, int]]) -> dict[int, str]:
    """The indexed text of each ``(rowid, path, line)``, read again from its line."""
    from ..core.entries import Entry
    from ..core.wire import loads_line
    from .cite import index_entries

    by_path: dict[str, list[tuple[int, int]]] = {}
    for rowid, path, line in hits:
        by_path.setdefault(path, []).append((rowid, line))
    found: dict[int, str] = {}
    for path, wanted in by_path.items():
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        for rowid, line in wanted:
            text = _line(data, line)
            if text is None:
                continue
            try:
                value = loads_line(text)
            except (ValueError, RecursionError):
                continue
            if value.__class__ is dict:
                made = index_entries([Entry(value, line)], path)
                if made:
                    found[rowid] = _text(made[0].body) or ""
    return found


def _line(data: bytes, number: int) -> memoryview | None:
    """Line ``number`` (1-based, split on ``\\n``) of ``data``, or ``None`` past the end;
    found without splitting the whole file (a search reads a few lines of each)."""
    start = 0
    find = data.find
    for _ in range(number - 1):
        start = find(b"\n", start) + 1
        if not start:
            return None
    end = find(b"\n", start)
    return memoryview(data)[start : end if end >= 0 else len(data)]


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


def list_indexed(
    folder: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    with_text: bool = False,
    progress: Progress | None = None,
) -> list[SessionInfo]:
    """Indexed listing: the same rows as ``pinb.core.listing``, fast once warm.

    ``folder`` limits to one project folder; by default every project under the root.
    ``progress`` as for :class:`SessionCatalog`.
    """
    with SessionCatalog(root=root, progress=progress) as catalog:
        return catalog.sessions(folder, with_text=with_text)


def search(
    text: str,
    folder: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    limit: int = 50,
    raw: bool = False,
    fold: bool = True,
    progress: Progress | None = None,
) -> SearchResults:
    """Full-text search over session entries (see :meth:`SessionCatalog.search`).

    The first search builds the index (``progress`` as for :class:`SessionCatalog`).

    Examples
    --------
    >>> hits = search('"flaky test" role:assistant -retry')  # doctest: +SKIP
    >>> hits[0].cite  # doctest: +SKIP
    '/home/me/.pi/agent/sessions/--home-me-app--/2026-…_….jsonl:42#a1b2c3d4'
    """
    with SessionCatalog(root=root, progress=progress) as catalog:
        return catalog.search(text, folder, limit=limit, raw=raw, fold=fold)
