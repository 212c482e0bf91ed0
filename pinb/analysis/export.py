"""Export a session branch or its whole tree as standalone HTML, Markdown, or a Jupyter notebook.

Session text is untrusted. What the model wrote as Markdown (its replies, thinking and
summaries) goes through pinb's one Markdown policy (:mod:`pinb.render.markdown`): its
formatting renders, in the HTML page (``markdown_to_html``) as in the Markdown file and the
notebook's Markdown cells (``markdown_to_markdown``), with no raw HTML, no image (a picture
the model links to becomes a link) and no script link. Everything else (prompts, tool
output, names) shows as exactly the text the session holds: escaped into HTML by
:func:`~pinb.render.html.escape`, the one HTML escape every view uses too, in Markdown
fenced (tool output) or :func:`~pinb.render.markdown.literal`. Images are embedded only
from the session's own image blocks, as well-formed base64 of common image types, so
nothing in an export is fetched from anywhere. Values of any JSON type are accepted where
text is expected; lone surrogates (valid JSON, unencodable) become U+FFFD, and so, in the
HTML page, do the control characters HTML and XML cannot carry.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core import Session
from ..core.context.build import UNSET
from ..core.context.system_prompt import system_summary
from ..core.describe import entry_kind, entry_preview, kind_name
from ..core.file.atomic import replace_file
from ..core.format.entries import MISSING, Entry
from ..core.js.jsontext import SHOWN_DEPTH, json_text, value_text
from ..core.js.wire import parse_js_date
from ..errors import EntryNotFoundError, SessionFileError, UsageError
from ..render.html import escape
from ..render.markdown import (
    clean,
    code,
    fence,
    literal,
    literal_line,
    markdown_to_html,
    markdown_to_markdown,
)
from .frames import message_text

__all__ = ["default_export_path", "export_html", "export_ipynb", "export_markdown", "write_export"]

_SUFFIXES = {"html": ".html", "md": ".md", "ipynb": ".ipynb"}

_SAFE_MIME = re.compile(r"image/(png|jpeg|gif|webp)")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
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
.summary{background:#fff8e1}.summarized{opacity:.55}.meta-entry{font-size:12px;color:#6e7781;
 border-style:dashed}.error{color:#cf222e}.badge{display:inline-block;padding:0 6px;
 border-radius:8px;font-size:11px;background:#eaeef2;margin-left:4px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px;border-radius:4px;
 margin:4px 0;max-height:40em;overflow:auto}img{max-width:100%}
"""


def _str(value: object) -> str:
    """Any JSON value as text (a label may be an object, content a number)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json_text(value, max_depth=SHOWN_DEPTH, default=str)


def _esc(value: object) -> str:
    # Export shows a value as _str gives it (JSON for a non-string), escaped by the one policy.
    return escape(_str(value))


def _short(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _blocks(content: object) -> list[dict[str, Any]]:
    """The content blocks of a message (none when content is a string, number...)."""
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _message(entry: Entry) -> dict[str, Any]:
    message = entry.message
    return message if isinstance(message, dict) else {}


def _time(entry: Entry) -> str:
    stamp = entry.timestamp
    ms = parse_js_date(stamp) if isinstance(stamp, str) else None
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):  # a date outside what Python can show
        return ""


def _title(session: Session) -> str:
    if session.name:
        return _short(_str(session.name), 200)
    for entry in session.entries:
        if entry.role == "user":
            text = message_text(entry.message)
            if text.strip():
                return _short(text, 80)
    return f"Session {session.id}"


@dataclass
class _Item:
    """An entry chosen for export, with what the model sees of it."""

    entry: Entry
    anchor: str
    on_path: bool
    in_context: bool
    level: int = 0


def _select(session: Session, leaf: Any, whole_tree: bool) -> tuple[list[_Item], list[_Item]]:
    """``(tree, items)``: every entry in tree order, and the entries to show in full."""
    leaf_id = session.leaf_id if leaf is UNSET else leaf
    if leaf_id is not None and leaf is not UNSET and leaf_id not in session:
        raise EntryNotFoundError(str(leaf_id))
    context = session.build_context(leaf_id)
    on_path = {id(e) for e in context.path}
    in_context = {id(e) for e in context.sources}
    anchors = {id(e): f"e{i}" for i, e in enumerate(session.entries)}
    tree: list[_Item] = []
    for entry, level in _tree_order(session):
        tree.append(
            _Item(entry, anchors[id(entry)], id(entry) in on_path, id(entry) in in_context, level)
        )
    if whole_tree:
        items = [item for item in tree if not item.entry.is_navigation]
    else:
        items = [_Item(e, anchors[id(e)], True, id(e) in in_context) for e in context.path]
        items = [item for item in items if not item.entry.is_navigation]
    return tree, items


def _tree_order(session: Session) -> Iterator[tuple[Entry, int]]:
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


def _preview(entry: Entry) -> str:
    """``kind: preview``, the core's one preview of an entry (plain text: callers escape)."""
    return f"{kind_name(entry_kind(entry))}: {entry_preview(entry, 70)}"


