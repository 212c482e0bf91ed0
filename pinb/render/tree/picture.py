"""What each row of the tree picture says and how it looks, drawn as SVG and as plain text.

:func:`row_cells` turns a :class:`~pinb.render.tree.rows.RowLayout` into the words, marks and
colours of every row (pure data); :mod:`pinb.render.tree.marks` places them, and
:func:`tree_picture_svg` (SVG), :mod:`pinb.render.tree.raster` (PNG) and
:func:`~pinb.render.figure.draw_tree` (matplotlib) draw those marks; :func:`tree_text`
writes the cells as text. The widget's ES module receives the same cells. Every piece of
session text is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.js.jsontext import visible
from ..html import escape, shorten
from .graph import NodeInfo, SessionGraph, kind_name, plural
from .rows import Row, RowLayout

if TYPE_CHECKING:
    from .marks import Text

__all__ = [
    "BAND_COLORS",
    "CHAR_W",
    "KIND_COLORS",
    "LANE_W",
    "ROW_H",
    "Cells",
    "legend_items",
    "row_cells",
    "short_id",
    "title_lines",
    "tree_picture_svg",
    "tree_text",
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
FONT = "ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace"
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


# ---------------------------------------------------------------------------------------
# The picture as SVG
# ---------------------------------------------------------------------------------------


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


def _num(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _shape_svg(glyph: str, x: float, y: float, color: str, key: str, on_path: bool) -> str:
    stroke = f' stroke="{PATH_COLOR}" stroke-width="1.5"' if on_path else ' stroke="#ffffff"'
    data = f' data-id="{escape(key)}"' if key else ""
    if glyph == "circle":
        return f'<circle{data} cx="{_num(x)}" cy="{_num(y)}" r="5" fill="{color}"{stroke}/>'
    if glyph == "square":
        return (
            f'<rect{data} x="{_num(x - 5.5)}" y="{_num(y - 5.5)}" width="11" height="11" '
            f'fill="{color}"{stroke}/>'
        )
    if glyph == "diamond":
        return f'<path{data} d="M{_num(x)} {_num(y - 7)}l7 7l-7 7l-7 -7z" fill="{color}"{stroke}/>'
    if glyph == "dot":
        return f'<circle{data} cx="{_num(x)}" cy="{_num(y)}" r="3" fill="{color}"/>'
    if glyph == "chain":
        return (
            f'<rect{data} x="{_num(x - 4)}" y="{_num(y - 8)}" width="8" height="16" rx="4" '
            f'fill="#ffffff" stroke="{PATH_COLOR if on_path else color}" stroke-width="2" '
            'stroke-dasharray="2 2"/>'
        )
    if glyph == "folded":
        return (
            f'<rect{data} x="{_num(x - 6)}" y="{_num(y - 6)}" width="12" height="12" '
            f'fill="#ffffff" stroke="{color}" stroke-width="1.5"/>'
            f'<path d="M{_num(x - 3)} {_num(y)}h6M{_num(x)} {_num(y - 3)}v6" stroke="{color}"/>'
        )
    return ""  # gap: no node


def _legend_svg(glyph: str, x: float, y: float, color: str) -> str:
    if glyph == "path":
        return f'<path d="M{_num(x - 6)} {_num(y)}h12" stroke="{color}" stroke-width="3"/>'
    if glyph == "leaf":
        return (
            f'<circle cx="{_num(x)}" cy="{_num(y)}" r="7" fill="none" stroke="{color}" '
            'stroke-width="2" stroke-dasharray="3 2"/>'
        )
    if glyph == "band":
        return f'<rect x="{_num(x - 7)}" y="{_num(y - 6)}" width="14" height="12" fill="{color}" stroke="#d0d7de"/>'
    if glyph == "boundary":
        return (
            f'<path d="M{_num(x - 7)} {_num(y)}h14" stroke="{color}" stroke-width="1.5" '
            'stroke-dasharray="4 3"/>'
        )
    if glyph == "tag":
        return f'<rect x="{_num(x - 6)}" y="{_num(y - 5)}" width="12" height="10" rx="3" fill="{color}"/>'
    return _shape_svg(glyph, x, y, color, "", False)


def _text_svg(text: Text) -> str:
    attrs = f'x="{_num(text.x)}" y="{_num(text.y)}" fill="{text.color}"'
    if text.size != 12:
        attrs += f' font-size="{_num(text.size)}"'
    if text.font == "sans":
        attrs += ' font-family="system-ui,sans-serif"'
    if text.bold:
        attrs += ' font-weight="bold"'
    if text.italic:
        attrs += ' font-style="italic"'
    if text.anchor == "end":
        attrs += ' text-anchor="end"'
    return f"<text {attrs}>{escape(text.text)}</text>"


def tree_picture_svg(
    layout: RowLayout,
    *,
    cells: list[Cells] | None = None,
    selected: str | None = None,
    header: bool = True,
    legend: bool = True,
) -> str:
    """Draw the rows as one standalone SVG document (valid XML, no script, no links).

    Everything is drawn where :func:`~pinb.render.tree.marks.picture_marks` puts it.

    Parameters
    ----------
    layout:
        From :func:`~pinb.render.tree.rows.row_layout`.
    cells:
        Precomputed :func:`row_cells` (computed when omitted).
    selected:
        Key of an entry whose row is highlighted.
    header / legend:
        Draw the title and summary above, the legend (only what occurs) below.
    """
    from .marks import picture_marks  # the marks are laid out from this module's cells

    picture = picture_marks(layout, cells=cells, selected=selected, header=header, legend=legend)
    w, h = picture.width, picture.height
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pinb-tree" width="{_num(w)}" '
        f'height="{_num(h)}" viewBox="0 0 {_num(w)} {_num(h)}" font-family="{FONT}" '
        f'font-size="12"><rect width="{_num(w)}" height="{_num(h)}" fill="#ffffff"/>'
    ]
    for band in picture.bands:
        out.append(
            f'<rect x="{_num(band.x)}" y="{_num(band.y)}" width="{_num(band.w)}" '
            f'height="{_num(band.h)}" fill="{band.color}"/>'
        )
    strokes = {
        "plain": f'stroke="{EDGE_COLOR}" stroke-width="1.5"',
        "dotted": f'stroke="{EDGE_COLOR}" stroke-width="1.5" stroke-dasharray="2 3"',
        "path": f'stroke="{PATH_COLOR}" stroke-width="3"',
    }
    for kind, stroke in strokes.items():
        paths = []
        for link in picture.links:
            if link.kind != kind:
                continue
            start = f"M{_num(link.x0)} {_num(link.y0)}"
            if link.side:
                paths.append(
                    f"{start}V{_num(link.turn)}Q{_num(link.x0)} {_num(link.y1)} "
                    f"{_num(link.x1)} {_num(link.y1)}"
                )
            else:
                paths.append(f"{start}V{_num(link.y1)}")
        if paths:
            out.append(f'<path d="{"".join(paths)}" {stroke} fill="none"/>')
    for node in picture.nodes:
        if node.leaf:
            out.append(
                f'<circle cx="{_num(node.x)}" cy="{_num(node.y)}" r="8.5" fill="#ffffff" '
                f'stroke="{PATH_COLOR}" stroke-width="2" stroke-dasharray="3 2"/>'
            )
        out.append(_shape_svg(node.glyph, node.x, node.y, node.color, node.key, node.on_path))
    for line in picture.lines:
        dash = f' stroke-dasharray="{_num(line.dash[0])} {_num(line.dash[1])}"' if line.dash else ""
        out.append(
            f'<path d="M{_num(line.x0)} {_num(line.y0)}L{_num(line.x1)} {_num(line.y1)}" '
            f'stroke="{line.color}" stroke-width="{_num(line.width)}"{dash}/>'
        )
    out.extend(_text_svg(text) for text in picture.texts)
    out.extend(_legend_svg(key.glyph, key.x, key.y, key.color) for key in picture.keys)
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------------------------------
# Plain text
# ---------------------------------------------------------------------------------------

_TEXT_GLYPHS = {
    "circle": ("●", "○"),
    "square": ("■", "□"),
    "diamond": ("◆", "◇"),
    "dot": ("·", "·"),
    "chain": ("┆", "┆"),
    "folded": ("⊞", "⊞"),
    "gap": ("┄", "┄"),
}


def lane_strings(layout: RowLayout, cells: list[Cells]) -> list[str]:
    """The lane graph of every row as box-drawing text, two characters per lane."""
    width = max(1, layout.lanes) * 2
    grid = [[" "] * width for _ in layout.rows]
    for edge in layout.edges:
        col = edge.lane * 2
        for r in range(edge.parent + 1, edge.child):
            if grid[r][col] == " ":
                grid[r][col] = "┊" if edge.dotted else "│"
        if edge.side:
            grid[edge.child][col] = "├"
            for c in range(col + 1, edge.child_lane * 2):
                grid[edge.child][c] = "─"
    for i, (row, cell) in enumerate(zip(layout.rows, cells, strict=True)):
        on, off = _TEXT_GLYPHS[cell.glyph]
        grid[i][row.lane * 2] = on if cell.on_path else off
    return ["".join(line) for line in grid]


def tree_text(layout: RowLayout, *, cells: list[Cells] | None = None, legend: bool = True) -> str:
    """The tree as plain text, like ``git log --graph``: lanes, kind, id, tags, text, tokens."""
    cells = cells if cells is not None else row_cells(layout, text_chars=56)
    title, summary = title_lines(layout)
    lines = [title, summary]
    if not layout.rows:
        return "\n".join(lines)
    lanes = lane_strings(layout, cells)
    for lane, cell in zip(lanes, cells, strict=True):
        if cell.boundary:
            lines.append(" " * len(lane) + f"  ┄┄ {cell.boundary} ┄┄")
        if cell.glyph == "gap":
            lines.append(f"{lane}  {cell.text}")
            continue
        tags = " ".join(text for text, _ in cell.tags)
        label = f"[{cell.label}]" if cell.label else ""
        body = " ".join(part for part in (tags, label, cell.text) if part)
        body = shorten(body, 64)
        tokens = f"{cell.tokens:,}" if cell.tokens is not None else ""
        lines.append(
            f"{lane} {cell.kind_text:<{KIND_CHARS}}{cell.id_text:<{ID_CHARS}}{body:<64} {tokens:>8}".rstrip()
        )
    if legend:
        shown = {c.glyph for c in cells}
        keys = [
            f"{_TEXT_GLYPHS[g][0]}/{_TEXT_GLYPHS[g][1]} {words}"
            for g, words in (
                ("circle", "message on/off the active path"),
                ("square", "compaction"),
                ("diamond", "branch summary"),
                ("chain", "collapsed chain"),
                ("folded", "folded branch"),
            )
            if g in shown
        ]
        if "dot" in shown:
            keys.append("· bookkeeping")
        lines.append("legend: " + " · ".join(keys) + " · tokens are chars/4 estimates")
    return "\n".join(lines)
