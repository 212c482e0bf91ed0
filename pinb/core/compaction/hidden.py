"""What the current path no longer sends verbatim though the file keeps it: compacted spans and masked results.

A compaction replaces the entries before its ``firstKeptEntryId`` with a summary; a mask
(:mod:`pinb.core.compaction.masking`) replaces a tool result's content with one line.
Neither deletes anything: the file keeps every original. :func:`hidden_originals` lists
them for one context, each with what hid it, so the agent's ``recall`` tool and the views
can give the original back, cited by file line and entry id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..context.build import SessionContext
from ..format.entries import Entry
from .masking import is_mask_text

__all__ = ["HiddenEntry", "entry_text", "hidden_originals", "holds_hidden"]


@dataclass(frozen=True)
class HiddenEntry:
    """One entry of the path whose original the model is no longer sent.

    Attributes
    ----------
    entry:
        The entry as the file holds it.
    how:
        ``"compacted"`` (before a compaction's kept part) or ``"masked"``.
    by:
        The id of the compaction that first summarized it, or of the masking edit.
    """

    entry: Entry
    how: str
    by: str

    def describe(self) -> str:
        """``"summarized by compaction 1a2b3c4d"`` / ``"masked by edit 5e6f7a8b"``."""
        if self.how == "masked":
            return f"masked by edit {self.by}"
        return f"summarized by compaction {self.by}"


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "toolCall":
            arguments = json.dumps(block.get("arguments"), ensure_ascii=False)
            parts.append(f"[call {block.get('name')} {arguments}]")
        elif kind == "image":
            parts.append("[image]")
    return "\n".join(parts)


def entry_text(entry: Entry) -> str:
    """The text an entry held, as the file keeps it (before any edit): what ``recall`` searches."""
    raw = entry.raw
    kind = entry.type
    if kind == "message":
        message = entry.message or {}
        role = message.get("role")
        if role == "bashExecution":
            return f"$ {message.get('command', '')}\n{message.get('output', '')}"
        return _blocks_text(message.get("content"))
    if kind == "custom_message":
        return _blocks_text(raw.get("content"))
    if kind in ("branch_summary", "compaction"):
        summary = raw.get("summary")
        return summary if isinstance(summary, str) else ""
    return ""


def hidden_originals(context: SessionContext) -> Iterator[HiddenEntry]:
    """Every entry of ``context``'s path the model is sent only as a summary or a mask: the
    compacted ones in path order, then the masked ones.

    Compacted: an entry with content (a message, a custom message, a branch summary)
    before the kept part of the latest compaction, attributed to the first compaction on
    the path that summarized it. Masked: a tool result whose edit in effect is pinb's
    placeholder. Other edits (a hidden failed attempt, a user's edit) are not listed.
    """
    selected = {id(p.entry) for p in context.entries}
    path = context.path
    positions = {str(e.id): i for i, e in enumerate(path)}
    owner: dict[int, str] = {}
    for i, entry in enumerate(path):
        if entry.type != "compaction":
            continue
        first_kept = positions.get(str(entry.raw.get("firstKeptEntryId")), i)
        for earlier in path[: min(first_kept, i)]:
            owner.setdefault(id(earlier), str(entry.id))
    for entry in path:
        if id(entry) in selected or entry.type not in (
            "message",
            "custom_message",
            "branch_summary",
        ):
            continue
        by = owner.get(id(entry))
        if by is not None and entry_text(entry):
            yield HiddenEntry(entry, "compacted", by)
    for projected in context.entries:
        edit = projected.edit
        if edit is None or projected.entry.role != "toolResult" or not projected.messages:
            continue
        message = projected.messages[0]
        if isinstance(message, dict) and is_mask_text(message.get("content")):
            yield HiddenEntry(projected.entry, "masked", str(edit.id))


def holds_hidden(context: SessionContext) -> bool:
    """Whether the path holds a compaction or a mask in effect (when ``recall`` is offered).

    Reads the context's compaction and its edits only, never its projection: the agent
    asks this of the session's shared context (:meth:`~pinb.core.Session.current_context`),
    which must stay as the session keeps it.
    """
    if context.compaction is not None:
        return True
    for edit in context.edits.values():
        replacement = edit.raw.get("replacement")
        if isinstance(replacement, dict) and is_mask_text(replacement.get("content")):
            return True
    return False
