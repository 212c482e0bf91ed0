"""Where every piece of the tree picture goes: positioned marks that SVG, PNG and matplotlib draw.

:func:`picture_marks` turns a :class:`~pinb.render.tree.rows.RowLayout` and its
:class:`~pinb.render.tree.cells.Cells` into a :class:`Picture`: row bands, lane links, node
glyphs, dashed lines and texts, each at its pixel position (top-left origin), every text
with the box its glyphs take (:mod:`pinb.render.tree.metrics`). The drawers only draw what is
here, so a test of the marks is a test of every picture: no text leaves the picture, runs
into another or is crossed by a line.

The header's summary wraps to the picture's width; the compaction boundary gets a band of
its own above the first kept row, its label between two dashed strokes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .cells import (
    BAND_COLORS,
    CHAR_W,
    ID_CHARS,
    KIND_CHARS,
    LANE_W,
    MUTED_COLOR,
    ROW_H,
    TAG_COLORS,
    TEXT_CHARS,
    TEXT_COLOR,
    TOKEN_CHARS,
    Cells,
    legend_items,
    row_cells,
    title_lines,
)
from .metrics import ASCENT, DESCENT, Font, fit, text_width, wrap_lines
from .rows import RowLayout

__all__ = [
    "BOUNDARY_H",
    "Box",
    "Geometry",
    "Key",
    "Line",
    "Link",
    "Node",
    "Picture",
    "Rect",
    "Text",
    "geometry",
    "picture_marks",
]

#: Pixels: the band the compaction boundary takes above the first kept row.
BOUNDARY_H = 18
#: Pixels: a line of the header's summary and of the legend.
LINE_H = 16
MARGIN = 10.0

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


@dataclass(frozen=True, slots=True)
class Text:
    """A piece of text; ``y`` is its baseline, ``x`` its start (or end: ``anchor="end"``)."""

    x: float
    y: float
    text: str
    color: str
    size: float = 12.0
    font: Font = "mono"
    bold: bool = False
    italic: bool = False
    anchor: Literal["start", "end"] = "start"
    role: str = "text"

    @property
    def width(self) -> float:
        return text_width(self.text, self.size, font=self.font, bold=self.bold)

    def box(self) -> Box:
        """The box its glyphs take (``x0, y0, x1, y1``)."""
        x0 = self.x - self.width if self.anchor == "end" else self.x
        return (x0, self.y - ASCENT * self.size, x0 + self.width, self.y + DESCENT * self.size)


@dataclass(frozen=True, slots=True)
class Line:
    """A straight stroke (``dash``: on/off lengths, ``None`` for solid)."""

    x0: float
    y0: float
    x1: float
    y1: float
    color: str
    width: float = 1.5
    dash: tuple[float, float] | None = None
    role: str = "line"

    def box(self) -> Box:
        half = self.width / 2
        return (
            min(self.x0, self.x1) - half,
            min(self.y0, self.y1) - half,
            max(self.x0, self.x1) + half,
            max(self.y0, self.y1) + half,
        )


@dataclass(frozen=True, slots=True)
class Rect:
    """A filled rectangle (a row's band)."""

    x: float
    y: float
    w: float
    h: float
    color: str


@dataclass(frozen=True, slots=True)
class Link:
    """A parent → child edge: down the parent's lane from ``y0`` to ``y1``; when ``x1``
    differs from ``x0``, a quadratic turn into the child's lane starting at ``turn``."""

    x0: float
    y0: float
    x1: float
    y1: float
    turn: float
    kind: Literal["plain", "dotted", "path"]

    @property
    def side(self) -> bool:
        return self.x1 != self.x0


@dataclass(frozen=True, slots=True)
class Node:
    """A row's glyph (``circle``, ``square``, ``diamond``, ``dot``, ``chain``, ``folded``)."""

    glyph: str
    x: float
    y: float
    color: str
    on_path: bool
    key: str
    leaf: bool = False  # ringed: where the conversation continues

    def box(self) -> Box:
        r = 8.5 if self.leaf else 8.0
        return (self.x - r, self.y - r, self.x + r, self.y + r)


@dataclass(frozen=True, slots=True)
class Key:
    """A legend entry's symbol (a glyph, ``path``, ``leaf``, ``band``, ``boundary``, ``tag``)."""

    glyph: str
    x: float
    y: float
    color: str

    def box(self) -> Box:
        return (self.x - 8, self.y - 8, self.x + 8, self.y + 8)


@dataclass
class Picture:
    """Everything the tree picture draws, in drawing order within each list."""

    width: float
    height: float
    bands: list[Rect] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)


