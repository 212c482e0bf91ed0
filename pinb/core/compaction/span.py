"""What a compaction summarized and what it kept: one count for every view, command and row.

A compaction entry records only where the kept part starts (``firstKeptEntryId``). Which
entries went into its summary follows from the context just before it, by the rule the
planner uses (:func:`pinb.core.compaction.plan.prepare_compaction`): the entries of that context
before the first kept one, compactions and system messages left out (the checkpoint
replays those). :func:`split_at_cut` applies the rule to a context and a cut, for a plan
and for a compaction alike; :func:`compaction_span` reads it back from a compaction entry.

What a compaction costs in the context right after it is one figure too
(:func:`compaction_cost`): in Pi 1.x the entry sends its system checkpoint (the prompt it
replays) and its summary, and every view that shows a size for the compaction shows that
figure with its two parts.

Reading every compaction of a session back (:func:`compaction_splits`) walks each context
once: the split of :func:`split_at_cut` (one rule), with the messages each entry sent,
and the chars/4 estimate before and after.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..context.build import SessionContext
from ..format.entries import Entry
from ..format.target import Pi

__all__ = [
    "CompactionCost",
    "CompactionSpan",
    "CompactionSplit",
    "compaction_cost",
    "compaction_span",
    "compaction_splits",
    "split_at_cut",
    "split_with_messages",
]


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


def _sent(messages: list[Any]) -> tuple[Any, ...]:
    """The messages an entry sends besides system messages (the checkpoint replays those)."""
    return tuple(m for m in messages if not (isinstance(m, dict) and m.get("role") == "system"))


def _split(
    before: SessionContext, first_kept_id: Any
) -> tuple[CompactionSpan, tuple[tuple[Any, ...], ...], tuple[tuple[Any, ...], ...]]:
    """The split (:func:`split_at_cut`) with what each summarized and kept entry sent."""
    positions = {id(e): i for i, e in enumerate(before.path)}
    previous = before.compaction
    previous_at = positions.get(id(previous), -1) if previous is not None else -1
    summarized: list[Entry] = []
    kept: list[Entry] = []
    lost: list[Entry] = []
    summarized_messages: list[tuple[Any, ...]] = []
    kept_messages: list[tuple[Any, ...]] = []
    keeping = False
    for projected in before.entries:
        entry = projected.entry
        if not keeping and first_kept_id is not None and entry.id == first_kept_id:
            keeping = True
        sent = _sent(projected.messages)
        if entry.type == "compaction" or not sent:
            continue
        if keeping:
            kept.append(entry)
            kept_messages.append(sent)
        elif before.pi < Pi.V1_6 and positions.get(id(entry), -1) < previous_at:
            lost.append(entry)
        else:
            summarized.append(entry)
            summarized_messages.append(sent)
    span = CompactionSpan(tuple(summarized), tuple(kept), tuple(lost))
    return span, tuple(summarized_messages), tuple(kept_messages)


def split_at_cut(before: SessionContext, first_kept_id: Any) -> CompactionSpan:
    """Split a context at a compaction's cut into what is summarized and what is kept.

    Parameters
    ----------
    before:
        The context the compaction works on (at its parent, or at the leaf for a plan).
    first_kept_id:
        The first kept entry's id; an id not in the context keeps nothing.
    """
    return _split(before, first_kept_id)[0]


def split_with_messages(
    before: SessionContext, first_kept_id: Any
) -> tuple[CompactionSpan, tuple[tuple[Any, ...], ...], tuple[tuple[Any, ...], ...]]:
    """:func:`split_at_cut`, with the messages each summarized and each kept entry sent the
    model (system messages left out): ``(span, summarized messages, kept messages)``."""
    return _split(before, first_kept_id)


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


def compaction_cost(
    session: Any, entry: Entry | str, context: SessionContext | None = None
) -> CompactionCost:
    """What the ``compaction`` entry ``entry`` sends in the context built at it.

    The same split of the prompt as every view uses
    (:func:`pinb.core.context.system_prompt.entry_costs`): the entry costs its checkpoint's share
    of the prompt as sent plus its summary. ``context``: that context, when the caller has
    it already.
    """
    from ..context.system_prompt import entry_costs
    from ..context.tokens import estimate_tokens

    found: Entry = entry if isinstance(entry, Entry) else session[entry]
    if found.type != "compaction":
        raise ValueError(f"entry {found.id!r} is a {found.type!r} entry, not a compaction")
    if context is None:
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


@dataclass(frozen=True)
class CompactionSplit:
    """One compaction read back: the context before it, its span, and the one measure.

    Attributes
    ----------
    entry:
        The ``compaction`` entry.
    before:
        The context at its parent (empty for a compaction at the root).
    after:
        The context at the compaction itself.
    span:
        What it summarized, kept and (Pi v0.58.3) lost: :func:`split_at_cut` of ``before``.
    summarized_messages / kept_messages:
        The messages each summarized (kept) entry sent the model, system messages left out:
        one tuple per entry of ``span.summarized`` (``span.kept``), in order.
    estimated_before / estimated_after:
        chars/4 of every message of the context before it and of the context at it
        (:func:`pinb.core.context.accounting.estimated_by_role`, summed).
    """

    entry: Entry
    before: SessionContext
    after: SessionContext
    span: CompactionSpan
    summarized_messages: tuple[tuple[Any, ...], ...]
    kept_messages: tuple[tuple[Any, ...], ...]
    estimated_before: int
    estimated_after: int


def compaction_splits(
    session: Any, entries: Iterable[Entry] | None = None
) -> Iterator[CompactionSplit]:
    """Every ``compaction`` entry of ``session`` (or those of ``entries``) read back, in order.

    One context is built per compaction (at its parent) and walked once for the split and
    the messages (:func:`split_at_cut`'s own walk); the context at the compaction is built
    for its chars/4 figure.
    """
    chosen = session.entries if entries is None else entries
    for entry in chosen:
        if entry.type == "compaction":
            # Made in a function of its own: while the caller holds a split, this frame
            # holds none of it, so a split the caller lets go is gone (its contexts too).
            yield _compaction_split(session, entry)


def _compaction_split(session: Any, entry: Entry) -> CompactionSplit:
    from ..context.accounting import estimated_by_role

    parent = entry.raw.get("parentId")
    before = session.build_context(parent) if parent else SessionContext(pi=session.pi)
    span, summarized_messages, kept_messages = _split(before, entry.raw.get("firstKeptEntryId"))
    after = session.build_context(entry.id)
    return CompactionSplit(
        entry=entry,
        before=before,
        after=after,
        span=span,
        summarized_messages=summarized_messages,
        kept_messages=kept_messages,
        estimated_before=sum(estimated_by_role(before).values()),
        estimated_after=sum(estimated_by_role(after).values()),
    )
