"""The context over a session's requests, drawn: each request's size, the window, the threshold,
and every compaction's drop with what set it off (``ax=None`` convention, no pyplot).

Compute, then draw. :func:`context_chart` reads the figures from the one token account
(:func:`pinb.core.context.accounting.context_usage`) and the usage each reply reported
(Pi's ``calculateContextTokens``); :func:`draw_context_chart` draws them and computes
nothing. ``ContextChart.describe`` says in words what the picture shows, with the same
figures the compaction views print (``chars/4 estimate X → Y tokens (saved Z (P%))``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.context.accounting import ContextUsage, context_usage, saved_share, thousands
from ..core.context.build import UNSET
from ..core.context.tokens import CompactionSettings, context_tokens_of_usage
from ..core.describe import node_key, plural
from .figure import _axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..core import Session

__all__ = ["ChartCompaction", "ChartRequest", "ContextChart", "context_chart", "draw_context_chart"]

#: What set a compaction off, in the picture's words.
TRIGGERS = {
    "threshold": "above the threshold",
    "overflow": "after a context overflow",
    "by hand": "by hand (below the threshold)",
    "recorded": "recorded (no window to compare with)",
}

_LINE = "#0969da"
_DROP = "#cf222e"
_THRESHOLD = "#bc4c00"
_WINDOW = "#57606a"
#: How far above the largest request the window and threshold lines are still drawn.
_REACH = 3


@dataclass(frozen=True)
class ChartRequest:
    """One request of the path: the context by Pi's measure right after its reply.

    ``number`` counts the path's assistant replies (a failed one too, though it is not
    drawn: its usage is not trusted); ``tokens`` is the reply's reported usage
    (``calculateContextTokens``), what Pi compares with the threshold.
    """

    number: int
    entry_id: str
    tokens: int


@dataclass(frozen=True)
class ChartCompaction:
    """One compaction on the path: its drop and what set it off.

    ``tokens_before`` is Pi's recorded ``tokensBefore``, ``tokens_after`` Pi's figure
    right after it (the chars/4 estimate: no reported usage is newer); ``estimated_before``
    and ``estimated_after`` compare both sides with one measure, as the compaction views do.
    """

    number: int
    entry_id: str
    after_request: int
    tokens_before: int
    tokens_after: int
    estimated_before: int
    estimated_after: int
    trigger: str

    @property
    def saved(self) -> int:
        """chars/4 tokens the compaction removed (the same measure on both sides)."""
        return self.estimated_before - self.estimated_after

    @property
    def share_saved(self) -> float | None:
        """:attr:`saved` as a share of the context before it."""
        return self.saved / self.estimated_before if self.estimated_before else None

    def saved_text(self) -> str:
        """``saved 9,534 (65%)``: the compaction views' words for what it removed."""
        return f"saved {saved_share(self.saved, self.estimated_before)}"

    def label(self) -> str:
        """The picture's label at the drop: which compaction, what set it off, what it saved."""
        why = TRIGGERS[self.trigger].split(" (")[0]
        return f"compaction {self.number}: {why}\n{self.saved_text()} (chars/4)"

    def describe(self, threshold: int | None) -> str:
        """One line: what set it off and what it saved."""
        why = TRIGGERS[self.trigger]
        if self.trigger == "threshold" and threshold is not None:
            why += f" ({thousands(self.tokens_before)} > {thousands(threshold)})"
        return (
            f"compaction {self.number} ({self.entry_id}) after request {self.after_request}, "
            f"{why}: chars/4 estimate {thousands(self.estimated_before)} → "
            f"{thousands(self.estimated_after)} tokens ({self.saved_text()})"
        )


