"""What a compaction summarized and what it kept: one count for every view, command and row.

A compaction entry records only where the kept part starts (``firstKeptEntryId``). Which
entries went into its summary follows from the context just before it, by the rule the
planner uses (:func:`pinb.core.compaction.prepare_compaction`): the entries of that context
before the first kept one, compactions and system messages left out (the checkpoint
replays those). :func:`split_at_cut` applies the rule to a context and a cut, for a plan
and for a compaction alike; :func:`compaction_span` reads it back from a compaction entry.

What a compaction costs in the context right after it is one figure too
(:func:`compaction_cost`): in Pi 1.x the entry sends its system checkpoint (the prompt it
replays) and its summary, and every view that shows a size for the compaction shows that
figure with its two parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .context import SessionContext
from .entries import Entry
from .target import Pi

__all__ = ["CompactionCost", "CompactionSpan", "compaction_cost", "compaction_span", "split_at_cut"]


@dataclass(frozen=True)
class CompactionSpan:
    """The entries a compaction summarized and kept.

    Attributes
    ----------
    summarized:
        Entries whose messages went into the summary, in path order.
    kept:
        Entries from the first kept one whose messages the model is still sent verbatim.
    lost:
        (Pi v0.58.3 only) entries an earlier compaction had kept that this one dropped
        without summarizing them: v0.58.3 summarizes only what follows the previous
        compaction.
    """

    summarized: tuple[Entry, ...] = ()
    kept: tuple[Entry, ...] = ()
    lost: tuple[Entry, ...] = field(default=())

    @property
    def summarized_ids(self) -> list[str]:
        return [str(e.id) for e in self.summarized]

    @property
    def kept_ids(self) -> list[str]:
        return [str(e.id) for e in self.kept]


def _sends(messages: list[Any]) -> bool:
    """Whether an entry contributes a message other than a system message."""
    return any(not (isinstance(m, dict) and m.get("role") == "system") for m in messages)


def split_at_cut(before: SessionContext, first_kept_id: Any) -> CompactionSpan:
    """Split a context at a compaction's cut into what is summarized and what is kept.

    Parameters
    ----------
    before:
        The context the compaction works on (at its parent, or at the leaf for a plan).
    first_kept_id:
        The first kept entry's id; an id not in the context keeps nothing.
    """
    positions = {id(e): i for i, e in enumerate(before.path)}
    previous = before.compaction
    previous_at = positions.get(id(previous), -1) if previous is not None else -1
    summarized: list[Entry] = []
    kept: list[Entry] = []
    lost: list[Entry] = []
    keeping = False
    for projected in before.entries:
        entry = projected.entry
        if not keeping and first_kept_id is not None and entry.id == first_kept_id:
            keeping = True
        if entry.type == "compaction" or not _sends(projected.messages):
            continue
        if keeping:
            kept.append(entry)
        elif before.pi < Pi.V1_6 and positions.get(id(entry), -1) < previous_at:
            lost.append(entry)
        else:
            summarized.append(entry)
    return CompactionSpan(tuple(summarized), tuple(kept), tuple(lost))


def compaction_span(session: Any, entry: Entry | str) -> CompactionSpan:
    """What the ``compaction`` entry ``entry`` of ``session`` summarized and kept.

    Raises
    ------
    ValueError
        ``entry`` is not a compaction.
    """
    found: Entry = entry if isinstance(entry, Entry) else session[entry]
    if found.type != "compaction":
        raise ValueError(f"entry {found.id!r} is a {found.type!r} entry, not a compaction")
    parent = found.raw.get("parentId")
    before = session.build_context(parent) if parent else SessionContext(pi=session.pi)
    return split_at_cut(before, found.raw.get("firstKeptEntryId"))


@dataclass(frozen=True)
class CompactionCost:
    """What a compaction entry sends in the context right after it (chars/4).

    Attributes
    ----------
    summary:
        Its summary message.
    checkpoint:
        Its share of the system prompt it replays (Pi 1.x's system checkpoint; 0 without).
    """

    summary: int
    checkpoint: int = 0

    @property
    def total(self) -> int:
        """What the entry costs in the context: the figure the tree and the context show."""
        return self.summary + self.checkpoint

    def describe(self) -> str:
        """``"1,988 tokens: system checkpoint 1,872 + summary 116"``."""
        if not self.checkpoint:
            return f"{self.summary:,} tokens: the summary"
        return (
            f"{self.total:,} tokens: system checkpoint {self.checkpoint:,} + summary "
            f"{self.summary:,}"
        )


def compaction_cost(session: Any, entry: Entry | str) -> CompactionCost:
    """What the ``compaction`` entry ``entry`` sends in the context built at it.

    The same split of the prompt as every view uses
    (:func:`pinb.core.system_prompt.entry_costs`): the entry costs its checkpoint's share
    of the prompt as sent plus its summary.
    """
    from .system_prompt import entry_costs
    from .tokens import estimate_tokens

    found: Entry = entry if isinstance(entry, Entry) else session[entry]
    if found.type != "compaction":
        raise ValueError(f"entry {found.id!r} is a {found.type!r} entry, not a compaction")
    context = session.build_context(found.id)
    summary_message = next(
        (
            m
            for m, source in zip(context.messages, context.sources, strict=False)
            if source is found and isinstance(m, dict) and m.get("role") == "compactionSummary"
        ),
        None,
    )
    summary = estimate_tokens(summary_message, pi=context.pi) if summary_message else 0
    if context.pi < Pi.V1_6:
        return CompactionCost(summary)
    total = entry_costs(context).get(id(found), summary)
    return CompactionCost(summary, max(0, total - summary))
