"""Claude Code transcripts (``~/.claude/projects/*/*.jsonl``) as Pi session files."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._pi import (
    Converter,
    ImportFormatError,
    ImportResult,
    as_dict,
    as_int,
    as_str,
    assistant_message,
    file_time,
    find_imported,
    import_folder,
    is_folder,
    iso,
    iso_or_none,
    not_imported,
    out_dir_path,
    pi_session_id,
    pi_usage,
    result_message,
    stop_reason,
    text_block,
    thinking_block,
    tool_call_block,
    transcript_files,
    user_message,
)

__all__ = ["import_claude"]


def _claude_image(block: dict[str, Any]) -> dict[str, Any]:
    source = as_dict(block.get("source"))
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return {"type": "image", "data": source["data"], "mimeType": source.get("media_type", "")}
    return text_block(f"[image: {source.get('url', 'unavailable')}]")


def _claude_parts(content: Any) -> list[dict[str, Any]]:
    """User-side text and image blocks in Pi's shape."""
    if isinstance(content, str):
        return [text_block(content)]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(text_block(block["text"]))
        elif block.get("type") == "image":
            parts.append(_claude_image(block))
    return parts


def _claude_assistant_blocks(content: Any, tool_names: dict[str, str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            blocks.append(text_block(str(block.get("text", ""))))
        elif kind == "thinking":
            blocks.append(thinking_block(str(block.get("thinking", "")), block.get("signature")))
        elif kind == "redacted_thinking":
            blocks.append(thinking_block("", str(block.get("data", "")), redacted=True))
        elif kind in ("tool_use", "server_tool_use"):
            call_id, name = str(block.get("id", "")), str(block.get("name", ""))
            tool_names[call_id] = name
            blocks.append(tool_call_block(call_id, name, block.get("input")))
    return blocks


def _claude_usage(record: dict[str, Any]) -> dict[str, Any]:
    raw = as_dict(record["message"].get("usage"))
    usage = pi_usage(as_int(raw.get("input_tokens")), as_int(raw.get("output_tokens")),
                   as_int(raw.get("cache_read_input_tokens")),
                   as_int(raw.get("cache_creation_input_tokens")))  # fmt: skip
    if isinstance(record.get("costUSD"), int | float):
        usage["cost"]["total"] = record["costUSD"]
    return usage


_MESSAGE_KINDS = ("user", "assistant", "system")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TITLE_KINDS = {"custom-title": "customTitle", "ai-title": "aiTitle"}


def _source_parent(record: dict[str, Any]) -> Any:
    """The uuid a line hangs on; a compact boundary's logical parent is the line before it."""
    if record.get("subtype") == "compact_boundary" and isinstance(
        record.get("logicalParentUuid"), str
    ):
        return record["logicalParentUuid"]
    return record.get("parentUuid")


@dataclass
class _Found:
    """What a transcript says about itself, besides its messages."""

    session_id: str = ""
    agent_id: str | None = None
    cwd: str = ""
    created: str | None = None
    title: str | None = None
    leaf: dict[str, Any] | None = None  # the last line of the conversation, in file order


class _Claude(Converter):
    """One Claude Code transcript, converted parents first.

    Lines are converted in file order, except that a line's ancestors (by ``parentUuid``)
    always come before it: real files can list a child before its parent. A line that is
    not converted (``attachment``, ``progress``, a left-out sidechain...) is walked
    through, so its children hang on its nearest converted ancestor and the conversation
    stays one chain.
    """

    def __init__(self, path: Path, include_sidechains: bool) -> None:
        super().__init__(path)
        self.include_sidechains = include_sidechains
        self.ids: dict[str, str | None] = {}  # converted uuid -> Pi entry id its children hang on
        self.by_uuid: dict[str, dict[str, Any]] = {}
        self.by_message_id: dict[str, dict[str, Any]] = {}
        self.last_stamp: str | None = None
        for record in self.records:
            uid = record.get("uuid")
            if isinstance(uid, str):
                self.by_uuid.setdefault(uid, record)
            if record.get("type") == "assistant":
                # Every call's name up front: a result listed before its call still gets it.
                content = as_dict(record.get("message")).get("content")
                _claude_assistant_blocks(content, self.tool_names)
        lines = [r for r in self.records if r.get("type") in _MESSAGE_KINDS and "uuid" in r]
        self.subagent = bool(lines) and all(r.get("isSidechain") for r in lines)

    def pi_parent(self, record: dict[str, Any], *, count: bool = True) -> str | None:
        """The Pi entry ``record`` hangs on: its parent's, walking up through lines left out."""
        parent, seen = _source_parent(record), set()
        while isinstance(parent, str):
            if parent in self.ids:
                return self.ids[parent]
            above = self.by_uuid.get(parent)
            if above is None or parent in seen:
                if count:
                    self.skip("parent missing (made a root)" if above is None else "parent cycle")
                return None
            seen.add(parent)
            parent = _source_parent(above)
        return None

    def ordered(self) -> Iterator[dict[str, Any]]:
        """The lines in file order, each one's ancestors moved before it."""
        emitted: set[int] = set()
        for record in self.records:
            chain: list[dict[str, Any]] = []
            current: dict[str, Any] | None = record
            while current is not None and id(current) not in emitted:
                emitted.add(id(current))  # also guards against cycles
                chain.append(current)
                parent = _source_parent(current)
                current = self.by_uuid.get(parent) if isinstance(parent, str) else None
            yield from reversed(chain)

    def survey(self) -> _Found:
        """Ids, titles, the working directory and the leaf, read in file order.

        The leaf is the last line in file order that no other line hangs on: normally the
        file's last line, and still the conversation's end when a child was listed first.
        """
        found = _Found()
        titles: dict[str, str] = {}
        summaries: list[tuple[str, Any]] = []
        links = [v for r in self.records for v in (_source_parent(r), r.get("parentUuid"))]
        parents = {v for v in links if isinstance(v, str)}
        for record in self.records:
            kind = record.get("type")
            found.session_id = found.session_id or as_str(record.get("sessionId")) or ""
            if isinstance(record.get("agentId"), str):
                found.agent_id = found.agent_id or record["agentId"]
            if kind in _TITLE_KINDS and isinstance(record.get(_TITLE_KINDS[kind]), str):
                titles[kind] = record[_TITLE_KINDS[kind]]  # the latest of each kind wins
            elif kind == "summary" and isinstance(record.get("summary"), str):
                summaries.append((record["summary"], record.get("leafUuid")))
            if not isinstance(record.get("uuid"), str):
                continue
            if isinstance(record.get("cwd"), str) and not found.cwd:
                found.cwd = record["cwd"]
            found.created = found.created or iso_or_none(record.get("timestamp"))
            if (self.subagent or not record.get("isSidechain")) and record["uuid"] not in parents:
                found.leaf = record
        # Claude Code also writes summaries of other sessions; ours name a line in this file.
        own = [text for text, leaf in summaries if leaf in self.by_uuid]
        found.title = (
            titles.get("custom-title") or titles.get("ai-title") or (own[-1] if own else None)
        )
        return found

    def run(self) -> _Found:
        found = self.survey()
        if self.subagent and not self.include_sidechains:
            raise ImportFormatError(
                f"{self.path}: a Claude Code sub-agent transcript (only sidechain lines); "
                "import it with --include-sidechains, as a fork linked to its parent session"
            )
        for record in self.ordered():
            kind, uid = record.get("type"), record.get("uuid")
            if kind in _TITLE_KINDS or kind == "summary":
                continue  # read by survey()
            if kind not in _MESSAGE_KINDS:
                self.skip(str(kind) if kind is not None else "line without a type")
            elif not isinstance(uid, str):
                self.skip(f"{kind} line without a uuid")
            elif uid in self.ids or self.by_uuid.get(uid) is not record:
                self.skip("duplicate line")
            elif record.get("isSidechain") and not self.include_sidechains:
                self.skip("sidechain")
            else:
                self.ids[uid] = self.convert(record, kind, self.pi_parent(record))
        if not self.builder.entries:
            raise ImportFormatError(
                f"{self.path}: no Claude Code messages found (is this a transcript?)"
            )
        return found

    def leaf_id(self, found: _Found) -> str | None:
        """The Pi entry standing for the source's last line (walking up if it was left out)."""
        leaf = found.leaf
        if leaf is None:
            return None
        uid = leaf.get("uuid")
        if isinstance(uid, str) and uid in self.ids:
            return self.ids[uid]
        return self.pi_parent(leaf, count=False)

    def convert(self, record: dict[str, Any], kind: str, parent: str | None) -> str | None:
        stamp = iso(record.get("timestamp"), self.last_stamp)
        self.last_stamp = stamp
        message = as_dict(record.get("message"))
        if kind == "system":
            if record.get("subtype") == "compact_boundary":
                meta = as_dict(record.get("compactMetadata"))
                details = {"source": "claude-code", "trigger": meta.get("trigger")}
                return self.compaction(parent, stamp, "", as_int(meta.get("preTokens")), details)
            data = {k: record[k] for k in ("subtype", "content", "level") if k in record}
            entry = self.builder.add("custom", parent, stamp, customType="claude-code/system",
                                     data=data)  # fmt: skip
            return str(entry["id"])
        if kind == "assistant":
            return self.assistant(record, message, parent, stamp)
        content = message.get("content")
        if record.get("isCompactSummary"):
            text = "\n".join(b["text"] for b in _claude_parts(content) if b["type"] == "text")
            target = self.builder.by_id.get(parent) if parent else None
            if target is not None and target["type"] == "compaction" and not target["summary"]:
                target["summary"] = text  # the summary that follows a compact boundary
                return parent
            return self.compaction(parent, stamp, text, 0)
        current = parent
        blocks = content if isinstance(content, list) else []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                call_id = str(block.get("tool_use_id", ""))
                name = self.tool_names.get(call_id, "unknown")
                result = result_message(call_id, name, _claude_parts(block.get("content")),
                                 bool(block.get("is_error")), stamp)  # fmt: skip
                current = self.builder.add("message", current, stamp, message=result)["id"]
        parts = _claude_parts(content)
        if parts or not blocks:
            current = self.builder.add(
                "message", current, stamp, message=user_message(parts, stamp)
            )["id"]
        return current

    def assistant(
        self, record: dict[str, Any], message: dict[str, Any], parent: str | None, stamp: str
    ) -> str | None:
        blocks = _claude_assistant_blocks(message.get("content"), self.tool_names)
        message_id = message.get("id")
        previous = self.by_message_id.get(message_id) if isinstance(message_id, str) else None
        if previous is not None and self._above(previous["id"], parent):
            # One API response written over several lines: one Pi assistant message. Children
            # hang on the line's own parent, so interleaved tool results stay one chain.
            pi = previous["message"]
            pi["content"].extend(blocks)
            pi["usage"] = _claude_usage(record)
            pi["stopReason"] = stop_reason(pi["content"], message.get("stop_reason"))
            return parent
        stop = stop_reason(blocks, message.get("stop_reason"))
        pi = assistant_message("anthropic-messages", "anthropic", str(message.get("model", "")), blocks,
                        _claude_usage(record), stop, stamp)  # fmt: skip
        if record.get("isApiErrorMessage"):
            pi["stopReason"] = "error"
            pi["errorMessage"] = " ".join(b["text"] for b in blocks if b["type"] == "text")
        entry = self.builder.add("message", parent, stamp, message=pi)
        if isinstance(message_id, str):
            self.by_message_id[message_id] = entry
        return str(entry["id"])

    def _above(self, ancestor: str, start: str | None) -> bool:
        """Whether ``ancestor`` is ``start`` or above it through tool results only."""
        current = start
        while current is not None and current != ancestor:
            entry = self.builder.by_id[current]
            if entry["type"] != "message" or entry["message"].get("role") != "toolResult":
                return False
            current = entry["parentId"]
        return current == ancestor


def import_claude(
    source: str | os.PathLike[str],
    *,
    cwd: str | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    include_sidechains: bool = False,
) -> list[ImportResult]:
    """Import Claude Code transcripts (``~/.claude/projects/*/*.jsonl``) as Pi sessions.

    The ``uuid``/``parentUuid`` tree is kept (rewinds stay branches), converted parents
    first; lines that are not messages (``attachment``, ``progress``...) are counted in
    ``skipped`` and walked through, so the conversation stays connected. An assistant
    response written over several lines sharing ``message.id`` becomes one assistant
    message; ``tool_use``/``tool_result`` blocks become tool calls and ``toolResult``
    messages; a compact boundary and its summary become a ``compaction`` entry that keeps
    nothing verbatim, as Claude Code does. Other system lines become ``custom`` entries.
    The session's name (``custom-title``, else ``ai-title``, else its own ``summary``)
    becomes a ``session_info`` entry. The last entry written stands for the source's last
    line, so Pi opens the session where Claude Code left it.

    Parameters
    ----------
    source:
        A transcript file, a project folder, or the ``projects`` folder.
    cwd:
        The Pi working directory (default: the transcript's ``cwd``); it chooses the
        destination folder unless ``out_dir`` is given.
    out_dir:
        Folder for the new files (default: Pi's folder for the cwd).
    include_sidechains:
        Also carry over sub-agent lines: ``isSidechain`` lines of a main transcript, and
        sub-agent files (``agent-*.jsonl``, ``subagents/``), each imported as a session of
        its own whose header ``parentSession`` names its parent's imported file. By
        default sidechain lines are counted in ``skipped`` and sub-agent files left out.

    Returns
    -------
    list of ImportResult
        One per transcript. Importing again finds the same file (``created=False``).

    Raises
    ------
    ImportFormatError
        A file holds no Claude Code messages, or only sub-agent lines without
        ``include_sidechains``. In a folder, such a file gets a result with ``error`` set
        instead, and the other files are still imported.
    """
    results: list[ImportResult] = []
    done: dict[Path, ImportResult] = {}
    options = (cwd, out_dir_path(out_dir), include_sidechains)
    folder = is_folder(source)
    for path in transcript_files(source, "claude", subagents=include_sidechains):
        try:
            _import_one(path, options, results, done)
        except ImportFormatError as exc:
            if not folder:
                raise
            results.append(not_imported(path, exc))  # one odd file must not stop the rest
    return results


_Options = tuple[str | None, Path | None, bool]


def _import_one(
    path: Path, options: _Options, results: list[ImportResult], done: dict[Path, ImportResult]
) -> ImportResult:
    key = Path(os.path.abspath(path))
    if key in done:
        return done[key]
    cwd, out_dir, include_sidechains = options
    converter = _Claude(path, include_sidechains)
    found = converter.run()
    builder = converter.builder
    leaf = converter.leaf_id(found)
    last = builder.entries[-1]
    if found.title:
        builder.add("session_info", leaf, last["timestamp"], name=" ".join(found.title.split()))
    elif leaf is not None and leaf != last["id"]:
        builder.resume_at(leaf, last["timestamp"])
    where = cwd or found.cwd
    created = found.created or file_time(path)
    notes: list[str] = []
    if converter.subagent:
        agent = found.agent_id or path.stem.removeprefix("agent-")
        source_id = f"{found.session_id or path.stem}/agent-{agent}"
        parent = _parent_file(path, found, options, results, done, notes)
        result = builder.write(path, "claude-code", source_id, where, created, out_dir,
                               parent_session=parent,
                               origin={"agentId": agent, "parentSessionId": found.session_id})  # fmt: skip
    else:
        # Claude Code names a transcript after its session; the name wins should a file hold
        # lines copied from another session (so two files never share one Pi session).
        named = _UUID.fullmatch(path.stem) is not None
        source_id = path.stem if named else found.session_id or path.stem
        result = builder.write(path, "claude-code", source_id, where, created, out_dir)
    result.skipped = converter.skipped
    result.notes = notes
    done[key] = result
    results.append(result)
    return result


def _parent_file(
    path: Path,
    found: _Found,
    options: _Options,
    results: list[ImportResult],
    done: dict[Path, ImportResult],
    notes: list[str],
) -> str | None:
    """The imported file of a sub-agent's parent session, importing the parent if need be."""
    if not found.session_id:
        notes.append("no session id in the sub-agent transcript: not linked to a parent")
        return None
    cwd, out_dir, _ = options
    folder = import_folder(path, cwd or found.cwd, out_dir)
    imported = find_imported(folder, pi_session_id("claude-code", found.session_id))
    if imported is None:
        # 2.0 keeps agent-*.jsonl beside the main transcript, 2.1 in <session id>/subagents/.
        name = f"{found.session_id}.jsonl"
        beside = [path.parent / name, path.parent.parent.parent / name]
        main = next((p for p in beside if p.is_file() and p != path), None)
        if main is None:
            notes.append(f"parent session {found.session_id} not found: not linked to it")
            return None
        try:
            imported = _import_one(main, options, results, done).path
        except ImportFormatError as exc:
            notes.append(f"its parent session could not be imported ({exc}): not linked to it")
            return None
        notes.append(f"its parent session {main} was imported with it")
    return os.path.abspath(imported)
