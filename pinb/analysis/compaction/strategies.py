"""Compaction strategies side by side at one leaf: tokens after, and what each kept.

Each strategy is replayed on an in-memory copy of the session (nothing is written) and
scored with the same retention report (:mod:`pinb.analysis.retention.report`), read from the
session itself (its citations are the file's lines):

- **Pi's plan** under each keep budget (the current settings, and others given), with
  the offline :class:`~pinb.core.ExtractiveSummarizer` writing the summary: Pi's cut
  (:func:`pinb.core.compaction.operations.plan_to_fit`), a summary that needs no model;
- **Pi's prompt** (:class:`~pinb.core.ModelSummarizer`) at the current settings' cut,
  when a model is given;
- **Pi's plan + pinb's kept facts** at the current settings' cut: the same summary with
  the cited section pinb adds by default (``keepFacts``), written by the one writer
  (:func:`~pinb.core.compaction.operations.compact`); the row says what the section adds;
- **mask-first** (:func:`pinb.core.compaction.masking.plan_masking`): old tool results
  masked oldest first until the context is under the threshold, a summary only when that
  falls short (then its figures are the compaction pinb writes instead);
- **observation masking** at the current settings' cut, as JetBrains measured it ("The
  Complexity Trap", arXiv 2508.21433): no summary; the span stays, every tool result in
  it replaced by a one-line placeholder (:data:`MASK`). Its "summary" is the masked span.
  It is the one masking row scored on exactly the span Pi's summary replaces, fact for
  fact; mask-first's span ends where masking stops (the kept budget and the current turn).

The strategies are replayed here; which ones run, and on what, is the what-if lab's
(:mod:`pinb.analysis.compaction.whatif`): :func:`~pinb.analysis.compaction.whatif.what_if`
plans the columns once and scores them with
:func:`~pinb.analysis.compaction.whatif.score_columns`, and
:func:`~pinb.analysis.compaction.whatif.compare_strategies` is that lab's comparison alone.
Data only (a :class:`StrategyComparison`); the what-if view shows it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ...core.compaction.facts import FactCache, extract_facts
from ...core.compaction.lost import cite_name, kept_facts_of
from ...core.compaction.masking import MaskReport, write_masks
from ...core.compaction.operations import compact
from ...core.compaction.reports import CompactionReport
from ...core.compaction.summarize import Summarizer
from ...core.context.accounting import estimated_by_role
from ...core.context.build import SessionContext
from ...core.context.tokens import CompactionSettings
from ...core.file.write import serialize_line
from ...core.session import Session
from ..retention.report import (
    RetentionReport,
    carried_text,
    plan_retention,
    retention_of_text,
    span_messages,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MASK",
    "StrategyComparison",
    "StrategyRow",
    "mask_first_retention",
    "mask_message",
    "masked_retention",
    "replay_summary",
    "scratch_copy",
]

#: What observation masking leaves of a tool result ({tool}, {chars}: its name and size).
MASK: Final = "[tool output hidden to save context: {tool}, {chars:,} characters]"


@dataclass(frozen=True)
class StrategyRow:
    """One strategy replayed at the leaf.

    Attributes
    ----------
    name:
        ``"pi plan, keep 20,000 + offline-extractive"``, ``"observation masking"``, …
    method:
        ``"summary"`` (a summary replaces the span), ``"masking"`` (the span stays, its
        tool results hidden) or ``"mask-first"`` (masking until under the threshold, a
        summary only when that falls short).
    summarizer:
        Who wrote the summary (``""`` for masking).
    settings:
        The settings asked for; ``keep_used`` the keep the planner used.
    nothing:
        Why nothing would be compacted, or why the summary could not be written (then
        ``retention`` is ``None``).
    retention:
        The retention report: tokens before/after (chars/4), recall by kind, score.
    added_tokens:
        What pinb's kept-facts section adds to the summary (chars/4, its heading
        included; ``0``: the summary lost no must-keep fact; ``None``: Pi's exact text).
    summary_calls:
        Summaries the strategy needs a summarizer for (a model's request each, with a
        model): 1 for a compaction, 0 when masking is enough.
    masked / summary_needed / context_after / threshold:
        Mask-first's plan: tool results masked, whether a summary is still needed, the
        context after by the threshold check's figure (a summary needed: the compaction's
        chars/4 after) and the threshold it was masked for.
    note:
        The strategy's detail in one line (``""``: none).
    """

    name: str
    method: str
    summarizer: str
    settings: CompactionSettings
    keep_used: int | None = None
    nothing: str | None = None
    retention: RetentionReport | None = field(default=None, repr=False, compare=False)
    added_tokens: int | None = None
    summary_calls: int | None = None
    masked: int | None = None
    summary_needed: bool | None = None
    context_after: int | None = None
    threshold: int | None = None
    note: str = ""

    @property
    def tokens_after(self) -> int | None:
        """The context right after the strategy (chars/4), scored or not."""
        if self.context_after is not None:
            return self.context_after
        return self.retention.estimated_after if self.retention is not None else None

    def to_dict(self) -> dict[str, Any]:
        r = self.retention
        return {
            "name": self.name,
            "method": self.method,
            "summarizer": self.summarizer,
            "keep_recent_tokens": self.settings.keep_recent_tokens,
            "reserve_tokens": self.settings.reserve_tokens,
            "keep_used": self.keep_used,
            "nothing": self.nothing,
            "first_kept_entry_id": r.first_kept_entry_id if r else None,
            "estimated_before": r.estimated_before if r else None,
            "estimated_after": r.estimated_after if r else None,
            "summary_tokens": r.summary_tokens if r else None,
            "facts": len(r.verdicts) if r else None,
            "kept": r.kept_count if r else None,
            "score": r.score if r else None,
            "facts_per_1k": r.facts_per_1k if r else None,
            "added_tokens": self.added_tokens,
            "summary_calls": self.summary_calls,
            "masked": self.masked,
            "summary_needed": self.summary_needed,
            "context_after": self.tokens_after,
            "threshold": self.threshold,
            "note": self.note,
            **{f"recall_{k}": v for k, v in (r.recall.items() if r else ())},
        }

    def with_kept_facts(self) -> StrategyRow:
        """The row with :attr:`added_tokens` read from its summary's kept-facts section."""
        if self.retention is None:
            return self
        return dataclasses.replace(self, added_tokens=kept_facts_of(self.retention.summary)[1])


