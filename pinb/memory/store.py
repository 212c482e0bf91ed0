"""The long-term memory store: project-scoped notes in one SQLite database, ranked by FTS5 BM25."""

from __future__ import annotations

import array
import contextlib
import logging
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from ..core.file.paths import iso_now
from .records import (
    COLUMNS,
    SAVE_KINDS,
    SCHEMA,
    SCHEMA_VERSION,
    Embedder,
    InjectionSettings,
    InvalidMemoryError,
    MemoryNotFoundError,
    MemoryRecord,
    MemoryStoreError,
    check_kind,
    check_text,
    cosine,
    default_db_path,
    fts_query,
    fuse_rankings,
    normalize_tags,
    project_id,
    record_from_row,
    same_note,
    sql_filters,
    translate_errors,
    with_score,
)

__all__ = ["SCHEMA_VERSION", "MemoryStore"]

log = logging.getLogger("pinb.memory")

_COLUMNS = ", ".join(COLUMNS)


class MemoryStore:
    """Project-scoped notes in one SQLite database shared by every kernel and process.

    The database uses WAL mode and a busy timeout, and every write takes the write lock
    up front (``BEGIN IMMEDIATE``), so concurrent writers queue instead of failing. A
    connection is opened per operation, so a store may be shared by threads and survives
    ``fork``. The store never reads or writes session files.

    Parameters
    ----------
    path:
        The database file; default :func:`default_db_path`. Created on first use.
    timeout:
        Seconds to wait for another process's lock before ``MemoryLockedError``.
    embedder:
        Optional :class:`Embedder` enabling ``recall(method="embedding" | "hybrid")``.

    Examples
    --------
    >>> store = MemoryStore(tmp_path / "memory.sqlite")  # doctest: +SKIP
    >>> note = store.save("We deploy with tox", kind="decision")  # doctest: +SKIP
    >>> [r.id for r in store.recall("deploying")] == [note.id]  # doctest: +SKIP
    True
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        timeout: float = 10.0,
        embedder: Embedder | None = None,
    ) -> None:
        self._path = Path(path) if path is not None else default_db_path()
        self.timeout = timeout
        self.embedder = embedder
        self._ready = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<MemoryStore {self._path}>"

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    # -- connections ----------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """The database file exists and is not to be written: no write permission bit, or
        none for this process (notes can still be listed and recalled)."""
        try:
            mode = self._path.stat().st_mode
        except OSError:
            return False
        return not mode & 0o222 or not os.access(self._path, os.W_OK)

    def _open(self) -> sqlite3.Connection:
        if self.read_only:
            return self._open_read_only()
        self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self._path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if not self._ready:  # WAL is a property of the file: set once, then kept
                self._use_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_read_only(self) -> sqlite3.Connection:
        """A connection that never writes: SQLite's read-only mode, else an immutable view.

        A WAL database needs its ``-shm`` file to be writable even for reading; where it
        is not (a read-only folder), the file is read as it stands (``immutable=1``).
        """
        uri = "file:" + urllib.parse.quote(os.fspath(self._path.absolute()))
        for mode in ("?mode=ro", "?mode=ro&immutable=1"):
            conn = sqlite3.connect(
                uri + mode, uri=True, timeout=self.timeout, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
            conn.row_factory = sqlite3.Row
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.OperationalError:
                conn.close()
                if "immutable" in mode:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL, waiting while another process holds it.

        Two processes opening a new database at once: switching the journal needs the
        file to itself, and SQLite answers "database is locked" at once instead of calling
        the busy handler; so wait and try again, up to the store's timeout.
        """
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _ensure_schema(self) -> None:
        with self._lock:
            if self._ready:
                return
            with self._transaction(write=not self.read_only, ready=True) as conn:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise MemoryStoreError(
                        f"the memory database was made by a newer pinb (schema {version}, "
                        f"this pinb knows {SCHEMA_VERSION}); upgrade pinb",
                        path=self._path,
                    )
                if version == 0 and self.read_only:
                    raise MemoryStoreError(
                        "the memory database is read-only and holds no pinb notes yet",
                        path=self._path,
                    )
                if version == 0:
                    statement = ""
                    for line in SCHEMA.splitlines(keepends=True):
                        statement += line
                        if sqlite3.complete_statement(statement):
                            conn.execute(statement)
                            statement = ""
                    conn.execute(statement)
            self._ready = True

    @contextlib.contextmanager
    def _transaction(self, *, write: bool, ready: bool = False) -> Iterator[sqlite3.Connection]:
        if not ready:
            self._ensure_schema()
        if write and self.read_only:
            raise MemoryStoreError(
                "the memory database is read-only: its notes can be listed and recalled, "
                "not changed (make the file writable to save, forget or edit notes)",
                path=self._path,
            )
        with translate_errors(self._path, self.timeout):
            conn = self._open()
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                conn.close()

    # -- projects -------------------------------------------------------------------------

    def ensure_project(self, cwd: str | os.PathLike[str] | None = None) -> str:
        """Register ``cwd`` (default: the current directory) and return its project id."""
        pid = project_id(cwd)
        if self.read_only:  # registering is bookkeeping; reading a read-only store needs none
            return pid
        where = os.path.realpath(os.fspath(cwd if cwd is not None else os.getcwd()))
        with self._transaction(write=True) as conn:
            conn.execute(
                "INSERT INTO projects (id, cwd, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET cwd = excluded.cwd",
                (pid, where, iso_now()),
            )
        return pid

    def injection(self, project: str | None = None) -> InjectionSettings:
        """Whether prompt injection is on for ``project`` (off unless the user enabled it)."""
        pid = project if project is not None else project_id()
        with self._transaction(write=False) as conn:
            row = conn.execute(
                "SELECT inject, inject_limit FROM projects WHERE id = ?", (pid,)
            ).fetchone()
        if row is None:
            return InjectionSettings(pid)
        return InjectionSettings(pid, bool(row["inject"]), row["inject_limit"])

    def set_injection(
        self, enabled: bool, *, project: str | None = None, limit: int | None = None
    ) -> InjectionSettings:
        """Persist prompt injection on or off for ``project`` (default: the current one).

        ``limit`` caps the notes injected; ``None`` keeps the previous cap.
        """
        if limit is not None and limit < 1:
            raise InvalidMemoryError("the injection limit must be at least 1")
        pid = project if project is not None else self.ensure_project()
        with self._transaction(write=True) as conn:
            conn.execute(
                "INSERT INTO projects (id, inject, inject_limit, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET inject = excluded.inject, "
                "inject_limit = coalesce(excluded.inject_limit, projects.inject_limit), "
                "updated_at = excluded.updated_at",
                (pid, int(bool(enabled)), limit, iso_now()),
            )
        return self.injection(pid)

    # -- records --------------------------------------------------------------------------

    def save(self, text: str, **fields: Any) -> MemoryRecord:
        """Store a note and return it; as :meth:`save_once`, without the ``created`` flag."""
        return self.save_once(text, **fields)[0]

    def save_once(
        self,
        text: str,
        *,
        project: str | None = None,
        kind: str = "note",
        tags: str | Iterable[str] | None = None,
        source_session: str | os.PathLike[str] | None = None,
        source_entry: str | None = None,
        proposed_kind: str | None = None,
    ) -> tuple[MemoryRecord, bool]:
        """Store a new note; return it and ``True`` (or the same note and ``False``).

        Parameters
        ----------
        text:
            The note (stripped; must not be empty).
        project:
            Project id (:func:`project_id`); default the current directory's project.
        kind:
            One of :data:`KINDS`; ``tags`` as in :func:`normalize_tags`.
        source_session, source_entry:
            The session file and entry id the note came from, when any.
        proposed_kind:
            For an ``observation``: the kind it would be promoted to.

        A note of the same kind whose text differs only in case and spacing, not forgotten,
        in the same project, is not stored twice: it gets the new tags and is returned.

        Raises
        ------
        InvalidMemoryError
            Empty text or an unknown kind.
        MemoryStoreError
            The database cannot be used (damaged, locked too long, unwritable).
        """
        body = check_text(text)
        check_kind(kind)
        if proposed_kind is not None:
            check_kind(proposed_kind, SAVE_KINDS)
        pid = project if project is not None else self.ensure_project()
        now = iso_now()
        source = os.path.abspath(os.fspath(source_session)) if source_session else None
        with self._transaction(write=True) as conn:
            same = same_note(conn, pid, kind, body)
            if same is not None:
                merged = " ".join(normalize_tags([*same.tags, *normalize_tags(tags)]))
                conn.execute(
                    "UPDATE records SET tags = ?, updated_at = ? WHERE id = ?",
                    (merged, now, same.id),
                )
                row = conn.execute(f"SELECT {_COLUMNS} FROM records WHERE id = ?", (same.id,))
                return record_from_row(row.fetchone()), False
            cursor = conn.execute(
                "INSERT INTO records (project, kind, text, tags, proposed_kind, source_session, "
                "source_entry, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    pid,
                    kind,
                    body,
                    " ".join(normalize_tags(tags)),
                    proposed_kind,
                    source,
                    source_entry,
                    now,
                    now,
                ),
            )
            record_id = cursor.lastrowid
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM records WHERE id = ?", (record_id,)
            ).fetchone()
        record = record_from_row(row)
        if self.embedder is not None:
            try:
                self._store_vectors([record])
            except Exception as exc:  # the note is saved; the vector is filled in at recall
                log.warning("%s: embedding memory #%s failed: %s", self._path, record.id, exc)
        return record, True

    def get(self, record_id: int, *, project: str | None = None) -> MemoryRecord:
        """The record ``record_id`` (forgotten ones included).

        Raises
        ------
        MemoryNotFoundError
            No such id, or it belongs to another project than ``project``.
        """
        with self._transaction(write=False) as conn:
            return record_from_row(self._row(conn, record_id, project))

    def _row(self, conn: sqlite3.Connection, record_id: int, project: str | None) -> sqlite3.Row:
        row: sqlite3.Row | None = conn.execute(
            f"SELECT {_COLUMNS} FROM records WHERE id = ?", (int(record_id),)
        ).fetchone()
        if row is None or (project is not None and row["project"] != project):
            raise MemoryNotFoundError(record_id, path=self._path)
        return row

    def records(
        self,
        project: str | None = None,
        *,
        kinds: Sequence[str] | str | None = None,
        tags: str | Iterable[str] | None = None,
        include_deleted: bool = False,
        all_projects: bool = False,
        limit: int | None = None,
    ) -> list[MemoryRecord]:
        """Records newest first (by update time, then id), optionally filtered.

        ``tags`` keeps records carrying every tag given; ``kinds`` any of the kinds.
        """
        where, params = sql_filters(kinds, tags)
        if not all_projects:
            where += " AND r.project = ?"
            params.append(project if project is not None else project_id())
        if not include_deleted:
            where += " AND r.deleted_at IS NULL"
        sql = (
            f"SELECT {_COLUMNS} FROM records r WHERE 1 = 1{where} "
            "ORDER BY r.updated_at DESC, r.id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        with self._transaction(write=False) as conn:
            return [record_from_row(row) for row in conn.execute(sql, params)]

    def recall(
        self,
        query: str,
        *,
        project: str | None = None,
        kinds: Sequence[str] | str | None = None,
        tags: str | Iterable[str] | None = None,
        limit: int = 10,
        method: Literal["fts", "embedding", "hybrid"] = "fts",
        match_all: bool = False,
    ) -> list[MemoryRecord]:
        """The live records of a project that best match ``query``, most relevant first.

        Parameters
        ----------
        query:
            Free text; every word is searched (stemmed), punctuation is ignored. Empty
            text returns the newest records.
        kinds, tags:
            Filters, as in :meth:`records`.
        limit:
            At most this many records.
        method:
            ``"fts"``: SQLite FTS5 BM25 (text weighs twice as much as tags).
            ``"embedding"``: cosine similarity with the store's :class:`Embedder`.
            ``"hybrid"``: reciprocal-rank fusion of both.
        match_all:
            Require every word (default: any word, ranked).

        Returns
        -------
        list of MemoryRecord
            With ``score`` set, higher meaning more relevant. Ties are broken by id,
            oldest first, so the order is deterministic.
        """
        pid = project if project is not None else project_id()
        limit = max(0, int(limit))
        if method == "fts":
            return self._recall_fts(query, pid, kinds, tags, limit, match_all)
        if self.embedder is None:
            raise InvalidMemoryError(
                f"recall method {method!r} needs an embedder; pass MemoryStore(embedder=...)"
            )
        if method == "embedding":
            return self._recall_vectors(query, pid, kinds, tags, limit)
        if method != "hybrid":
            raise InvalidMemoryError(f"unknown recall method {method!r}")
        depth = max(limit * 4, 20)
        by_text = self._recall_fts(query, pid, kinds, tags, depth, match_all)
        return fuse_rankings([by_text, self._recall_vectors(query, pid, kinds, tags, depth)], limit)

    def _recall_fts(
        self,
        query: str,
        pid: str,
        kinds: Sequence[str] | str | None,
        tags: str | Iterable[str] | None,
        limit: int,
        match_all: bool,
    ) -> list[MemoryRecord]:
        match = fts_query(query, match_all=match_all)
        if match is None:
            return self.records(pid, kinds=kinds, tags=tags, limit=limit)
        where, params = sql_filters(kinds, tags)
        columns = ", ".join(f"r.{c}" for c in COLUMNS)
        sql = (
            f"SELECT {columns}, bm25(records_fts, 2.0, 1.0) AS rank FROM records_fts "
            "JOIN records r ON r.id = records_fts.rowid "
            f"WHERE records_fts MATCH ? AND r.project = ? AND r.deleted_at IS NULL{where} "
            "ORDER BY rank ASC, r.id ASC LIMIT ?"
        )
        with self._transaction(write=False) as conn:
            rows = conn.execute(sql, [match, pid, *params, limit]).fetchall()
        # FTS5's bm25() is negative (lower is better); callers see higher = better.
        return [record_from_row(row, -row["rank"]) for row in rows]

    def _recall_vectors(
        self,
        query: str,
        pid: str,
        kinds: Sequence[str] | str | None,
        tags: str | Iterable[str] | None,
        limit: int,
    ) -> list[MemoryRecord]:
        assert self.embedder is not None
        candidates = self.records(pid, kinds=kinds, tags=tags)
        if not candidates or not query.strip():
            return candidates[:limit]
        vectors = self._store_vectors(candidates)
        target = list(self.embedder.embed([query])[0])
        scored = [(cosine(target, vectors[rec.id]), rec) for rec in candidates]
        scored.sort(key=lambda item: (-round(item[0], 9), item[1].id))
        return [with_score(rec, score) for score, rec in scored[:limit]]

    def _store_vectors(self, records: Sequence[MemoryRecord]) -> dict[int, list[float]]:
        """Vectors of ``records`` for the current embedder, computing the missing ones."""
        assert self.embedder is not None
        model = self.embedder.name
        ids = [rec.id for rec in records]
        vectors: dict[int, list[float]] = {}
        with self._transaction(write=False) as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                rows = conn.execute(
                    f"SELECT record_id, vector FROM embeddings WHERE model = ? "
                    f"AND record_id IN ({', '.join('?' * len(chunk))})",
                    [model, *chunk],
                )
                for row in rows:
                    vectors[row["record_id"]] = array.array("d", row["vector"]).tolist()
        missing = [rec for rec in records if rec.id not in vectors]
        if missing:
            computed = self.embedder.embed([rec.text for rec in missing])
            with self._transaction(write=True) as conn:
                for rec, vector in zip(missing, computed, strict=True):
                    values = [float(x) for x in vector]
                    vectors[rec.id] = values
                    conn.execute(
                        "INSERT OR REPLACE INTO embeddings (record_id, model, vector) "
                        "VALUES (?, ?, ?)",
                        (rec.id, model, array.array("d", values).tobytes()),
                    )
        return vectors

    def edit(
        self,
        record_id: int,
        *,
        text: str | None = None,
        kind: str | None = None,
        tags: str | Iterable[str] | None = None,
        project: str | None = None,
    ) -> MemoryRecord:
        """Change a record's text, kind or tags; the previous version goes to :meth:`history`.

        Raises
        ------
        MemoryNotFoundError
            No such id (in ``project``, when given).
        InvalidMemoryError
            Empty text, unknown kind, or a forgotten record.
        """
        return self._change(record_id, "edit", text=text, kind=kind, tags=tags, project=project)

    def promote(
        self,
        record_id: int,
        kind: str | None = None,
        *,
        text: str | None = None,
        project: str | None = None,
    ) -> MemoryRecord:
        """Accept an ``observation``: give it a real kind (default: the one it proposed).

        Raises
        ------
        InvalidMemoryError
            The record is not an observation, or ``kind`` is not a savable kind.
        """
        if kind is not None:
            check_kind(kind, SAVE_KINDS)
        return self._change(record_id, "promote", text=text, kind=kind, project=project)

    def _change(
        self,
        record_id: int,
        action: str,
        *,
        text: str | None = None,
        kind: str | None = None,
        tags: str | Iterable[str] | None = None,
        project: str | None = None,
    ) -> MemoryRecord:
        body = check_text(text) if text is not None else None
        if kind is not None:
            check_kind(kind)
        with self._transaction(write=True) as conn:
            row = self._row(conn, record_id, project)
            if row["deleted_at"] is not None:
                raise InvalidMemoryError(
                    f"memory #{record_id} was forgotten; restore it before changing it",
                    path=self._path,
                )
            if action == "promote":
                if row["kind"] != "observation":
                    raise InvalidMemoryError(
                        f"memory #{record_id} is a {row['kind']}, not an observation; "
                        "use edit to change its kind",
                        path=self._path,
                    )
                kind = kind or row["proposed_kind"] or "note"
            new_tags = " ".join(normalize_tags(tags)) if tags is not None else row["tags"]
            self._log(conn, row, action)
            conn.execute(
                "UPDATE records SET text = ?, kind = ?, tags = ?, updated_at = ? WHERE id = ?",
                (body or row["text"], kind or row["kind"], new_tags, iso_now(), row["id"]),
            )
            return record_from_row(self._row(conn, row["id"], None))

    def forget(self, record_id: int, reason: str, *, project: str | None = None) -> MemoryRecord:
        """Soft-delete a record with a reason: it leaves recall but stays in the database.

        Raises
        ------
        InvalidMemoryError
            No reason given, or the record was already forgotten.
        MemoryNotFoundError
            No such id (in ``project``, when given).
        """
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidMemoryError("forgetting needs a reason (it is kept for the audit)")
        with self._transaction(write=True) as conn:
            row = self._row(conn, record_id, project)
            if row["deleted_at"] is not None:
                raise InvalidMemoryError(
                    f"memory #{record_id} was already forgotten on {row['deleted_at']} "
                    f"({row['deleted_reason']})",
                    path=self._path,
                )
            now = iso_now()
            self._log(conn, row, "forget", detail=reason.strip())
            conn.execute(
                "UPDATE records SET deleted_at = ?, deleted_reason = ?, updated_at = ? WHERE id = ?",
                (now, reason.strip(), now, row["id"]),
            )
            return record_from_row(self._row(conn, row["id"], None))

    def history(self, record_id: int) -> list[dict[str, Any]]:
        """Earlier versions and audit events of a record, oldest first."""
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT at, action, kind, text, tags, detail FROM history WHERE record_id = ? "
                "ORDER BY rowid",
                (int(record_id),),
            ).fetchall()
        return [dict(row) for row in rows]

    def _log(
        self, conn: sqlite3.Connection, row: sqlite3.Row, action: str, *, detail: str | None = None
    ) -> None:
        conn.execute(
            "INSERT INTO history (record_id, at, action, kind, text, tags, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (row["id"], iso_now(), action, row["kind"], row["text"], row["tags"], detail),
        )

    def mark_source_deleted(
        self, session_path: str | os.PathLike[str], *, restored: bool = False
    ) -> int:
        """Flag every record citing ``session_path`` as having lost its source; the count.

        The records keep their text and the path they cite. ``restored=True`` clears the
        flag again (the session came back from the trash).
        """
        raw = os.fspath(session_path)
        spellings = sorted({raw, os.path.abspath(raw), os.path.realpath(raw)})
        marks = ", ".join("?" * len(spellings))
        if restored:
            sql = "UPDATE records SET source_deleted_at = NULL WHERE source_deleted_at IS NOT NULL"
            params: list[Any] = []
        else:
            sql = "UPDATE records SET source_deleted_at = ? WHERE source_deleted_at IS NULL"
            params = [iso_now()]
        with self._transaction(write=True) as conn:
            cursor = conn.execute(f"{sql} AND source_session IN ({marks})", [*params, *spellings])
            return cursor.rowcount
