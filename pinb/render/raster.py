"""The tree picture as PNG, drawn with Pillow from the same cells and geometry as the SVG.

Matplotlib's text drawing costs about a millisecond per piece of text, which made a
300-row picture take seconds; Pillow draws the same rows in a few hundred milliseconds.
The fonts are the DejaVu faces matplotlib ships (Pillow's own font otherwise).
"""

from __future__ import annotations

import io
import itertools
from functools import cache
from typing import Any

from .html import shorten
from .picture import (
    BAND_COLORS,
    CHAR_W,
    EDGE_COLOR,
    KIND_COLORS,
    LANE_W,
    MUTED_COLOR,
    PATH_COLOR,
    ROW_H,
    TAG_COLORS,
    TEXT_CHARS,
    TEXT_COLOR,
    TOKEN_CHARS,
    Cells,
    _legend_rows,
    geometry,
    legend_items,
    row_cells,
    title_lines,
)
from .rows import RowLayout

__all__ = ["tree_png_pillow"]


@cache
def _font(name: str, size: int) -> Any:
    from PIL import ImageFont

    try:
        import matplotlib

        path = f"{matplotlib.get_data_path()}/fonts/ttf/{name}.ttf"
        return ImageFont.truetype(path, size)
    except Exception:  # no matplotlib or no such file: Pillow's own font
        return ImageFont.load_default(size)


def _rgb(color: str) -> tuple[int, int, int]:
    value = color.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def tree_png_pillow(
    layout: RowLayout,
    *,
    cells: list[Cells] | None = None,
    selected: str | None = None,
    scale: float = 2.0,
) -> tuple[bytes, int, int]:
    """The picture as PNG bytes: ``(png, width, height)`` in CSS pixels (drawn ``scale``×)."""
    from PIL import Image, ImageDraw

    cells = cells if cells is not None else row_cells(layout)
    items = legend_items(layout, cells)
    probe = geometry(layout)
    lines = _legend_rows(items, probe.width - 20) if items else []
    geo = geometry(layout, legend_rows=len(lines))
    k = scale
    width, height = round(geo.width), round(geo.height)
    image = Image.new("RGB", (round(width * k), round(height * k)), "#ffffff")
    draw = ImageDraw.Draw(image)
    mono = _font("DejaVuSansMono", round(11.5 * k))
    mono_bold = _font("DejaVuSansMono-Bold", round(11.5 * k))
    small_bold = _font("DejaVuSansMono-Bold", round(9.5 * k))
    sans = _font("DejaVuSans", round(12 * k))
    sans_small = _font("DejaVuSans", round(10.5 * k))
    title_font = _font("DejaVuSans-Bold", round(15 * k))
    small = _font("DejaVuSansMono", round(10.5 * k))

    def p(x: float, y: float) -> tuple[float, float]:
        return x * k, y * k

    def text(x: float, y: float, value: str, color: str, font: Any, anchor: str = "lm") -> None:
        draw.text(p(x, y), value, fill=_rgb(color), font=font, anchor=anchor)

    title, summary = title_lines(layout)
    text(10, 19, title, TEXT_COLOR, title_font)
    text(10, 38, summary, MUTED_COLOR, sans)
    if layout.rows:
        hy = geo.top - 8
        for x, word in ((geo.kind_x, "kind"), (geo.id_x, "id"), (geo.text_x, "label and content")):
            text(x, hy, word, MUTED_COLOR, small)
        text(geo.tokens_right, hy, "tokens (chars/4)", MUTED_COLOR, small, "rm")
    left = geo.graph_x - LANE_W / 2
    for i, cell in enumerate(cells):
        band = "selected" if selected is not None and cell.key == selected else cell.band
        if band is not None:
            top = geo.top + i * ROW_H + 1
            draw.rectangle(
                (*p(left, top), *p(geo.tokens_right + 4, top + ROW_H - 2)),
                fill=_rgb(BAND_COLORS[band]),
            )
    for group in ("plain", "dotted", "path"):
        for edge in layout.edges:
            kind = "dotted" if edge.dotted else "path" if edge.on_path else "plain"
            if kind != group:
                continue
            color = _rgb(PATH_COLOR if kind == "path" else EDGE_COLOR)
            stroke = round((3 if kind == "path" else 1.5) * k)
            x0 = geo.lane_x(edge.lane)
            y0 = geo.row_y(edge.parent)
            y1 = geo.row_y(edge.child)
            points = [(x0, y0)]
            if edge.side:
                x1 = geo.lane_x(edge.child_lane)
                turn = y1 - ROW_H * 0.75
                points.append((x0, turn))
                for step in range(1, 7):
                    t = step / 6
                    points.append(
                        (
                            (1 - t) ** 2 * x0 + 2 * (1 - t) * t * x0 + t * t * x1,
                            (1 - t) ** 2 * turn + 2 * (1 - t) * t * y1 + t * t * y1,
                        )
                    )
            else:
                points.append((x0, y1))
            scaled = [p(x, y) for x, y in points]
            if kind == "dotted":
                for a, b in itertools.pairwise(scaled):
                    _dashes(draw, a, b, color, stroke, 2 * k, 3 * k)
            else:
                draw.line(scaled, fill=color, width=stroke, joint="curve")
    for i, (row, cell) in enumerate(zip(layout.rows, cells, strict=True)):
        x, y = geo.lane_x(row.lane), geo.row_y(i)
        if cell.is_leaf:
            draw.ellipse(
                (*p(x - 8.5, y - 8.5), *p(x + 8.5, y + 8.5)),
                fill="#ffffff",
                outline=_rgb(PATH_COLOR),
                width=round(2 * k),
            )
        _shape(draw, cell, x, y, k)
        if cell.boundary:
            by = geo.top + i * ROW_H
            _dashes(
                draw,
                p(geo.kind_x - 4, by),
                p(geo.tokens_right + 2, by),
                _rgb(TAG_COLORS["problem"]),
                round(1.5 * k),
                5 * k,
                3 * k,
            )
            right = geo.tokens_right - (TOKEN_CHARS + 1) * CHAR_W
            box = draw.textbbox(p(right, by), cell.boundary, font=small_bold, anchor="rm")
            draw.rectangle((box[0] - 3 * k, box[1], box[2] + 3 * k, box[3]), fill="#ffffff")
            text(right, by, cell.boundary, TAG_COLORS["problem"], small_bold, "rm")
        muted = MUTED_COLOR if cell.muted else TEXT_COLOR
        if cell.glyph == "gap":
            text(geo.kind_x, y, cell.text, MUTED_COLOR, mono)
            continue
        text(
            geo.kind_x, y, cell.kind_text, cell.color if cell.glyph != "dot" else MUTED_COLOR, mono
        )
        text(geo.id_x, y, cell.id_text, MUTED_COLOR, mono)
        tx = geo.text_x
        budget = TEXT_CHARS
        for value, tone in cell.tags:
            text(tx, y, value, TAG_COLORS[tone], mono_bold)
            tx += (len(value) + 1) * CHAR_W
            budget -= len(value) + 1
        if cell.label:
            label = f"[{cell.label}]"
            text(tx, y, label, TAG_COLORS["label"], mono_bold)
            tx += (len(label) + 1) * CHAR_W
            budget -= len(label) + 1
        body = shorten(cell.text, max(0, budget))
        if body:
            text(tx, y, body, muted, mono)
        if cell.tokens is not None:
            text(geo.tokens_right, y, f"{cell.tokens:,}", muted, mono, "rm")
    if not layout.rows:
        text(
            10,
            geo.top + 10,
            "Nothing to draw yet: the tree grows with the first message.",
            MUTED_COLOR,
            sans,
        )
    for n, line in enumerate(lines):
        y = geo.legend_y + n * 16
        x = 18.0
        for i in line:
            glyph, tint, words = items[i]
            if glyph in KIND_COLORS or glyph in (
                "circle",
                "square",
                "diamond",
                "dot",
                "chain",
                "folded",
            ):
                _glyph(draw, glyph, x, y, tint, k, on_path=False)
            elif glyph == "leaf":
                draw.ellipse(
                    (*p(x - 7, y - 7), *p(x + 7, y + 7)), outline=_rgb(tint), width=round(2 * k)
                )
            elif glyph == "band":
                draw.rectangle(
                    (*p(x - 7, y - 6), *p(x + 7, y + 6)), fill=_rgb(tint), outline=_rgb("#d0d7de")
                )
            else:
                draw.line(
                    (*p(x - 6, y), *p(x + 6, y)),
                    fill=_rgb(tint),
                    width=round((3 if glyph == "path" else 2) * k),
                )
            text(x + 11, y, words, MUTED_COLOR, sans_small)
            x += 24 + len(words) * 6.8
    out = io.BytesIO()
    palette = image.quantize(colors=64, method=Image.Quantize.FASTOCTREE)
    palette.save(out, "PNG", optimize=False, compress_level=6)
    return out.getvalue(), width, height