def _system_parts(message: dict[str, Any]) -> list[tuple[str, str]]:
    """What a ``system`` message sets, as ``(heading, text)``: its summary, its base text,
    each section it sets or drops, and the tools it adds (with their descriptions) or
    removes. Pi 1.x keeps the prompt in these fields, so the content alone is often empty."""
    parts = [("system prompt", system_summary(message) or "(empty)")]
    content = message.get("content")
    text = message_text(message) if isinstance(content, list) else _str(content or "")
    if text.strip():
        parts.append(("text", text))
    sections = message.get("sections")
    if isinstance(sections, dict):
        for name, body in sections.items():
            if body is None:
                parts.append((f"section {_str(name)}", "(dropped)"))
            else:
                parts.append((f"section {_str(name)}", _str(body)))
    tools = message.get("toolsAdded")
    if isinstance(tools, list) and tools:
        lines = []
        for tool in tools:
            if isinstance(tool, dict):
                lines.append(f"{_str(tool.get('name', '?'))}: {_str(tool.get('description', ''))}")
            else:
                lines.append(_str(tool))
        parts.append(("tools added", "\n".join(lines)))
    removed = message.get("toolsRemoved")
    if isinstance(removed, list) and removed:
        names = [_str(t.get("name", "?")) if isinstance(t, dict) else _str(t) for t in removed]
        parts.append(("tools removed", ", ".join(names)))
    return parts


# -- HTML -----------------------------------------------------------------------------------


