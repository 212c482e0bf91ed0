"""The tree picture drawn as SVG and written as plain text.

:func:`tree_picture_svg` draws the marks :func:`~pinb.render.tree.marks.picture_marks` places
(the PNG and matplotlib drawers draw the same marks: :mod:`pinb.render.tree.raster`,
:func:`~pinb.render.figure.draw_tree`); :func:`tree_text` writes the rows'
:class:`~pinb.render.tree.cells.Cells` as text, like ``git log --graph``. Every piece of
session text is escaped.
"""

from __future__ import annotations

from ..html import escape, shorten
from .cells import (
    EDGE_COLOR,
    ID_CHARS,
    KIND_CHARS,
    PATH_COLOR,
    Cells,
    row_cells,
    title_lines,
)
from .marks import Text, picture_marks
from .rows import RowLayout

__all__ = ["lane_strings", "tree_picture_svg", "tree_text"]

FONT = "ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace"


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
        Precomputed :func:`~pinb.render.tree.cells.row_cells` (computed when omitted).
    selected:
        Key of an entry whose row is highlighted.
    header / legend:
        Draw the title and summary above, the legend (only what occurs) below.
    """
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
