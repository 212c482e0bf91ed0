"""The prompt and tool set as Pi 1.x keeps them: ``system`` messages in the session, stored as patches.

The first request of a session stores one system message with every prompt section and
tool declaration; a later change of prompt or tools stores only what changed (sections
by name, ``null`` for a removed one; ``toolsAdded`` / ``toolsRemoved``). Replaying the
branch's system messages (`pinb.core.context.build.current_system_message`) gives the prompt
in force, so a resumed session appends nothing when nothing changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.format.content import content_text

__all__ = ["prompt_text", "system_patch", "tool_declarations"]


def tool_declarations(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """``{name, description, parameters}`` of each tool, as the model is told about it."""
    return [
        {
            "name": str(tool.name),
            "description": str(getattr(tool, "description", "") or ""),
            # A JSON round trip: the stored schema is plain data, never the tool's object.
            "parameters": json.loads(json.dumps(dict(getattr(tool, "parameters", {}) or {}))),
        }
        for tool in tools
    ]


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def system_patch(
    current: Mapping[str, Any] | None,
    sections: Mapping[str, str],
    tools: Sequence[Mapping[str, Any]],
    *,
    now_ms: int | None = None,
) -> dict[str, Any] | None:
    """The system message to append so that the branch's prompt becomes these sections and tools.

    ``current`` is the branch's replayed system message
    (:meth:`~pinb.core.context.build.SessionContext.system_message`). ``None`` when it already
    matches. Key order is Pi's: ``role``, ``content``, ``sections``, ``timestamp``,
    ``toolsAdded``, ``toolsRemoved``.
    """
    current = current or {}
    raw_sections = current.get("sections")
    before: dict[str, Any] = raw_sections if isinstance(raw_sections, dict) else {}
    patch: dict[str, Any] = {n: t for n, t in sections.items() if before.get(n) != t}
    patch.update({name: None for name in before if name not in sections})
    declared = {t.get("name"): t for t in current.get("toolsAdded") or () if isinstance(t, Mapping)}
    wanted = {t["name"]: t for t in tools}
    # A changed definition is a removal and an addition, as Pi records it.
    added = [t for n, t in wanted.items() if n not in declared or not _same(declared[n], t)]
    removed = [
        {"name": n} for n, t in declared.items() if n not in wanted or not _same(t, wanted[n])
    ]
    if not patch and not added and not removed:
        return None
    message: dict[str, Any] = {"role": "system", "content": ""}
    if patch:
        message["sections"] = patch
    message["timestamp"] = now_ms if now_ms is not None else int(time.time() * 1000)
    if added:
        message["toolsAdded"] = added
    if removed:
        message["toolsRemoved"] = removed
    return message


def prompt_text(current: Mapping[str, Any] | None) -> str:
    """The prompt a replayed system message gives: content, then each section's text.

    Sent in front of the conversation: the providers pinb speaks to take the system prompt
    there, and a model sees the current prompt once instead of a history of patches.
    """
    if current is None:
        return ""
    content = current.get("content")
    parts = [content if isinstance(content, str) else content_text(content)]
    sections = current.get("sections")
    if isinstance(sections, dict):
        parts.extend(str(v) for v in sections.values() if v is not None)
    return "\n\n".join(p for p in parts if p)
