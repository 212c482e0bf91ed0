"""Memory values: record kinds, the record dataclass, the table layout, errors, project ids, tags."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..core.file.paths import agent_dir
from ..errors import PinbError

__all__ = [
    "DB_FILE_NAME",
    "KINDS",
    "SAVE_KINDS",
    "Embedder",
    "InjectionSettings",
    "InvalidMemoryError",
    "MemoryCorruptError",
    "MemoryLockedError",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryStoreError",
    "default_db_path",
    "fts_query",
    "normal_text",
    "normalize_tags",
    "project_id",
    "translate_errors",
]

#: Every record kind; ``observation`` marks a note proposed automatically, not yet reviewed.
KINDS = ("fact", "preference", "decision", "architecture", "note", "observation")
#: The kinds a user or the agent saves directly (observations come from auto-observation).
SAVE_KINDS = KINDS[:-1]
#: The database file inside ``<agentDir>/memory/``.
DB_FILE_NAME = "pinb-memory.sqlite"


class MemoryStoreError(PinbError):
    """The memory database cannot be used as asked.

    Attributes
    ----------
    path:
        The database file concerned.
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path is not None else message)


class MemoryCorruptError(MemoryStoreError):
    """The database file is damaged or is not a SQLite database."""


class MemoryLockedError(MemoryStoreError):
    """Another process held the database lock longer than the busy timeout."""


class MemoryNotFoundError(MemoryStoreError, KeyError):
    """No record with this id (in this project).

    Attributes
    ----------
    record_id:
        The id asked for.
    """

    def __init__(self, record_id: int, *, path: str | os.PathLike[str] | None = None) -> None:
        self.record_id = record_id
        super().__init__(f"no memory #{record_id} in this project", path=path)

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class InvalidMemoryError(MemoryStoreError, ValueError):
    """A record or request that does not make sense (empty text, unknown kind, no reason)."""


@runtime_checkable
class Embedder(Protocol):
    """Optional vector search: any object that turns texts into vectors (no download here).

    ``name`` identifies the model; vectors are stored per name, so switching models never
    mixes incomparable vectors.
    """

    name: str

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


@dataclass(frozen=True)
class MemoryRecord:
    """One remembered note, as stored.

    ``score`` is set by :meth:`MemoryStore.recall` (higher is more relevant) and is
    ``None`` elsewhere. Timestamps are ISO-8601 UTC strings as Pi writes them.
    """

    id: int
    project: str
    kind: str
    text: str
    tags: tuple[str, ...] = ()
    proposed_kind: str | None = None
    source_session: str | None = None
    source_entry: str | None = None
    source_deleted_at: str | None = None
    created_at: str = ""
    updated_at: str = ""
    deleted_at: str | None = None
    deleted_reason: str | None = None
    score: float | None = None

    @property
    def deleted(self) -> bool:
        """Whether the record was forgotten (it stays in the database, audited)."""
        return self.deleted_at is not None

    @property
    def source_deleted(self) -> bool:
        """Whether the session file this record cites was removed through pinb."""
        return self.source_deleted_at is not None

    @property
    def cite(self) -> str:
        """``memory:<id>``: a note lives in the memory database, not in a session file."""
        return f"memory:{self.id}"

    def source_cite(self) -> str | None:
        """``path:line#entry-id`` of the session entry the note was taken from (as search
        hits cite entries), or ``None`` when it names none or the file or entry is gone."""
        if not self.source_session or not self.source_entry:
            return None
        from ..core.session import Session

        try:
            entry = Session.open(self.source_session).get(self.source_entry)
        except (PinbError, OSError, ValueError):
            return None
        if entry is None or entry.line is None:
            return None
        return f"{self.source_session}:{entry.line}#{self.source_entry}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tags as a list), with :attr:`cite`."""
        data = asdict(self)
        data["tags"] = list(self.tags)
        data["cite"] = self.cite
        return data


@dataclass(frozen=True)
class InjectionSettings:
    """Whether recalled notes go into a project's system prompt, and how many."""

    project: str
    enabled: bool = False
    limit: int | None = None


_AFTER_SESSIONS = "Session files are not affected."


