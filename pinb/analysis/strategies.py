"""Compaction strategies side by side at one leaf: tokens after, and what each kept.

Each strategy is replayed on an in-memory copy of the session (nothing is written) and
scored with the same retention report (:mod:`pinb.analysis.retention`):

- **Pi's plan** under each keep budget (the current settings, and others given), with
  the offline :class:`~pinb.core.ExtractiveSummarizer` writing the summary: Pi's cut
  (:func:`pinb.core.operations.plan_to_fit`), a summary that needs no model;
- **Pi's prompt** (:class:`~pinb.core.ModelSummarizer`) at the current settings' cut,
  when a model is given;
- **observation masking** at the current settings' cut, as JetBrains measured it ("The
  Complexity Trap", arXiv 2508.21433): no summary; the span stays, every tool result in
  it replaced by a one-line placeholder (:data:`MASK`). Its "summary" is the masked span.

Data only (a :class:`StrategyComparison`); the what-if lab shows it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ..core.accounting import estimated_by_role
from ..core.context import SessionContext
from ..core.describe import node_key
from ..core.operations import compact, load_compaction_settings, plan_to_fit
from ..core.session import Session
from ..core.summarize import ExtractiveSummarizer, ModelSummarizer, Summarizer
from ..core.tokens import CompactionSettings
from ..errors import EntryNotFoundError
from .facts import extract_facts
from .frames import open_session
from .retention import (
    RetentionReport,
    carried_text,
    retention_of_text,
    retention_report,
    span_messages,
)
from .whatif import scratch_copy

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MASK", "StrategyComparison", "StrategyRow", "compare_strategies", "mask_message"]

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
        ``"summary"`` (a summary replaces the span) or ``"masking"`` (the span stays,
        its tool results hidden).
    summarizer:
        Who wrote the summary (``""`` for masking).
    settings:
        The settings asked for; ``keep_used`` the keep the planner used.
    nothing:
        Why nothing would be compacted (then ``retention`` is ``None``).
    retention:
        The retention report: tokens before/after (chars/4), recall by kind, score.
    """

    name: str
    method: str
    summarizer: str
    settings: CompactionSettings
    keep_used: int | None = None
    nothing: str | None = None
    retention: RetentionReport | None = field(default=None, repr=False, compare=False)

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
            **{f"recall_{k}": v for k, v in (r.recall.items() if r else ())},
        }


@dataclass
class StrategyComparison:
    """Strategies replayed at one leaf (one :class:`StrategyRow` each)."""

    session_id: str
    leaf_id: str
    rows: list[StrategyRow]
    window: int | None = None

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


def _summarized(
    session: Session, leaf_id: str, used: CompactionSettings, summarizer: Summarizer, kind: str
) -> RetentionReport:
    scratch = scratch_copy(session)
    scratch.branch(leaf_id, persist=False)
    done = compact(scratch, summarizer, settings=used)
    assert done.entry is not None
    report = retention_report(scratch, done.entry)
    return dataclasses.replace(
        report,
        kind=kind,
        compaction_id=None,
        summarizer=done.summarizer,
        session_path=os.fspath(session.path) if session.path is not None else None,
    )


def _masked(session: Session, leaf_id: str, first_kept_id: str) -> RetentionReport:
    before = session.build_context(leaf_id)
    summarized, kept, count = span_messages(before, first_kept_id)
    masked = [mask_message(m) for _, messages in summarized for m in messages]
    system = [m for m in before.messages if isinstance(m, dict) and m.get("role") == "system"]
    after = SessionContext(messages=[*system, *masked, *kept], pi=session.pi)
    span = SessionContext(messages=masked, pi=session.pi)
    text = "\n\n".join(carried_text(m) for m in masked)
    cwd = session.cwd or None
    return RetentionReport(
        compaction_id=None,
        kind="observation masking",
        first_kept_entry_id=first_kept_id,
        tokens_before=None,
        estimated_before=sum(estimated_by_role(before).values()),
        estimated_after=sum(estimated_by_role(after).values()),
        summary_tokens=sum(estimated_by_role(span).values()),
        summarized_entries=count,
        summary=text,
        verdicts=retention_of_text(extract_facts(summarized), text, kept, cwd),
        session_id=session.id,
        session_path=os.fspath(session.path) if session.path is not None else None,
        cwd=cwd,
        note="no summary: the span stays with its tool results hidden; its 'summary' is the "
        "masked span (summary tokens: its chars/4)",
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
        The settings in force (default: Pi's settings files for the session's folder).
    context_window:
        The window the planner fits the keep to, as ``%pi compact`` does.
    model:
        A chat model: adds Pi's summary prompt (:class:`~pinb.core.ModelSummarizer`) at
        the current cut. ``None``: no model is asked anything.
    extractive / masking:
        Include the offline summaries / observation masking.
    fit:
        As :func:`~pinb.core.operations.plan_to_fit` (``False``: Pi's plan as Pi makes it).

    Raises
    ------
    EntryNotFoundError
        ``leaf`` is not an entry of the session.
    """
    session = open_session(session)
    leaf_id = leaf if leaf is not None else session.leaf_id
    if leaf_id is None or leaf_id not in session:
        raise EntryNotFoundError(leaf_id)
    base = current or load_compaction_settings(session.cwd or None).fit_window(context_window)
    chosen = [base, *settings]
    chosen += [dataclasses.replace(base, keep_recent_tokens=k) for k in keep_recent_tokens]
    if len(chosen) == 1:
        keep = base.keep_recent_tokens
        chosen += [
            dataclasses.replace(base, keep_recent_tokens=k) for k in (max(1, keep // 2), keep * 2)
        ]
    rows: list[StrategyRow] = []
    offline = ExtractiveSummarizer()
    current_plan = None
    for i, candidate in enumerate(dict.fromkeys(chosen)):
        plan = plan_to_fit(
            session, candidate, context_window=context_window, leaf_id=leaf_id, fit=fit
        )
        if i == 0:
            current_plan = plan
        label = "current settings" if i == 0 else f"keep {candidate.keep_recent_tokens:,}"
        if plan.report is None:
            rows.append(
                StrategyRow(
                    f"pi plan, {label}", "summary", offline.name, candidate, nothing=plan.nothing
                )
            )
            continue
        if extractive:
            report = _summarized(session, leaf_id, plan.used, offline, "pi plan + offline")
            rows.append(
                StrategyRow(
                    f"pi plan, {label} + {offline.name}",
                    "summary",
                    offline.name,
                    candidate,
                    plan.keep_recent_tokens,
                    retention=report,
                )
            )
    if current_plan is not None and current_plan.report is not None:
        cut = current_plan.report.first_kept_entry_id
        if model is not None:
            summarizer = ModelSummarizer(model)
            report = _summarized(session, leaf_id, current_plan.used, summarizer, "pi prompt")
            rows.append(
                StrategyRow(
                    f"pi plan, current settings + {summarizer.name} (Pi's prompt)",
                    "summary",
                    summarizer.name,
                    base,
                    current_plan.keep_recent_tokens,
                    retention=report,
                )
            )
        if masking:
            rows.append(
                StrategyRow(
                    "observation masking (current cut)",
                    "masking",
                    "",
                    base,
                    current_plan.keep_recent_tokens,
                    retention=_masked(session, leaf_id, cut),
                )
            )
    return StrategyComparison(session.id, node_key(leaf_id), rows, context_window)
