"""The tree picture as PNG, drawn with Pillow from the marks the SVG is drawn from.

Matplotlib's text drawing costs about a millisecond per piece of text, which made a
300-row picture take seconds; Pillow draws the same rows in a few hundred milliseconds.
The fonts are the DejaVu faces matplotlib ships (Pillow's own font otherwise), the faces
:mod:`pinb.render.tree.metrics` measures.
"""

from __future__ import annotations

import io
import itertools
from functools import cache
from typing import Any

from .cells import EDGE_COLOR, PATH_COLOR, Cells
from .marks import Picture, Text, picture_marks
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


def font_for(text: Text, scale: float = 1.0) -> Any:
    """The Pillow font a text mark is drawn with (``scale`` times its size)."""
    face = "DejaVuSansMono" if text.font == "mono" else "DejaVuSans"
    shape = ("Bold" if text.bold else "") + ("Oblique" if text.italic else "")
    return _font(f"{face}-{shape}" if shape else face, round(text.size * scale))


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
    picture = picture_marks(layout, cells=cells, selected=selected)
    return draw_png(picture, scale=scale)


def draw_png(picture: Picture, *, scale: float = 2.0) -> tuple[bytes, int, int]:
    """Draw a :class:`~pinb.render.tree.marks.Picture`: ``(png, width, height)`` in CSS pixels."""
    from PIL import Image, ImageDraw

    k = scale
    width, height = round(picture.width), round(picture.height)
    image = Image.new("RGB", (round(width * k), round(height * k)), "#ffffff")
    draw = ImageDraw.Draw(image)

    def p(x: float, y: float) -> tuple[float, float]:
        return x * k, y * k

    for band in picture.bands:
        draw.rectangle(
            (*p(band.x, band.y), *p(band.x + band.w, band.y + band.h)), fill=_rgb(band.color)
        )
    for link in picture.links:
        color = _rgb(PATH_COLOR if link.kind == "path" else EDGE_COLOR)
        stroke = round((3 if link.kind == "path" else 1.5) * k)
        points = [(link.x0, link.y0)]
        if link.side:
            x0, x1, turn, y1 = link.x0, link.x1, link.turn, link.y1
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
            points.append((link.x0, link.y1))
        scaled = [p(x, y) for x, y in points]
        if link.kind == "dotted":
            for a, b in itertools.pairwise(scaled):
                _dashes(draw, a, b, color, stroke, 2 * k, 3 * k)
        else:
            draw.line(scaled, fill=color, width=stroke, joint="curve")
    for node in picture.nodes:
        if node.leaf:
            draw.ellipse(
                (*p(node.x - 8.5, node.y - 8.5), *p(node.x + 8.5, node.y + 8.5)),
                fill="#ffffff",
                outline=_rgb(PATH_COLOR),
                width=round(2 * k),
            )
        _glyph(draw, node.glyph, node.x, node.y, node.color, k, on_path=node.on_path)
    for line in picture.lines:
        a, b = p(line.x0, line.y0), p(line.x1, line.y1)
        if line.dash:
            _dashes(
                draw, a, b, _rgb(line.color), round(line.width * k), *(d * k for d in line.dash)
            )
        else:
            draw.line((a, b), fill=_rgb(line.color), width=round(line.width * k))
    for text in picture.texts:
        draw.text(
            p(text.x, text.y),
            text.text,
            fill=_rgb(text.color),
            font=font_for(text, k),
            anchor="rs" if text.anchor == "end" else "ls",
        )
    for key in picture.keys:
        _key(draw, key.glyph, key.x, key.y, key.color, k)
    out = io.BytesIO()
    palette = image.quantize(colors=64, method=Image.Quantize.FASTOCTREE)
    palette.save(out, "PNG", optimize=False, compress_level=6)
    return out.getvalue(), width, height


def _key(draw: Any, glyph: str, x: float, y: float, tint: str, k: float) -> None:
    """A legend symbol."""
    if glyph in ("circle", "square", "diamond", "dot", "chain", "folded"):
        _glyph(draw, glyph, x, y, tint, k, on_path=False)
    elif glyph == "leaf":
        draw.ellipse(
            ((x - 7) * k, (y - 7) * k, (x + 7) * k, (y + 7) * k),
            outline=_rgb(tint),
            width=round(2 * k),
        )
    elif glyph == "band":
        draw.rectangle(
            ((x - 7) * k, (y - 6) * k, (x + 7) * k, (y + 6) * k),
            fill=_rgb(tint),
            outline=_rgb("#d0d7de"),
        )
    elif glyph == "boundary":
        _dashes(
            draw,
            ((x - 7) * k, y * k),
            ((x + 7) * k, y * k),
            _rgb(tint),
            round(1.5 * k),
            4 * k,
            3 * k,
        )
    else:  # path, tag: a short stroke in the colour
        draw.line(
            ((x - 6) * k, y * k, (x + 6) * k, y * k),
            fill=_rgb(tint),
            width=round((3 if glyph == "path" else 2) * k),
        )


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
