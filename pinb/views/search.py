"""Search hits (:class:`pinb.analysis.searching.hits.SearchResults`) as an HTML table, every string escaped."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..analysis.searching.hits import MARK_END, MARK_START
from ..core.describe import one_line as _short
from ..render.html import div, escape, table, wrap

if TYPE_CHECKING:
    from ..analysis.searching.hits import SearchResults

__all__ = ["search_html"]


def search_html(hits: SearchResults) -> str:
    """One row per hit: time, role, session, the match (marks in bold), its citation."""
    rows = []
    for hit in hits:
        title = hit.info.name or hit.info.first_message
        when = f"{hit.timestamp:%Y-%m-%d %H:%M}" if hit.timestamp else ""
        copies = f"+{len(hit.copies)}" if hit.copies else ""
        rows.append((
            when, hit.role or "", _short(title, 60), _marked_html(hit._marked),
            f"<code>{escape(hits.shown_cite(hit))}</code>", copies,
        ))  # fmt: skip
    head = div(f"{len(hits)} hit(s) for <code>{escape(hits.query)}</code>", "title")
    body = table(
        ("time", "role", "session", "match", "citation", "copies"),
        rows,
        raw_columns=(3, 4),
        wrap_columns=(2, 3, 4),
    )
    return wrap(head + body, "pinb-search")


def _marked_html(text: str) -> str:
    """A snippet with FTS5's marks as ``<strong>``; every piece of text escaped."""
    parts: list[str] = []
    for piece in re.split(f"({MARK_START}|{MARK_END})", _short(text, 240)):
        if piece == MARK_START:
            parts.append("<strong>")
        elif piece == MARK_END:
            parts.append("</strong>")
        else:
            parts.append(escape(piece))
    opened = sum(1 for p in parts if p == "<strong>") - sum(1 for p in parts if p == "</strong>")
    return "".join(parts) + "</strong>" * max(opened, 0)
