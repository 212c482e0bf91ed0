"""A session as a Markdown file: a heading per entry, the model's Markdown kept, the rest literal.

Tool arguments and outputs are fenced; prompts, names and other text show as exactly what
the session holds (:func:`pinb.render.markdown.literal`).
"""

from __future__ import annotations

from typing import Any

from ...core import Session
from ...core.context.build import UNSET
from ...core.describe import message_text
from ...core.format.entries import Entry
from ...core.js.jsontext import SHOWN_DEPTH, json_text
from ..markdown import clean, code, fence, literal, literal_line, markdown_to_markdown
from .shown import (
    as_text,
    blocks,
    entry_time,
    message_of,
    preview,
    select_items,
    session_title,
    short,
    system_parts,
)

__all__ = ["export_markdown", "message_markdown"]


def message_markdown(entry: Entry) -> list[str]:
    raw = entry.raw
    if entry.type in ("compaction", "branch_summary"):
        return [markdown_to_markdown(as_text(raw.get("summary", "")))]
    message = message_of(entry) if entry.type == "message" else {"content": raw.get("content")}
    if message.get("role") == "bashExecution":
        command, output = as_text(message.get("command", "")), as_text(message.get("output", ""))
        return [fence(f"$ {command}\n{output}", "console")]
    if message.get("role") == "system":  # the prompt and tools, as the text they are
        return [
            f"**{literal_line(name)}**\n\n{fence(text, 'text')}"
            for name, text in system_parts(message)
        ]
    # Only the model writes Markdown; a prompt, a tool's output or an extension's message
    # shows as the text it is (a README a tool read must not render as headings).
    role = message.get("role")
    if role == "toolResult":
        text = message_text(message)
        images = sum(1 for b in blocks(message.get("content")) if b.get("type") == "image")
        return ([fence(text, "text")] if text or not images else []) + ["*[image]*"] * images
    prose = markdown_to_markdown if role == "assistant" else literal
    content = message.get("content")
    if not isinstance(content, list):
        return [prose(as_text(content))]
    parts: list[str] = []
    for block in blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(prose(as_text(block.get("text", ""))))
        elif kind == "thinking":
            body = "(redacted)" if block.get("redacted") else as_text(block.get("thinking", ""))
            quoted = markdown_to_markdown(body).split("\n")
            parts.append("\n".join(f"> {line}" if line else ">" for line in quoted))
        elif kind == "toolCall":
            args = json_text(block.get("arguments"), indent=1, max_depth=SHOWN_DEPTH, default=str)
            parts.append(
                f"**Tool call** {code(as_text(block.get('name')))}\n\n{fence(args, 'json')}"
            )
        elif kind == "image":
            parts.append("*[image]*")
    if message.get("errorMessage"):
        parts.append(f"**Error:** {literal(as_text(message['errorMessage']))}")
    return parts


def export_markdown(session: Session, *, leaf: Any = UNSET, whole_tree: bool = False) -> str:
    """The context path (or every entry, in tree order) as Markdown.

    Model text keeps its Markdown formatting but raw HTML is neutralised (``<`` and ``&``
    become entities); tool arguments and outputs are fenced code blocks; prompts and
    other text render as exactly what the session holds.
    """
    _, items, _ = select_items(session, leaf, whole_tree)
    lines = [f"# {literal_line(session_title(session))}", ""]
    lines.append(f"- session: {code(as_text(session.id))}")
    lines.append(f"- cwd: {code(as_text(session.cwd))}")
    lines.append(f"- entries: {len(session.entries)}, shown: {len(items)}")
    lines.append("")
    previous: Entry | None = None
    for index, item in enumerate(items, start=1):
        entry = item.entry
        if entry.type not in ("message", "custom_message", "compaction", "branch_summary"):
            lines += [f"*{literal(short(preview(entry), 200))}*", ""]
            previous = entry
            continue
        role = entry.role or entry.type
        extra = ""
        if item.on_path and not item.in_context and entry.type == "message":
            extra = " · summarized"
        if whole_tree and previous is not None and entry.parent_id != previous.id:
            extra += f" · ↳ branch from {code(as_text(entry.parent_id))}"
        model = message_of(entry).get("model")
        error = " (error)" if message_of(entry).get("isError") else ""
        lines.append(f"## {index}. {literal_line(as_text(role))}{error}")
        lines.append(
            f"*{entry_time(entry)} · {code(as_text(entry.id))}"
            f"{' · ' + literal_line(as_text(model)) if model else ''}"
            f"{extra}*"
        )
        lines.append("")
        for part in message_markdown(entry):
            lines += [part, ""]
        previous = entry
    return clean("\n".join(lines).rstrip("\n") + "\n")
