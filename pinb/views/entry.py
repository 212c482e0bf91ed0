"""``EntryView``: one entry in full — its fields, message content blocks and raw JSON, escaped."""

from __future__ import annotations

from typing import Any

from ..core import Entry, Session
from ..core.js.jsontext import SHOWN_DEPTH, json_text, value_text
from ..render.html import escape, heading, mimebundle, pre, style, table, wrap
from ..render.html import title as title_html
from ..render.markdown import markdown_to_html
from ..render.tree.graph import entry_kind, entry_preview, entry_tokens, node_key

__all__ = ["EntryView", "entry_html"]

#: Raw JSON longer than this is cut in the view (the entry itself is untouched).
MAX_RAW_CHARS = 200_000


def _block_html(block: Any) -> str:
    if not isinstance(block, dict):
        return pre(json_text(block, max_depth=SHOWN_DEPTH, default=str))
    kind = block.get("type")
    if kind == "text":
        return pre(block.get("text", ""))
    if kind == "thinking":
        text = "(redacted)" if block.get("redacted") else block.get("thinking", "")
        return f'<div class="pinb-muted" style="color:#6e7781">thinking</div>{pre(text)}'
    if kind == "toolCall":
        args = json_text(block.get("arguments"), indent=2, max_depth=SHOWN_DEPTH, default=str)
        return (
            f'<div><span class="pinb-badge" style="display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;background-color:#eaeef2;margin-right:4px">tool call</span><b>{escape(block.get("name", "?"))}'
            f'</b> <span class="pinb-muted" style="color:#6e7781">{escape(block.get("id", ""))}</span></div>{pre(args)}'
        )
    if kind == "image":
        size = len(block.get("data", "")) if isinstance(block.get("data"), str) else 0
        return (
            f'<div class="pinb-muted" style="color:#6e7781">[image {escape(block.get("mimeType", "?"))}, '
            f"{size:,} base64 chars]</div>"
        )
    return pre(json_text(block, indent=2, max_depth=SHOWN_DEPTH, default=str))


def _content_html(content: Any) -> str:
    if isinstance(content, str):
        return pre(content)
    if isinstance(content, list):
        return "".join(_block_html(block) for block in content)
    return ""


def _body_html(entry: Entry) -> str:
    raw = entry.raw
    kind = entry.type
    if kind == "message":
        message = entry.message or {}
        role = message.get("role")
        if role == "bashExecution":
            return pre(f"$ {value_text(message.get('command', ''))}") + pre(
                message.get("output", "")
            )
        if role == "toolResult":
            error = (
                ' <span class="pinb-error" style="color:#cf222e">error</span>'
                if message.get("isError")
                else ""
            )
            head = (
                f"<div><b>{escape(message.get('toolName', '?'))}</b> "
                f'<span class="pinb-muted" style="color:#6e7781">{escape(message.get("toolCallId", ""))}</span>'
                f"{error}</div>"
            )
            return head + _content_html(message.get("content"))
        body = _content_html(message.get("content"))
        if message.get("errorMessage"):
            body += f'<div class="pinb-error" style="color:#cf222e">{escape(message["errorMessage"])}</div>'
        return body
    if kind in ("compaction", "branch_summary"):
        return markdown_to_html(raw.get("summary", ""))
    if kind == "custom_message":
        return _content_html(raw.get("content"))
    return ""


def entry_html(entry: Entry, *, label: str | None = None, max_raw: int = MAX_RAW_CHARS) -> str:
    """The full entry as HTML: a field table, the readable content, and the raw JSON."""
    raw = entry.raw
    fields: list[tuple[str, Any]] = [
        ("kind", entry_kind(entry)),
        ("id", node_key(entry.id)),
        ("parent", raw.get("parentId")),
        ("timestamp", raw.get("timestamp")),
        ("line", entry.line),
        ("estimated tokens", entry_tokens(entry)),
    ]
    if label:
        fields.append(("label", label))
    message = entry.message or {}
    for name in ("provider", "model", "stopReason"):
        if name in message:
            fields.append((name, message[name]))
    usage = message.get("usage")
    if isinstance(usage, dict):
        fields.append(
            (
                "usage",
                ", ".join(f"{k}={value_text(v, 40)}" for k, v in usage.items() if k != "cost"),
            )
        )
    for name in ("firstKeptEntryId", "tokensBefore", "fromId", "targetId", "customType"):
        if name in raw:
            fields.append((name, raw[name]))
    text = json_text(raw, indent=2, max_depth=SHOWN_DEPTH, default=str)
    cut = ""
    if len(text) > max_raw:
        cut = f"<div{style('warn')}>raw JSON cut at {max_raw:,} of {len(text):,} chars</div>"
        text = text[:max_raw]
    return (
        table(
            ["field", "value"], [(k, "" if v is None else v) for k, v in fields], wrap_columns=(1,)
        )
        + _body_html(entry)
        + heading("Raw entry JSON")
        + cut
        + pre(text)
    )


class EntryView:
    """One entry in full (fields, content blocks, raw JSON), every string escaped.

    Parameters
    ----------
    entry:
        The entry, or its id together with ``session``.
    session:
        Needed to resolve an id and to show the entry's label.
    """

    def __init__(self, entry: Entry | str, session: Session | None = None) -> None:
        if not isinstance(entry, Entry):
            if session is None:
                raise TypeError("EntryView needs a session to look up an entry id")
            entry = session[entry]
        self.entry = entry
        self.label = session.label(entry.id) if session is not None else None

    def to_text(self) -> str:
        return (
            f"<{entry_kind(self.entry)} {node_key(self.entry.id)}: {entry_preview(self.entry, 80)}>"
        )

    __repr__ = to_text

    def to_html(self) -> str:
        title = f"{entry_kind(self.entry)} {node_key(self.entry.id)}"
        return wrap(title_html(title) + entry_html(self.entry, label=self.label))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)
