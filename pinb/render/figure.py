"""Matplotlib drawings of the tree and of token counts (``ax=None`` convention, no pyplot)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .html import shorten
from .svg import ROLE_COLORS, color_of
from .tree.cells import EDGE_COLOR, PATH_COLOR
from .tree.graph import SessionGraph, build_graph
from .tree.marks import picture_marks
from .tree.rows import MAX_ROWS, RowLayout, row_layout

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..core import Session

__all__ = ["draw_stacked_bars", "draw_token_bars", "draw_tree", "tree_png"]


def _plain(text: str, limit: int = 40) -> str:
    """Short text matplotlib shows as is (a ``$`` would otherwise start mathtext)."""
    printable = "".join(ch if ch.isprintable() else " " for ch in shorten(text, limit))
    return printable.replace("$", r"\$")


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        figure = ax.get_figure()
        assert figure is not None
        return figure, ax  # type: ignore[return-value]
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, layout="constrained")
    return figure, figure.add_subplot()


def _layout_of(
    source: Session | SessionGraph | RowLayout,
    collapse: bool | Literal["auto"],
    max_rows: int | None,
) -> RowLayout:
    if isinstance(source, RowLayout):
        return source
    graph = source if isinstance(source, SessionGraph) else build_graph(source)
    return row_layout(graph, collapse=collapse, max_rows=max_rows)


def draw_tree(
    source: Session | SessionGraph | RowLayout,
    ax: Axes | None = None,
    *,
    collapse: bool | Literal["auto"] = "auto",
    max_rows: int | None = MAX_ROWS,
    selected: str | None = None,
    header: bool = True,
    legend: bool = True,
    dpi: float = 100,
) -> Figure:
    """Draw the tree picture (rows beside the lane graph) with matplotlib.

    The same rows, marks and words as :func:`~pinb.render.tree.picture.tree_picture_svg`, at the
    same pixel positions. With ``ax=None`` a new ``Figure`` sized to the picture is made
    (nothing global, no pyplot); given ``ax``, the picture fills that axes.

    Parameters
    ----------
    source:
        A session, an annotated graph or a ready :class:`~pinb.render.tree.rows.RowLayout`.
    ax:
        Axes to draw on, or ``None``.
    collapse / max_rows:
        As in :func:`~pinb.render.tree.rows.row_layout` (when ``source`` is not a layout).
    selected:
        Key of an entry whose row is highlighted.
    header / legend:
        Title and summary above, the legend of what occurs below.
    dpi:
        Resolution of a new figure (its size in pixels stays the picture's at 100 dpi).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Rectangle

    layout = _layout_of(source, collapse, max_rows)
    picture = picture_marks(layout, selected=selected, header=header, legend=legend)
    if ax is None:
        from matplotlib.figure import Figure

        figure = Figure(figsize=(picture.width / 100, picture.height / 100), dpi=dpi)
        ax = figure.add_axes((0, 0, 1, 1))
    else:
        figure = ax.get_figure()  # type: ignore[assignment]
    assert figure is not None
    ax.set_xlim(0, picture.width)
    ax.set_ylim(picture.height, 0)
    ax.set_axis_off()
    px = 72 / 100  # points per pixel of the picture
    bands = [
        Rectangle((b.x, b.y), b.w, b.h, facecolor=b.color, edgecolor="none") for b in picture.bands
    ]
    if bands:
        ax.add_collection(PatchCollection(bands, match_original=True, zorder=0))
    segments: dict[str, list[Any]] = {"plain": [], "path": [], "dotted": []}
    for link in picture.links:
        points = [(link.x0, link.y0)]
        if link.side:
            x0, x1, turn, y1 = link.x0, link.x1, link.turn, link.y1
            points.append((x0, turn))
            for t in (0.25, 0.5, 0.75, 1.0):  # the quadratic turn, as a polyline
                points.append(
                    (
                        (1 - t) ** 2 * x0 + 2 * (1 - t) * t * x0 + t * t * x1,
                        (1 - t) ** 2 * turn + 2 * (1 - t) * t * y1 + t * t * y1,
                    )
                )
        else:
            points.append((link.x0, link.y1))
        segments[link.kind].append(points)
    ax.add_collection(
        LineCollection(segments["plain"], colors=EDGE_COLOR, linewidths=1.5 * px, zorder=1)
    )
    ax.add_collection(
        LineCollection(
            segments["dotted"], colors=EDGE_COLOR, linewidths=1.5 * px, linestyles=":", zorder=1
        )
    )
    ax.add_collection(
        LineCollection(segments["path"], colors=PATH_COLOR, linewidths=3 * px, zorder=2)
    )
    shapes = {
        "circle": ("o", 10),
        "square": ("s", 11),
        "diamond": ("D", 10),
        "dot": ("o", 6),
        "chain": ("o", 12),
        "folded": ("s", 12),
    }
    markers: dict[tuple[str, str, bool], tuple[list[float], list[float]]] = {}
    for node in picture.nodes:
        group = markers.setdefault((node.glyph, node.color, node.on_path), ([], []))
        group[0].append(node.x)
        group[1].append(node.y)
        if node.leaf:
            ax.scatter(
                [node.x],
                [node.y],
                s=(17 * px) ** 2,
                facecolors="#ffffff",
                edgecolors=PATH_COLOR,
                linewidths=2 * px,
                linestyle="--",
                zorder=3,
            )
    for (glyph, color, on_path), (xs, ys) in markers.items():
        marker, size = shapes[glyph]
        hollow = glyph in ("chain", "folded")
        ax.scatter(
            xs,
            ys,
            s=(size * px) ** 2,
            marker=marker,
            c="#ffffff" if hollow else color,
            edgecolors=PATH_COLOR
            if on_path and glyph != "dot"
            else (color if hollow else "#ffffff"),
            linewidths=(1.5 if on_path or hollow else 0.8) * px,
            zorder=4,
        )
    for line in picture.lines:
        ax.plot(
            [line.x0, line.x1],
            [line.y0, line.y1],
            color=line.color,
            linewidth=line.width * px,
            linestyle=(0, line.dash) if line.dash else "-",
            zorder=2,
        )
    for text in picture.texts:
        ax.text(
            text.x,
            text.y,
            _plain(text.text, 400),
            color=text.color,
            va="baseline",
            ha="right" if text.anchor == "end" else "left",
            family="monospace" if text.font == "mono" else "sans-serif",
            size=text.size * px,
            weight="bold" if text.bold else "normal",
            style="italic" if text.italic else "normal",
            zorder=5,
        )
    for key in picture.keys:
        x, y, glyph, color = key.x, key.y, key.glyph, key.color
        if glyph in shapes:
            marker, size = shapes[glyph]
            ax.scatter([x], [y], s=(size * px) ** 2, marker=marker, c=color, zorder=4)
        elif glyph == "leaf":
            ax.scatter(
                [x],
                [y],
                s=(14 * px) ** 2,
                facecolors="none",
                edgecolors=color,
                linewidths=2 * px,
                zorder=4,
            )
        elif glyph == "band":
            ax.add_patch(Rectangle((x - 7, y - 6), 14, 12, facecolor=color, edgecolor="#d0d7de"))
        else:  # path, boundary, tag: a short stroke in the colour
            ax.plot(
                [x - 6, x + 6],
                [y, y],
                color=color,
                linewidth=(3 if glyph == "path" else 2) * px,
                linestyle="--" if glyph == "boundary" else "-",
            )
    return figure


def tree_png(
    source: Session | SessionGraph | RowLayout,
    *,
    selected: str | None = None,
    scale: float | None = None,
) -> tuple[bytes, int, int]:
    """The tree picture as PNG bytes: ``(png, width, height)``.

    ``width``/``height`` are the picture's size in CSS pixels (for the output metadata, so a
    notebook shows it at that size); it is drawn ``scale`` times larger (default: 2 for up
    to 80 rows, sharp on high-density screens, else 1), with Pillow from the same cells and
    positions as the SVG (:mod:`pinb.render.tree.raster`).
    """
    from .tree.raster import tree_png_pillow

    layout = _layout_of(source, "auto", MAX_ROWS)
    if scale is None:
        scale = 2.0 if len(layout.rows) <= 80 else 1.0
    return tree_png_pillow(layout, selected=selected, scale=scale)


def draw_token_bars(
    rows: Sequence[tuple[str, int]],
    ax: Axes | None = None,
    *,
    title: str | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Horizontal bars of ``(name, tokens)`` rows.

    Parameters
    ----------
    rows:
        ``(name, tokens)`` pairs, top to bottom.
    ax:
        Axes to draw on, or ``None`` for a new ``Figure``.
    title:
        Axes title.
    colors:
        Bar colour per name (default: by role).

    Returns
    -------
    matplotlib.figure.Figure
    """
    colors = colors if colors is not None else ROLE_COLORS
    figure, ax = _axes(ax, (6.0, 0.8 + 0.35 * max(1, len(rows))))
    names = [name for name, _ in rows]
    values = [value for _, value in rows]
    ax.barh(range(len(rows)), values, color=[colors.get(n, "#8c959f") for n in names])
    ax.set_yticks(range(len(rows)), [_plain(n) for n in names])
    ax.invert_yaxis()
    ax.set_xlabel("estimated tokens")
    for i, value in enumerate(values):
        ax.annotate(
            f"{value:,}",
            (value, i),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    if title:
        ax.set_title(_plain(title))
    return figure


def draw_stacked_bars(
    bars: Sequence[tuple[str, Mapping[str, int]]],
    ax: Axes | None = None,
    *,
    marks: Sequence[tuple[str, int]] = (),
    title: str | None = None,
) -> Figure:
    """Stacked horizontal bars (e.g. before/after a compaction by role) with marker lines.

    Parameters
    ----------
    bars:
        ``(name, {part: tokens})`` per bar.
    ax:
        Axes to draw on, or ``None`` for a new ``Figure``.
    marks:
        ``(name, tokens)`` dashed vertical lines (threshold, window).
    title:
        Axes title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    figure, ax = _axes(ax, (7.0, 1.2 + 0.5 * max(1, len(bars))))
    parts = list(dict.fromkeys(part for _, values in bars for part in values))
    left = [0.0] * len(bars)
    for part in parts:
        widths = [float(values.get(part, 0)) for _, values in bars]
        ax.barh(range(len(bars)), widths, left=left, color=color_of(part), label=_plain(part))
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for name, value in marks:
        ax.axvline(value, color="#cf222e", linestyle="--", linewidth=1)
        ax.annotate(_plain(name), (value, -0.6), fontsize=7, color="#cf222e", ha="center")
    ax.set_yticks(range(len(bars)), [_plain(name) for name, _ in bars])
    ax.invert_yaxis()
    ax.set_xlabel("estimated tokens")
    if parts:
        ax.legend(fontsize=7, frameon=False, loc="lower right")
    if title:
        ax.set_title(_plain(title))
    return figure