@dataclass(frozen=True)
class Geometry:
    """Pixel positions of the picture's columns and rows (top-left origin)."""

    width: float
    top: float  # y of the first row's top edge
    graph_x: float  # x of lane 0's centre
    kind_x: float
    id_x: float
    text_x: float
    tokens_right: float
    boundary_row: int | None = None  # the row the compaction boundary's band sits above

    def row_top(self, row: int) -> float:
        """y of a row's top edge (rows below the boundary move down by its band)."""
        below = self.boundary_row is not None and row >= self.boundary_row
        return self.top + row * ROW_H + (BOUNDARY_H if below else 0)

    def row_y(self, row: int) -> float:
        """y of a row's centre line."""
        return self.row_top(row) + ROW_H / 2

    def lane_x(self, lane: int) -> float:
        return self.graph_x + lane * LANE_W


def geometry(
    layout: RowLayout, *, header_lines: int = 0, boundary_row: int | None = None
) -> Geometry:
    """The columns for ``layout``: the text starts after the lanes; ``header_lines`` lines
    of summary (none: no header) sit above the rows."""
    top = MARGIN + (40.0 + LINE_H * header_lines if header_lines else 0.0)
    graph_x = MARGIN + LANE_W / 2
    kind_x = MARGIN + max(1, layout.lanes) * LANE_W + 6
    id_x = kind_x + KIND_CHARS * CHAR_W
    text_x = id_x + ID_CHARS * CHAR_W
    tokens_right = text_x + (TEXT_CHARS + TOKEN_CHARS + 2) * CHAR_W
    return Geometry(
        width=tokens_right + MARGIN,
        top=top,
        graph_x=graph_x,
        kind_x=kind_x,
        id_x=id_x,
        text_x=text_x,
        tokens_right=tokens_right,
        boundary_row=boundary_row,
    )


def _legend_lines(words: list[str], room: float) -> list[list[int]]:
    """Legend items packed into lines no wider than ``room`` pixels."""
    lines: list[list[int]] = [[]]
    used = 0.0
    for i, text in enumerate(words):
        need = _legend_width(text)
        if lines[-1] and used + need > room:
            lines.append([])
            used = 0.0
        lines[-1].append(i)
        used += need
    return [line for line in lines if line]


def _legend_width(words: str) -> float:
    return 11 + text_width(words, 11) + 13  # symbol, its gap, the words, the next gap


