"""What would a compaction at this leaf cut under other settings? Replayed with the one planner.

Every column comes from :func:`pinb.core.compaction.operations.plan_to_fit`, the planner ``%pi
compact`` uses: Pi's cut (:func:`pinb.core.plan_compaction`) for the settings, with the keep
fitted to a small window and made smaller when the settings' own keep everything. The first
column is the **current settings** (what ``%pi compact`` will do, fitted to the window the
same way); each column says the ``keepRecentTokens`` it used. Nothing is written to the
session. Each compaction is also carried out on an in-memory copy of the session
(:meth:`~pinb.core.Session.from_bytes`, whose appends never touch a disk) with a summary
(pinb's offline one unless another summarizer is given), so the summary's own size counts
in the size after, and what the summary kept of the span is scored (the one retention
report). Beside the columns, at the current cut: Pi's plan (Pi's exact summary alone) and
Pi's plan + pinb's kept facts (what pinb's compaction writes by default), mask-first at the
leaf, observation masking and, with a model, Pi's own summary prompt are scored the same
way (:func:`score_columns`, the strategies replayed by
:mod:`pinb.analysis.compaction.strategies`): which keeps most, and at what cost in tokens
and summary calls.
:func:`compare_strategies` is that comparison alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import TYPE_CHECKING, Any, Literal

from ...core.compaction.facts import FactCache
from ...core.compaction.masking import MaskReport, plan_masking
from ...core.compaction.operations import (
    CompactionPlan,
    load_compaction_settings,
    plan_to_fit,
)
from ...core.compaction.reports import CompactionReport
from ...core.compaction.summarize import ExtractiveSummarizer, ModelSummarizer, Summarizer
from ...core.context.accounting import ContextUsage, context_usage
from ...core.context.tokens import CompactionSettings, estimate_tokens, should_compact
from ...core.format.entries import Entry
from ...core.session import Session
from ...display import Displayable
from ...errors import EntryNotFoundError, PinbError
from ...render.tree.graph import entry_preview, node_key
from ..retention.report import RetentionReport
from ..sources import open_session
from .strategies import (
    StrategyComparison,
    StrategyRow,
    mask_first_retention,
    masked_retention,
    replay_summary,
    scratch_copy,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CURRENT",
    "WhatIf",
    "WhatIfRow",
    "compare_strategies",
    "default_settings",
    "score_columns",
    "scratch_copy",
    "what_if",
]
# ``scratch_copy`` lives in :mod:`pinb.analysis.compaction.strategies`; it is named here for callers.

#: The label of the column that replays the settings in force.
CURRENT = "current settings"


@dataclass(frozen=True)
class WhatIfRow:
    """One setting replayed at the leaf.

    Attributes
    ----------
    settings:
        The settings the column asks about.
    label:
        ``"current settings"`` for the settings in force, else ``""``.
    nothing:
        Why nothing would be compacted (then every figure of the cut is ``None``), else
        ``None``.
    keep_used / keep_note:
        The ``keepRecentTokens`` the planner used, and why it is not the setting's own
        (``""`` when it is).
    first_kept_entry_id / first_kept_preview:
        Where the kept part would start.
    split_turn:
        The cut falls inside a turn (its start would be summarized apart).
    entries_kept / messages_kept / kept_tokens:
        What stays verbatim; ``kept_tokens`` is chars/4 of the kept messages.
    entries_summarized / messages_summarized:
        What the summarizer would be given.
    summarized_tokens:
        chars/4 leaving the context (``estimated_before - kept_tokens``; it includes the
        previous summary, which the new one replaces).
    summary_tokens / after_tokens:
        With a summary written: the summary's chars/4, and the context right after (kept
        plus summary, as :func:`~pinb.core.compact` reports it). ``None`` otherwise.
    retention:
        With a summary written: what it kept of the span
        (:class:`~pinb.analysis.retention.report.RetentionReport`: score, recall by kind).
    replays:
        The compaction recorded at this leaf that the column writes again (the same cut
        and the same summary), if any: its retention is that compaction's.
    threshold / would_trigger:
        With a context window: the compaction threshold under these settings and whether
        the context at the leaf is above it.
    report:
        The planner's :class:`~pinb.core.CompactionReport` (the dry run).
    """

    settings: CompactionSettings
    label: str = ""
    nothing: str | None = None
    keep_used: int | None = None
    keep_note: str = ""
    first_kept_entry_id: str | None = None
    first_kept_preview: str = ""
    split_turn: bool | None = None
    entries_kept: int | None = None
    messages_kept: int | None = None
    kept_tokens: int | None = None
    entries_summarized: int | None = None
    messages_summarized: int | None = None
    summarized_tokens: int | None = None
    summary: str | None = None
    summary_tokens: int | None = None
    after_tokens: int | None = None
    threshold: int | None = None
    would_trigger: bool | None = None
    report: CompactionReport | None = field(default=None, repr=False, compare=False)
    plan: CompactionPlan | None = field(default=None, repr=False, compare=False)
    retention: RetentionReport | None = field(default=None, repr=False, compare=False)
    replays: str | None = None

    @property
    def name(self) -> str:
        """``keep 20,000 / reserve 16,384``, or ``current settings`` for the settings in force."""
        s = self.settings
        return self.label or f"keep {s.keep_recent_tokens:,} / reserve {s.reserve_tokens:,}"

    @property
    def settings_text(self) -> str:
        """``keep 20,000 / reserve 16,384``."""
        s = self.settings
        return f"keep {s.keep_recent_tokens:,} / reserve {s.reserve_tokens:,}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "keep_recent_tokens": self.settings.keep_recent_tokens,
            "reserve_tokens": self.settings.reserve_tokens,
            "keep_used": self.keep_used,
            "keep_note": self.keep_note,
            "nothing": self.nothing,
            "first_kept_entry_id": self.first_kept_entry_id,
            "first_kept_preview": self.first_kept_preview,
            "split_turn": self.split_turn,
            "entries_kept": self.entries_kept,
            "messages_kept": self.messages_kept,
            "kept_tokens": self.kept_tokens,
            "entries_summarized": self.entries_summarized,
            "messages_summarized": self.messages_summarized,
            "summarized_tokens": self.summarized_tokens,
            "summary_tokens": self.summary_tokens,
            "after_tokens": self.after_tokens,
            "threshold": self.threshold,
            "would_trigger": self.would_trigger,
            "facts": len(self.retention.verdicts) if self.retention else None,
            "facts_kept": self.retention.kept_count if self.retention else None,
            "score": self.retention.score if self.retention else None,
            "facts_per_1k": self.retention.facts_per_1k if self.retention else None,
            "replays": self.replays,
        }


@dataclass
class WhatIf(Displayable):
    """The replay of one leaf under several settings (one :class:`WhatIfRow` each).

    ``context`` is the context at the leaf as every view accounts it; ``summarizer`` names
    the summarizer that wrote the summaries shown, if any, and ``compact_summarizer`` the
    one ``%pi compact`` would use (when the caller knows it). ``current_note`` says where
    the current settings came from and how they were fitted; ``leaf_is_compaction`` that
    the leaf is a compaction (nothing to compact until the next message; replay the
    compaction at its parent instead, ``parent_id``). ``strategies`` scores each column's
    summary, observation masking and a model's summary side by side (``None`` when the
    replay was asked for tokens only).
    """

    session_id: str
    leaf_id: str
    context: ContextUsage
    rows: list[WhatIfRow]
    summarizer: str | None = None
    compact_summarizer: str | None = None
    current_note: str = ""
    leaf_is_compaction: bool = False
    parent_id: str | None = None
    strategies: StrategyComparison | None = field(default=None, repr=False)
    #: Masking first at the leaf (the mask-first strategy: what it masks, the figure after,
    #: whether a summary is still needed), ``None`` when not asked; ``masking_nothing``
    #: says why there is nothing to mask.
    masking: MaskReport | None = field(default=None, repr=False)
    masking_nothing: str | None = None
    #: Default columns left out because they plan the same cut as one before them.
    folded: list[str] = field(default_factory=list)

    @property
    def current(self) -> WhatIfRow | None:
        """The column of the settings in force (what ``%pi compact`` will do), if any."""
        return next((r for r in self.rows if r.label == CURRENT), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "leaf_id": self.leaf_id,
            "tokens_before": self.context.tokens,
            "measure": self.context.measure,
            "estimated_before": self.context.estimated_tokens,
            "window": self.context.window,
            "window_source": self.context.window_source,
            "summarizer": self.summarizer,
            "compact_summarizer": self.compact_summarizer,
            "current_note": self.current_note,
            "rows": [r.to_dict() for r in self.rows],
            "strategies": self.strategies.to_dict() if self.strategies is not None else None,
            "masking": self.masking.to_dict() if self.masking is not None else None,
            "masking_nothing": self.masking_nothing,
            "folded": self.folded,
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per setting (the :meth:`WhatIfRow.to_dict` columns)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows])

    def __repr__(self) -> str:
        return f"<WhatIf leaf={self.leaf_id} settings={len(self.rows)}>"


#: The factors tried, in order, for the columns beside the current one: smaller keeps first.
_SMALLER_KEEPS = (2, 4, 8, 16)
_LARGER_KEEPS = (2, 4, 8)


def default_settings(
    current: CompactionSettings, keep: int | None = None
) -> list[CompactionSettings]:
    """The keeps tried for the columns beside the current one: halves, then doubles of
    ``keep`` (default: the current setting's; :func:`what_if` passes the keep the current
    plan used, which a small session or window makes smaller).

    :func:`what_if` shows the first smaller and the first larger of them whose plan differs
    from the current one's (see :func:`_distinct_defaults`).
    """
    keep = keep or current.keep_recent_tokens
    keeps = [max(1, keep // f) for f in _SMALLER_KEEPS] + [keep * f for f in _LARGER_KEEPS]
    own = current.keep_recent_tokens
    return [replace(current, keep_recent_tokens=k) for k in dict.fromkeys(keeps) if k != own]


def _outcome(row: WhatIfRow) -> tuple[Any, ...]:
    """What a column shows: where it cuts, or why nothing is compacted."""
    return (row.nothing, row.first_kept_entry_id)


def _distinct_defaults(
    current: WhatIfRow | None, tried: list[WhatIfRow]
) -> tuple[list[WhatIfRow], list[str]]:
    """The first smaller and the first larger keep whose cut differs from the current one,
    and, for a side with none, its nearest keep (said as left out).

    Half and twice the keep often plan the same cut (a small session, or a keep fitted to
    the window), and three identical columns teach nothing.
    """
    seen = {_outcome(current)} if current is not None else set()
    keep = None
    if current is not None:
        keep = current.keep_used or current.settings.keep_recent_tokens
    shown: list[WhatIfRow] = []
    left_out: list[str] = []
    for smaller in (True, False):
        side = [
            row
            for row in tried
            if keep is None
            or ((row.keep_used or row.settings.keep_recent_tokens) < keep) == smaller
        ]
        found = next((row for row in side if _outcome(row) not in seen), None)
        if found is not None:
            seen.add(_outcome(found))
            shown.append(found)
        elif side:
            left_out.append(side[0].settings_text)
    return shown, left_out


def _candidates(
    settings: Iterable[CompactionSettings] | None,
    keep_recent_tokens: Sequence[int],
    reserve_tokens: Sequence[int],
    base: CompactionSettings,
) -> list[CompactionSettings]:
    chosen = list(settings or ())
    if keep_recent_tokens or reserve_tokens:
        keeps = list(keep_recent_tokens) or [base.keep_recent_tokens]
        reserves = list(reserve_tokens) or [base.reserve_tokens]
        chosen += [
            replace(base, reserve_tokens=r, keep_recent_tokens=k)
            for k, r in product(keeps, reserves)
        ]
    return chosen


def _row(
    session: Session,
    leaf_id: str,
    settings: CompactionSettings,
    usage: ContextUsage,
    *,
    label: str,
    plan_window: int | None,
    margin: int,
    reason: str,
    fit: bool,
) -> WhatIfRow:
    window = usage.window
    threshold = int(settings.threshold(window)) if window else None
    trigger = should_compact(usage.tokens, window, settings) if window else None
    plan = plan_to_fit(
        session,
        settings,
        context_window=plan_window,
        margin=margin,
        leaf_id=leaf_id,
        reason=reason,
        fit=fit,
    )
    report = plan.report
    if report is None:
        return WhatIfRow(
            settings,
            label,
            plan.nothing,
            threshold=threshold,
            would_trigger=trigger,
            plan=plan,
        )
    kept_ids = set(report.kept_ids)
    context = session.build_context(leaf_id)
    messages_kept = sum(
        1
        for source in context.sources
        if source.type != "compaction" and node_key(source.id) in kept_ids
    )
    first = session.get(report.first_kept_entry_id)
    return WhatIfRow(
        settings=settings,
        label=label,
        keep_used=plan.keep_recent_tokens,
        keep_note=plan.keep_note,
        first_kept_entry_id=report.first_kept_entry_id,
        first_kept_preview=entry_preview(first, 100) if first is not None else "",
        split_turn=report.is_split_turn,
        entries_kept=len(report.kept_ids),
        messages_kept=messages_kept,
        kept_tokens=report.estimated_after,
        entries_summarized=len(set(report.summarized_ids)),
        messages_summarized=len(report.summarized_ids),
        summarized_tokens=report.estimated_before - report.estimated_after,
        threshold=threshold,
        would_trigger=trigger,
        report=report,
        plan=plan,
    )


def _summarized(
    session: Session,
    scratch: Session,
    leaf_id: str,
    row: WhatIfRow,
    summarizer: Summarizer,
    cache: FactCache,
) -> WhatIfRow:
    assert row.plan is not None
    done, retention = replay_summary(
        session, scratch, leaf_id, row.plan.used, summarizer, f"what-if, {row.name}", cache
    )
    summary = {"role": "compactionSummary", "summary": done.summary}
    return replace(
        row,
        summary=done.summary,
        summary_tokens=estimate_tokens(summary, pi=scratch.pi),
        after_tokens=done.estimated_after,
        retention=retention,
    )


def _replays(row: WhatIfRow, recorded: Sequence[Entry]) -> WhatIfRow:
    """``row`` naming the recorded compaction it writes again (same cut, same summary)."""
    for entry in recorded:
        raw = entry.raw
        if row.summary and (raw.get("firstKeptEntryId"), raw.get("summary")) == (
            row.first_kept_entry_id,
            row.summary,
        ):
            return replace(row, replays=node_key(entry.id))
    return row


def _summarizer_of(model: Any) -> Summarizer:
    """A summarizer given as is, or a chat model's with Pi's prompt."""
    if hasattr(model, "summarize") and hasattr(model, "name"):
        found: Summarizer = model
        return found
    return ModelSummarizer(model)


def _column_row(column: WhatIfRow, label: str, summarizer: str | None) -> StrategyRow:
    """A column's summary as a strategy: Pi's plan, with pinb's kept facts when its
    settings add them (the summary the column wrote is what pinb's compaction writes)."""
    if column.nothing is not None:
        return StrategyRow(
            f"pi plan, {label}",
            "summary",
            summarizer or "",
            column.settings,
            nothing=column.nothing,
        )
    row = StrategyRow(
        _plan_name(label, kept_facts=column.settings.keep_facts),
        "summary",
        summarizer or "",
        column.settings,
        column.keep_used,
        retention=column.retention,
        summary_calls=1,
    )
    return row.with_kept_facts() if column.settings.keep_facts else row


def _plan_name(label: str, *, kept_facts: bool) -> str:
    """``pi plan, current settings``; ``pi plan + pinb kept facts, keep 400``. Short, so the
    table reads at a notebook's width; the row's ``summarizer`` says who wrote it."""
    head = "pi plan + pinb kept facts" if kept_facts else "pi plan"
    return f"{head}, {label}"


def _replayed(
    session: Session,
    scratch: Session,
    leaf_id: str,
    column: WhatIfRow,
    summarizer: Summarizer,
    *,
    kept_facts: bool,
    label: str,
    cache: FactCache | None,
) -> StrategyRow:
    """The current column's compaction written again with or without pinb's kept facts
    (the one writer, :func:`~pinb.core.compaction.operations.compact`, on the copy)."""
    assert column.plan is not None
    used = replace(column.plan.used, keep_facts=kept_facts)
    name = _plan_name(label, kept_facts=kept_facts)
    _, report = replay_summary(session, scratch, leaf_id, used, summarizer, name, cache)
    row = StrategyRow(
        name,
        "summary",
        getattr(summarizer, "name", type(summarizer).__name__),
        used,
        column.keep_used,
        retention=report,
        summary_calls=1,
    )
    return row.with_kept_facts() if kept_facts else row


def _mask_first_row(
    session: Session,
    leaf_id: str,
    plan: MaskReport | None,
    nothing: str | None,
    compaction: StrategyRow | None,
    settings: CompactionSettings,
    cache: FactCache | None,
) -> StrategyRow:
    """Mask-first at the leaf: the masks alone when they reach the threshold (scored on a
    copy with the masks written); else the compaction pinb writes instead, no mask."""
    if plan is not None and plan.reaches:
        return StrategyRow(
            "mask-first",
            "mask-first",
            "",
            settings,
            settings.keep_recent_tokens,
            retention=mask_first_retention(session, leaf_id, plan, cache),
            summary_calls=0,
            masked=len(plan.masked),
            summary_needed=False,
            context_after=plan.tokens_after,
            threshold=plan.threshold,
            note=f"{plan.describe()}: {plan.note}; the oldest: "
            + ", ".join(f"{m.tool} {m.arguments}".strip() for m in plan.masked[:3])
            + ("…" if len(plan.masked) > 3 else "")
            + "; 1 summary call avoided",
        )
    why = nothing if plan is None else plan.describe()
    instead = compaction.name if compaction is not None else None
    figures = compaction if compaction is not None and compaction.retention is not None else None
    return StrategyRow(
        "mask-first (a summary is needed)",
        "mask-first",
        figures.summarizer if figures is not None else "",
        settings,
        figures.keep_used if figures is not None else None,
        nothing=None if figures is not None else f"{why}; the summary is not scored",
        retention=figures.retention if figures is not None else None,
        added_tokens=figures.added_tokens if figures is not None else None,
        summary_calls=1,
        masked=0,
        summary_needed=True,
        threshold=plan.threshold if plan is not None else None,
        note=f"{why}; so no mask is written and the summary is the one of "
        + (f"'{instead}'" if instead else "the current settings"),
    )


def score_columns(
    session: Session,
    leaf_id: str,
    columns: Sequence[WhatIfRow],
    *,
    summarizer: str | None,
    scratch: Session | None = None,
    model: Any = None,
    masking: bool = True,
    window: int | None = None,
    cache: FactCache | None = None,
    written: Summarizer | None = None,
    mask_first: MaskReport | None = None,
    mask_first_nothing: str | None = None,
) -> StrategyComparison:
    """The strategies of a what-if's columns, scored.

    ``columns`` are the what-if's (:class:`WhatIfRow`): each with a summary written by
    ``summarizer`` carries its retention (with pinb's kept facts when its settings add
    them), a column with nothing to compact says why. At the current settings' cut (the
    column labelled "current settings", else the first planned one), first, side by
    side: Pi's plan (Pi's exact summary alone) and Pi's plan + pinb's kept facts, both
    by ``written`` (the summarizer of the columns), one of them the column's own;
    ``model``'s summary with Pi's prompt (a chat model, or the summarizer ``%pi
    compact`` uses with it); then, with ``masking``, mask-first (``mask_first``, the
    plan at the leaf, or ``mask_first_nothing``: why nothing is masked) and observation
    masking at the cut.
    """
    one_reserve = len({c.settings.reserve_tokens for c in columns}) == 1

    def label_of(column: WhatIfRow) -> str:
        return column.label or (
            f"keep {column.settings.keep_recent_tokens:,}" if one_reserve else column.name
        )

    rows = [
        _column_row(c, label_of(c), summarizer)
        for c in columns
        if c.nothing is not None or c.retention is not None
    ]
    planned = [c for c in columns if c.nothing is None and c.plan is not None]
    current = next((c for c in planned if c.label), planned[0] if planned else None)
    own = None  # the current column's compaction: what pinb writes at this cut
    if current is not None and current.plan is not None and current.first_kept_entry_id:
        copy = scratch if scratch is not None else scratch_copy(session)
        at = next(
            (i for i, r in enumerate(rows) if r.retention is current.retention),
            None,
        )
        if at is not None and written is not None:
            own = rows[at]
            # The other of the pair, written by the same writer at the same cut.
            other = _replayed(
                session,
                copy,
                leaf_id,
                current,
                written,
                kept_facts=not current.settings.keep_facts,
                label=label_of(current),
                cache=cache,
            )
            pair = [other, own] if current.settings.keep_facts else [own, other]
            rows = [*pair, *(r for i, r in enumerate(rows) if i != at)]
        if model is not None:
            made = _summarizer_of(model)
            name = f"pi plan, current settings, {made.name} (Pi's prompt)"
            report: RetentionReport | None = None
            nothing = None
            try:
                # Pi's prompt, Pi's exact text: no kept facts of pinb's in this row.
                used = replace(current.plan.used, keep_facts=False)
                _, report = replay_summary(session, copy, leaf_id, used, made, "pi prompt", cache)
            except PinbError as exc:  # the model could not write it: the row says why
                nothing = f"{made.name} wrote no summary: {exc}"
            rows.append(
                StrategyRow(
                    name,
                    "summary",
                    made.name,
                    current.settings,
                    current.keep_used,
                    nothing=nothing,
                    retention=report,
                    summary_calls=1,
                )
            )
        if masking:
            rows.append(
                _mask_first_row(
                    session,
                    leaf_id,
                    mask_first,
                    mask_first_nothing,
                    own,
                    current.settings,
                    cache,
                )
            )
            rows.append(
                StrategyRow(
                    "observation masking (current cut)",
                    "masking",
                    "",
                    current.settings,
                    current.keep_used,
                    retention=masked_retention(
                        session, leaf_id, current.first_kept_entry_id, cache
                    ),
                    summary_calls=0,
                )
            )
    return StrategyComparison(session.id, leaf_id, rows, window)


def what_if(
    session: Session | str | os.PathLike[str],
    leaf: str | None = None,
    settings: Iterable[CompactionSettings] | None = None,
    *,
    keep_recent_tokens: Sequence[int] = (),
    reserve_tokens: Sequence[int] = (),
    summarizer: Summarizer | None = None,
    context_window: int | None = None,
    window_source: str | None = None,
    current: CompactionSettings | Literal[False] | None = None,
    current_note: str | None = None,
    plan_window: int | Literal[False] | None = False,
    reason: str = "manual",
    fit: bool = True,
    compact_summarizer: str | None = None,
    score: bool = True,
    masking: bool | None = None,
    model: Any = None,
) -> WhatIf:
    """Replay the compaction cut at ``leaf`` under other settings, side by side.

    Parameters
    ----------
    session:
        A session or a session file (never written to).
    leaf:
        Where to compact (default: the session's leaf). To ask what a recorded compaction
        would have done under other settings, pass its parent.
    settings:
        Settings to try, used as given.
    keep_recent_tokens / reserve_tokens:
        Values to try on top, each pair of the two (the current settings' for the one not
        given). With neither, nor ``settings``: the nearest smaller and larger keep (halving
        or doubling the current one) whose plan differs from the current column's.
    summarizer:
        Writes a summary for each setting, on an in-memory copy; ``None``: pinb's offline
        :class:`~pinb.core.ExtractiveSummarizer` when scoring, else no summary.
    context_window / window_source:
        The window (fits the current settings to it, and adds each setting's threshold);
        default: the one every view shows for the session
        (:func:`pinb.llm.window.resolve_window`: the window it ran with, else its recorded
        model's).
    current:
        The settings in force, as the caller runs them (already fitted); default: Pi's
        settings files for the session's folder (:func:`~pinb.core.load_compaction_settings`)
        fitted to the window; ``False``: no column for them.
    current_note:
        Where the current settings came from, in words (a default says it).
    plan_window:
        The window the planner fits the keep to (default: ``context_window``), as
        :func:`~pinb.core.compaction.operations.plan_to_fit` is given it by ``%pi compact``.
    reason / fit:
        As :func:`~pinb.core.compaction.operations.plan_to_fit` takes them (``fit=False``: Pi's plan
        with the settings as they are, the way the user's own Pi compacts).
    compact_summarizer:
        The summarizer ``%pi compact`` would use, to name it beside the one used here.
    score:
        Write a summary for each column and score what it kept (``False``: tokens only,
        unless ``summarizer`` is given).
    masking:
        Score observation masking at the current cut too (default: ``score``).
    model:
        A chat model (or the summarizer ``%pi compact`` uses with it): its summary with Pi's
        prompt at the current cut is scored too (a request to the model). ``None``: no
        model is asked anything.

    Returns
    -------
    WhatIf

    Raises
    ------
    EntryNotFoundError
        ``leaf`` is not an entry of the session.
    """
    from ...llm.limits import limit_margin

    session = open_session(session)
    leaf_id = leaf if leaf is not None else session.leaf_id
    if leaf_id is None or leaf_id not in session:
        raise EntryNotFoundError(leaf_id)
    window_note = ""
    if not context_window:
        from ...llm.window import resolve_window

        found = resolve_window(session=session, context=session.build_context(leaf_id))
        context_window, window_source, window_note = found.tokens, found.source, found.note
    note = current_note
    if current is None:
        loaded = load_compaction_settings(session.cwd or None)
        current = loaded.fit_window(context_window) if fit else loaded
        if note is None:
            note = "Pi's settings for the session's folder" + (
                ", fitted to the window" if context_window and current != loaded else ""
            )
    base = current if current is not False else CompactionSettings().fit_window(context_window)
    usage = context_usage(
        session.build_context(leaf_id),
        window=context_window,
        window_source=window_source,
        settings=base,
        fit=False,
        window_note=window_note,
    )
    window = context_window if plan_window is False else plan_window
    margin = limit_margin(window) if window else 0
    chosen = _candidates(settings, keep_recent_tokens, reserve_tokens, base)
    defaulted = not chosen and current is not False
    if current is not False:  # the current settings asked again are their own column
        chosen = [s for s in chosen if s != current]
    columns = ([(CURRENT, current)] if current is not False else []) + [("", s) for s in chosen]
    rows = [
        _row(
            session,
            leaf_id,
            s,
            usage,
            label=label,
            plan_window=window,
            margin=margin,
            reason=reason,
            fit=fit,
        )
        for label, s in columns
    ]
    if defaulted:
        assert current is not False
        tried = [
            _row(
                session,
                leaf_id,
                s,
                usage,
                label="",
                plan_window=window,
                margin=margin,
                reason=reason,
                fit=fit,
            )
            for s in default_settings(current, rows[0].keep_used)
        ]
        shown, folded = _distinct_defaults(rows[0], tried)
        rows = rows[:1] + shown
    else:
        folded = []
    masked, masking_nothing = _mask_first(session, leaf_id, base, window, usage)
    written = summarizer if summarizer is not None else ExtractiveSummarizer() if score else None
    name = getattr(written, "name", type(written).__name__) if written is not None else None
    scratch = scratch_copy(session) if written is not None or model is not None else None
    cache = FactCache()  # the columns' spans share their start: each message read once
    if written is not None:
        assert scratch is not None
        rows = [
            r if r.nothing else _summarized(session, scratch, leaf_id, r, written, cache)
            for r in rows
        ]
        recorded = [e for e in session.children(leaf_id) if e.type == "compaction"]
        rows = [_replays(r, recorded) for r in rows]
    masking = score if masking is None else masking
    strategies = None
    if written is not None or masking or model is not None:
        strategies = score_columns(
            session,
            leaf_id,
            rows,
            summarizer=name,
            scratch=scratch,
            model=model,
            masking=masking,
            window=context_window,
            cache=cache,
            written=written,
            mask_first=masked,
            mask_first_nothing=masking_nothing,
        )
    entry = session[leaf_id]
    parent = entry.raw.get("parentId") if entry.type == "compaction" else None
    return WhatIf(
        session_id=session.id,
        leaf_id=node_key(leaf_id),
        context=usage,
        rows=rows,
        summarizer=name,
        compact_summarizer=compact_summarizer,
        current_note=note or "",
        leaf_is_compaction=entry.type == "compaction",
        parent_id=node_key(parent) if isinstance(parent, str) else None,
        strategies=strategies,
        masking=masked,
        masking_nothing=masking_nothing,
        folded=folded,
    )


def compare_strategies(
    session: Session | str | os.PathLike[str],
    leaf: str | None = None,
    *,
    settings: Iterable[CompactionSettings] = (),
    keep_recent_tokens: Sequence[int] = (),
    current: CompactionSettings | None = None,
    context_window: int | None = None,
    model: Any = None,
    extractive: bool = True,
    masking: bool = True,
    fit: bool = True,
) -> StrategyComparison:
    """Replay compaction strategies at ``leaf`` and score each (tokens and retention).

    The what-if lab's comparison (:func:`what_if`: the same plans).

    Parameters
    ----------
    session:
        A session or a session file (never written to).
    leaf:
        Where to compact (default: the session's leaf; for a recorded compaction, its
        parent).
    settings / keep_recent_tokens:
        Other budgets for Pi's plan, beside the current settings (default: half and twice
        the current keep).
    current:
        The settings in force (default: Pi's settings files for the session's folder,
        fitted to the window).
    context_window:
        The window the planner fits the keep to, as ``%pi compact`` does.
    model:
        A chat model: adds Pi's summary prompt (:class:`~pinb.core.ModelSummarizer`) at
        the current cut. ``None``: no model is asked anything.
    extractive / masking:
        Include the offline summaries / observation masking.
    fit:
        As :func:`~pinb.core.compaction.operations.plan_to_fit` (``False``: Pi's plan as Pi makes it).

    Raises
    ------
    EntryNotFoundError
        ``leaf`` is not an entry of the session.
    """
    found = what_if(
        session,
        leaf,
        list(settings),
        keep_recent_tokens=keep_recent_tokens,
        current=current,
        context_window=context_window,
        window_source="setting" if context_window else None,
        plan_window=context_window,
        fit=fit,
        score=extractive,
        masking=masking,
        model=model,
    )
    assert found.strategies is not None
    return found.strategies


def _mask_first(
    session: Session,
    leaf_id: str,
    settings: CompactionSettings,
    window: int | None,
    usage: ContextUsage,
) -> tuple[MaskReport | None, str | None]:
    """The mask-first strategy at ``leaf_id``, planned on an in-memory copy (nothing written)."""
    from ...errors import NothingToCompactError

    copy = scratch_copy(session)
    copy.branch(leaf_id, persist=False)
    over = usage.threshold is not None and usage.tokens > usage.threshold
    try:
        report = plan_masking(
            copy, settings, context_window=window or None, reason="threshold" if over else "manual"
        )
    except NothingToCompactError as exc:
        return None, str(exc)
    return report, None
