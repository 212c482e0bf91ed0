"""What every export of a session shows: the entries chosen, in tree order, and each one's text.

The HTML page, the Markdown file and the notebook draw the same selection with the same
words; the rules they share live here, once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...core import Session
from ...core.context.build import UNSET
from ...core.context.system_prompt import system_summary
from ...core.describe import entry_kind, entry_preview, kind_name, message_text
from ...core.format.entries import Entry
from ...core.js.jsontext import SHOWN_DEPTH, json_text
from ...core.js.wire import parse_js_date
from ...errors import EntryNotFoundError

__all__ = [
    "Item",
    "as_text",
    "blocks",
    "entry_time",
    "message_of",
    "preview",
    "safe_image",
    "select_items",
    "session_title",
    "short",
    "system_parts",
    "tree_order",
]

_SAFE_MIME = re.compile(r"image/(png|jpeg|gif|webp)")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


def as_text(value: object) -> str:
    """Any JSON value as text (a label may be an object, content a number)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json_text(value, max_depth=SHOWN_DEPTH, default=str)


def blocks(content: object) -> list[dict[str, Any]]:
    """The content blocks of a message (none when content is a string, number...)."""
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def message_of(entry: Entry) -> dict[str, Any]:
    """The entry's message as a dict (empty when the file holds none or something else)."""
    message = entry.message
    return message if isinstance(message, dict) else {}


def entry_time(entry: Entry) -> str:
    """The entry's time in UTC, ``YYYY-MM-DD HH:MM:SS`` (empty when it has none Python can show)."""
    stamp = entry.timestamp
    ms = parse_js_date(stamp) if isinstance(stamp, str) else None
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):  # a date outside what Python can show
        return ""


def short(text: str, width: int = 80) -> str:
    """``text`` on one line of at most ``width`` characters, ``…`` where it is cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def session_title(session: Session) -> str:
    """The export's title: the session's name, else its first prompt, else its id."""
    if session.name:
        return short(as_text(session.name), 200)
    for entry in session.entries:
        if entry.role == "user":
            text = message_text(entry.message)
            if text.strip():
                return short(text, 80)
    return f"Session {session.id}"


@dataclass
class Item:
    """An entry chosen for export, with what the model sees of it."""

    entry: Entry
    anchor: str
    on_path: bool
    in_context: bool
    level: int = 0


def select_items(
    session: Session, leaf: Any, whole_tree: bool
) -> tuple[list[Item], list[Item], list[Item]]:
    """``(tree, items, context)``: every entry in tree order, the entries to show in full
    (the branch's whole path, or every entry), and the entries in the model's context, in
    the context's order (the compaction's summary, then what it kept, then what follows)."""
    leaf_id = session.leaf_id if leaf is UNSET else leaf
    if leaf_id is not None and leaf is not UNSET and leaf_id not in session:
        raise EntryNotFoundError(str(leaf_id))
    context = session.build_context(leaf_id)
    on_path = {id(e) for e in context.path}
    in_context = {id(e) for e in context.sources}
    anchors = {id(e): f"e{i}" for i, e in enumerate(session.entries)}
    tree: list[Item] = []
    for entry, level in tree_order(session):
        tree.append(
            Item(entry, anchors[id(entry)], id(entry) in on_path, id(entry) in in_context, level)
        )
    if whole_tree:
        items = [item for item in tree if not item.entry.is_navigation]
    else:
        items = [Item(e, anchors[id(e)], True, id(e) in in_context) for e in context.path]
        items = [item for item in items if not item.entry.is_navigation]
    # The one context builder's entries, not a walk of our own: what the model reads.
    shown_context = [
        Item(e, anchors[id(e)], True, True) for e in context.sources if not e.is_navigation
    ]
    return tree, items, shown_context


def tree_order(session: Session) -> Iterator[tuple[Entry, int]]:
    """Pre-order walk; the level grows only where the conversation branches (as Pi shows it)."""
    stack = [(root, 0) for root in reversed(session.tree())]
    seen: set[int] = set()
    while stack:
        node, level = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node.entry, level
        children = node.children
        step = 1 if len(children) > 1 else 0
        stack.extend((child, level + step) for child in reversed(children))


def preview(entry: Entry) -> str:
    """``kind: preview``, the core's one preview of an entry (plain text: callers escape)."""
    return f"{kind_name(entry_kind(entry))}: {entry_preview(entry, 70)}"


def system_parts(message: dict[str, Any]) -> list[tuple[str, str]]:
    """What a ``system`` message sets, as ``(heading, text)``: its summary, its base text,
    each section it sets or drops, and the tools it adds (with their descriptions) or
    removes. Pi 1.x keeps the prompt in these fields, so the content alone is often empty."""
    parts = [("system prompt", system_summary(message) or "(empty)")]
    content = message.get("content")
    text = message_text(message) if isinstance(content, list) else as_text(content or "")
    if text.strip():
        parts.append(("text", text))
    sections = message.get("sections")
    if isinstance(sections, dict):
        for name, body in sections.items():
            if body is None:
                parts.append((f"section {as_text(name)}", "(dropped)"))
            else:
                parts.append((f"section {as_text(name)}", as_text(body)))
    tools = message.get("toolsAdded")
    if isinstance(tools, list) and tools:
        lines = []
        for tool in tools:
            if isinstance(tool, dict):
                lines.append(
                    f"{as_text(tool.get('name', '?'))}: {as_text(tool.get('description', ''))}"
                )
            else:
                lines.append(as_text(tool))
        parts.append(("tools added", "\n".join(lines)))
    removed = message.get("toolsRemoved")
    if isinstance(removed, list) and removed:
        names = [
            as_text(t.get("name", "?")) if isinstance(t, dict) else as_text(t) for t in removed
        ]
        parts.append(("tools removed", ", ".join(names)))
    return parts


def safe_image(mime: object, data: object) -> bool:
    """Only well-formed base64 of common image types is embedded; nothing else reaches src."""
    return (
        isinstance(mime, str)
        and _SAFE_MIME.fullmatch(mime) is not None
        and isinstance(data, str)
        and _BASE64.fullmatch(data) is not None
    )