def _html_blocks(message: dict[str, Any]) -> str:
    # Only the model writes Markdown; a prompt or an extension's message is shown as is.
    def text_html(text: object) -> str:
        if message.get("role") == "assistant":
            return markdown_to_html(_str(text))
        return f"<pre>{_esc(text)}</pre>"

    content = message.get("content")
    if isinstance(content, str):
        return text_html(content)
    parts: list[str] = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(text_html(block.get("text", "")))
        elif kind == "thinking":
            body = "(redacted)" if block.get("redacted") else block.get("thinking", "")
            parts.append(
                f"<details><summary>thinking</summary>{markdown_to_html(_str(body))}</details>"
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
    if _safe_image(mime, data):
        return f"<img alt='image' src='data:{mime};base64,{_esc(data)}'>"
    return "<p><i>[image]</i></p>"


def _safe_image(mime: object, data: object) -> bool:
    """Only well-formed base64 of common image types is embedded; nothing else reaches src."""
    return (
        isinstance(mime, str)
        and _SAFE_MIME.fullmatch(mime) is not None
        and isinstance(data, str)
        and _BASE64.fullmatch(data) is not None
    )


def _html_body(entry: Entry) -> str:
    raw = entry.raw
    if entry.type == "message":
        message = _message(entry)
        role = message.get("role")
        if role == "bashExecution":
            text = f"$ {_str(message.get('command', ''))}\n{_str(message.get('output', ''))}"
            return f"<pre>{_esc(text)}</pre>"
        if role == "system":
            return "".join(
                f"<p><strong>{_esc(name)}</strong></p><pre>{_esc(text)}</pre>"
                for name, text in _system_parts(message)
            )
        body = _html_blocks(message)
        if message.get("errorMessage"):
            body += f"<p class='error'>{_esc(message['errorMessage'])}</p>"
        return body
    if entry.type in ("compaction", "branch_summary"):
        return markdown_to_html(_str(raw.get("summary", "")))
    if entry.type == "custom_message":
        return _html_blocks({"content": raw.get("content")})
    return ""


def _html_article(item: _Item, index: int) -> str:
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
            f"{_esc(_preview(entry))} <small>{_esc(_time(entry))}</small></article>"
        )
    message = _message(entry)
    heading = (
        f"{_esc(role)}{note} <small>#{index} · {_esc(_time(entry))} · {_esc(entry.id)}"
        f"{' · ' + _esc(message['model']) if message.get('model') else ''}</small>"
    )
    if message.get("isError"):
        heading += " <span class='badge error'>error</span>"
    return (
        f"<article id='{item.anchor}' class='{' '.join(classes)}'><h3>{heading}</h3>"
        f"{_html_body(entry)}</article>"
    )


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
    tree, items = _select(session, leaf, whole_tree)
    shown = {item.anchor for item in items}
    tree_rows = []
    for item in tree:
        if item.entry.is_navigation:
            continue
        label = session.label(item.entry.id)
        text = _esc(_short(_preview(item.entry), 90))
        link = f"<a href='#{item.anchor}'>{text}</a>" if item.anchor in shown else text
        badge = f"<span class='badge'>{_esc(label)}</span>" if label else ""
        level = min(item.level, _MAX_LEVEL)
        tree_rows.append(
            f"<li class='{'on-path' if item.on_path else ''}' style='padding-left:{level}em'>"
            f"<span class='dot'>{'●' if item.on_path else '·'}</span>{link}{badge}</li>"
        )
    articles = [_html_article(item, i) for i, item in enumerate(items, start=1)]
    title = _title(session)
    meta = (
        f"session {_esc(session.id)} · cwd {_esc(session.cwd)} · {len(session.entries)} entries"
        f" · leaf {_esc(items[-1].entry.id if items else '-')}"
    )
    heading = "All entries" if whole_tree else "Context path"
    return clean(
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_esc(title)}</h1><p class='meta'>{meta}</p></header>"
        f"<nav><h2>Tree</h2><ol>{''.join(tree_rows)}</ol></nav>"
        f"<main><h2>{heading}</h2>{''.join(articles)}</main></body></html>\n"
    )


# -- Markdown -------------------------------------------------------------------------------


def _md_message(entry: Entry) -> list[str]:
    raw = entry.raw
    if entry.type in ("compaction", "branch_summary"):
        return [markdown_to_markdown(_str(raw.get("summary", "")))]
    message = _message(entry) if entry.type == "message" else {"content": raw.get("content")}
    if message.get("role") == "bashExecution":
        command, output = _str(message.get("command", "")), _str(message.get("output", ""))
        return [fence(f"$ {command}\n{output}", "console")]
    if message.get("role") == "system":  # the prompt and tools, as the text they are
        return [
            f"**{literal_line(name)}**\n\n{fence(text, 'text')}"
            for name, text in _system_parts(message)
        ]
    # Only the model writes Markdown; a prompt, a tool's output or an extension's message
    # shows as the text it is (a README a tool read must not render as headings).
    role = message.get("role")
    if role == "toolResult":
        text = message_text(message)
        images = sum(1 for b in _blocks(message.get("content")) if b.get("type") == "image")
        return ([fence(text, "text")] if text or not images else []) + ["*[image]*"] * images
    prose = markdown_to_markdown if role == "assistant" else literal
    content = message.get("content")
    if not isinstance(content, list):
        return [prose(_str(content))]
    parts: list[str] = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(prose(_str(block.get("text", ""))))
        elif kind == "thinking":
            body = "(redacted)" if block.get("redacted") else _str(block.get("thinking", ""))
            quoted = markdown_to_markdown(body).split("\n")
            parts.append("\n".join(f"> {line}" if line else ">" for line in quoted))
        elif kind == "toolCall":
            args = json_text(block.get("arguments"), indent=1, max_depth=SHOWN_DEPTH, default=str)
            parts.append(f"**Tool call** {code(_str(block.get('name')))}\n\n{fence(args, 'json')}")
        elif kind == "image":
            parts.append("*[image]*")
    if message.get("errorMessage"):
        parts.append(f"**Error:** {literal(_str(message['errorMessage']))}")
    return parts


