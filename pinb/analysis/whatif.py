"""What would a compaction at this leaf cut under other settings? Replayed with the core's planner.

Every figure comes from :func:`pinb.core.plan_compaction` (which runs
:func:`pinb.core.prepare_compaction`, Pi's cut) at the leaf, for each setting; nothing is
written to the session. With a summarizer, each compaction is also carried out on an
in-memory copy of the session (:meth:`~pinb.core.Session.from_bytes`, whose appends never
touch a disk), so the summary's own size counts in the size after.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import TYPE_CHECKING, Any

from ..core.accounting import ContextUsage, context_usage
from ..core.operations import compact, plan_compaction
from ..core.reports import CompactionReport
from ..core.session import Session
from ..core.store import serialize_line
from ..core.summarize import Summarizer
from ..core.tokens import CompactionSettings, estimate_tokens, should_compact
from ..display import Displayable
from ..errors import EntryNotFoundError, NothingToCompactError
from ..render.graph import entry_preview, node_key
from .frames import open_session

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["WhatIf", "WhatIfRow", "default_settings", "scratch_copy", "what_if"]


@dataclass(frozen=True)
class WhatIfRow:
    """One setting replayed at the leaf.

    Attributes
    ----------
    settings:
        The settings the planner was given.
    nothing:
        Why nothing would be compacted (then the cut fields are empty), else ``None``.
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
        With a summarizer: the summary's chars/4, and the context right after (kept plus
        summary, as :func:`~pinb.core.compact` reports it). ``None`` otherwise.
    threshold / would_trigger:
        With a context window: the compaction threshold under these settings and whether
        the context at the leaf is above it.
    report:
        The planner's :class:`~pinb.core.CompactionReport` (the dry run).
    """

    settings: CompactionSettings
    nothing: str | None = None
    first_kept_entry_id: str | None = None
    first_kept_preview: str = ""
    split_turn: bool = False
    entries_kept: int = 0
    messages_kept: int = 0
    kept_tokens: int = 0
    entries_summarized: int = 0
    messages_summarized: int = 0
    summarized_tokens: int = 0
    summary: str | None = None
    summary_tokens: int | None = None
    after_tokens: int | None = None
    threshold: int | None = None
    would_trigger: bool | None = None
    report: CompactionReport | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        """``keep 20,000 / reserve 16,384``."""
        s = self.settings
        return f"keep {s.keep_recent_tokens:,} / reserve {s.reserve_tokens:,}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "keep_recent_tokens": self.settings.keep_recent_tokens,
            "reserve_tokens": self.settings.reserve_tokens,
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
        }


@dataclass
class WhatIf(Displayable):
    """The replay of one leaf under several settings (one :class:`WhatIfRow` each).

    ``context`` is the context at the leaf as every view accounts it; ``summarizer`` names
    the summarizer used, if any.
    """

    session_id: str
    leaf_id: str
    context: ContextUsage
    rows: list[WhatIfRow]
    summarizer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "leaf_id": self.leaf_id,
            "tokens_before": self.context.tokens,
            "measure": self.context.measure,
            "estimated_before": self.context.estimated_tokens,
            "summarizer": self.summarizer,
            "rows": [r.to_dict() for r in self.rows],
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per setting (the :meth:`WhatIfRow.to_dict` columns)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows])

    def __repr__(self) -> str:
        return f"<WhatIf leaf={self.leaf_id} settings={len(self.rows)}>"


def default_settings(context_window: int | None = None) -> list[CompactionSettings]:
    """Pi's defaults (fitted to the window) with half and twice their kept tokens."""
    base = CompactionSettings().fit_window(context_window)
    keep = base.keep_recent_tokens
    return [
        CompactionSettings(reserve_tokens=base.reserve_tokens, keep_recent_tokens=k)
        for k in (keep // 2, keep, keep * 2)
    ]


def _candidates(
    settings: Iterable[CompactionSettings] | None,
    keep_recent_tokens: Sequence[int],
    reserve_tokens: Sequence[int],
    context_window: int | None,
) -> list[CompactionSettings]:
    chosen = list(settings or ())
    if keep_recent_tokens or reserve_tokens:
        base = CompactionSettings().fit_window(context_window)
        keeps = list(keep_recent_tokens) or [base.keep_recent_tokens]
        reserves = list(reserve_tokens) or [base.reserve_tokens]
        chosen += [
            CompactionSettings(reserve_tokens=r, keep_recent_tokens=k)
            for k, r in product(keeps, reserves)
        ]
    return chosen or default_settings(context_window)


def scratch_copy(session: Session) -> Session:
    """An in-memory copy of ``session`` (same header, ids and entries) to compact freely."""
    lines = [serialize_line(session.header), *(serialize_line(e.value) for e in session.entries)]
    return Session.from_bytes(b"".join(lines), pi=session.pi)


def _row(
    session: Session,
    leaf_id: str,
    settings: CompactionSettings,
    usage: ContextUsage,
    context_window: int | None,
) -> WhatIfRow:
    threshold = int(settings.threshold(context_window)) if context_window else None
    trigger = should_compact(usage.tokens, context_window, settings) if context_window else None
    try:
        report = plan_compaction(session, settings, leaf_id=leaf_id)
    except NothingToCompactError as exc:
        return WhatIfRow(settings, str(exc), threshold=threshold, would_trigger=trigger)
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
    )


def _summarized(
    scratch: Session, leaf_id: str, row: WhatIfRow, summarizer: Summarizer
) -> WhatIfRow:
    scratch.branch(leaf_id, persist=False)
    done = compact(scratch, summarizer, settings=row.settings)
    summary = {"role": "compactionSummary", "summary": done.summary}
    return replace(
        row,
        summary=done.summary,
        summary_tokens=estimate_tokens(summary, pi=scratch.pi),
        after_tokens=done.estimated_after,
    )


def what_if(
    session: Session | str | os.PathLike[str],
    leaf: str | None = None,
    settings: Iterable[CompactionSettings] | None = None,
    *,
    keep_recent_tokens: Sequence[int] = (),
    reserve_tokens: Sequence[int] = (),
    summarizer: Summarizer | None = None,
    context_window: int | None = None,
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
        Values to try on top, each pair of the two (Pi's defaults for the one not given).
        With neither, nor ``settings``: :func:`default_settings`.
    summarizer:
        Writes a summary for each setting, on an in-memory copy (for instance
        :class:`~pinb.core.ExtractiveSummarizer`, offline); ``None``: no summary.
    context_window:
        Fits the default settings to it and adds each setting's threshold.

    Returns
    -------
    WhatIf

    Raises
    ------
    EntryNotFoundError
        ``leaf`` is not an entry of the session.
    """
    session = open_session(session)
    leaf_id = leaf if leaf is not None else session.leaf_id
    if leaf_id is None or leaf_id not in session:
        raise EntryNotFoundError(leaf_id)
    usage = context_usage(session.build_context(leaf_id), window=context_window)
    candidates = _candidates(settings, keep_recent_tokens, reserve_tokens, context_window)
    rows = [_row(session, leaf_id, s, usage, context_window) for s in candidates]
    if summarizer is not None:
        scratch = scratch_copy(session)
        rows = [r if r.nothing else _summarized(scratch, leaf_id, r, summarizer) for r in rows]
    return WhatIf(
        session_id=session.id,
        leaf_id=node_key(leaf_id),
        context=usage,
        rows=rows,
        summarizer=getattr(summarizer, "name", type(summarizer).__name__) if summarizer else None,
    )
