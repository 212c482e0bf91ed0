"""Matplotlib drawings of the tree and of token counts (``ax=None`` convention, no pyplot)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .graph import SessionGraph, build_graph
from .html import clean_text, shorten
from .layout import TreeLayout, layout_tree
from .svg import ROLE_COLORS, color_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..core import Session

__all__ = ["draw_stacked_bars", "draw_token_bars", "draw_tree"]


def _plain(text: str, limit: int = 40) -> str:
    """Short text matplotlib shows as is (a ``$`` would otherwise start mathtext)."""
    printable = "".join(ch if ch.isprintable() else " " for ch in clean_text(text))
    return shorten(printable, limit).replace("$", r"\$")


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        figure = ax.get_figure()
        assert figure is not None
        return figure, ax  # type: ignore[return-value]
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, layout="constrained")
    return figure, figure.add_subplot()


def draw_tree(
    source: Session | SessionGraph | TreeLayout,
    ax: Axes | None = None,
    *,
    collapse: bool | Literal["auto"] = "auto",
    labels: bool = True,
) -> Figure:
    """Draw the session tree on ``ax`` (a new ``Figure`` when ``None``) and return the figure.

    Parameters
    ----------
    source:
        A session, an annotated graph or a ready layout.
    ax:
        Axes to draw on; nothing global (pyplot) is touched either way.
    collapse:
        Chain collapsing, as in :func:`~pinb.render.layout.layout_tree`.
    labels:
        Write entry labels and markers beside their nodes.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.collections import LineCollection

    if isinstance(source, TreeLayout):
        layout = source
    else:
        graph = source if isinstance(source, SessionGraph) else build_graph(source)
        layout = layout_tree(graph, collapse=collapse)
    nodes = layout.graph.nodes
    items = layout.items
    width = min(14.0, 2.0 + layout.width * 0.25)
    height = min(24.0, 1.5 + layout.height * 0.22)
    figure, ax = _axes(ax, (max(4.0, width), max(2.5, height)))
    plain: list[Any] = []
    active: list[Any] = []
    for item in items:
        if item.parent >= 0:
            parent = items[item.parent]
            segment = [(parent.x, -parent.depth), (item.x, -item.depth)]
            (active if nodes[item.nodes[0]].on_path else plain).append(segment)
    ax.add_collection(LineCollection(plain, colors="#afb8c1", linewidths=0.8, zorder=1))
    ax.add_collection(LineCollection(active, colors="#0969da", linewidths=2.2, zorder=2))
    groups: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for item in items:
        node = nodes[item.nodes[0]]
        if item.is_chain:
            marker, kind = "s", "chain"
        elif node.type == "compaction":
            marker, kind = "s", node.kind
        elif node.type == "branch_summary":
            marker, kind = "D", node.kind
        else:
            marker, kind = "o", node.kind
        xs, ys = groups.setdefault((marker, kind), ([], []))
        xs.append(item.x)
        ys.append(-item.depth)
    for (marker, kind), (xs, ys) in groups.items():
        ax.scatter(xs, ys, s=28, marker=marker, c=color_of(kind), label=_plain(kind), zorder=3)
    leaf = layout.graph.get(layout.graph.leaf_key) if layout.graph.leaf_key else None
    if leaf is not None:
        item = items[layout.item_of[layout.graph.index[leaf.key]]]
        ax.scatter(
            [item.x],
            [-item.depth],
            s=150,
            facecolors="none",
            edgecolors="#0969da",
            linewidths=1.6,
            zorder=4,
        )
    if labels:
        for item in items:
            node = nodes[item.nodes[0]]
            text = f"⋯ {len(item.nodes)}" if item.is_chain else (node.label or "")
            if node.type == "compaction" and not item.is_chain:
                text = (text + " compaction").strip()
            if text:
                ax.annotate(
                    _plain(text),
                    (item.x, -item.depth),
                    xytext=(6, -3),
                    textcoords="offset points",
                    fontsize=7,
                )
    ax.set_xlim(-1, max(1.0, layout.width) + 1)
    ax.set_ylim(-max(1, layout.height), 1)
    ax.set_axis_off()
    if groups:
        ax.legend(loc="upper right", fontsize=7, frameon=False)
    return figure


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
