"""Fast SVG strings: the session tree and token bar charts; every piece of text is escaped."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from .graph import NodeInfo, SessionGraph
from .html import escape, shorten
from .layout import Item, TreeLayout

__all__ = [
    "ROLE_COLORS",
    "bar_chart_svg",
    "color_of",
    "label_room",
    "stacked_bars_svg",
    "tree_svg",
]

#: Fill colour per role (messages) or entry type (everything else).
ROLE_COLORS: dict[str, str] = {
    "user": "#2f81f7",
    "assistant": "#8250df",
    "toolResult": "#6e7781",
    "bashExecution": "#bf8700",
    "custom": "#1a7f37",
    "custom_message": "#1a7f37",
    "compaction": "#cf222e",
    "compactionSummary": "#cf222e",
    "branch_summary": "#d4a72c",
    "branchSummary": "#d4a72c",
    "chain": "#8c959f",
}
_META_COLOR = "#c8d1da"
_PATH_COLOR = "#0969da"
_EDGE_COLOR = "#afb8c1"
# A white outline under label text keeps it readable where it crosses edges and nodes.
_HALO = ' stroke="#ffffff" stroke-width="3" paint-order="stroke"'

#: Approximate width of one label character at font size 11.
_CHAR_PX = 6.5
#: Pixels per layout unit (x) and per row (y), and the outer margin.
DX = 20.0
DY = 22.0
MARGIN = 14.0


def color_of(kind: str) -> str:
    """The fill colour for a node kind (role or entry type); metadata entries are grey."""
    return ROLE_COLORS.get(kind, _META_COLOR)


def _num(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _node_title(node: NodeInfo) -> str:
    lines = [f"{node.kind} · {node.key}"]
    if node.label:
        lines.append(f"label: {node.label}")
    if node.is_leaf:
        lines.append("current leaf")
    if node.region and node.region != "active":
        lines.append(f"{node.region} (last compaction)")
    if node.tokens:
        lines.append(f"~{node.tokens:,} tokens")
    preview = node.preview
    if preview:
        lines.append(preview)
    return "\n".join(lines)


def _chain_title(graph: SessionGraph, item: Item) -> str:
    nodes = graph.nodes
    first, last = nodes[item.nodes[0]], nodes[item.nodes[-1]]
    tokens = sum(nodes[i].tokens for i in item.nodes)
    return (
        f"{len(item.nodes)} entries ({first.key} … {last.key}), ~{tokens:,} tokens\n"
        f"first: {shorten(first.preview, 100)}\nlast: {shorten(last.preview, 100)}"
    )


def tree_svg(
    layout: TreeLayout,
    *,
    selected: str | None = None,
    show_labels: bool = True,
    max_label: int = 28,
) -> str:
    """Draw a laid-out session tree as one SVG document string.

    Nodes are coloured by role; the active path is blue and thick; the current leaf has a
    ring; compactions are red squares, branch summaries gold diamonds, collapsed chains grey
    pills with their length; entries summarized by the last compaction are faded. Every
    node has a ``<title>`` (hover preview) and a ``data-id`` attribute.

    Parameters
    ----------
    layout:
        From :func:`~pinb.render.layout.layout_tree`.
    selected:
        Key of an entry to outline.
    show_labels:
        Write labels, marker names and chain lengths beside their nodes.
    max_label:
        Labels longer than this are shortened (the full text is in the hover title).

    Returns
    -------
    str
        A standalone ``<svg>`` element (valid XML).
    """
    graph = layout.graph
    nodes = graph.nodes
    items = layout.items
    width = layout.width * DX + 2 * MARGIN + (220 if show_labels else 0)
    height = max(1, layout.height) * DY + 2 * MARGIN
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pinb-tree" width="{_num(width)}" '
        f'height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}" '
        'font-family="system-ui,sans-serif" font-size="11">'
    ]
    plain: list[str] = []
    active: list[str] = []
    for item in items:
        if item.parent < 0:
            continue
        parent = items[item.parent]
        segment = (
            f"M{_num(MARGIN + parent.x * DX)} {_num(MARGIN + parent.depth * DY)}"
            f"L{_num(MARGIN + item.x * DX)} {_num(MARGIN + item.depth * DY)}"
        )
        (active if nodes[item.nodes[0]].on_path else plain).append(segment)
    if plain:
        out.append(f'<path d="{"".join(plain)}" stroke="{_EDGE_COLOR}" fill="none"/>')
    if active:
        out.append(
            f'<path d="{"".join(active)}" stroke="{_PATH_COLOR}" stroke-width="2.5" fill="none"/>'
        )
    labels: list[str] = []
    room = _label_room(items)
    for index, item in enumerate(items):
        cx = MARGIN + item.x * DX
        cy = MARGIN + item.depth * DY
        node = nodes[item.nodes[0]]
        key = escape(node.key)
        if item.is_chain:
            on_path = node.on_path
            title = escape(_chain_title(graph, item))
            stroke = _PATH_COLOR if on_path else "#6e7781"
            out.append(
                f'<rect data-id="{key}" data-chain="{len(item.nodes)}" x="{_num(cx - 7)}" '
                f'y="{_num(cy - 6)}" width="14" height="12" rx="6" fill="{ROLE_COLORS["chain"]}" '
                f'stroke="{stroke}" stroke-width="{2 if on_path else 1}"><title>{title}</title></rect>'
            )
            text = _fit(f"⋯ {len(item.nodes):,} entries", room[index])
            if show_labels and text:
                labels.append(
                    f'<text x="{_num(cx + 10)}" y="{_num(cy + 4)}" fill="#57606a"{_HALO}>'
                    f"{escape(text)}</text>"
                )
            continue
        title = escape(_node_title(node))
        fill = color_of(node.kind)
        opacity = ' fill-opacity="0.35"' if node.region == "summarized" else ""
        stroke = ' stroke="#1f2328" stroke-width="1.5"' if node.on_path else ' stroke="#ffffff"'
        if node.type == "compaction":
            shape = (
                f'<rect data-id="{key}" x="{_num(cx - 6)}" y="{_num(cy - 6)}" width="12" '
                f'height="12" fill="{fill}"{stroke}><title>{title}</title></rect>'
            )
        elif node.type == "branch_summary":
            shape = (
                f'<path data-id="{key}" d="M{_num(cx)} {_num(cy - 7)}l7 7l-7 7l-7 -7z" '
                f'fill="{fill}"{stroke}><title>{title}</title></path>'
            )
        else:
            r = 5 if node.role else 3.5
            shape = (
                f'<circle data-id="{key}" cx="{_num(cx)}" cy="{_num(cy)}" r="{r}" '
                f'fill="{fill}"{opacity}{stroke}><title>{title}</title></circle>'
            )
        if node.is_leaf:
            out.append(
                f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="10" fill="none" '
                f'stroke="{_PATH_COLOR}" stroke-width="2" stroke-dasharray="3 2"/>'
            )
        if selected is not None and node.key == selected:
            out.append(
                f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="12" fill="none" '
                'stroke="#fb8500" stroke-width="2.5"/>'
            )
        out.append(shape)
        if show_labels:
            text = _fit(_marker_text(node, max_label), room[index])
            if text:
                labels.append(
                    f'<text x="{_num(cx + 12)}" y="{_num(cy + 4)}" fill="#1f2328"{_HALO}>'
                    f"{escape(text)}</text>"
                )
    out.extend(labels)
    out.append("</svg>")
    return "".join(out)


def _label_room(items: list[Item]) -> list[int]:
    """Characters of label text that fit before the next item on the same row.

    The rightmost item of a row has the margin reserved for labels (220 px).
    """
    room = [34] * len(items)
    rows: dict[int, list[int]] = {}
    for index, item in enumerate(items):
        rows.setdefault(item.depth, []).append(index)
    for row in rows.values():
        row.sort(key=lambda i: items[i].x)
        for left, right in itertools.pairwise(row):
            gap_px = (items[right].x - items[left].x) * DX - 20
            room[left] = max(0, int(gap_px / _CHAR_PX))
    return room


def _fit(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters (``""`` when too little would remain)."""
    if len(text) <= chars:
        return text
    return "" if chars < 4 else text[: chars - 1] + "…"


