"""The Pi side of the importers: entries built with explicit parents, Pi-shaped messages.

Every file an import writes is named here (:func:`destination`): from the source's own
timestamp and id, so importing the same transcript again finds the file it wrote before
(and never writes a second file with the same session id), and checked, so no name taken
from a transcript can reach outside the destination folder.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...core.file.atomic import write_new_file
from ...core.file.paths import session_file_name, sessions_dir_for
from ...core.file.write import serialize_line
from ...core.format.entries import NAVIGATE_TYPE
from ...core.format.migrate import new_entry_id
from ...core.js.wire import parse_js_date
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
    notes:
        Other things worth saying (a sub-agent whose parent session was not found...).
    error:
        Why this transcript of a folder was not imported (``path`` is then the source and
        nothing was written); the other files of the folder still are.
    """

    source: Path
    path: Path
    session_id: str
    created: bool
    entries: int
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None


def iso_or_none(value: Any) -> str | None:
    """A timestamp as JavaScript's ``toISOString`` prints it, or ``None`` when unreadable."""
    ms = parse_js_date(value) if isinstance(value, str) else None
    if ms is None:
        return None
    try:
        when = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):  # a year Python cannot show
        return None
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso(value: Any, fallback: str | None = None) -> str:
    """:func:`iso_or_none`, else ``fallback`` (a time from the source), else the Unix epoch.

    Never the current time: a converted file must come out the same on every import.
    """
    return iso_or_none(value) or fallback or "1970-01-01T00:00:00.000Z"


def file_time(path: Path) -> str:
    """The source file's modification time: the last resort for a transcript with no date."""
    try:
        return iso(datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).isoformat())
    except (OSError, OverflowError, ValueError):
        return iso(None)


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
            except (ValueError, RecursionError):  # not JSON, or nested past what Python parses
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

    def resume_at(self, leaf: str, timestamp: str) -> dict[str, Any]:
        """Make ``leaf`` the leaf on load: an inert marker under it, as ``Session.branch`` writes.

        Pi resumes at the last line of a file and walks up from it.
        """
        return self.add(
            "custom", leaf, timestamp, customType=NAVIGATE_TYPE, data={"targetId": leaf}
        )

    def write(
        self,
        source: Path,
        fmt: str,
        source_id: str,
        cwd: str,
        created: str,
        out_dir: Path | None,
        *,
        parent_session: str | None = None,
        origin: dict[str, Any] | None = None,
    ) -> ImportResult:
        """Write the entries under a new header, unless this source was imported before."""
        session_id = pi_session_id(fmt, source_id)
        folder = import_folder(source, cwd, out_dir)
        existing = find_imported(folder, session_id)
        if existing is not None:
            return ImportResult(source, existing, session_id, False, len(self.entries))
        path = destination(folder, session_file_name(created, session_id), source)
        meta = {"format": fmt, "path": str(source), "sessionId": source_id, **(origin or {})}
        header: dict[str, Any] = {"type": "session", "version": 3, "id": session_id,
                                  "timestamp": created, "cwd": cwd}  # fmt: skip
        if parent_session is not None:
            header["parentSession"] = parent_session
        header["metadata"] = {"importedFrom": meta}
        lines = [serialize_line(header), *(serialize_line(e) for e in self.entries)]
        try:
            write_new_file(path, b"".join(lines))
        except FileExistsError:  # another import of the same source got there first
            return ImportResult(source, path, session_id, False, len(self.entries))
        return ImportResult(source, path, session_id, True, len(self.entries))


def pi_session_id(fmt: str, source_id: str) -> str:
    """The Pi session id of an imported transcript: the same for the same source, always."""
    return str(uuid.uuid5(_NAMESPACE, f"{fmt}:{source_id}"))


def find_imported(folder: Path, session_id: str) -> Path | None:
    """The file an earlier import wrote for ``session_id`` in ``folder``, if any.

    Looked up by id, whatever the time in its name, so a source whose date was read
    differently by an older pinb is still recognised.
    """
    if not folder.is_dir():
        return None
    found = sorted(folder.glob(f"*_{session_id}.jsonl"))
    return found[0] if found else None


def _check_name(name: str, source: Path, what: str) -> None:
    if (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or len(os.fsencode(name)) > 255
    ):
        shown = name if len(name) <= 80 else name[:79] + "…"
        raise ImportFormatError(
            f"{source}: the {what} {shown!r} cannot be a file name here; "
            "pass --cwd or -o to choose where the session goes"
        )


def import_folder(source: Path, cwd: str, out_dir: Path | None) -> Path:
    """The folder an import writes into: ``out_dir``, or Pi's folder for ``cwd``."""
    if out_dir is not None:
        return out_dir
    if not cwd or "\0" in cwd:
        raise ImportFormatError(
            f"{source}: no usable working directory in the transcript; pass --cwd or -o"
        )
    folder = sessions_dir_for(cwd)
    _check_name(folder.name, source, "working directory")
    return folder


def destination(folder: Path, name: str, source: Path) -> Path:
    """``folder / name``, refused unless ``name`` is one plain file name inside ``folder``."""
    _check_name(name, source, "file name")
    path = folder / name
    inside = os.path.join(os.path.realpath(folder), "")
    if not os.path.realpath(path).startswith(inside):
        raise ImportFormatError(f"{source}: {name!r} would be written outside {folder}")
    return path


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
        self.path = path
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


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


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


def is_subagent_file(path: Path, root: Path | None = None) -> bool:
    """A Claude Code sub-agent transcript: ``agent-*.jsonl`` (2.0) or under ``subagents/`` (2.1).

    With ``root``, only folders below it count (a ``subagents`` folder above is not a sign).
    """
    parts = path.relative_to(root).parts if root is not None else path.parts
    return path.name.startswith("agent-") or "subagents" in parts[:-1]


def subagent_files(source: str | os.PathLike[str]) -> list[Path]:
    """The Claude Code sub-agent transcripts below a folder (none for a single file)."""
    path = Path(source).expanduser()
    if not path.is_dir():
        return []
    return sorted(p for p in path.rglob("*.jsonl") if p.is_file() and is_subagent_file(p, path))


def transcript_files(
    source: str | os.PathLike[str], fmt: str, *, subagents: bool = False
) -> list[Path]:
    """The transcripts meant by ``source``: a file, or the matching files below a folder.

    Claude Code sub-agent files are included only with ``subagents``, after the main
    transcripts (so each one's parent session exists by the time it is linked).
    """
    path = Path(source).expanduser()
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ImportFormatError(f"{path}: no such file or folder")
    if fmt == "codex":
        found = sorted(p for p in path.rglob("rollout-*.jsonl") if p.is_file())
    else:
        every = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        found = [p for p in every if not is_subagent_file(p, path)]
        if subagents:
            found += [p for p in every if is_subagent_file(p, path)]
        elif not found and every:
            raise ImportFormatError(
                f"{path}: only Claude Code sub-agent transcripts here; "
                "import them with --include-sidechains"
            )
    if not found:
        raise ImportFormatError(f"{path}: no {fmt} transcripts found in this folder")
    return found


def not_imported(path: Path, exc: ImportFormatError) -> ImportResult:
    """The result for one file of a folder that could not be imported (the rest go on)."""
    return ImportResult(path, path, "", False, 0, error=str(exc))


def is_folder(source: str | os.PathLike[str]) -> bool:
    return Path(source).expanduser().is_dir()
