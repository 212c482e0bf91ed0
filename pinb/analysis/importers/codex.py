"""Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``) as Pi session files."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ._pi import (
    Converter,
    ImportFormatError,
    ImportResult,
    as_dict,
    as_int,
    as_list,
    as_str,
    assistant_message,
    file_time,
    is_folder,
    iso,
    iso_or_none,
    not_imported,
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

__all__ = ["import_codex"]

# Text Codex adds to the conversation itself (never typed by the user); compared lower-cased.
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# agents.md instructions",
                     "<instructions>", "<user_shell_command>", "<skill>", "<turn_aborted>",
                     "<permissions instructions>")  # fmt: skip
# How Codex's own compaction starts the summary it puts back into the history.
_SUMMARY_PREFIX = "Another language model started to solve this problem"
_ROLLOUT_NAME = re.compile(
    r"rollout-(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})-(?P<id>[0-9a-fA-F-]{36})\.jsonl"
)
_EFFORT = {"none": "off", "minimal": "minimal", "low": "low", "medium": "medium", "high": "high",
           "xhigh": "xhigh"}  # fmt: skip
_RESPONSE_TYPES = {"message", "reasoning", "function_call", "function_call_output",
                   "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                   "web_search_call"}  # fmt: skip


def _codex_text(content: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        return [text_block(content)]
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("input_text", "output_text", "text") and isinstance(item.get("text"), str):
            parts.append(text_block(item["text"]))
        elif kind == "input_image" and isinstance(item.get("image_url"), str):
            url = item["image_url"]
            if url.startswith("data:") and ";base64," in url:
                mime, data = url[5:].split(";base64,", 1)
                parts.append({"type": "image", "data": data, "mimeType": mime})
            else:
                parts.append(text_block(f"[image: {url}]"))
    return parts


def _codex_output(output: Any) -> tuple[list[dict[str, Any]], bool]:
    """A function call's output as Pi content blocks, and whether it failed."""
    failed = False
    if isinstance(output, str):
        try:
            parsed = json.loads(output)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:
            meta = as_dict(parsed.get("metadata"))
            failed = as_int(meta.get("exit_code")) != 0
            return [text_block(str(parsed["output"]))], failed
        return [text_block(output)], False
    if isinstance(output, dict):
        failed = output.get("success") is False
        return _codex_output(output.get("content", ""))[0], failed
    return _codex_text(output), False