@dataclass(frozen=True)
class ContextChart:
    """What :func:`draw_context_chart` draws (see :func:`context_chart`)."""

    requests: tuple[ChartRequest, ...]
    compactions: tuple[ChartCompaction, ...]
    usage: ContextUsage

    @property
    def window(self) -> int | None:
        return self.usage.window

    @property
    def threshold(self) -> int | None:
        return self.usage.threshold if self.usage.settings.enabled else None

    def describe(self) -> str:
        """The picture in words: its lines, then one line per compaction."""
        drawn = [r for r in self.requests if r.tokens]
        peak = max(drawn, key=lambda r: r.tokens, default=None)
        lines = [
            f"{plural(len(self.requests), 'request')}, "
            f"{plural(len(self.compactions), 'compaction')}"
            + (
                f"; the largest request: {thousands(peak.tokens)} tokens (request {peak.number})"
                if peak
                else ""
            )
        ]
        if self.window:
            lines[0] += f" · a {thousands(self.window)}-token window ({self.usage.window_source})"
            if self.threshold is not None:
                lines[0] += (
                    f", compacting above {thousands(self.threshold)} (the window − a reserve of "
                    f"{thousands(self.usage.settings.reserve_tokens)})"
                )
        for note in self.usage.notes():  # a window the session's compactions contradict
            lines[0] += f" · {note}"
        lines += [c.describe(self.threshold) for c in self.compactions]
        return "\n".join(lines)


def context_chart(
    session: Session,
    leaf_id: Any = UNSET,
    *,
    window: int | None = None,
    window_source: str | None = None,
    settings: CompactionSettings | None = None,
    fit: bool = True,
    window_note: str = "",
) -> ContextChart:
    """The figures of the context over the requests on the path to ``leaf_id``.

    Parameters
    ----------
    session:
        The session (its release's rules apply).
    leaf_id:
        The path's end (default: the session's leaf).
    window / window_source / settings / fit / window_note:
        As :func:`~pinb.core.context.accounting.context_usage` takes them: the window,
        where it came from, the compaction settings, whether to fit them to the window
        as pinb's agent does, and what contradicts the window. Without a window there is
        no threshold line.

    Returns
    -------
    ContextChart
    """
    context = session.build_context(leaf_id)

    def account(at: Any) -> ContextUsage:
        return context_usage(
            session.build_context(at),
            window=window,
            window_source=window_source,
            settings=settings,
            fit=fit,
        )

    usage = context_usage(
        context,
        window=window,
        window_source=window_source,
        settings=settings,
        fit=fit,
        window_note=window_note,
    )
    threshold = usage.threshold if usage.settings.enabled else None
    requests: list[ChartRequest] = []
    compactions: list[ChartCompaction] = []
    replies = 0
    hidden: set[str] = set()  # replies a context edit took out (Pi's overflow recovery)
    for entry in context.path:
        message = entry.message
        if entry.role == "assistant" and isinstance(message, dict):
            replies += 1
            tokens = 0
            if message.get("stopReason") not in ("aborted", "error"):
                tokens = context_tokens_of_usage(message.get("usage"))
            requests.append(ChartRequest(replies, node_key(entry.id), tokens))
        elif entry.type == "context_edit" and entry.raw.get("replacement") is None:
            hidden.add(node_key(entry.raw.get("targetId")))
        elif entry.type == "compaction":
            recorded = entry.raw.get("tokensBefore")
            before = account(entry.parent_id) if entry.parent_id else None
            after = account(entry.id)
            failed = [r for r in requests if r.entry_id in hidden]
            tokens_before = recorded if isinstance(recorded, int) else 0
            if failed and failed[-1].number == replies:
                trigger = "overflow"
            elif threshold is None:
                trigger = "recorded"
            elif tokens_before > threshold:
                trigger = "threshold"
            else:
                trigger = "by hand"
            compactions.append(
                ChartCompaction(
                    number=len(compactions) + 1,
                    entry_id=node_key(entry.id),
                    after_request=replies,
                    tokens_before=tokens_before,
                    tokens_after=after.tokens,
                    estimated_before=before.estimated_tokens if before else 0,
                    estimated_after=after.estimated_tokens,
                    trigger=trigger,
                )
            )
    return ContextChart(tuple(requests), tuple(compactions), usage)


