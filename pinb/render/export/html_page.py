"""A session as one standalone HTML page: the tree on the left, the entries shown on the right.

Model text renders through pinb's one Markdown policy (``markdown_to_html``); every other
text is escaped by :func:`pinb.render.html.escape`. The page's Content-Security-Policy lets
it load nothing but its own inline style and ``data:`` images.
"""

from __future__ import annotations

import re
from typing import Any

from ...core import Session
from ...core.context.build import UNSET
from ...core.format.entries import Entry
from ...core.js.jsontext import SHOWN_DEPTH, json_text
from ..html import escape
from ..markdown import clean, markdown_to_html
from .shown import (
    Item,
    as_text,
    blocks,
    entry_time,
    message_of,
    preview,
    safe_image,
    select_items,
    session_title,
    short,
    system_parts,
)

__all__ = ["export_html"]

_MAX_LEVEL = 40


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;
 display:grid;grid-template-columns:minmax(16em,28em) 1fr;font-size:14px;line-height:1.45}
header{grid-column:1/3;padding:8px 16px;border-bottom:1px solid #d0d7de;background:#f6f8fa}
header h1{font-size:18px;margin:4px 0}.meta{color:#6e7781;font-size:12px;margin:0}
nav{border-right:1px solid #d0d7de;padding:8px;overflow:auto;max-height:calc(100vh - 70px);
 position:sticky;top:0;font-size:12px}
nav ol{list-style:none;margin:0;padding:0}nav li{white-space:nowrap;overflow:hidden;
 text-overflow:ellipsis}nav li.on-path{font-weight:600}nav a{color:inherit;text-decoration:none}
nav .dot{display:inline-block;width:1em;color:#0969da}
main{padding:8px 16px;min-width:0}article{border:1px solid #d0d7de;border-radius:6px;
 margin:8px 0;padding:6px 10px}article h3{font-size:13px;margin:0 0 4px 0}
article h3 small{color:#6e7781;font-weight:normal}
.role-user{background:#f6fbff}.role-assistant{background:#fff}.role-toolResult{background:#f6f8fa}
.summary{background:#fff8e1}.path-row{margin:2px 0;font-size:12px}.path-row a{color:inherit}.summarized{opacity:.55}.meta-entry{font-size:12px;color:#6e7781;
 border-style:dashed}.error{color:#cf222e}.badge{display:inline-block;padding:0 6px;
 border-radius:8px;font-size:11px;background:#eaeef2;margin-left:4px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px;border-radius:4px;
 margin:4px 0;max-height:40em;overflow:auto}img{max-width:100%}
"""


def _esc(value: object) -> str:
    # Export shows a value as as_text gives it (JSON for a non-string), escaped by the one policy.
    return escape(as_text(value))


def _html_blocks(message: dict[str, Any]) -> str:
    # Only the model writes Markdown; a prompt or an extension's message is shown as is.
    def text_html(text: object) -> str:
        if message.get("role") == "assistant":
            return markdown_to_html(as_text(text))
        return f"<pre>{_esc(text)}</pre>"

    content = message.get("content")
    if isinstance(content, str):
        return text_html(content)
    parts: list[str] = []
    for block in blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(text_html(block.get("text", "")))
        elif kind == "thinking":
            body = "(redacted)" if block.get("redacted") else block.get("thinking", "")
            parts.append(
                f"<details><summary>thinking</summary>{markdown_to_html(as_text(body))}</details>"
            )
        elif kind == "toolCall":
            args = json_text(block.get("arguments"), indent=1, max_depth=SHOWN_DEPTH, default=str)
            parts.append(
                f"<div class='call'><strong>{_esc(block.get('name', ''))}</strong>"
                f"<span class='badge'>{_esc(block.get('id', ''))}</span><pre>{_esc(args)}</pre></div>"
            )
        elif kind == "image":
            parts.append(_html_image(block))
    return "".join(parts)


def _html_image(block: dict[str, Any]) -> str:
    mime, data = block.get("mimeType"), block.get("data")
    if safe_image(mime, data):
        return f"<img alt='image' src='data:{mime};base64,{_esc(data)}'>"
    return "<p><i>[image]</i></p>"


def _html_body(entry: Entry) -> str:
    raw = entry.raw
    if entry.type == "message":
        message = message_of(entry)
        role = message.get("role")
        if role == "bashExecution":
            text = f"$ {as_text(message.get('command', ''))}\n{as_text(message.get('output', ''))}"
            return f"<pre>{_esc(text)}</pre>"
        if role == "system":
            return "".join(
                f"<p><strong>{_esc(name)}</strong></p><pre>{_esc(text)}</pre>"
                for name, text in system_parts(message)
            )
        body = _html_blocks(message)
        if message.get("errorMessage"):
            body += f"<p class='error'>{_esc(message['errorMessage'])}</p>"
        return body
    if entry.type in ("compaction", "branch_summary"):
        return markdown_to_html(as_text(raw.get("summary", "")))
    if entry.type == "custom_message":
        return _html_blocks({"content": raw.get("content")})
    return ""


def _html_article(item: Item, index: int) -> str:
    entry = item.entry
    role = entry.role or entry.type
    classes = [f"role-{re.sub(r'[^A-Za-z0-9_-]', '', str(role))}"]
    if entry.type in ("compaction", "branch_summary"):
        classes.append("summary")
    elif entry.type not in ("message", "custom_message"):
        classes.append("meta-entry")
    note = ""
    if item.on_path and not item.in_context and entry.type in ("message", "custom_message"):
        classes.append("summarized")
        note = "<span class='badge'>summarized</span>"
    if entry.type not in ("message", "custom_message", "compaction", "branch_summary"):
        return (
            f"<article id='{item.anchor}' class='{' '.join(classes)}'>"
            f"{_esc(preview(entry))} <small>{_esc(entry_time(entry))}</small></article>"
        )
    message = message_of(entry)
    heading = (
        f"{_esc(role)}{note} <small>#{index} · {_esc(entry_time(entry))} · {_esc(entry.id)}"
        f"{' · ' + _esc(message['model']) if message.get('model') else ''}</small>"
    )
    if message.get("isError"):
        heading += " <span class='badge error'>error</span>"
    return (
        f"<article id='{item.anchor}' class='{' '.join(classes)}'><h3>{heading}</h3>"
        f"{_html_body(entry)}</article>"
    )


def _path_sections(path: list[Item], context: list[Item]) -> tuple[str, set[str]]:
    """The context path (what the model reads, in its order), then, when a compaction left
    entries out of it, the whole path with those entries in full; and the anchors drawn."""
    articles = "".join(_html_article(item, i) for i, item in enumerate(context, start=1))
    compacted = bool(context) and context[0].entry.type == "compaction"
    note = (
        "What the model reads, in order: the compaction's summary, then the entries it kept "
        "(from its <code>firstKeptEntryId</code>), then what follows."
        if compacted
        else "What the model reads, in order: the whole path."
    )
    html = f"<h2>Context path</h2><p class='meta'>{note}</p>{articles}"
    shown = {item.anchor for item in context}
    left_out = [item for item in path if item.anchor not in shown]
    if not left_out:
        return html, shown
    rows = []
    for position, item in enumerate(path, start=1):
        if item.anchor in shown:
            # Drawn above already: one line linking to it, so no anchor is drawn twice.
            rows.append(
                f"<p class='path-row'><a href='#{item.anchor}'>#{position} "
                f"{_esc(short(preview(item.entry), 90))}</a>"
                "<span class='badge'>in context</span></p>"
            )
        else:
            rows.append(_html_article(item, position))
    html += (
        "<h2>Whole path, root to leaf (summarized entries included)</h2>"
        f"<p class='meta'>Every entry on the branch: the {len(left_out)} "
        f"{'entry' if len(left_out) == 1 else 'entries'} the context path above leaves out "
        "in full (the file still holds them), the others as links up to it.</p>"
        f"{''.join(rows)}"
    )
    return html, shown | {item.anchor for item in left_out}


def export_html(session: Session, *, leaf: Any = UNSET, whole_tree: bool = False) -> str:
    """A standalone HTML page: the tree on the left, the context path (or all entries) beside.

    Every string from the session (text, tool output, ids, names) is escaped, images are
    embedded only as well-formed base64 of common image types, and the page loads nothing
    from outside and runs no script.

    Parameters
    ----------
    session:
        The session to export.
    leaf:
        Export the path to this entry (default: the session's leaf).
    whole_tree:
        Show every entry of every branch, in tree order, instead of one path.
    """
    tree, items, context = select_items(session, leaf, whole_tree)
    if whole_tree:
        articles = (_html_article(item, i) for i, item in enumerate(items, start=1))
        sections = f"<h2>All entries</h2>{''.join(articles)}"
        shown = {item.anchor for item in items}
    else:
        sections, shown = _path_sections(items, context)
    tree_rows = []
    for item in tree:
        if item.entry.is_navigation:
            continue
        label = session.label(item.entry.id)
        text = _esc(short(preview(item.entry), 90))
        link = f"<a href='#{item.anchor}'>{text}</a>" if item.anchor in shown else text
        badge = f"<span class='badge'>{_esc(label)}</span>" if label else ""
        level = min(item.level, _MAX_LEVEL)
        tree_rows.append(
            f"<li class='{'on-path' if item.on_path else ''}' style='padding-left:{level}em'>"
            f"<span class='dot'>{'●' if item.on_path else '·'}</span>{link}{badge}</li>"
        )
    title = session_title(session)
    meta = (
        f"session {_esc(session.id)} · cwd {_esc(session.cwd)} · {len(session.entries)} entries"
        f" · leaf {_esc(items[-1].entry.id if items else '-')}"
    )
    return clean(
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_esc(title)}</h1><p class='meta'>{meta}</p></header>"
        f"<nav><h2>Tree</h2><ol>{''.join(tree_rows)}</ol></nav>"
        f"<main>{sections}</main></body></html>\n"
    )
