"""What a compaction or a branch switch changed, as values the views and notebooks show.

Data only: how a report displays is registered by :mod:`pinb.views` in :mod:`pinb.display`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...display import mimebundle_of
from ..format.entries import Entry
from .lost import LostFacts

__all__ = ["BranchReport", "CompactionReport"]


@dataclass
class CompactionReport:
    """The outcome of one compaction (or of a plan, when ``entry`` is ``None``).

    Attributes
    ----------
    entry:
        The ``compaction`` entry appended, or ``None`` for a dry run.
    summary:
        The summary text stored in the entry (file lists included).
    first_kept_entry_id:
        First entry kept verbatim.
    tokens_before:
        What Pi records in the entry (``tokensBefore``: the last reported usage plus an
        estimate of later messages, or the estimate alone). Shown as recorded; compare
        :attr:`estimated_before` with :attr:`estimated_after` instead.
    before_by_role / after_by_role:
        chars/4 estimates per message role of the context before and after (one measure
        on both sides: usage reported on kept messages describes the old context).
    summarized_ids / kept_ids / after_ids:
        Path entries that went into the summary, that stay verbatim, and (for the views)
        entries appended after the compaction later.
    read_files / modified_files:
        Cumulative file lists stored in ``details``.
    is_split_turn:
        The cut fell inside a turn; its beginning was summarized separately.
    summarizer:
        Name of the summarizer used (``"offline-extractive"``, a model id, …).
    reason:
        ``"manual"``, ``"threshold"`` or ``"overflow"``.
    keep_recent_tokens:
        The ``keepRecentTokens`` the planner was given (``None`` when not known, as for a
        compaction read back from a file, which does not record it).
    keep_note:
        Why that keep differs from the settings' own, in words (``""``: it does not).
    masking_note:
        Under the ``"mask-first"`` strategy, why masking old tool results was not enough
        and a summary was written (``""``: masking was not tried).
    kept_facts:
        The must-keep facts the summary lost that pinb added to it, in its kept-facts
        section (:mod:`pinb.core.compaction.lost`); ``None`` when the settings write
        Pi's exact text (``keepFacts: false``) or for a plan.
    """

    entry: Entry | None
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    before_by_role: dict[str, int] = field(default_factory=dict)
    after_by_role: dict[str, int] = field(default_factory=dict)
    summarized_ids: list[str] = field(default_factory=list)
    kept_ids: list[str] = field(default_factory=list)
    after_ids: list[str] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    is_split_turn: bool = False
    summarizer: str = ""
    reason: str = "manual"
    previous_compaction_id: str | None = None
    keep_recent_tokens: int | None = None
    keep_note: str = ""
    masking_note: str = ""
    kept_facts: LostFacts | None = None

    @property
    def estimated_before(self) -> int:
        """chars/4 estimate of the context before."""
        return sum(self.before_by_role.values())

    @property
    def estimated_after(self) -> int:
        """chars/4 estimate of the context after (of the kept part, for a plan)."""
        return sum(self.after_by_role.values())

    @property
    def tokens_saved(self) -> int:
        """Estimated tokens removed from the context (same measure on both sides)."""
        return self.estimated_before - self.estimated_after

    @property
    def tokens_after(self) -> int:
        """Alias of :attr:`estimated_after`."""
        return self.estimated_after

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # Drawn by the view registered in pinb.display (pinb.views.CompactionView).
        return mimebundle_of(self, include, exclude)


@dataclass
class BranchReport:
    """The outcome of moving the leaf (``goto``), with or without a branch summary.

    ``editor_text`` is the text of a selected user message, returned for re-submission
    (the leaf moves to its parent, as in Pi).
    """

    old_leaf_id: Any
    new_leaf_id: Any
    target_id: Any
    common_ancestor_id: Any
    summarized_ids: list[str] = field(default_factory=list)
    summary_entry: Entry | None = None
    summary: str | None = None
    label_entry: Entry | None = None
    editor_text: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