@dataclass
class StrategyComparison:
    """Strategies replayed at one leaf (one :class:`StrategyRow` each)."""

    session_id: str
    leaf_id: str
    rows: list[StrategyRow]
    window: int | None = None

    def scored(self) -> list[StrategyRow]:
        """The rows with a retention report (a summary written, or a span masked)."""
        return [r for r in self.rows if r.retention is not None]

    def best(self, what: str) -> StrategyRow | None:
        """The first strategy with the most ``"facts_per_1k"`` or ``"score"``, or the smallest
        ``"estimated_after"`` (``None`` when no strategy has the figure)."""

        def figure(row: StrategyRow) -> float | None:
            value = getattr(row.retention, what)
            return None if value is None else float(-value if what == "estimated_after" else value)

        found = [(f, i, r) for i, r in enumerate(self.scored()) if (f := figure(r)) is not None]
        return max(found, key=lambda item: (item[0], -item[1]))[2] if found else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "leaf_id": self.leaf_id,
            "window": self.window,
            "rows": [r.to_dict() for r in self.rows],
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per strategy (:meth:`StrategyRow.to_dict`; recall columns per kind)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows])

    def __repr__(self) -> str:
        return f"<StrategyComparison leaf={self.leaf_id} strategies={len(self.rows)}>"


