"""Listing sessions with Pi's ``SessionInfo`` fields, and finding the most recent one (§2.1, §9.4)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .paths import sessions_root
from .store import is_valid_header, parse_session_bytes
from .wire import js_date_ms, js_trim, js_truthy

__all__ = [
    "SessionInfo",
    "list_all_sessions",
    "list_sessions",
    "most_recent_session",
    "read_session_info",
    "session_info_from_bytes",
]


@dataclass(frozen=True)
class SessionInfo:
    """One row of a session listing (Pi's ``SessionInfo``).

    ``message_count`` counts ``message`` entries of every role on every branch, as Pi does.
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


# (size, mtime_ns) -> SessionInfo, so re-listing a folder only re-reads changed files.
_cache: dict[Path, tuple[tuple[int, int], SessionInfo | None]] = {}


def read_session_info(path: str | os.PathLike[str]) -> SessionInfo | None:
    """The :class:`SessionInfo` of one file, or ``None`` when it is not a Pi session."""
    file_path = Path(path)
    try:
        stat = file_path.stat()
    except FileNotFoundError:
        return None
    key = (stat.st_size, stat.st_mtime_ns)
    cached = _cache.get(file_path)
    if cached is not None and cached[0] == key:
        return cached[1]
    info = _read(file_path, stat.st_mtime)
    _cache[file_path] = (key, info)
    return info


def _read(path: Path, mtime: float) -> SessionInfo | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return session_info_from_bytes(data, path, mtime)


def session_info_from_bytes(data: bytes, path: Path, mtime: float) -> SessionInfo | None:
    """The :class:`SessionInfo` of a file's bytes (``mtime`` in seconds is the fallback
    ``modified``), or ``None`` when they are not a Pi session."""
    loaded = parse_session_bytes(data, path)
    if not loaded.values or not is_valid_header(loaded.values[0]):
        return None
    header = loaded.values[0]
    name: str | None = None
    message_count = 0
    first_message: str | None = None
    all_texts: list[str] = []
    latest = 0
    for entry in loaded.values[1:]:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")
        if kind == "session_info":
            # Pi 1.x: the latest session_info decides, even when it clears the name.
            value = entry.get("name")
            name = (js_trim(value) or None) if isinstance(value, str) else None
            continue
        if kind != "message":
            continue
        message_count += 1
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        text = " ".join(_texts(message.get("content")))
        if text:
            all_texts.append(text)
        if first_message is None and message.get("role") == "user" and text:
            first_message = text
        stamp = message.get("timestamp")
        if isinstance(stamp, int | float) and not isinstance(stamp, bool) and math.isfinite(stamp):
            activity = int(stamp)
        else:
            activity = js_date_ms(entry.get("timestamp")) or 0
        latest = max(latest, activity)
    created_ms = js_date_ms(header.get("timestamp"))
    if latest > 0:
        modified = _datetime(latest)
    elif created_ms is not None:
        modified = _datetime(created_ms)
    else:
        modified = None
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    return SessionInfo(
        path=path,
        id=header["id"],
        cwd=cwd if isinstance(cwd, str) else "",
        name=name,
        parent_session_path=parent if isinstance(parent, str) and js_truthy(parent) else None,
        created=_datetime(created_ms),
        modified=modified or datetime.fromtimestamp(mtime, tz=UTC),
        message_count=message_count,
        first_message=first_message if first_message is not None else "(no messages)",
        all_messages_text=" ".join(all_texts),
    )


def _sorted(infos: Iterable[SessionInfo | None]) -> list[SessionInfo]:
    """Most recently active first; ties by path, last first (a stable, repeatable order)."""
    return sorted(
        (i for i in infos if i is not None), key=lambda i: (i.modified, str(i.path)), reverse=True
    )


def list_sessions(folder: str | os.PathLike[str]) -> list[SessionInfo]:
    """Sessions of one folder (a project's session directory), newest first."""
    directory = Path(folder)
    if not directory.is_dir():
        return []
    return _sorted(read_session_info(p) for p in directory.glob("*.jsonl") if p.is_file())


def list_all_sessions(root: str | os.PathLike[str] | None = None) -> list[SessionInfo]:
    """Sessions of every project under the sessions root (``<agentDir>/sessions``), newest first."""
    base = Path(root) if root is not None else sessions_root()
    if not base.is_dir():
        return []
    return _sorted(read_session_info(p) for p in base.glob("*/*.jsonl") if p.is_file())


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