class _Codex(Converter):
    """One Codex rollout: a linear log with compactions and rollbacks, made into a tree."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.leaf: str | None = None
        self.turns: list[str] = []  # user entries that rollbacks count, since the last compaction
        self.pending: dict[str, Any] | None = None  # the model response being assembled
        self.last_assistant: dict[str, Any] | None = None
        self.model: str | None = None
        self.effort: str | None = None
        self.context_tokens = 0
        self.stamp: str | None = None  # the latest time read, for lines that carry none

    def add(self, kind: str, stamp: str, **fields: Any) -> str:
        self.flush()
        self.leaf = str(self.builder.add(kind, self.leaf, stamp, **fields)["id"])
        return self.leaf

    def flush(self) -> None:
        if self.pending is None:
            return
        entry, self.pending = self.pending, None
        pi = entry["message"]
        pi["stopReason"] = stop_reason(pi["content"], pi["stopReason"])
        self.builder.entries.append(entry)
        self.leaf, self.last_assistant = entry["id"], entry

    def assistant_part(self, stamp: str, blocks: list[dict[str, Any]]) -> None:
        if self.pending is None:
            # Held back until the response ends, so all its parts land in one message.
            pi = assistant_message("openai-responses", "openai", self.model or "", [],
                            pi_usage(0, 0, 0, 0), None, stamp)  # fmt: skip
            self.pending = self.builder.make("message", self.leaf, stamp, message=pi)
        self.pending["message"]["content"].extend(blocks)

    def run(self) -> tuple[str, str, str]:
        source_id = cwd = created = None
        for record in self.records:
            kind, payload = record.get("type"), record.get("payload")
            if kind in _RESPONSE_TYPES and payload is None:  # early rollouts: bare items
                kind, payload = "response_item", record
            if not isinstance(payload, dict):
                if "id" in record and kind is None:  # early rollouts: a bare meta line
                    source_id = source_id or as_str(record.get("id"))
                    created = created or iso_or_none(record.get("timestamp"))
                else:
                    self.skip(str(kind) if kind is not None else "line of unknown shape")
                continue
            when = iso_or_none(record.get("timestamp")) or iso_or_none(payload.get("timestamp"))
            self.stamp = stamp = iso(when, self.stamp or created)
            if kind == "session_meta":
                # The first one is this rollout's own (a fork may repeat its parent's after it).
                source_id = source_id or as_str(payload.get("id"))
                cwd = cwd or as_str(payload.get("cwd"))
                created = created or iso_or_none(payload.get("timestamp")) or when
            elif kind == "turn_context":
                self.turn_context(payload, stamp)
                cwd = cwd or as_str(payload.get("cwd"))
            elif kind == "response_item":
                self.response_item(payload, stamp)
            elif kind == "compacted":
                self.compacted(payload, stamp)
            elif kind == "event_msg":
                self.event(payload)
            else:
                self.skip(str(kind))
        self.flush()
        if not self.builder.entries:
            raise ImportFormatError(
                f"{self.path}: no Codex rollout items found (is this a rollout file?)"
            )
        last = self.builder.entries[-1]
        if self.leaf is not None and self.leaf != last["id"]:
            # A rollback at the end: record where the conversation stands (as core does).
            self.builder.resume_at(self.leaf, last["timestamp"])
        return str(source_id or ""), str(cwd or ""), created or _name_time(self.path)

    def compacted(self, payload: dict[str, Any], stamp: str) -> None:
        """A compaction; with ``replacement_history``, the history Codex kept comes after it.

        Newer Codex writes the whole history it continues from (the user messages it kept,
        the question being answered, an encrypted summary) instead of a summary text; Pi's
        compaction keeps nothing verbatim, so those items are written again after it.
        """
        self.flush()
        summary = as_str(payload.get("message")) or ""
        history = payload.get("replacement_history")
        kept: list[dict[str, Any]] = []
        encrypted = False
        for raw in history if isinstance(history, list) else []:
            item = as_dict(raw)
            item = as_dict(item.get("item")) if "type" not in item else item  # an envelope
            text = "\n".join(
                p["text"] for p in _codex_text(item.get("content")) if p["type"] == "text"
            )
            kind = item.get("type")
            if (
                kind == "message"
                and item.get("role") == "user"
                and text.strip()
                and (text.startswith(_SUMMARY_PREFIX) or text.strip() == summary.strip())
            ):
                summary = summary or text  # the summary itself: carried by the compaction
            elif kind in ("compaction", "compaction_summary"):
                encrypted = True  # readable only by the model
            elif kind == "ghost_snapshot":
                self.skip("compacted/ghost_snapshot")
            else:
                kept.append(item)
        if not summary:
            summary = (
                "(Codex compacted the conversation here; its summary was kept encrypted for "
                "the model, so only the messages below were carried over.)"
                if encrypted
                else "(Codex compacted the conversation here without a summary.)"
            )
        details = (
            {"source": "codex", "keptItems": len(kept)}
            if history is not None
            else {"source": "codex"}
        )
        self.leaf = self.compaction(self.leaf, stamp, summary, self.context_tokens, details)
        self.turns = []
        for item in kept:
            self.response_item(item, stamp)
        self.flush()

    def turn_context(self, payload: dict[str, Any], stamp: str) -> None:
        model, effort = payload.get("model"), payload.get("effort")
        if isinstance(model, str) and model != self.model:
            self.model = model
            self.add("model_change", stamp, provider="openai", modelId=model)
        if isinstance(effort, str) and effort != self.effort:
            self.effort = effort
            self.add("thinking_level_change", stamp, thinkingLevel=_EFFORT.get(effort, effort))

    def response_item(self, item: dict[str, Any], stamp: str) -> None:
        kind, role = item.get("type"), item.get("role")
        if kind == "message" and not _codex_text(item.get("content")):
            # Nothing Pi can show (no text, no image): counted, never an empty message.
            self.skip("response_item/message without content")
        elif kind == "message" and role == "assistant":
            self.assistant_part(stamp, _codex_text(item.get("content")))
        elif kind == "reasoning":
            parts = [*as_list(item.get("summary")), *as_list(item.get("content"))]
            texts = [
                p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
            text, secret = "\n\n".join(filter(None, texts)), item.get("encrypted_content")
            block = (
                thinking_block(text)
                if text or not secret
                else thinking_block("", secret, redacted=True)
            )
            self.assistant_part(stamp, [block])
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            self.assistant_part(stamp, [self.tool_call(item)])
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = str(item.get("call_id", ""))
            content, failed = _codex_output(item.get("output"))
            name = self.tool_names.get(call_id, "unknown")
            self.add(
                "message", stamp, message=result_message(call_id, name, content, failed, stamp)
            )
        elif kind == "message":
            parts = _codex_text(item.get("content"))
            first = next((p["text"] for p in parts if p["type"] == "text"), "").lstrip().lower()
            if role == "user" and not first.startswith(_CONTEXT_PREFIXES):
                self.turns.append(self.add("message", stamp, message=user_message(parts, stamp)))
            else:  # instructions and environment context: kept, but not as conversation
                data = {"role": role, "content": parts}
                self.add("custom", stamp, customType="codex/context", data=data)
        else:
            self.skip(
                f"response_item/{kind}" if kind is not None else "response_item without a type"
            )

    def tool_call(self, item: dict[str, Any]) -> dict[str, Any]:
        kind = item.get("type")
        call_id = str(item.get("call_id") or item.get("id") or f"call_{len(self.tool_names)}")
        name = str(item.get("name", ""))
        arguments: Any
        if kind == "function_call":
            try:
                arguments = json.loads(item.get("arguments") or "{}")
            except (TypeError, ValueError):
                arguments = item.get("arguments")
        elif kind == "custom_tool_call":
            arguments = {"input": item.get("input")}
        else:
            name = "shell" if kind == "local_shell_call" else "web_search"
            arguments = item.get("action") or {}
        self.tool_names[call_id] = name
        return tool_call_block(call_id, name, arguments)

    def event(self, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind == "token_count":
            last = as_dict(as_dict(payload.get("info")).get("last_token_usage"))
            if not last:
                return
            cached = as_int(last.get("cached_input_tokens"))
            usage = pi_usage(max(as_int(last.get("input_tokens")) - cached, 0),
                           as_int(last.get("output_tokens")), cached, 0,
                           as_int(last.get("total_tokens")))  # fmt: skip
            self.context_tokens = usage["totalTokens"]
            target = self.pending or self.last_assistant
            if target is not None:
                target["message"]["usage"] = usage
        elif kind == "thread_rolled_back":
            self.flush()
            count = as_int(payload.get("num_turns"))
            if count <= 0 or not self.turns:
                return
            cut = self.turns[0] if count >= len(self.turns) else self.turns[-count]
            del self.turns[max(len(self.turns) - count, 0) :]
            # The rolled-back turns stay in the file, as an abandoned branch.
            self.leaf = self.builder.by_id[cut]["parentId"]
        elif kind == "turn_aborted" and self.pending is not None:
            self.pending["message"].update(stopReason="aborted", errorMessage="turn aborted")
            self.flush()
        elif kind != "turn_aborted":
            self.skip(f"event_msg/{kind}")


def import_codex(
    source: str | os.PathLike[str],
    *,
    cwd: str | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> list[ImportResult]:
    """Import Codex CLI rollouts (``~/.codex/sessions/**/rollout-*.jsonl``) as Pi sessions.

    Reasoning, assistant text and tool calls of one model response become one assistant
    message (usage from the ``token_count`` event); ``function_call_output`` becomes a
    ``toolResult``; ``turn_context`` model and effort changes become ``model_change`` and
    ``thinking_level_change`` entries; a ``compacted`` item becomes a ``compaction`` entry
    (the summary replaces the history), followed by the items of its
    ``replacement_history`` when newer Codex wrote one (what it kept: user messages, the
    question being answered); a thread rollback moves the leaf back, so the rolled-back
    turns remain as an abandoned branch. Environment and instruction messages (and the
    ``<turn_aborted>`` notes Codex injects) become ``custom`` entries, never sent to a
    model; ``event_msg`` lines that repeat response items, and lines of unknown shape,
    are counted in ``skipped``. The file is named from the rollout's own time and id.

    Parameters and results as in :func:`import_claude`.
    """
    results = []
    folder = is_folder(source)
    for path in transcript_files(source, "codex"):
        try:
            results.append(_import_rollout(path, cwd, out_dir_path(out_dir)))
        except ImportFormatError as exc:
            if not folder:
                raise
            results.append(not_imported(path, exc))  # one odd file must not stop the rest
    return results


def _import_rollout(path: Path, cwd: str | None, out_dir: Path | None) -> ImportResult:
    converter = _Codex(path)
    source_id, found_cwd, created = converter.run()
    match = _ROLLOUT_NAME.fullmatch(path.name)
    # The rollout's own id names the session; a nameless one is known by its path.
    digest = source_id or (match and match["id"]) or hashlib.sha1(str(path).encode()).hexdigest()
    result = converter.builder.write(path, "codex", digest, cwd or found_cwd, created, out_dir)
    result.skipped = converter.skipped
    return result


def _name_time(path: Path) -> str:
    """The time in a rollout's file name (Codex's local time), else the file's own time.

    Only for a rollout none of whose lines has a readable timestamp: never "now", so the
    same rollout always gets the same file name.
    """
    match = _ROLLOUT_NAME.fullmatch(path.name)
    if match is None:
        return file_time(path)
    day, hour, minute, second = match.group(1, 2, 3, 4)
    return iso(f"{day}T{hour}:{minute}:{second}Z", file_time(path))
