"""What each row of the tree picture says and how it looks: its words, marks and colours.

:func:`row_cells` turns a :class:`~pinb.render.tree.rows.RowLayout` into the :class:`Cells`
of every row (pure data), with the picture's title (:func:`title_lines`) and legend
(:func:`legend_items`); :mod:`pinb.render.tree.marks` places them, and the drawers draw
them: :func:`~pinb.render.tree.picture.tree_picture_svg` (SVG),
:mod:`pinb.render.tree.raster` (PNG), :func:`~pinb.render.figure.draw_tree` (matplotlib) and
:func:`~pinb.render.tree.picture.tree_text` (text). The widget's ES module receives the same
cells. Session text is cut to a line here, never escaped: each drawer escapes what it writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.js.jsontext import visible
from ..html import shorten
from .graph import NodeInfo, SessionGraph, kind_name, plural
from .rows import Row, RowLayout

__all__ = [
    "BAND_COLORS",
    "CHAR_W",
    "KIND_COLORS",
    "LANE_W",
    "ROW_H",
    "Cells",
    "conversation_end",
    "legend_items",
    "row_cells",
    "short_id",
    "title_lines",
]

#: Fill colour per kind (role or entry type); bookkeeping is grey.
KIND_COLORS: dict[str, str] = {
    "user": "#2f81f7",
    "assistant": "#8250df",
    "toolResult": "#57606a",
    "bashExecution": "#bf8700",
    "system": "#0a7e8c",
    "custom": "#8c959f",
    "custom_message": "#1a7f37",
    "compaction": "#cf222e",
    "branch_summary": "#b08800",
    "chain": "#8c959f",
    "folded": "#8c959f",
}
BOOKKEEPING_COLOR = "#afb8c1"
PATH_COLOR = "#0969da"
EDGE_COLOR = "#a0a8b0"
TEXT_COLOR = "#1f2328"
MUTED_COLOR = "#6e7781"
#: Row background per band.
BAND_COLORS: dict[str, str] = {
    "path": "#eef5ff",
    "summarized": "#e9ebee",
    "compaction": "#ffebe9",
    "branch_summary": "#fff8c5",
    "selected": "#ffe8cc",
}
TAG_COLORS: dict[str, str] = {
    "leaf": PATH_COLOR,
    "summarized": MUTED_COLOR,
    "kept": "#1a7f37",
    "edit": "#8250df",
    "problem": "#cf222e",
    "archived": "#9a6700",
    "label": "#9a6700",
}

#: Pixels: row height, lane width, width of one monospace character at font size 12.
ROW_H = 20
LANE_W = 14
CHAR_W = 7.24
#: Characters per text column.
KIND_CHARS = 15
ID_CHARS = 9
TEXT_CHARS = 72
TOKEN_CHARS = 9


def short_id(key: str) -> str:
    """The first 8 characters of an entry key (as Pi shows ids), control characters escaped."""
    shown = visible(key)
    return shown if len(shown) <= 8 else shown[:7] + "…"


@dataclass(slots=True)
class Cells:
    """Everything one row shows.

    ``glyph`` is ``"circle"``, ``"square"`` (compaction), ``"diamond"`` (branch summary),
    ``"dot"`` (bookkeeping), ``"chain"``, ``"folded"`` or ``"gap"`` (elided rows);
    ``tags`` are ``(text, tone)`` pairs with tones from :data:`TAG_COLORS`; ``band`` names
    the row background (:data:`BAND_COLORS`) or is ``None``.
    """

    key: str
    kind: str
    glyph: str
    color: str
    kind_text: str
    id_text: str
    tags: list[tuple[str, str]] = field(default_factory=list)
    label: str = ""
    text: str = ""
    tokens: int | None = None
    band: str | None = None
    muted: bool = False
    on_path: bool = False
    is_leaf: bool = False
    boundary: str | None = None  # a compaction boundary drawn above this row

    def to_dict(self) -> dict[str, Any]:
        """Plain values for the widget (JSON)."""
        return {
            "key": self.key,
            "kind": self.kind,
            "glyph": self.glyph,
            "color": self.color,
            "kindText": self.kind_text,
            "idText": self.id_text,
            "tags": [list(tag) for tag in self.tags],
            "label": self.label,
            "text": self.text,
            "tokens": self.tokens,
            "band": self.band,
            "muted": self.muted,
            "onPath": self.on_path,
            "isLeaf": self.is_leaf,
            "boundary": self.boundary,
        }


def _glyph(node: NodeInfo) -> str:
    if node.type == "compaction":
        return "square"
    if node.type == "branch_summary":
        return "diamond"
    if node.bookkeeping or node.type not in ("message", "custom_message"):
        return "dot"
    return "circle"


def conversation_end(graph: SessionGraph) -> str | None:
    """The key of the last entry of the active path that is not bookkeeping.

    The leaf is where the next entry goes, and Pi's ``/label``, model or thinking changes
    append there too: a leaf is often such a row. The conversation goes on after the last
    message (or summary) before it. ``None`` without one (a path of settings only).
    """
    for key in reversed(graph.path_keys):
        at = graph.index.get(key)
        if at is not None and not graph.nodes[at].bookkeeping:
            return key
    return None


def _leaf_tags(graph: SessionGraph, node: NodeInfo, end: str | None) -> list[tuple[str, str]]:
    """Where the conversation continues, and the bookkeeping appended after it."""
    if node.key == end:
        return [("◀ leaf" if node.is_leaf else "◀ continues here", "leaf")]
    if node.is_leaf and end is None:
        return [("◀ leaf", "leaf")]
    if node.on_path and end is not None and node.bookkeeping and _after(graph, node.key, end):
        return [("leaf · bookkeeping" if node.is_leaf else "bookkeeping after it", "summarized")]
    return []


def _after(graph: SessionGraph, key: str, end: str) -> bool:
    keys = graph.path_keys
    return end in keys and key in keys and keys.index(key) > keys.index(end)


def _entry_cells(layout: RowLayout, row: Row, text_chars: int, end: str | None = None) -> Cells:
    graph = layout.graph
    node = graph.nodes[row.node]
    glyph = _glyph(node)
    color = KIND_COLORS.get(node.kind, BOOKKEEPING_COLOR) if glyph != "dot" else BOOKKEEPING_COLOR
    tags = _leaf_tags(graph, node, end)
    message_like = glyph != "dot"
    if node.role == "system" and node.region in ("summarized", "kept") and message_like:
        tags.append(("not sent itself", "summarized"))  # the compaction's checkpoint replays it
    elif node.region == "summarized" and message_like:
        tags.append(("summarized", "summarized"))
    elif node.region == "kept" and message_like:
        tags.append(("kept", "kept"))
    if node.edit == "omitted":
        tags.append((f"omitted by {short_id(node.edit_key or '')}", "edit"))
    elif node.edit == "replaced":
        tags.append((f"replaced by {short_id(node.edit_key or '')}", "edit"))
    elif node.edit == "masked":
        tags.append((f"masked by {short_id(node.edit_key or '')}", "edit"))
    if node.cycle:
        tags.append(("parent loop", "problem"))
    if node.orphan:
        tags.append(("parent missing", "problem"))
    if node.archived:
        tags.append(("archived", "archived"))
    band: str | None = None
    if node.type == "compaction" and node.on_path:
        band = "compaction"
    elif node.type == "branch_summary":
        band = "branch_summary"
    elif node.region == "summarized":
        band = "summarized"
    elif node.on_path:
        band = "path"
    label = node.label_text or ""
    preview = node.preview
    if node.type == "compaction":
        preview = f"summary: {preview}"
    elif node.type == "branch_summary":
        preview = f"summary of a branch left: {preview}"
    return Cells(
        key=node.key,
        kind=node.kind,
        glyph=glyph,
        color=color,
        kind_text=shorten(kind_name(node.kind), KIND_CHARS - 1),
        id_text=short_id(node.key),
        tags=tags,
        label=shorten(label, 30) if label else "",
        text=shorten(preview, text_chars),
        # A system patch that only removes tools costs 0: say so rather than leave a blank.
        tokens=node.tokens if node.tokens or (node.role == "system" and node.on_path) else None,
        band=band,
        muted=node.region == "summarized" or node.bookkeeping,
        on_path=node.on_path,
        # The ring marks where the conversation continues (the leaf, unless bookkeeping).
        is_leaf=node.key == end if end is not None else node.is_leaf,
    )


def row_cells(layout: RowLayout, *, text_chars: int = TEXT_CHARS) -> list[Cells]:
    """The cells of every row of ``layout`` (see :class:`Cells`)."""
    graph = layout.graph
    end = conversation_end(graph)
    out: list[Cells] = []
    for row in layout.rows:
        if row.kind == "entry":
            out.append(_entry_cells(layout, row, text_chars, end))
            continue
        if row.kind == "elided":
            out.append(
                Cells("", "gap", "gap", MUTED_COLOR, "", "", text=layout.describe(row), muted=True)
            )
            continue
        leaf = any(
            graph.nodes[i].key == end if end is not None else graph.nodes[i].is_leaf
            for i in row.nodes
        )
        summarized = row.on_path and all(graph.nodes[i].region == "summarized" for i in row.nodes)
        tags = [("summarized", "summarized")] if summarized else []
        out.append(
            Cells(
                key=row.key,
                kind=row.kind,
                glyph=row.kind,
                color=KIND_COLORS[row.kind],
                kind_text="⋯ chain" if row.kind == "chain" else "⊞ folded",
                id_text=short_id(row.key),
                tags=tags,
                text=shorten(layout.describe(row), text_chars),
                tokens=row.tokens or None,
                band=("summarized" if summarized else "path") if row.on_path else None,
                muted=summarized,
                on_path=row.on_path,
                is_leaf=leaf,
            )
        )
    # The boundary of the last compaction: above the first kept entry (or the compaction
    # itself when it kept nothing), on the active path.
    if graph.compaction_key is not None:
        target = graph.first_kept_key
        if target is None or layout.row_for(target) is None:
            target = graph.compaction_key
        at = layout.row_for(target)
        if at is not None and out[at].kind != "gap":
            n_summarized, n_kept = graph.compaction_counts or (0, 0)
            out[at].boundary = (
                f"▲ {plural(n_summarized, 'entry')} summarized by compaction "
                f"{short_id(graph.compaction_key)} · {n_kept:,} kept ▼"
            )
    return out


def legend_items(layout: RowLayout, cells: list[Cells]) -> list[tuple[str, str, str]]:
    """``(glyph, colour, words)`` for the kinds and marks that occur, nothing else."""
    items: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    bookkeeping: list[str] = []
    for cell in cells:
        if cell.glyph == "gap" or cell.kind in seen:
            continue
        seen.add(cell.kind)
        if cell.glyph == "dot":
            bookkeeping.append(kind_name(cell.kind))
            continue
        items.append((cell.glyph, cell.color, kind_name(cell.kind)))
    if bookkeeping:
        items.append(("dot", BOOKKEEPING_COLOR, f"bookkeeping ({', '.join(bookkeeping)})"))
    if any(c.on_path for c in cells):
        items.append(("path", PATH_COLOR, "active path: the model's context comes from it"))
    if any(c.is_leaf for c in cells):
        end = conversation_end(layout.graph)
        words = "leaf: where the conversation continues"
        if end is not None and end != layout.graph.leaf_key:
            words = "where the conversation continues (the leaf after it is bookkeeping)"
        items.append(("leaf", PATH_COLOR, words))
    if any(c.band == "summarized" for c in cells):
        items.append(("band", BAND_COLORS["summarized"], "summarized: sent only as the summary"))
    if any(c.boundary for c in cells):
        items.append(("boundary", TAG_COLORS["problem"], "compaction boundary"))
    if any(tone == "edit" for c in cells for _, tone in c.tags):
        items.append(("tag", TAG_COLORS["edit"], "a context edit changes what the model sees"))
    if any(tone == "problem" for c in cells for _, tone in c.tags):
        items.append(("tag", TAG_COLORS["problem"], "odd file: a parent loop or missing parent"))
    return items


def title_lines(layout: RowLayout) -> tuple[str, str]:
    """The picture's title and its one-line summary."""
    graph = layout.graph
    name = graph.name or (f"session {graph.session_id[:8]}" if graph.session_id else "session")
    summary = graph.summary()
    if graph.nodes:
        summary += (
            f"; leaf {short_id(graph.leaf_key)}"
            if graph.leaf_key
            else "; no leaf (before the first entry)"
        )
        if graph.leaf_key and graph.marker_leaf:
            # pinb sees through its own markers; Session.leaf_id names the marker itself.
            summary += (
                f" (the conversation's last entry; Session.leaf_id is "
                f"{short_id(graph.marker_leaf)}, pinb's marker after it, not drawn)"
            )
        end = conversation_end(graph)
        if graph.leaf_key and end is not None and end != graph.leaf_key:
            at = graph.index.get(graph.leaf_key)
            what = kind_name(graph.nodes[at].kind) if at is not None else "bookkeeping"
            summary += f" (a {what}: the conversation continues after {short_id(end)})"
    if layout.chains:
        summary += f"; {plural(len(layout.chains), 'chain')} collapsed"
    if layout.folded:
        summary += f"; {plural(len(layout.folded), 'side branch', 'side branches')} folded"
    return f"Session tree · {shorten(name, 120)}", summary