def mask_message(message: Any) -> Any:
    """A tool result with its content replaced by :data:`MASK`; other messages unchanged."""
    if not isinstance(message, dict) or message.get("role") != "toolResult":
        return message
    content = message.get("content")
    chars = 0
    if isinstance(content, list):
        chars = sum(
            len(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    elif isinstance(content, str):
        chars = len(content)
    tool = message.get("toolName")
    text = MASK.format(tool=tool if isinstance(tool, str) else "tool", chars=chars)
    return {**message, "content": [{"type": "text", "text": text}]}


def scratch_copy(session: Session) -> Session:
    """An in-memory copy of ``session`` (same header, ids and entries) to compact freely."""
    lines = [serialize_line(session.header), *(serialize_line(e.value) for e in session.entries)]
    return Session.from_bytes(b"".join(lines), pi=session.pi)


def replay_summary(
    session: Session,
    scratch: Session,
    leaf_id: str,
    settings: CompactionSettings,
    summarizer: Summarizer,
    kind: str,
    cache: FactCache | None = None,
) -> tuple[CompactionReport, RetentionReport]:
    """Compact ``scratch`` (a copy of ``session``) at ``leaf_id`` with ``settings``, and what
    the summary kept: the retention is read from ``session`` (its file's lines), for the
    cut and summary the copy got (:func:`~pinb.analysis.retention.report.plan_retention`)."""
    scratch.branch(leaf_id, persist=False)
    # The copy's kept facts cite the session's file, as a compaction of it would.
    done = compact(scratch, summarizer, settings=settings, cite_as=cite_name(session))
    report = plan_retention(
        session, done, leaf_id=leaf_id, summary=done.summary, kind=kind, cache=cache
    )
    return done, dataclasses.replace(report, compaction_id=None)


def _masking_report(
    session: Session,
    before: SessionContext,
    after: SessionContext,
    first_kept_id: str,
    sent: list[Any],
    spans: tuple[Any, Any, int],
    *,
    kind: str,
    note: str,
    cache: FactCache | None,
) -> RetentionReport:
    """A masking strategy's report: ``sent`` (the span as masked) stands as its summary,
    judged against the facts of the span (``spans``: :func:`span_messages` of ``before``)."""
    summarized, kept, count = spans
    text = "\n\n".join(carried_text(m) for m in sent)
    cwd = session.cwd or None
    return RetentionReport(
        compaction_id=None,
        kind=kind,
        first_kept_entry_id=first_kept_id,
        tokens_before=None,
        estimated_before=sum(estimated_by_role(before).values()),
        estimated_after=sum(estimated_by_role(after).values()),
        summary_tokens=sum(
            estimated_by_role(SessionContext(messages=sent, pi=session.pi)).values()
        ),
        summarized_entries=count,
        summary=text,
        verdicts=retention_of_text(extract_facts(summarized, cache=cache), text, kept, cwd),
        session_id=session.id,
        session_path=os.fspath(session.path) if session.path is not None else None,
        cwd=cwd,
        note=note,
    )


def masked_retention(
    session: Session, leaf_id: str, first_kept_id: str, cache: FactCache | None = None
) -> RetentionReport:
    """Observation masking at ``first_kept_id``: the span stays, its tool results hidden."""
    before = session.build_context(leaf_id)
    spans = span_messages(before, first_kept_id)
    summarized, kept, _ = spans
    masked = [mask_message(m) for _, messages in summarized for m in messages]
    system = [m for m in before.messages if isinstance(m, dict) and m.get("role") == "system"]
    after = SessionContext(messages=[*system, *masked, *kept], pi=session.pi)
    return _masking_report(
        session,
        before,
        after,
        first_kept_id,
        masked,
        spans,
        kind="observation masking",
        note="no summary: the span stays with its tool results hidden; its 'summary' is the "
        "masked span (summary tokens: its chars/4)",
        cache=cache,
    )


def mask_first_retention(
    session: Session, leaf_id: str, plan: MaskReport, cache: FactCache | None = None
) -> RetentionReport | None:
    """What mask-first's ``plan`` keeps of the context before the first entry it protects.

    The masks are written (:func:`~pinb.core.compaction.masking.write_masks`) on an
    in-memory copy, so the placeholders judged are the ones a ``pinb compact --mask`` of
    the file appends; the facts are read from ``session`` (their citations are its lines).
    ``None`` when masking protects nothing (no span to score) or the plan falls short (a
    summary is written instead, and no mask)."""
    first = plan.protected_from
    if first is None or not plan.reaches or not plan.masked:
        return None
    before = session.build_context(leaf_id)
    spans = span_messages(before, first)
    copy = scratch_copy(session)
    copy.branch(leaf_id, persist=False)
    write_masks(copy, dataclasses.replace(plan))  # it fills in what it wrote: not the plan
    after = copy.build_context()
    masked, _, _ = span_messages(after, first)
    sent = [m for _, messages in masked for m in messages]
    return _masking_report(
        session,
        before,
        after,
        first,
        sent,
        spans,
        kind="mask-first",
        note=f"no summary: {plan.describe()}; its 'summary' is the span before the entry "
        "masking protects, masks in place (summary tokens: its chars/4)",
        cache=cache,
    )