def label_room(graph: SessionGraph, item: Item, max_label: int = 28) -> float:
    """Layout units the SVG label of ``item`` needs to its right (for ``layout_tree(room=)``)."""
    if item.is_chain:
        text = f"⋯ {len(item.nodes):,} entries"
    else:
        text = _marker_text(graph.nodes[item.nodes[0]], max_label)
    return (len(text) * _CHAR_PX + 8) / DX if text else 0.0


def _marker_text(node: NodeInfo, limit: int) -> str:
    parts: list[str] = []
    if node.label:
        parts.append(f"[{shorten(node.label, limit)}]")
    if node.type == "compaction":
        parts.append("compaction")
    elif node.type == "branch_summary":
        parts.append("branch summary")
    if node.is_leaf:
        parts.append("← leaf")
    return " ".join(parts)


def bar_chart_svg(
    rows: Sequence[tuple[str, int]],
    *,
    colors: Mapping[str, str] | None = None,
    width: int = 460,
    unit: str = "tokens",
) -> str:
    """Horizontal bars, one per ``(name, value)`` row, with names and values written out.

    Parameters
    ----------
    rows:
        ``(name, value)`` pairs, drawn top to bottom on a scale ending at the largest value.
    colors:
        Fill per name (default :data:`ROLE_COLORS`; unknown names are grey).
    width:
        Width of the drawing in pixels.
    unit:
        Word used in the hover titles.

    Returns
    -------
    str
        A standalone ``<svg>`` element.
    """
    colors = colors if colors is not None else ROLE_COLORS
    bar_h, gap, label_w = 16, 6, 130
    top = max((value for _, value in rows), default=0) or 1
    plot_w = width - label_w - 90
    height = len(rows) * (bar_h + gap) + gap
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pinb-bars" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui,sans-serif" '
        'font-size="11">'
    ]
    for i, (name, value) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        w = plot_w * value / top
        fill = colors.get(name, "#8c959f")
        out.append(
            f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{escape(shorten(name, 22))}'
            f"</text>"
            f'<rect x="{label_w}" y="{y}" width="{_num(w)}" height="{bar_h}" fill="{fill}">'
            f"<title>{escape(name)}: {value:,} {escape(unit)}</title></rect>"
            f'<text x="{_num(label_w + w + 4)}" y="{y + 12}" fill="#57606a">{value:,}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def stacked_bars_svg(
    bars: Sequence[tuple[str, Mapping[str, int]]],
    *,
    colors: Mapping[str, str] | None = None,
    marks: Sequence[tuple[str, int]] = (),
    scale: int | None = None,
    width: int = 520,
) -> str:
    """One horizontal stacked bar per ``(name, {part: value})``, on a shared scale.

    Parameters
    ----------
    bars:
        ``(name, {part: value})`` per bar; parts are stacked left to right.
    colors:
        Fill per part (default :data:`ROLE_COLORS`).
    marks:
        ``(name, value)`` labelled vertical lines, e.g. the compaction threshold and the
        context window; each label gets a row of its own.
    scale:
        The value at the right edge (default: the largest total or mark).
    width:
        Width of the drawing in pixels.

    Returns
    -------
    str
        A standalone ``<svg>`` element with a legend of the parts.
    """
    colors = colors if colors is not None else ROLE_COLORS
    bar_h, gap, label_w, legend_h = 18, 8, 70, 18
    totals = [sum(parts.values()) for _, parts in bars]
    top = scale or max([*totals, *(v for _, v in marks), 1])
    plot_w = width - label_w - 80
    offset = 13 * len(marks)  # one label row per mark, so close marks never collide
    height = len(bars) * (bar_h + gap) + gap + legend_h + offset
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pinb-stacked" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui,sans-serif" '
        'font-size="11">'
    ]
    seen: dict[str, str] = {}
    for i, (name, parts) in enumerate(bars):
        y = offset + gap + i * (bar_h + gap)
        out.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(shorten(name, 12))}'
            "</text>"
        )
        x = float(label_w)
        for part, value in parts.items():
            if value <= 0:
                continue
            w = plot_w * value / top
            fill = colors.get(part, "#8c959f")
            seen.setdefault(part, fill)
            out.append(
                f'<rect x="{_num(x)}" y="{y}" width="{_num(w)}" height="{bar_h}" fill="{fill}">'
                f"<title>{escape(name)} · {escape(part)}: {value:,} tokens</title></rect>"
            )
            x += w
        out.append(f'<text x="{_num(x + 4)}" y="{y + 13}" fill="#57606a">{totals[i]:,}</text>')
    for n, (name, value) in enumerate(sorted(marks, key=lambda mark: mark[1])):
        x = label_w + plot_w * value / top
        row_y = 10 + 13 * n
        text_w = 6.2 * (len(name) + len(f"{value:,}") + 1)
        anchor, dx = ("end", -3) if x + 3 + text_w > width else ("start", 3)
        out.append(
            f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{row_y - 8}" '
            f'y2="{offset + len(bars) * (bar_h + gap)}" stroke="#cf222e" stroke-dasharray="4 3"/>'
            f'<text x="{_num(x + dx)}" y="{row_y}" text-anchor="{anchor}" fill="#cf222e">'
            f"{escape(name)} {value:,}</text>"
        )
    ly = height - 5
    lx = float(label_w)
    for part, fill in seen.items():
        out.append(
            f'<rect x="{_num(lx)}" y="{ly - 9}" width="10" height="10" fill="{fill}"/>'
            f'<text x="{_num(lx + 13)}" y="{ly}">{escape(part)}</text>'
        )
        lx += 20 + 6.5 * len(part)
    out.append("</svg>")
    return "".join(out)