def export_markdown(session: Session, *, leaf: Any = UNSET, whole_tree: bool = False) -> str:
    """The context path (or every entry, in tree order) as Markdown.

    Model text keeps its Markdown formatting but raw HTML is neutralised (``<`` and ``&``
    become entities); tool arguments and outputs are fenced code blocks; prompts and
    other text render as exactly what the session holds.
    """
    _, items = _select(session, leaf, whole_tree)
    lines = [f"# {literal_line(_title(session))}", ""]
    lines.append(f"- session: {code(_str(session.id))}")
    lines.append(f"- cwd: {code(_str(session.cwd))}")
    lines.append(f"- entries: {len(session.entries)}, shown: {len(items)}")
    lines.append("")
    previous: Entry | None = None
    for index, item in enumerate(items, start=1):
        entry = item.entry
        if entry.type not in ("message", "custom_message", "compaction", "branch_summary"):
            lines += [f"*{literal(_short(_preview(entry), 200))}*", ""]
            previous = entry
            continue
        role = entry.role or entry.type
        extra = ""
        if item.on_path and not item.in_context and entry.type == "message":
            extra = " · summarized"
        if whole_tree and previous is not None and entry.parent_id != previous.id:
            extra += f" · ↳ branch from {code(_str(entry.parent_id))}"
        model = _message(entry).get("model")
        error = " (error)" if _message(entry).get("isError") else ""
        lines.append(f"## {index}. {literal_line(_str(role))}{error}")
        lines.append(
            f"*{_time(entry)} · {code(_str(entry.id))}"
            f"{' · ' + literal_line(_str(model)) if model else ''}"
            f"{extra}*"
        )
        lines.append("")
        for part in _md_message(entry):
            lines += [part, ""]
        previous = entry
    return clean("\n".join(lines).rstrip("\n") + "\n")


# -- Jupyter notebook -----------------------------------------------------------------------


