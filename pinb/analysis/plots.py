"""Matplotlib figures of sessions: tokens over turns, cost per session, tool use, branch structure."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core import Session
from ..core.context.build import UNSET
from ..core.js.jsontext import value_text
from .sources import SessionSource, open_session

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "plot_branches",
    "plot_cost",
    "plot_tokens",
    "plot_tool_use",
    "token_series",
    "tree_layout",
]

_TYPE_COLORS = {
    "user": "#0969da",
    "assistant": "#1a7f37",
    "toolResult": "#8c959f",
    "compaction": "#cf222e",
    "branch_summary": "#bf8700",
}


def _axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    """The given axes and its figure, or a new ``Figure`` (never pyplot's global state)."""
    from matplotlib.figure import Figure

    if ax is not None:
        figure = ax.get_figure(root=True)
        assert isinstance(figure, Figure)
        return figure, ax
    figure = Figure(figsize=size, layout="constrained")
    return figure, figure.add_subplot()


# -- tokens ---------------------------------------------------------------------------------


def token_series(session: SessionSource, leaf: Any = UNSET) -> dict[str, list[Any]]:
    """Context size along the active path, turn by turn: the figures :func:`plot_tokens`
    draws, which are :func:`pinb.render.context_chart.context_chart`'s (the one account).

    Returns
    -------
    dict
        ``turn``/``tokens``/``entry_id``: one point per assistant message with a usable
        usage (its ``calculateContextTokens``); ``compaction_turn``/``tokens_before``/
        ``tokens_after``/``compaction_id``: one drop per compaction on the path, from its
        ``tokensBefore`` to Pi's figure right after it (the estimate: no usage is newer).
    """
    from ..render.context_chart import context_chart

    session = open_session(session)
    chart = context_chart(session, leaf)
    drawn = [request for request in chart.requests if request.tokens]
    return {
        "turn": [request.number for request in drawn],
        "tokens": [request.tokens for request in drawn],
        "entry_id": [request.entry_id for request in drawn],
        "compaction_turn": [c.after_request + 0.5 for c in chart.compactions],
        "tokens_before": [c.tokens_before for c in chart.compactions],
        "tokens_after": [c.tokens_after for c in chart.compactions],
        "compaction_id": [c.entry_id for c in chart.compactions],
    }


def plot_tokens(
    session: SessionSource,
    *,
    leaf: Any = UNSET,
    context_window: int | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Context tokens over the turns of the active path, with each compaction's drop.

    The one picture of it, :func:`pinb.render.context_chart.draw_context_chart` (what
    ``%pi chart`` shows), for a session or its file.

    Parameters
    ----------
    session:
        A session or its file.
    leaf:
        Plot the path to this entry (default: the session's leaf).
    context_window:
        Draw the model's window (and the compaction threshold) as horizontal lines.
    ax:
        Draw into these axes (default: a new ``matplotlib.figure.Figure``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..render.context_chart import context_chart, draw_context_chart

    chart = context_chart(open_session(session), leaf, window=context_window)
    return draw_context_chart(chart, ax)


# -- many sessions --------------------------------------------------------------------------


def _session_label(row: Any) -> str:
    text = row.get("name")
    if not isinstance(text, str) or not text:
        text = row.get("first_message")
    text = " ".join(value_text(text or row.get("id", "")).split())
    if len(text) <= 40:
        return text
    # Cut names of sessions that start alike would read the same: the id tells them apart.
    short = value_text(row.get("id", ""))[:8]
    return f"{text[:30]}… · {short}" if short else text[:39] + "…"


def plot_cost(sessions: pd.DataFrame, *, top: int = 20, ax: Axes | None = None) -> Figure:
    """The ``top`` most expensive sessions of a ``sessions_frame``, as horizontal bars."""
    figure, ax = _axes(ax, (8, max(2.5, 0.3 * min(top, len(sessions)) + 1)))
    ranked = sessions.sort_values("cost", ascending=False, na_position="last").head(top)
    ranked = ranked.iloc[::-1]
    labels = [_session_label(row) for row in ranked.to_dict("records")]
    ax.barh(range(len(ranked)), ranked["cost"].fillna(0).to_numpy(dtype=float), color="#1a7f37")
    ax.set_yticks(range(len(ranked)), labels, fontsize="small")
    ax.set_xlabel("cost (USD)")
    ax.set_title(f"Cost per session (top {len(ranked)} of {len(sessions)})")
    return figure


def plot_tool_use(tool_calls: pd.DataFrame, *, top: int = 15, ax: Axes | None = None) -> Figure:
    """Calls per tool in a ``tool_calls_frame`` (any number of sessions), split three ways.

    Pi sets ``isError`` on a ``bash`` call for any non-zero exit, which is often no failure
    (a test run expected to fail), so those calls get their own colour, apart from the calls
    whose tool itself failed (``tool_failed``: an edit that did not apply, a missing file).
    """
    figure, ax = _axes(ax, (7, 3.5))
    if len(tool_calls):
        flagged = tool_calls["is_error"].fillna(False).astype(bool)
        broke = tool_calls["tool_failed"].fillna(False).astype(bool) & flagged
        counts = tool_calls.groupby("tool_name").size()

        def per_tool(mask: pd.Series) -> pd.Series:
            return tool_calls[mask].groupby("tool_name").size().reindex(counts.index, fill_value=0)

        order = counts.sort_values(ascending=False).head(top).index[::-1]
        ok = (counts - per_tool(flagged))[order].to_numpy(dtype=float)
        exits = per_tool(flagged & ~broke)[order].to_numpy(dtype=float)
        failed = per_tool(broke)[order].to_numpy(dtype=float)
        rows = range(len(order))
        ax.barh(rows, ok, color="#0969da", label="ok")
        ax.barh(
            rows, exits, left=ok, color="#d4a72c", label="non-zero exit (isError, not a failure)"
        )
        ax.barh(rows, failed, left=ok + exits, color="#cf222e", label="tool failed")
        ax.set_yticks(rows, [value_text(name) for name in order])
        # Below the bars: inside the axes the legend would hide the longest ones.
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize="small")
    ax.set_xlabel("calls")
    ax.set_title("Tool use")
    return figure


# -- branch structure -----------------------------------------------------------------------


def tree_layout(session: SessionSource) -> dict[int, tuple[float, float]]:
    """Positions for drawing the entry tree: x is the depth, y a lane per branch.

    A parent's first child stays on its lane; each further child (and each further root)
    opens a new lane, in depth-first order, like a git graph. Keys are indexes into
    ``session.entries`` (ids can repeat in damaged files); ``leaf`` entries, which only
    record navigation, get no position.
    """
    session = open_session(session)
    index_of = {id(e): i for i, e in enumerate(session.entries)}
    positions: dict[int, tuple[float, float]] = {}
    lanes = -1
    roots = [r for r in session.tree() if not r.entry.is_navigation]
    stack: list[tuple[Any, int, int | None]] = [(r, 0, None) for r in reversed(roots)]
    while stack:
        node, depth, lane = stack.pop()
        key = index_of[id(node.entry)]
        if key in positions:
            continue
        if lane is None:
            lanes += 1
            lane = lanes
        positions[key] = (float(depth), float(lane))
        children = [c for c in node.children if not c.entry.is_navigation]
        for i, child in reversed(list(enumerate(children))):
            stack.append((child, depth + 1, lane if i == 0 else None))
    return positions


def _draw_tree(session: Session, ax: Axes) -> None:
    from matplotlib.collections import LineCollection

    positions = tree_layout(session)
    entries = session.entries
    index_of = {id(e): i for i, e in enumerate(entries)}
    on_path = {index_of[id(e)] for e in session.path_to()}
    segments: list[list[tuple[float, float]]] = []
    path_segments: list[list[tuple[float, float]]] = []
    for i, entry in enumerate(entries):
        parent = session.get(entry.parent_id) if entry.parent_id is not None else None
        if parent is None or i not in positions or index_of[id(parent)] not in positions:
            continue
        segment = [positions[index_of[id(parent)]], positions[i]]
        (path_segments if i in on_path else segments).append(segment)
    ax.add_collection(LineCollection(segments, colors="#d0d7de", linewidths=1))
    ax.add_collection(LineCollection(path_segments, colors="#0969da", linewidths=2))
    for kind, color in _TYPE_COLORS.items():
        points = [
            positions[i]
            for i, e in enumerate(entries)
            if i in positions and (e.role == kind or e.type == kind)
        ]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.scatter(xs, ys, s=12, color=color, label=kind, zorder=3)
    ax.autoscale_view()
    ax.invert_yaxis()
    ax.set_xlabel("depth")
    ax.set_ylabel("branch lane")
    ax.set_title(f"Branches: {1 + max((y for _, y in positions.values()), default=0):.0f} lanes")
    ax.legend(loc="upper right", fontsize="small")


def plot_branches(source: SessionSource | pd.DataFrame, *, ax: Axes | None = None) -> Figure:
    """Branch structure: one session's tree (active path in blue), or, for a
    ``sessions_frame``, every session's depth against its number of leaves.
    """
    if isinstance(source, Session | str | os.PathLike):
        figure, ax = _axes(ax, (9, 4))
        _draw_tree(open_session(source), ax)
        return figure
    frame = source
    figure, ax = _axes(ax, (6, 4))
    sizes = _sizes(frame["entries"].fillna(0).to_numpy(dtype=float))
    points = ax.scatter(
        frame["max_depth"].fillna(0).to_numpy(dtype=float),
        frame["leaves"].fillna(0).to_numpy(dtype=float),
        s=sizes,
        c=frame["compactions"].fillna(0).to_numpy(dtype=float),
        cmap="viridis",
        alpha=0.7,
    )
    figure.colorbar(points, ax=ax, label="compactions")
    ax.set_xlabel("max depth (entries on the longest path)")
    ax.set_ylabel("leaves (branches)")
    ax.set_title(f"Branch structure of {len(frame)} sessions")
    return figure


def _sizes(entries: Sequence[float]) -> list[float]:
    top = max(entries, default=1.0) or 1.0
    return [10 + 190 * (n / top) for n in entries]
