"""Listing sessions with Pi's ``SessionInfo`` fields, and finding the most recent one (§2.1, §9.4)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .fieldtypes import content_flaws, text_flaw
from .lazy import listed_value, listing_reader
from .paths import sessions_root
from .store import is_valid_header, parse_line
from .tree import Problem
from .wire import js_date_ms, js_trim, js_truthy

__all__ = [
    "Progress",
    "SessionInfo",
    "list_all_sessions",
    "list_sessions",
    "most_recent_session",
    "read_session_info",
    "session_info_from_bytes",
]


#: ``progress(what, done, total)``, called as files are read (``what``: ``"listing"``, or
#: ``"indexing"`` while a search index is built).
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SessionInfo:
    """One row of a session listing (Pi's ``SessionInfo``).

    ``message_count`` counts ``message`` entries of every role on every branch, as Pi does.
    ``problems``: the fields the row was read from that hold an odd type (``odd-field``,
    with file and line); the row is Pi's either way.
    """

    path: Path
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime | None
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str
    problems: tuple[Problem, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (snake_case) for tables and frames."""
        return {
            "path": str(self.path),
            "id": self.id,
            "cwd": self.cwd,
            "name": self.name,
            "parent_session_path": self.parent_session_path,
            "created": self.created,
            "modified": self.modified,
            "message_count": self.message_count,
            "first_message": self.first_message,
        }


def _datetime(ms: int | None) -> datetime | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
    return []


# path -> ((size, mtime_ns), with text, SessionInfo), so re-listing a folder only re-reads
# changed files.
_cache: dict[Path, tuple[tuple[int, int], bool, SessionInfo | None]] = {}


def read_session_info(path: str | os.PathLike[str], *, text: bool = True) -> SessionInfo | None:
    """The :class:`SessionInfo` of one file, or ``None`` when it is not a Pi session.

    ``text=False``: without ``all_messages_text`` (see :func:`session_info_from_bytes`).
    """
    file_path = Path(path)
    try:
        stat = file_path.stat()
    except FileNotFoundError:
        return None
    key = (stat.st_size, stat.st_mtime_ns)
    cached = _cache.get(file_path)
    if cached is not None and cached[0] == key and (cached[1] or not text):
        return cached[2]
    info = _read(file_path, stat.st_mtime, text)
    _cache[file_path] = (key, text, info)
    return info


def _read(path: Path, mtime: float, text: bool) -> SessionInfo | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return session_info_from_bytes(data, path, mtime, text=text)


def session_info_from_bytes(
    data: bytes, path: Path, mtime: float, *, text: bool = True
) -> SessionInfo | None:
    """The :class:`SessionInfo` of a file's bytes (``mtime`` in seconds is the fallback
    ``modified``), or ``None`` when they are not a Pi session.

    With ``text=False`` the row's ``all_messages_text`` is left empty, and of the message
    contents only the user messages' up to the first with text are decoded: what a
    listing shows. Each line is still checked as JSON (with msgspec, the ``fast`` extra,
    without being built; otherwise parsed whole), so the rows are the same either way.
    """
    header: Any = None
    name: str | None = None
    message_count = 0
    first_message: str | None = None
    all_texts: list[str] = []
    latest = 0
    reader = listing_reader()
    parsed: list[Any] = []
    numbers: list[int] = []
    problems: list[Problem] = []

    def odd(phrases: Iterable[str | None], line_no: int) -> None:
        for phrase in phrases:
            if phrase is not None:
                problems.append(
                    Problem("odd-field", f"{phrase}; read as Pi reads it", path, line_no)
                )

    for line_no, line in enumerate(data.split(b"\n"), 1):
        row = reader(line) if reader is not None else None
        if row is None:
            parse_line(line, line_no, path, [], True, parsed, numbers)  # Pi 1.x's reader
            if not parsed:
                continue
            value = parsed.pop()
            row = _Row(value) if value.__class__ is dict else None
        if header is None:
            if row is None or row.type != "session" or row.id.__class__ is not str:
                return None
            header = row
            continue
        if row is None:
            continue
        kind = row.type
        if kind == "session_info":
            # Pi 1.x: the latest session_info decides, even when it clears the name.
            value = row.name
            name = (js_trim(value) or None) if isinstance(value, str) else None
            if not isinstance(value, str) and value is not None:
                odd([text_flaw("name", value)], line_no)
            continue
        if kind != "message":
            continue
        message_count += 1
        message = row.message
        if message is None or message.role not in ("user", "assistant"):
            continue
        if text or (first_message is None and message.role == "user"):
            content = listed_value(message.content)
            if content.__class__ is not str:
                odd(content_flaws("message.content", content), line_no)
            joined = " ".join(_texts(content))
            if joined:
                all_texts.append(joined)
                if first_message is None and message.role == "user":
                    first_message = joined
        stamp = message.timestamp
        if isinstance(stamp, int | float) and not isinstance(stamp, bool) and math.isfinite(stamp):
            activity = int(stamp)
        else:
            activity = js_date_ms(row.timestamp) or 0
        latest = max(latest, activity)
    if header is None:
        return None
    created_ms = js_date_ms(header.timestamp)
    if latest > 0:
        modified = _datetime(latest)
    elif created_ms is not None:
        modified = _datetime(created_ms)
    else:
        modified = None
    cwd = header.cwd
    parent = header.parentSession
    return SessionInfo(
        path=path,
        id=header.id,
        cwd=cwd if isinstance(cwd, str) else "",
        name=name,
        parent_session_path=parent if isinstance(parent, str) and js_truthy(parent) else None,
        created=_datetime(created_ms),
        modified=modified or datetime.fromtimestamp(mtime, tz=UTC),
        message_count=message_count,
        first_message=first_message if first_message is not None else "(no messages)",
        all_messages_text=" ".join(all_texts) if text else "",
        problems=tuple(problems),
    )


class _Row:
    """A line parsed whole, read through the listing reader's attribute names."""

    __slots__ = ("cwd", "id", "message", "name", "parentSession", "timestamp", "type")

    def __init__(self, value: dict[str, Any]) -> None:
        self.type = value.get("type")
        self.id = value.get("id")
        self.cwd = value.get("cwd")
        self.timestamp = value.get("timestamp")
        self.parentSession = value.get("parentSession")
        self.name = value.get("name")
        message = value.get("message")
        self.message = _Message(message) if message.__class__ is dict else None


class _Message:
    __slots__ = ("content", "role", "timestamp")

    def __init__(self, value: dict[str, Any]) -> None:
        self.role = value.get("role")
        self.timestamp = value.get("timestamp")
        self.content = value.get("content")


def _sorted(infos: Iterable[SessionInfo | None]) -> list[SessionInfo]:
    """Most recently active first; ties by path, last first (a stable, repeatable order)."""
    return sorted(
        (i for i in infos if i is not None), key=lambda i: (i.modified, str(i.path)), reverse=True
    )


def list_sessions(folder: str | os.PathLike[str], *, text: bool = True) -> list[SessionInfo]:
    """Sessions of one folder (a project's session directory), newest first.

    ``text=False`` leaves ``all_messages_text`` empty and reads less (a listing's rows).
    """
    directory = Path(folder)
    if not directory.is_dir():
        return []
    return _sorted(
        read_session_info(p, text=text) for p in directory.glob("*.jsonl") if p.is_file()
    )


def list_all_sessions(
    root: str | os.PathLike[str] | None = None,
    *,
    text: bool = True,
    progress: Progress | None = None,
) -> list[SessionInfo]:
    """Sessions of every project under the sessions root (``<agentDir>/sessions``), newest first.

    ``text`` as for :func:`list_sessions`; ``progress("listing", done, total)`` is called
    as files are read.
    """
    base = Path(root) if root is not None else sessions_root()
    if not base.is_dir():
        return []
    paths = [p for p in base.glob("*/*.jsonl") if p.is_file()]
    infos = []
    for done, path in enumerate(paths, 1):
        infos.append(read_session_info(path, text=text))
        if progress is not None:
            progress("listing", done, len(paths))
    return _sorted(infos)


def _header_of(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(512)
    except OSError:
        return None
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    try:
        from .wire import loads

        value = loads(first)
    except ValueError:
        return None
    return value if is_valid_header(value) else None


def most_recent_session(folder: str | os.PathLike[str], *, cwd: str | None = None) -> Path | None:
    """Pi's "continue most recent": the newest-mtime ``*.jsonl`` with a valid first line.

    With ``cwd``, only files whose header ``cwd`` resolves to it count (newer Pi, for
    shared folders).
    """
    directory = Path(folder)
    if not directory.is_dir():
        return None
    best: tuple[float, Path] | None = None
    wanted = os.path.abspath(cwd) if cwd is not None else None
    for path in directory.glob("*.jsonl"):
        header = _header_of(path)
        if header is None:
            continue
        if wanted is not None:
            header_cwd = header.get("cwd")
            if not isinstance(header_cwd, str) or os.path.abspath(header_cwd) != wanted:
                continue
        mtime = path.stat().st_mtime
        if best is None or mtime > best[0]:
            best = (mtime, path)
    return best[1] if best else None
