"""The Pi side of the importers: entries built with explicit parents, Pi-shaped messages."""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...core.migrate import new_entry_id
from ...core.paths import session_file_name, sessions_dir_for
from ...core.store import atomic_write_lines, serialize_line
from ...core.wire import parse_js_date
from ...errors import PinbError

_NAMESPACE = uuid.UUID("5b1f3c1e-7d0a-4c55-9a53-2f6e8a1d0b42")
_ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


class ImportFormatError(PinbError):
    """A file is not a transcript of the format it was imported as."""


@dataclass
class ImportResult:
    """One imported transcript.

    Attributes
    ----------
    source:
        The transcript read.
    path:
        The Pi session file written (or found already there).
    created:
        ``False`` when this transcript had been imported before (the file is left as is).
    entries:
        Entries written.
    skipped:
        Source lines not carried over, by kind (duplicates of other lines, sidechains,
        unreadable lines...), so nothing disappears unnoticed.
    """

    source: Path
    path: Path
    session_id: str
    created: bool
    entries: int
    skipped: dict[str, int] = field(default_factory=dict)


def iso(value: Any) -> str:
    """A timestamp as JavaScript's ``toISOString`` prints it (now when unreadable)."""
    ms = parse_js_date(value) if isinstance(value, str) else None
    when = datetime.fromtimestamp(ms / 1000, tz=UTC) if ms is not None else datetime.now(UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms(text: str) -> int:
    ms = parse_js_date(text)
    return ms if ms is not None else 0


def read_lines(path: Path, skipped: dict[str, int]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                skipped["unreadable line"] = skipped.get("unreadable line", 0) + 1
                continue
            if isinstance(value, dict):
                records.append(value)
            else:
                skipped["not an object"] = skipped.get("not an object", 0) + 1
    return records


class Builder:
    """Pi entries built in memory with explicit parents, then written in one go."""

    def __init__(self, seed: str) -> None:
        self.entries: list[dict[str, Any]] = []
        self.by_id: dict[str, dict[str, Any]] = {}
        self._rng = random.Random(seed)

    def make(self, kind: str, parent: str | None, timestamp: str, **fields: Any) -> dict[str, Any]:
        """A new entry with a fresh id (reserved), not yet in :attr:`entries`."""
        entry_id = new_entry_id(self.by_id, lambda: f"{self._rng.getrandbits(32):08x}")
        base = {"id": entry_id, "parentId": parent, "timestamp": timestamp}
        if kind in ("custom", "custom_message"):
            entry = {"type": kind, **fields, **base}  # Pi writes these with the payload first
        else:
            entry = {"type": kind, **base, **fields}
        self.by_id[entry_id] = entry
        return entry

    def add(self, kind: str, parent: str | None, timestamp: str, **fields: Any) -> dict[str, Any]:
        entry = self.make(kind, parent, timestamp, **fields)
        self.entries.append(entry)
        return entry

    def write(
        self, source: Path, fmt: str, source_id: str, cwd: str, created: str, out_dir: Path | None
    ) -> ImportResult:
        session_id = str(uuid.uuid5(_NAMESPACE, f"{fmt}:{source_id}"))
        origin = {"format": fmt, "path": str(source), "sessionId": source_id}
        header = {"type": "session", "version": 3, "id": session_id, "timestamp": created,
                  "cwd": cwd, "metadata": {"importedFrom": origin}}  # fmt: skip
        folder = out_dir if out_dir is not None else sessions_dir_for(cwd)
        path = folder / session_file_name(created, session_id)
        if path.exists():
            return ImportResult(source, path, session_id, False, len(self.entries))
        lines = [serialize_line(header), *(serialize_line(e) for e in self.entries)]
        atomic_write_lines(path, lines, exclusive=True)
        return ImportResult(source, path, session_id, True, len(self.entries))


def pi_usage(
    input_tokens: int, output: int, cache_read: int, cache_write: int, total: int | None = None
) -> dict[str, Any]:
    if total is None:
        total = input_tokens + output + cache_read + cache_write
    return {"input": input_tokens, "output": output, "cacheRead": cache_read,
            "cacheWrite": cache_write, "totalTokens": total, "cost": dict(_ZERO_COST)}  # fmt: skip


def user_message(parts: list[dict[str, Any]], stamp: str) -> dict[str, Any]:
    return {"role": "user", "content": parts, "timestamp": epoch_ms(stamp)}


def result_message(
    call_id: str, name: str, content: Any, error: bool, stamp: str
) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": content,
            "isError": error, "timestamp": epoch_ms(stamp)}  # fmt: skip


def assistant_message(api: str, provider: str, model: str, content: list[dict[str, Any]],
               usage: dict[str, Any], stop: str | None, stamp: str) -> dict[str, Any]:  # fmt: skip
    return {"role": "assistant", "content": content, "api": api, "provider": provider,
            "model": model, "usage": usage, "stopReason": stop, "timestamp": epoch_ms(stamp)}  # fmt: skip


class Converter:
    """What both converters share: the entries being built, skip counts, tool names."""

    def __init__(self, path: Path) -> None:
        self.skipped: dict[str, int] = {}
        self.records = read_lines(path, self.skipped)
        self.builder = Builder(str(path))
        self.tool_names: dict[str, str] = {}

    def skip(self, kind: str) -> None:
        self.skipped[kind] = self.skipped.get(kind, 0) + 1

    def compaction(
        self, parent: str | None, stamp: str, summary: str, tokens: int, details: Any = None
    ) -> str:
        """A compaction that keeps nothing verbatim: its summary replaces the history."""
        extra = {"details": details} if details is not None else {}
        entry = self.builder.add("compaction", parent, stamp, summary=summary,
                                 firstKeptEntryId="", tokensBefore=tokens, **extra)  # fmt: skip
        entry["firstKeptEntryId"] = entry["id"]  # an id found on no path before it
        return str(entry["id"])


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def thinking_block(text: str, signature: Any = None, *, redacted: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "thinking", "thinking": text}
    if signature:
        block["thinkingSignature"] = str(signature)
    if redacted:
        block["redacted"] = True
    return block


def tool_call_block(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, dict):
        arguments = {"input": arguments}
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def stop_reason(content: list[dict[str, Any]], given: str | None) -> str:
    has_calls = any(b.get("type") == "toolCall" for b in content)
    mapped = {"tool_use": "toolUse", "max_tokens": "length", "refusal": "stop"}.get(given or "")
    return mapped or ("toolUse" if has_calls else "stop")


def out_dir_path(out_dir: str | os.PathLike[str] | None) -> Path | None:
    return Path(out_dir) if out_dir is not None else None


def transcript_files(source: str | os.PathLike[str], fmt: str) -> list[Path]:
    """The transcripts meant by ``source``: a file, or the matching files below a folder."""
    path = Path(source).expanduser()
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ImportFormatError(f"{path}: no such file or folder")
    if fmt == "codex":
        found = sorted(path.rglob("rollout-*.jsonl"))
    else:
        found = sorted(p for p in path.rglob("*.jsonl")
                       if not p.name.startswith("agent-") and "subagents" not in p.parts)  # fmt: skip
    if not found:
        raise ImportFormatError(f"{path}: no {fmt} transcripts found in this folder")
    return found
