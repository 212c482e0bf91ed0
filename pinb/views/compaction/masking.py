"""``MaskingView``: what masking old tool results did — the context before and after, each result masked and what it cost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.compaction.masking import MaskedResult, MaskReport
from ...core.context.accounting import saved_share, thousands
from ...render.html import escape, gauge, heading, mimebundle, style, table, title, wrap

__all__ = ["MaskingView", "masked_rows_html", "masking_html", "masking_text"]


def masking_text(report: MaskReport) -> str:
    """One line: what was masked, the figure before and after, and whether a summary was needed."""
    avoided = report.summary_calls_avoided
    tail = f"; {avoided} summary call avoided" if avoided else ""
    return f"<MaskingView: {report.describe()}{tail}>"


def masked_rows_html(masked: Sequence[MaskedResult], max_rows: int = 300) -> str:
    """The masked results as a table (id, tool, arguments, size, tokens before → after)."""
    rows = [
        (
            m.entry_id,
            m.tool,
            m.arguments,
            m.chars,
            m.tokens_before,
            m.tokens_after,
            m.saved,
        )
        for m in masked[:max_rows]
    ]
    more = ""
    if len(masked) > max_rows:
        more = f"<div{style('muted')}>… and {len(masked) - max_rows:,} more</div>"
    return (
        table(
            ["tool result", "tool", "arguments", "characters", "tokens", "as masked", "saved"],
            rows,
            numeric=(3, 4, 5, 6),
            wrap_columns=(2,),
        )
        + more
    )


def masking_html(report: MaskReport, max_rows: int = 300) -> str:
    """The view's HTML: the headline, the context before and after, the masked results."""
    count = len(report.masked)
    done = "Masked" if report.written else "Would mask"
    saved = saved_share(report.tokens_saved, report.tokens_before)
    if report.reaches:
        verdict = "under the threshold: no summary needed"
        if report.summary_calls_avoided:
            verdict += " (1 summary call avoided)"
    else:
        verdict = "still over the threshold: a summary is needed"
    window = report.window
    gauges = []
    for name, tokens in (("before", report.tokens_before), ("after", report.tokens_after)):
        fraction = tokens / window if window else None
        gauges.append(
            (
                name,
                tokens,
                f"{fraction:.1%}" if fraction is not None else "window unknown",
                f"<span{style('gauge')}>{gauge(fraction, 24)}</span>"
                if fraction is not None
                else "",
            )
        )
    threshold = (
        f" · threshold {thousands(report.threshold)}" if report.threshold is not None else ""
    )
    usage = ""
    if report.expected_after > report.tokens_after:
        usage = (
            f"<div{style('muted')}>By the reported usage less what was masked: "
            f"{thousands(report.expected_after)} (the server counted more than chars/4; "
            "masking went on until this figure was under the threshold too).</div>"
        )
    parts = [
        title(f"{done} {count:,} old tool result{'s' if count != 1 else ''}"),
        f"<div>Context {thousands(report.tokens_before)} → <b>{thousands(report.tokens_after)}</b> "
        f"tokens · saved <b>{saved}</b>{escape(threshold)} · "
        f"{escape(verdict)}</div>",
        table(
            ["context", "tokens", f"share of {thousands(window)}" if window else "share", ""],
            gauges,
            numeric=(1,),
            raw_columns=(3,),
        ),
        usage,
        f"<div{style('muted')}>{escape(report.note)}. Never masked: the current turn and the "
        f"most recent keepRecentTokens (from entry {escape(report.protected_from or '—')}). "
        "Each result is a Pi context_edit replacement: the file keeps the original (the "
        "recall tool, %pi goto ID).</div>",
        heading(f"Masked results ({count:,})"),
        masked_rows_html(report.masked, max_rows),
    ]
    return wrap("".join(parts), "pinb-masking")


class MaskingView:
    """What masking did (or would do): :class:`~pinb.core.compaction.masking.MaskReport` shown.

    Parameters
    ----------
    report:
        From :func:`~pinb.core.compaction.masking.plan_masking` or ``write_masks``.
    max_rows:
        Longest list of masked results shown.
    """

    def __init__(self, report: MaskReport, *, max_rows: int = 300) -> None:
        self.report = report
        self.max_rows = max_rows

    def to_text(self) -> str:
        return masking_text(self.report)

    __repr__ = to_text

    def to_html(self) -> str:
        return masking_html(self.report, self.max_rows)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)
