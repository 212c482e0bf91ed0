"""Claude Code transcripts (``~/.claude/projects/*/*.jsonl``) as Pi session files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._pi import (
    Converter,
    ImportFormatError,
    ImportResult,
    as_dict,
    as_int,
    assistant_message,
    iso,
    out_dir_path,
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


class _Claude(Converter):
    """One Claude Code transcript converted line by line (file order keeps parents first)."""

    def __init__(self, path: Path, include_sidechains: bool) -> None:
        super().__init__(path)
        self.include_sidechains = include_sidechains
        self.ids: dict[str, str | None] = {}  # source uuid -> Pi entry id its children hang on
        self.by_message_id: dict[str, dict[str, Any]] = {}
        self.known = {r["uuid"] for r in self.records if isinstance(r.get("uuid"), str)}

    def parent_of(self, record: dict[str, Any]) -> str | None:
        parent = record.get("parentUuid")
        if record.get("subtype") == "compact_boundary" and record.get("logicalParentUuid"):
            parent = record["logicalParentUuid"]
        if not isinstance(parent, str):
            return None
        if parent not in self.ids and parent not in self.known:
            self.skip("parent missing (made a root)")
        return self.ids.get(parent)

    def run(self) -> tuple[str, str, str, str | None]:
        source_id = cwd = created = title = None
        summaries: list[tuple[str, str]] = []
        for record in self.records:
            kind, uid = record.get("type"), record.get("uuid")
            source_id = source_id or record.get("sessionId")
            if kind == "summary" and isinstance(record.get("summary"), str):
                summaries.append((record["summary"], str(record.get("leafUuid"))))
            elif kind == "custom-title" and isinstance(record.get("customTitle"), str):
                title = record["customTitle"]
            elif kind not in ("user", "assistant", "system") or not isinstance(uid, str):
                self.skip(str(kind))
            elif record.get("isSidechain") and not self.include_sidechains:
                self.ids[uid] = None
                self.skip("sidechain")
            else:
                cwd = cwd or record.get("cwd")
                created = created or record.get("timestamp")
                self.ids[uid] = self.convert(record, kind, self.parent_of(record))
        if title is None:
            # Claude Code also writes summaries of other sessions; ours name a leaf in this file.
            own = [text for text, leaf in summaries if leaf in self.known]
            title = own[-1] if own else None
        if not self.builder.entries:
            raise ImportFormatError("no Claude Code messages found (is this a transcript?)")
        return str(source_id or ""), str(cwd or ""), iso(created), title

    def convert(self, record: dict[str, Any], kind: str, parent: str | None) -> str | None:
        stamp = iso(record.get("timestamp"))
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

    The ``uuid``/``parentUuid`` tree is kept (rewinds stay branches); an assistant
    response written over several lines sharing ``message.id`` becomes one assistant
    message; ``tool_use``/``tool_result`` blocks become tool calls and ``toolResult``
    messages; a compact boundary and its summary become a ``compaction`` entry that keeps
    nothing verbatim, as Claude Code does. Other system lines become ``custom`` entries.

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
        Also carry over sub-agent (``isSidechain``) lines; by default they are counted in
        ``skipped`` and left out.

    Returns
    -------
    list of ImportResult
        One per transcript. Importing again finds the same file (``created=False``).

    Raises
    ------
    ImportFormatError
        A file holds no Claude Code messages.
    """
    results = []
    for path in transcript_files(source, "claude"):
        converter = _Claude(path, include_sidechains)
        source_id, found_cwd, created, title = converter.run()
        builder = converter.builder
        if title:
            last = builder.entries[-1]
            builder.add("session_info", last["id"], last["timestamp"], name=" ".join(title.split()))
        result = builder.write(path, "claude-code", source_id or path.stem, cwd or found_cwd,
                               created, out_dir_path(out_dir))  # fmt: skip
        result.skipped = converter.skipped
        results.append(result)
    return results