@contextlib.contextmanager
def translate_errors(path: Path, timeout: float) -> Iterator[None]:
    """Turn sqlite3 and OS errors into :class:`MemoryStoreError` subclasses naming ``path``."""
    try:
        yield
    except sqlite3.Error as exc:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            raise MemoryLockedError(
                f"the memory database stayed locked by another process for {timeout:g}s "
                f"({text}); retry, or close other pinb kernels. {_AFTER_SESSIONS}",
                path=path,
            ) from exc
        damaged = ("not a database", "malformed", "corrupt", "no such table", "decode")
        # DatabaseError itself (not one of its subclasses) is what SQLite says of a bad file.
        if type(exc) is sqlite3.DatabaseError or any(word in text for word in damaged):
            raise _damaged(path, text) from exc
        raise MemoryStoreError(f"memory database error: {text}", path=path) from exc
    except UnicodeDecodeError as exc:  # flipped bits in a text column or in SQLite's message
        raise _damaged(path, f"text that is not UTF-8: {exc.reason}") from exc
    except OSError as exc:
        raise MemoryStoreError(
            f"cannot use the memory database: {exc}. {_AFTER_SESSIONS}", path=path
        ) from exc


def _damaged(path: Path, why: str) -> MemoryCorruptError:
    return MemoryCorruptError(
        f"the memory database is damaged or is not a pinb memory file ({why}). "
        f"Move it aside (for example rename it to {path.name}.bad) and pinb will "
        f"start a new one. {_AFTER_SESSIONS}",
        path=path,
    )


def default_db_path() -> Path:
    """``<agentDir>/memory/pinb-memory.sqlite`` (honours ``PI_CODING_AGENT_DIR``)."""
    return agent_dir() / "memory" / DB_FILE_NAME


def project_id(cwd: str | os.PathLike[str] | None = None) -> str:
    """The project id of a working directory: a stable hash of its resolved path.

    Symbolic links are resolved, so two spellings of one folder share their notes.

    Examples
    --------
    >>> len(project_id("/tmp"))
    16
    """
    resolved = os.path.normcase(
        os.path.realpath(os.fspath(cwd if cwd is not None else os.getcwd()))
    )
    return hashlib.sha256(resolved.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def normalize_tags(tags: str | Iterable[str] | None) -> tuple[str, ...]:
    """Tags lower-cased, inner whitespace turned into ``-``, de-duplicated and sorted.

    A string is split on commas and whitespace.

    Examples
    --------
    >>> normalize_tags("CI, deploy  Build")
    ('build', 'ci', 'deploy')
    """
    if tags is None:
        return ()
    items = re.split(r"[,\s]+", tags) if isinstance(tags, str) else list(tags)
    out = {re.sub(r"\s+", "-", _valid(str(t)).strip().lower()).lstrip("#") for t in items}
    return tuple(sorted(t for t in out if t))


_TOKEN = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str, *, match_all: bool = False) -> str | None:
    """Free text as a safe FTS5 query: each word quoted, joined by ``OR`` (or ``AND``)."""
    words = list(dict.fromkeys(w.lower() for w in _TOKEN.findall(text)))
    if not words:
        return None
    return (" AND " if match_all else " OR ").join(f'"{w}"' for w in words)


def check_kind(kind: str, allowed: Sequence[str] = KINDS) -> str:
    if kind not in allowed:
        raise InvalidMemoryError(f"unknown memory kind {kind!r}; use one of {', '.join(allowed)}")
    return kind


def normal_text(text: str) -> str:
    """A note's text for spotting the same note twice: case and spacing ignored."""
    return " ".join(text.casefold().split())


