"""The full-text search index of session entries (SQLite FTS5, in the listing's sidecar):
built on first search, incremental, resumable, safe to build from several processes at
once, a cache in every path; citable hits with snippets.

It also keeps the public names of the listing catalog (:mod:`pinb.analysis.searching.catalog`)
importable from here.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from ...core.file.listing import Progress, SessionInfo
from .catalog import (
    ListingCatalog,
    RefreshStats,
    SearchIndexError,
    SearchTimeoutError,
    _dt,
    _in_scope,
    _info,
    _text,
    default_index_path,
)
from .cite import Citation, IndexedEntry
from .entrylines import appended_entries as _appended
from .entrylines import entries_of as _entries
from .entrylines import texts_at as _bodies
from .hits import OnHit, SearchHit, SearchResults, fts_snippets, mark
from .query import SearchQuery, check_raw_size, parse_query, sql_filters
from .schema import _SESSION_COLUMNS, _TEXTS, SCHEMA_VERSION
from .sidecar import LOCK_WAIT

#: How a search that scanned the files builds the index meanwhile (``SessionCatalog.build``).
How = Literal["process", "thread"]

#: The one way up, loaded by name when a search scans: the background build
#: (:mod:`pinb.analysis.searching.building`) is built on this catalog, so this module
#: cannot import it.
_BUILDING_MODULE = "pinb.analysis.searching.building"

__all__ = [
    "SCAN_ABOVE",
    "SCHEMA_VERSION",
    "SEARCH_TIMEOUT",
    "Citation",
    "Progress",
    "RefreshStats",
    "SearchHit",
    "SearchIndexError",
    "SearchResults",
    "SearchTimeoutError",
    "SessionCatalog",
    "default_index_path",
    "list_indexed",
    "search",
]

#: Words of gone entries tolerated before the full-text index is started again.
_STALE_SLACK = 10_000
#: Files whose entries are read and written per transaction while indexing.
_ENTRY_BATCH = 20
#: Seconds a search's queries may run before they are stopped (the index build, which
#: reports progress and keeps what it finished, is not counted).
SEARCH_TIMEOUT = 60.0
#: Bytes of session files left to index above which a search reads the files instead of
#: bringing the index up to date first (about a second of indexing; :mod:`.scan`).
SCAN_ABOVE = 4 << 20
#: Where a search's answer comes from (see :meth:`SessionCatalog.search`).
Using = Literal["auto", "index", "scan"]
#: Times a search brings the index up to date again when another process changed it
#: between that and the search's read.
_SETTLE = 3


class SessionCatalog(ListingCatalog):
    """Session listing and full-text search backed by a sidecar SQLite FTS5 index.

    The index lives in pinb's cache folder and is keyed by each file's size and
    modification time: a refresh re-reads only new or changed files and forgets deleted
    ones. Session files are only ever read. The index is a cache
    (:class:`~pinb.analysis.searching.catalog.ListingCatalog`): damaged, it is built again; on any
    other SQLite error the search runs on an index in memory with one warning, and gives
    the same hits.

    Parameters
    ----------
    index_path:
        The SQLite file (default :func:`default_index_path`); ``":memory:"`` for none.
    root:
        The sessions root (default ``<agentDir>/sessions``).
    progress:
        ``progress(what, done, total)``, called as files are read: ``"listing"`` while the
        listing rows are brought up to date, ``"indexing"`` while the search index is.
    lock_wait:
        Seconds to wait for another process's write to the file before going on without
        it (this time).
    build:
        How a search that scanned the files builds the index meanwhile: ``"process"`` (a
        process of its own, which outlives this one), ``"thread"`` (in this process), or
        ``None`` (not: the next search that finds little to index builds it).
    scan_above:
        Bytes of session files left to index above which a search scans the files
        instead of indexing them first (:data:`SCAN_ABOVE`).

    Notes
    -----
    A listing reads what its rows show (no JSON of message contents beyond the first user
    message); the full-text index is built when a search first needs it, file by file in
    small transactions, so an interrupted build resumes with the files it had not done.
    Several processes may build and search at once: each write re-checks what it builds
    on, and a search's statements share one read transaction. While the index lacks more
    than ``scan_above`` bytes of sessions, a search reads the files themselves
    (:mod:`pinb.analysis.searching.scan`) and the index is built in the background.

    Examples
    --------
    >>> with SessionCatalog() as catalog:  # doctest: +SKIP
    ...     hits = catalog.search("flaky test")
    """

    def __init__(
        self,
        index_path: str | os.PathLike[str] | None = None,
        root: str | os.PathLike[str] | None = None,
        *,
        progress: Progress | None = None,
        lock_wait: float = LOCK_WAIT,
        build: How | None = "process",
        scan_above: int = SCAN_ABOVE,
    ) -> None:
        super().__init__(index_path, root, progress=progress, lock_wait=lock_wait)
        self.build = build
        self.scan_above = scan_above

    def _drop_words_if_stale(self) -> bool:
        """Start the full-text index again when words of entries that are gone (files
        rewritten or removed) outnumber the live ones two to one; whether it did."""
        db = self._db

        def outnumbered() -> bool:
            words = db.execute("SELECT count(*) FROM entry_texts_docsize").fetchone()[0]
            live = db.execute("SELECT count(*) FROM entries").fetchone()[0]
            return bool(words > 2 * live + _STALE_SLACK)

        if not outnumbered():
            return False
        with self._transaction():
            if not outnumbered():  # another process started it again meanwhile
                return False
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
        """Bring the listing and then the full-text index up to date for a search of
        ``folder`` (what a search needs).

        Every session under the root is indexed, whatever the folder (and the folder's
        too, when it is not one of the root's): a hit's rank weighs its words against all
        the entries indexed, so one set of entries gives one order, from the index file
        or from a scan in memory alike. Only sessions whose file changed since their
        entries were indexed (or that were never indexed) are read, a few files per
        transaction: a build that is interrupted keeps what it finished and goes on from
        there next time.
        """
        self._begin()
        return self._guarded(lambda: self._refresh_search(folder))

    def _scopes(self, folder: str | os.PathLike[str] | None) -> list[Any]:
        """The scopes a search of ``folder`` indexes (see :meth:`refresh_search`)."""
        if folder is None:
            return [None]
        parent = os.path.dirname(os.path.normpath(os.fspath(folder)))
        return [None] if parent == os.path.normpath(os.fspath(self.root)) else [None, folder]

    def _refresh_search(
        self,
        folder: str | os.PathLike[str] | None,
        walked: list[dict[str, tuple[int, int]]] | None = None,
    ) -> RefreshStats:
        """:meth:`refresh_search`; ``walked``: each scope's files as just found."""
        scopes = self._scopes(folder)
        found = walked if walked is not None else [None] * len(scopes)
        listed = [self._refresh(scope, files) for scope, files in zip(scopes, found, strict=True)]
        stale = [row for scope in scopes for row in self._stale(scope)]
        self._index_entries(stale)
        # Words of entries that are gone pile up only when files were read again or
        # removed; then (and only then: two counts of every row) they are looked at.
        if (stale or any(s.removed for s in listed)) and self._drop_words_if_stale():
            stale = [row for scope in scopes for row in self._stale(scope)]  # all again
            self._index_entries(stale)
        total = RefreshStats(
            *(sum(getattr(s, f.name) for s in listed) for f in dataclasses.fields(RefreshStats))
        )
        return dataclasses.replace(total, updated=total.updated + len(stale))

    def _index_entries(self, stale: list[tuple[Any, ...]]) -> None:
        """Index the entries of ``stale`` sessions (:meth:`_stale`), a batch at a time.

        Each write first checks that the session's entries are still those the read
        built on: another process indexing the same file meanwhile wins, and nothing is
        added twice.
        """
        db = self._db
        for start in range(0, len(stale), _ENTRY_BATCH):
            batch = []
            for rowid, path, key, was, ended in stale[start : start + _ENTRY_BATCH]:
                grown = _appended(path, *ended) if ended[0] else None
                batch.append((rowid, path, key, was, ended, grown is not None,
                              grown or _entries(path)))  # fmt: skip
            with self._transaction():
                for rowid, path, key, was, ended, appended, read in batch:
                    now = db.execute(
                        "SELECT path, entries_key, entries_size, entries_lines, entries_tail"
                        " FROM sessions WHERE rowid = ?",
                        (rowid,),
                    ).fetchone()
                    if now is None or now[0] != path or (now[1], *now[2:]) != (was, *ended):
                        continue
                    entries, offsets, end = read
                    if not appended:
                        self._forget_entries(rowid)
                    self._insert_entries(rowid, entries, offsets)
                    db.execute(
                        "UPDATE sessions SET entries_key = ?, entries_size = ?,"
                        " entries_lines = ?, entries_tail = ? WHERE rowid = ?",
                        (key, *end, rowid),
                    )
            self._report("indexing", start + len(batch), len(stale))

    def _unindexed(
        self, folder: str | os.PathLike[str] | None
    ) -> tuple[list[dict[str, tuple[int, int]]], int, bool]:
        """The files of each scope a search of ``folder`` indexes (:meth:`_scopes`), how
        many of their bytes the index lacks (whole files it never read or that changed,
        the new bytes of files that grew), and whether it is up to date (then nothing is
        to read, list or forget before the search)."""
        db = self._db
        scopes = self._scopes(folder)
        walked = [self._walked(scope) for scope in scopes]
        # Each file's "size:mtime_ns" when its row and entries are of that version of it
        # (a row that is no session needs no entries), else NULL: one string a file.
        current = dict(
            db.execute(
                "SELECT path, CASE WHEN is_session = 0 OR entries_key = size || ':' || mtime_ns"
                " THEN size || ':' || mtime_ns END FROM sessions"
            ).fetchall()
        )
        missing, seen = 0, 0
        changed: list[tuple[str, int, int]] = []
        for files in walked:
            for path, (size, mtime) in files.items():
                state = current.get(path, False)
                if state is False:
                    missing += size  # never read
                    continue
                seen += 1
                if state != f"{size}:{mtime}":
                    changed.append((path, size, mtime))
        for path, size, mtime in changed:
            was_size, was_mtime, is_session, key, indexed = db.execute(
                "SELECT size, mtime_ns, is_session, entries_key, entries_size FROM sessions"
                " WHERE path = ?",
                (path,),
            ).fetchone()
            if not ((was_size, was_mtime) == (size, mtime) and not is_session):
                if key != f"{size}:{mtime}":
                    missing += size - indexed if indexed is not None and size >= indexed else size
        fresh = not missing and not changed
        if fresh:  # and no file the index holds is gone
            held = 0
            for base, depth in map(self._scope, scopes):
                prefix = os.path.join(os.fspath(base), "")
                held += db.execute(
                    "SELECT count(*) FROM sessions WHERE path >= ? AND path < ?"
                    " AND length(path) - length(replace(path, ?, '')) = ?",
                    (prefix, prefix + "\U0010ffff", os.sep, prefix.count(os.sep) + depth),
                ).fetchone()[0]
            fresh = held == seen
        return walked, missing, fresh

    def _stale(self, folder: str | os.PathLike[str] | None) -> list[tuple[Any, ...]]:
        """``(rowid, path, key, entries_key, (size, lines, tail))`` of the sessions in
        scope whose entries were indexed from another version of their file, or never."""
        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        # The key is the listing's "size:mtime_ns", made in SQLite so an index that is up
        # to date costs one scan of the sessions' keys and no row in Python.
        return [
            (rowid, path, key, was, tuple(ended))
            for rowid, path, key, was, *ended in self._db.execute(
                "SELECT rowid, path, key, entries_key, entries_size, entries_lines,"
                " entries_tail FROM (SELECT *, size || ':' || mtime_ns AS key FROM sessions"
                " WHERE is_session = 1 AND path >= ? AND path < ?) WHERE entries_key IS NOT key",
                (prefix, prefix + "\U0010ffff"),
            )
            if _in_scope(path, prefix, depth)
        ]

    def _insert_entries(
        self, session: int, entries: Sequence[IndexedEntry], offsets: Sequence[int | None]
    ) -> None:
        db = self._db
        for item, offset in zip(entries, offsets, strict=True):
            row = db.execute(
                "INSERT INTO entries(session, line, offset, entry_id, type, role, timestamp,"
                " digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (session, item.line, offset, _text(item.entry_id), _text(item.type),
                 _text(item.role), item.timestamp, item.digest),
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

    # -- search ---------------------------------------------------------------------------

    def search(
        self,
        text: str,
        folder: str | os.PathLike[str] | None = None,
        *,
        limit: int = 50,
        raw: bool = False,
        fold: bool = True,
        timeout: float | None = SEARCH_TIMEOUT,
        on_hit: OnHit | None = None,
        using: Using = "auto",
    ) -> SearchResults:
        """Entries matching a query, best first, each citable as ``path:line#entry-id``.

        Parameters
        ----------
        text:
            A query: words (all must occur in one entry; case- and accent-insensitive,
            whole words, ``refact*`` a prefix), ``"exact phrases"``, ``-excluded`` words,
            and ``role:``, ``tool:``, ``file:``, ``session:``, ``after:``, ``before:``
            filters (:mod:`pinb.analysis.searching.query`). ``raw=True`` passes FTS5 query syntax
            through instead (``a OR b``, ``NEAR(a b)``), without filters. At most
            :data:`~pinb.analysis.searching.query.MAX_WORDS` words.
        folder:
            Limit to one project folder (default: every project under the root).
        limit:
            At most this many hits, best first.
        fold:
            Fold repeats and fork copies (the same role and text) into one hit, the
            earliest, with the others in :attr:`SearchHit.copies`.
        timeout:
            Seconds the search's queries (or its scan) may run (``None``: no limit);
            building the index first is not counted. Ctrl-C stops a search at any point.
        on_hit:
            Called with each hit as a scan finds it, before the answer is complete (see
            ``using``); not called when the answer comes from the index.
        using:
            ``"auto"``: the index, brought up to date first, unless it lacks more than
            :attr:`scan_above` bytes of sessions (no index yet, or many new sessions):
            then the files are read (:mod:`pinb.analysis.searching.scan`): the same entries match,
            listed as the scan finds them (the sessions changed most recently first)
            without a score (:attr:`SearchResults.source` is ``"scan"``), and the index
            is built in the background (:attr:`SearchResults.building`).
            ``"index"``: the index, built first however long that takes. ``"scan"``: the
            files, and no index is built. A raw query always uses the index.

        Raises
        ------
        SearchQueryError
            A filter's value is not usable (an unknown role, a date that is not one), or
            the query has too many words or filters.
        SearchIndexError
            A raw query that FTS5 rejects.
        SearchTimeoutError
            The queries ran past ``timeout``.
        """
        query = _parsed(text, raw)
        if (raw and not text.strip()) or (not raw and query.empty):
            return SearchResults([], text, query, root=self.root)
        self._begin()
        walked: list[dict[str, tuple[int, int]]] | None = None
        fresh = False
        if not raw and using != "index":
            walked, missing, fresh = self._guarded(lambda: self._unindexed(folder))
            if using == "scan" or missing > self.scan_above:
                found = self._scanned(text, query, folder, walked[-1], limit, fold, timeout,
                                      on_hit, build=using == "auto")  # fmt: skip
                found.skipped = list(self.skipped)
                return found
        # Up to date as seen on this connection (after a fall back to memory, it is not).
        checked = self._db if fresh else None
        found = self._guarded(
            lambda: self._search(
                text, query, folder, limit, raw, fold, timeout, walked, checked is self._db
            )
        )
        found.skipped = list(self.skipped)
        return found

    def _scanned(
        self,
        text: str,
        query: SearchQuery,
        folder: str | os.PathLike[str] | None,
        walked: dict[str, tuple[int, int]],
        limit: int,
        fold: bool,
        timeout: float | None,
        on_hit: OnHit | None,
        *,
        build: bool,
    ) -> SearchResults:
        """The search answered by reading the files; the index built meanwhile."""
        from .scan import scan_search

        start_build = importlib.import_module(_BUILDING_MODULE).start_build

        base, depth = self._scope(folder)
        prefix = os.path.join(os.fspath(base), "")
        files = [(path, size, mtime) for path, (size, mtime) in walked.items()
                 if _in_scope(path, prefix, depth)]  # fmt: skip
        results = scan_search(
            text,
            query,
            files,
            root=self.root,
            limit=limit,
            fold=fold,
            timeout=timeout,
            on_hit=on_hit,
            progress=self.progress,
        )
        for item in results.skipped:  # files that could not be read after all
            self._skip(item)
        if build and self.build is not None and not self._in_memory and self.degraded is None:
            # Only a file keeps the index; one that cannot be written is not built at all.
            outside = folder if len(self._scopes(folder)) > 1 else None
            results.building = start_build(self.index_path, self.root, outside, how=self.build)
        return results

    def _search(
        self,
        text: str,
        query: SearchQuery,
        folder: str | os.PathLike[str] | None,
        limit: int,
        raw: bool,
        fold: bool,
        timeout: float | None,
        walked: list[dict[str, tuple[int, int]]] | None = None,
        fresh: bool = False,
    ) -> SearchResults:
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
        for attempt in range(_SETTLE):
            # (Up to date when the files were just looked at: nothing to bring up to date.)
            settled = fresh and attempt == 0
            if not settled:
                self._refresh_search(folder, walked if attempt == 0 else None)
            # The three queries read one state of the index: another process writing
            # between them could otherwise take away a row a later one looks up.
            with self._reading():
                if (
                    attempt < _SETTLE - 1
                    and not settled
                    and any(self._stale(s) for s in self._scopes(folder))
                ):
                    continue  # changed by another process since: bring it up to date again
                with self._watch.deadline(timeout):
                    best = self._db.execute(ranked, ranked_values).fetchall()
                    rows = list(self._select(members, [row[0] for row in best], before))
                    groups = _fold(rows, [(key, score) for key, score, _ in best])
                    details = self._details(groups)
            break
        with self._watch.deadline(timeout):
            hits = self._hits(groups, details, match)
        return SearchResults(hits, text, query, root=self.root)

    def _details(
        self, groups: list[tuple[float, list[tuple[Any, ...]]]]
    ) -> dict[int, tuple[Any, ...]]:
        """The entry and session columns of each group's first row, by rowid."""
        primaries = [group[0][0] for _, group in groups]
        return {r[0]: r for r in self._select(
            f"SELECT e.rowid, e.line, e.entry_id, e.role, e.timestamp, {_SESSION_COLUMNS}, '',"
            " e.offset FROM entries e JOIN sessions s ON s.rowid = e.session WHERE e.rowid IN ",
            primaries)}  # fmt: skip

    def _hits(
        self,
        groups: list[tuple[float, list[tuple[Any, ...]]]],
        details: dict[int, tuple[Any, ...]],
        match: str | None,
    ) -> list[SearchHit]:
        """The hits of ranked groups of rows: the earliest row of each, the rest as copies."""
        bodies = _bodies([(rowid, row[6], row[1], row[19], row[2])
                          for rowid, row in details.items()])  # fmt: skip
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
            first = details[group[0][0]]  # read in the groups' transaction: always there
            marked = snippets.get(first[0]) or ""
            copies = tuple(Citation(path(r[4]), r[5], r[6]) for r in group[1:])
            hits.append(
                SearchHit(
                    info=_info(first[5:19]),
                    line=first[1],
                    entry_id=first[2],
                    role=first[3],
                    timestamp=_dt(first[4]),
                    snippet=mark(marked),
                    score=float(score),
                    copies=copies,
                    _marked=marked,
                )
            )
        return hits

    def _snippets(self, bodies: dict[int, str], match: str) -> dict[int, str]:
        """FTS5's own snippets of the hits' texts, from a scratch table of just those."""
        return fts_snippets(self._db, bodies, match)

    def _select(
        self, sql: str, rowids: Sequence[int], before: Sequence[object] = ()
    ) -> Iterator[tuple[Any, ...]]:
        """``sql`` ending in ``… IN `` for ``rowids`` (or other keys), a few hundred at a time."""
        for start in range(0, len(rowids), 500):
            chunk = list(rowids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            yield from self._db.execute(f"{sql}({marks})", [*before, *chunk])


def _parsed(text: str, raw: bool) -> SearchQuery:
    """The query, or the error that refuses it (before the index is opened or read)."""
    if not raw:
        return parse_query(text)
    check_raw_size(text)
    if text.strip():
        _check_raw(text)
    return SearchQuery(text)


def _check_raw(text: str) -> None:
    """Refuse a raw query FTS5 cannot parse, asked of an empty table of the same shape:
    an error of the real search is then never the query's."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(_TEXTS.replace("entry_texts", "temp.entry_texts"))
        db.execute("SELECT rowid FROM entry_texts WHERE entry_texts MATCH ?", (_text(text),))
    except sqlite3.OperationalError as exc:
        raise SearchIndexError(f"bad search query {text!r}: {exc}") from exc
    finally:
        db.close()


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
    """Indexed listing: the same rows as ``pinb.core.file.listing``, fast once warm.

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
    timeout: float | None = SEARCH_TIMEOUT,
    on_hit: OnHit | None = None,
    using: Using = "auto",
) -> SearchResults:
    """Full-text search over session entries (see :meth:`SessionCatalog.search`).

    The first search of a folder reads the session files, calling ``on_hit`` with each
    hit as it is found, while the index is built in the background (a process of its
    own); later searches use the index. ``progress`` as for :class:`SessionCatalog`
    (``"scanning"`` while files are read). ``timeout``: seconds the queries (or the scan)
    may run (``None``: no limit).

    Examples
    --------
    >>> hits = search('"flaky test" role:assistant -retry')  # doctest: +SKIP
    >>> hits[0].cite  # doctest: +SKIP
    '/home/me/.pi/agent/sessions/--home-me-app--/2026-…_….jsonl:42#a1b2c3d4'
    """
    _parsed(text, raw)  # a query refused opens nothing
    with SessionCatalog(root=root, progress=progress) as catalog:
        return catalog.search(text, folder, limit=limit, raw=raw, fold=fold, timeout=timeout,
                              on_hit=on_hit, using=using)  # fmt: skip