def _dashes(
    draw: Any,
    a: tuple[float, float],
    b: tuple[float, float],
    color: Any,
    width: int,
    on: float,
    off: float,
) -> None:
    (x0, y0), (x1, y1) = a, b
    length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
    if not length:
        return
    dx, dy = (x1 - x0) / length, (y1 - y0) / length
    at = 0.0
    while at < length:
        end = min(length, at + on)
        draw.line(
            (x0 + dx * at, y0 + dy * at, x0 + dx * end, y0 + dy * end), fill=color, width=width
        )
        at = end + off


def _shape(draw: Any, cell: Cells, x: float, y: float, k: float) -> None:
    _glyph(draw, cell.glyph, x, y, cell.color, k, on_path=cell.on_path)


def _glyph(
    draw: Any, glyph: str, x: float, y: float, color: str, k: float, *, on_path: bool
) -> None:
    fill = _rgb(color)
    outline = _rgb(PATH_COLOR) if on_path else (255, 255, 255)
    width = round((1.5 if on_path else 1) * k)

    def box(r: float) -> tuple[float, float, float, float]:
        return (x - r) * k, (y - r) * k, (x + r) * k, (y + r) * k

    if glyph == "circle":
        draw.ellipse(box(5.5), fill=fill, outline=outline, width=width)
    elif glyph == "square":
        draw.rectangle(box(5.5), fill=fill, outline=outline, width=width)
    elif glyph == "diamond":
        r = 7 * k
        cx, cy = x * k, y * k
        draw.polygon(
            [(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)],
            fill=fill,
            outline=outline,
            width=width,
        )
    elif glyph == "dot":
        draw.ellipse(box(3), fill=fill)
    elif glyph == "chain":
        draw.rounded_rectangle(
            ((x - 4) * k, (y - 8) * k, (x + 4) * k, (y + 8) * k),
            radius=4 * k,
            fill=(255, 255, 255),
            outline=_rgb(PATH_COLOR) if on_path else fill,
            width=round(2 * k),
        )
    elif glyph == "folded":
        draw.rectangle(box(6), fill=(255, 255, 255), outline=fill, width=round(1.5 * k))
        draw.line(((x - 3) * k, y * k, (x + 3) * k, y * k), fill=fill, width=round(k))
        draw.line((x * k, (y - 3) * k, x * k, (y + 3) * k), fill=fill, width=round(k))