def check_text(text: str) -> str:
    """The note's text, stripped; a lone surrogate (from undecodable command-line bytes or
    JSON) becomes U+FFFD, since SQLite stores only valid UTF-8."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidMemoryError("a memory needs some text")
    return _valid(text.strip())


def _valid(text: str) -> str:
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


#: The ``records`` table's columns, in :class:`MemoryRecord` order.
COLUMNS = (
    "id", "project", "kind", "text", "tags", "proposed_kind", "source_session", "source_entry",
    "source_deleted_at", "created_at", "updated_at", "deleted_at", "deleted_reason",
)  # fmt: skip

#: Version of the database layout (SQLite ``user_version``).
SCHEMA_VERSION = 1

#: The database layout, run once on a new file.
SCHEMA = f"""
CREATE TABLE projects (id TEXT PRIMARY KEY, cwd TEXT, inject INTEGER NOT NULL DEFAULT 0,
    inject_limit INTEGER, updated_at TEXT NOT NULL);
CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT, project TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ({", ".join(repr(k) for k in KINDS)})),
    text TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '', proposed_kind TEXT,
    source_session TEXT, source_entry TEXT, source_deleted_at TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT, deleted_reason TEXT);
CREATE INDEX records_by_project ON records (project, deleted_at);
CREATE INDEX records_by_source ON records (source_session);
CREATE VIRTUAL TABLE records_fts USING fts5 (text, tags, content='records', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags); END;
CREATE TRIGGER records_ad AFTER DELETE ON records BEGIN INSERT INTO records_fts
    (records_fts, rowid, text, tags) VALUES ('delete', old.id, old.text, old.tags); END;
CREATE TRIGGER records_au AFTER UPDATE OF text, tags ON records BEGIN INSERT INTO records_fts
    (records_fts, rowid, text, tags) VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO records_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags); END;
CREATE TABLE history (record_id INTEGER NOT NULL, at TEXT NOT NULL, action TEXT NOT NULL,
    kind TEXT, text TEXT, tags TEXT, detail TEXT);
CREATE INDEX history_by_record ON history (record_id);
CREATE TABLE embeddings (record_id INTEGER NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (record_id, model));
PRAGMA user_version = {SCHEMA_VERSION}
"""


def same_note(conn: sqlite3.Connection, project: str, kind: str, body: str) -> MemoryRecord | None:
    """The record of ``project`` and ``kind``, not forgotten, whose text is ``body`` (as
    :func:`normal_text` sees it), if any."""
    wanted = normal_text(body)
    rows = conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM records WHERE project = ? AND kind = ? "
        "AND deleted_at IS NULL ORDER BY id",
        (project, kind),
    )
    for row in rows:
        if normal_text(row["text"]) == wanted:
            return record_from_row(row)
    return None


def record_from_row(row: sqlite3.Row, score: float | None = None) -> MemoryRecord:
    """A :class:`MemoryRecord` from a ``records`` row (tags stored space-separated)."""
    values = {name: row[name] for name in COLUMNS}
    values["tags"] = tuple(values["tags"].split()) if values["tags"] else ()
    return MemoryRecord(**values, score=score)


def sql_filters(
    kinds: Sequence[str] | str | None, tags: str | Iterable[str] | None, alias: str = "r"
) -> tuple[str, list[Any]]:
    sql: list[str] = []
    params: list[Any] = []
    if kinds:
        wanted = [kinds] if isinstance(kinds, str) else list(kinds)
        for kind in wanted:
            check_kind(kind)
        sql.append(f"{alias}.kind IN ({', '.join('?' * len(wanted))})")
        params.extend(wanted)
    for tag in normalize_tags(tags):
        sql.append(f"instr(' ' || {alias}.tags || ' ', ?) > 0")
        params.append(f" {tag} ")
    return "".join(f" AND {s}" for s in sql), params


def with_score(record: MemoryRecord, score: float) -> MemoryRecord:
    return replace(record, score=score)


def fuse_rankings(rankings: Sequence[Sequence[MemoryRecord]], limit: int) -> list[MemoryRecord]:
    """Reciprocal-rank fusion (k = 60) of several rankings; ties broken by id."""
    fused: dict[int, float] = {}
    found: dict[int, MemoryRecord] = {}
    for ranking in rankings:
        for rank, rec in enumerate(ranking, start=1):
            fused[rec.id] = fused.get(rec.id, 0.0) + 1.0 / (60 + rank)
            found[rec.id] = rec
    order = sorted(fused, key=lambda i: (-round(fused[i], 12), i))[:limit]
    return [with_score(found[i], fused[i]) for i in order]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