def _source(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def _result_outputs(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    if message is None:
        return []
    outputs: list[dict[str, Any]] = []
    text = message_text(message)
    if text:
        name = "stderr" if message.get("isError") else "stdout"
        outputs.append({"output_type": "stream", "name": name, "text": _source(text)})
    for block in _blocks(message.get("content")):
        if block.get("type") == "image":
            mime, data = block.get("mimeType"), block.get("data")
            if _safe_image(mime, data):
                outputs.append(
                    {"output_type": "display_data", "data": {mime: data}, "metadata": {}}
                )
    return outputs


def export_ipynb(
    session: Session, *, leaf: Any = UNSET, whole_tree: bool = False
) -> dict[str, Any]:
    """An nbformat 4 notebook (plain JSON dict): a Markdown cell per message, and a code cell
    per tool call with its result as the cell's output.

    A tool call's cell holds a comment naming the tool and its arguments as a JSON
    literal, so running the notebook never repeats what the agent did.
    """
    _, items = _select(session, leaf, whole_tree)
    results: dict[str, dict[str, Any]] = {}
    for item in items:
        message = item.entry.message
        if message and message.get("role") == "toolResult":
            results.setdefault(value_text(message.get("toolCallId")), message)
    cells: list[dict[str, Any]] = []

    def markdown(text: str) -> None:
        cells.append(
            {
                "cell_type": "markdown",
                "id": f"c{len(cells)}",
                "metadata": {},
                "source": _source(text),
            }
        )

    markdown(
        f"# {literal_line(_title(session))}\n\nsession {code(_str(session.id))} · "
        f"cwd {code(_str(session.cwd))}"
    )
    paired: set[str] = set()
    for item in items:
        entry = item.entry
        message = entry.message
        if message and message.get("role") == "toolResult":
            if value_text(message.get("toolCallId")) in paired:
                continue  # shown as the output of its call
        if entry.type not in ("message", "custom_message", "compaction", "branch_summary"):
            continue
        role = entry.role or entry.type
        text_parts = [
            p for p in _md_message(entry) if not p.startswith("**Tool call**")
        ]  # tool calls become code cells below
        markdown(f"**{literal_line(_str(role))}** · {_time(entry)}\n\n" + "\n\n".join(text_parts))
        for block in _blocks((message or {}).get("content")):
            if block.get("type") != "toolCall":
                continue
            call_id = value_text(block.get("id"))
            args = json_text(block.get("arguments"), indent=1, max_depth=SHOWN_DEPTH, default=str)
            result = results.get(call_id)
            if result is not None:
                paired.add(call_id)
            cells.append(
                {
                    "cell_type": "code",
                    "id": f"c{len(cells)}",
                    "metadata": {"pinb": {"tool": block.get("name"), "toolCallId": call_id}},
                    "execution_count": None,
                    # One comment line: a name holding a line break must not start code.
                    "source": _source(
                        f"# tool call: {' '.join(_str(block.get('name')).split())}\n{args}"
                    ),
                    "outputs": _result_outputs(result),
                }
            )
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "language_info": {"name": "python"},
            "pinb": {"session": session.id, "cwd": session.cwd, "wholeTree": whole_tree},
        },
        "cells": cells,
    }


def write_export(
    session: Session | str | os.PathLike[str],
    fmt: str,
    out: str | os.PathLike[str] | None = None,
    *,
    leaf: Any = UNSET,
    whole_tree: bool = False,
) -> str:
    """Render ``session`` as ``"html"``, ``"md"`` or ``"ipynb"``; write it to ``out`` if given.

    Returns the rendered text. The session file itself is only read.
    """
    if not isinstance(session, Session):
        session = Session.open(session)
        if session.loaded is not None and session.loaded.blank:
            # Pi would start a new session in it; exporting it would invent an id and a cwd.
            raise SessionFileError(
                "empty file: no session header, nothing to export", path=session.path
            )
    leaf = UNSET if leaf is None or leaf is MISSING else leaf
    if fmt == "html":
        text = export_html(session, leaf=leaf, whole_tree=whole_tree)
    elif fmt == "md":
        text = export_markdown(session, leaf=leaf, whole_tree=whole_tree)
    elif fmt == "ipynb":
        notebook = export_ipynb(session, leaf=leaf, whole_tree=whole_tree)
        text = clean(json_text(notebook, indent=1) + "\n")
    else:
        raise UsageError(f"unknown export format {fmt!r}; use html, md or ipynb")
    if out is not None:
        if session.path is not None and _same_file(session.path, out):
            raise UsageError(f"{out}: is the session being exported; choose another output file")
        # Never truncate the old file first: a failure leaves it as it was.
        replace_file(out, text.encode("utf-8"))
    return text


def default_export_path(session: Session, fmt: str, folder: str | os.PathLike[str] = ".") -> Path:
    """A new file in ``folder`` named after the session (its name, else its file's stem).

    An existing file is never overwritten: ``name-2.html``, ``name-3.html``… instead.
    """
    if fmt not in _SUFFIXES:
        raise UsageError(f"unknown export format {fmt!r}; use html, md or ipynb")
    base = ""
    if session.name:
        base = re.sub(r"[^a-z0-9]+", "-", _str(session.name).lower()).strip("-")[:60].strip("-")
    if not base:
        base = session.path.stem if session.path is not None else f"session-{session.id}"
    target = Path(folder) / f"{base}{_SUFFIXES[fmt]}"
    number = 1
    while target.exists():
        number += 1
        target = Path(folder) / f"{base}-{number}{_SUFFIXES[fmt]}"
    return target


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