def draw_context_chart(
    chart: ContextChart, ax: Axes | None = None, *, title: str = "The context, request by request"
) -> Figure:
    """Draw ``chart``: the requests' line, the window, the threshold and each drop.

    With ``ax=None`` a new ``matplotlib.figure.Figure`` is made (nothing global, no pyplot);
    given ``ax``, the chart fills it and its figure is returned.
    """
    figure, ax = _axes(ax, (8.0, 3.8))
    # The points in path order; a compaction's point (right after it) starts a new run.
    points = sorted(
        [(float(r.number), r.tokens, False) for r in chart.requests if r.tokens]
        + [(c.after_request + 0.5, c.tokens_after, True) for c in chart.compactions],
        key=lambda point: point[0],
    )
    runs: list[list[tuple[float, int]]] = [[]]
    for x, y, compacted in points:
        if compacted:
            runs.append([])
        runs[-1].append((x, y))
    labelled = False
    for run in runs:
        if not run:
            continue
        xs, ys = zip(*run, strict=True)
        ax.plot(xs, ys, color=_LINE, marker="o", markersize=3.5, linewidth=1.6,
                label="_nolegend_" if labelled else "after each reply (its reported usage)")  # fmt: skip
        labelled = True
    if chart.compactions:
        xs = tuple(c.after_request + 0.5 for c in chart.compactions)
        ys = tuple(c.tokens_after for c in chart.compactions)
        ax.plot(xs, ys, linestyle="none", marker="o", markersize=6, markerfacecolor="white",
                markeredgecolor=_DROP, label="right after a compaction (chars/4 estimate)")  # fmt: skip
    top = max(
        [r.tokens for r in chart.requests] + [c.tokens_before for c in chart.compactions] + [1]
    )
    # A window far above the session (200,000 for a few thousand tokens) would flatten the
    # line: the lines are drawn when they are within reach, else named in the legend.
    reach = top * _REACH if top > 1 else float("inf")  # nothing drawn yet: the lines alone
    window_label = f"window {thousands(chart.window)} ({chart.usage.window_source})"
    if chart.window and chart.window <= reach:
        top = max(top, chart.window)
        ax.axhline(chart.window, color=_WINDOW, linewidth=1.2, label=window_label)
    elif chart.window:
        ax.plot([], [], color=_WINDOW, linewidth=1.2, label=f"{window_label}: above this chart")
    threshold_label = f"threshold {thousands(chart.threshold)} (window − reserve)"
    if chart.threshold is not None and 0 < chart.threshold <= reach:
        top = max(top, chart.threshold)
        ax.axhline(chart.threshold, color=_THRESHOLD, linewidth=1.0, linestyle="--",
                   label=threshold_label)  # fmt: skip
    elif chart.threshold is not None and chart.threshold > 0:
        ax.plot([], [], color=_THRESHOLD, linewidth=1.0, linestyle="--",
                label=f"{threshold_label}: above this chart")  # fmt: skip
    last = chart.requests[-1].number if chart.requests else 1
    # Labels close together step down a line each, so that none is drawn over another (a
    # label is about a third of a 25-request axis wide at this size).
    crowd = max(4.0, 0.3 * last)
    start, level = None, 0
    for compaction in chart.compactions:
        x = compaction.after_request + 0.5
        if start is None or x - start >= crowd:
            start, level = x, 0
        else:
            level += 1
        ax.annotate(
            "",
            xy=(x, compaction.tokens_after),
            xytext=(x, compaction.tokens_before),
            arrowprops={"arrowstyle": "-|>", "color": _DROP, "linewidth": 1.4},
        )
        ax.text(
            x + 0.25,
            (compaction.tokens_before + compaction.tokens_after) / 2 - level * 0.13 * top,
            compaction.label(),
            color=_DROP,
            fontsize=8,
            va="center",
        )
    ax.set_ylim(0, top * 1.12)
    ax.set_xlim(0.5, last + 1.5)
    ax.set_xlabel("request (one per assistant reply on the path)")
    ax.set_ylabel("tokens in the context")
    ax.set_title(title)
    ax.yaxis.set_major_formatter(_thousands_formatter())
    ax.grid(axis="y", color="#d0d7de", linewidth=0.5)
    if not any(r.tokens for r in chart.requests):
        ax.text(0.5, 0.5, "no reply with a usage on this path yet", transform=ax.transAxes,
                ha="center", va="center", color=_WINDOW)  # fmt: skip
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize="small",
                  frameon=False)  # fmt: skip
    return figure


def _thousands_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: f"{value:,.0f}")