def picture_marks(
    layout: RowLayout,
    *,
    cells: list[Cells] | None = None,
    selected: str | None = None,
    header: bool = True,
    legend: bool = True,
) -> Picture:
    """Every mark of the tree picture of ``layout`` (see the module's note).

    Parameters
    ----------
    layout:
        From :func:`~pinb.render.tree.rows.row_layout`.
    cells:
        Precomputed :func:`~pinb.render.tree.cells.row_cells` (computed when omitted).
    selected:
        Key of an entry whose row is highlighted.
    header / legend:
        The title and summary above, the legend (only what occurs) below.
    """
    cells = cells if cells is not None else row_cells(layout)
    boundary_row = next((i for i, c in enumerate(cells) if c.boundary), None)
    probe = geometry(layout)
    room = probe.width - 2 * MARGIN
    title, summary = title_lines(layout) if header else ("", "")
    summary_lines = wrap_lines(summary, room, 12) if header else []
    geo = geometry(layout, header_lines=len(summary_lines), boundary_row=boundary_row)
    rows_bottom = geo.row_top(max(1, len(layout.rows)))
    items = legend_items(layout, cells) if legend else []
    legend_rows = _legend_lines([words for _, _, words in items], room - 8) if items else []
    legend_y = rows_bottom + 14
    height = legend_y + len(legend_rows) * LINE_H + MARGIN if legend_rows else rows_bottom + MARGIN
    out = Picture(width=geo.width, height=height)
    texts = out.texts

    if header:
        texts.append(
            Text(
                MARGIN,
                24,
                fit(title, room, 15, bold=True),
                TEXT_COLOR,
                15,
                "sans",
                True,
                role="title",
            )
        )
        for n, line in enumerate(summary_lines):
            texts.append(
                Text(MARGIN, 42 + n * LINE_H, line, MUTED_COLOR, 12, "sans", role="summary")
            )
        if layout.rows:
            # 10 px: matplotlib rounds a monospace advance to whole pixels (6.6 to 7 at 11).
            hy = geo.top - 4
            for x, word in (
                (geo.kind_x, "kind"),
                (geo.id_x, "id"),
                (geo.text_x, "label and content"),
            ):
                texts.append(Text(x, hy, word, MUTED_COLOR, 10, role="head"))
            texts.append(
                Text(
                    geo.tokens_right,
                    hy,
                    "tokens (chars/4)",
                    MUTED_COLOR,
                    10,
                    anchor="end",
                    role="head",
                )
            )

    # Row bands.
    left = geo.graph_x - LANE_W / 2
    for i, cell in enumerate(cells):
        band = "selected" if selected is not None and cell.key == selected else cell.band
        if band is not None:
            out.bands.append(
                Rect(
                    left,
                    geo.row_top(i) + 1,
                    geo.tokens_right + 4 - left,
                    ROW_H - 2,
                    BAND_COLORS[band],
                )
            )

    # Links: off the path first, the path on top.
    links: dict[str, list[Link]] = {"plain": [], "dotted": [], "path": []}
    for edge in layout.edges:
        y1 = geo.row_y(edge.child)
        kind: Literal["plain", "dotted", "path"] = (
            "dotted" if edge.dotted else "path" if edge.on_path else "plain"
        )
        links[kind].append(
            Link(
                geo.lane_x(edge.lane),
                geo.row_y(edge.parent),
                geo.lane_x(edge.child_lane),
                y1,
                y1 - ROW_H * 0.75,
                kind,
            )
        )
    out.links = links["plain"] + links["dotted"] + links["path"]

    # Nodes, the boundary and the rows' words.
    text_right = geo.text_x + TEXT_CHARS * CHAR_W
    for i, (row, cell) in enumerate(zip(layout.rows, cells, strict=True)):
        y = geo.row_y(i)
        base = y + 4
        if cell.glyph != "gap":
            out.nodes.append(
                Node(
                    cell.glyph,
                    geo.lane_x(row.lane),
                    y,
                    cell.color,
                    cell.on_path,
                    cell.key,
                    cell.is_leaf,
                )
            )
        if cell.boundary:
            _boundary(out, geo, i, cell.boundary)
        if cell.glyph == "gap":
            room_gap = geo.tokens_right - geo.kind_x
            texts.append(
                Text(
                    geo.kind_x,
                    base,
                    fit(cell.text, room_gap, 12, font="mono"),
                    MUTED_COLOR,
                    italic=True,
                    role="gap",
                )
            )
            continue
        kind_color = MUTED_COLOR if cell.glyph == "dot" else cell.color
        texts.append(
            Text(
                geo.kind_x,
                base,
                _mono_fit(cell.kind_text, (KIND_CHARS - 1) * CHAR_W),
                kind_color,
                role="kind",
            )
        )
        texts.append(
            Text(
                geo.id_x,
                base,
                _mono_fit(cell.id_text, (ID_CHARS - 1) * CHAR_W),
                MUTED_COLOR,
                role="id",
            )
        )
        x = geo.text_x
        pieces = [(text, TAG_COLORS[tone], True, "tag") for text, tone in cell.tags]
        if cell.label:
            pieces.append((f"[{cell.label}]", TAG_COLORS["label"], True, "label"))
        pieces.append((cell.text, MUTED_COLOR if cell.muted else TEXT_COLOR, False, "body"))
        for words, color, bold, role in pieces:
            shown = _mono_fit(words, text_right - x)
            if not shown:
                break
            texts.append(Text(x, base, shown, color, bold=bold, role=role))
            x += text_width(shown, 12, font="mono") + CHAR_W
        if cell.tokens is not None:
            texts.append(
                Text(
                    geo.tokens_right,
                    base,
                    f"{cell.tokens:,}",
                    MUTED_COLOR if cell.muted else TEXT_COLOR,
                    anchor="end",
                    role="tokens",
                )
            )
    if not layout.rows:
        texts.append(
            Text(
                MARGIN,
                geo.top + 14,
                fit("Nothing to draw yet: the tree grows with the first message.", room, 12),
                MUTED_COLOR,
                12,
                "sans",
                role="empty",
            )
        )

    # Legend.
    for n, packed in enumerate(legend_rows):
        y = legend_y + n * LINE_H
        x = MARGIN + 8
        for i in packed:
            glyph, color, words = items[i]
            out.keys.append(Key(glyph, x, y, color))
            shown = fit(words, geo.width - MARGIN - (x + 11), 11)
            texts.append(Text(x + 11, y + 4, shown, MUTED_COLOR, 11, "sans", role="legend"))
            x += _legend_width(words)
    return out


def _mono_fit(text: str, width: float) -> str:
    return fit(text, width, 12, font="mono") if width > 0 else ""


def _boundary(out: Picture, geo: Geometry, row: int, label: str) -> None:
    """The band above ``row``: a dashed stroke, the label, and the stroke going on."""
    color = TAG_COLORS["problem"]
    y = geo.row_top(row) - BOUNDARY_H / 2
    x0, x1 = geo.kind_x - 4, geo.tokens_right + 2
    start = geo.kind_x + 3 * CHAR_W
    shown = fit(label, x1 - start - 8, 10, font="mono", bold=True)
    text = Text(start, y + 3.5, shown, color, 10, "mono", True, role="boundary")
    out.lines.append(Line(x0, y, start - 5, y, color, 1.5, (5, 3), "boundary"))
    out.lines.append(Line(start + text.width + 5, y, x1, y, color, 1.5, (5, 3), "boundary"))
    out.texts.append(text)
