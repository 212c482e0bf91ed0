"""Fast SVG strings of token bar charts; every piece of text is escaped.

The tree picture is :mod:`pinb.render.tree.picture`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .html import escape, shorten

__all__ = [
    "ROLE_COLORS",
    "bar_chart_svg",
    "color_of",
    "stacked_bars_svg",
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


def color_of(kind: str) -> str:
    """The fill colour for a node kind (role or entry type); metadata entries are grey."""
    return ROLE_COLORS.get(kind, _META_COLOR)


def _num(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


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
