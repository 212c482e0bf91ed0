"""Give back what a compaction lost: one cited ``custom_message`` the model reads next turn.

The file never deletes, so a compaction's loss is reversible: the facts of the span it
replaced are still in the file. :func:`uncompact` takes the must-keep facts the chosen
compaction's summary lost that the context at the current leaf does not carry either (the
one rule, :func:`pinb.core.compaction.lost.lost_facts`), and appends them at the leaf as one
``custom_message`` (``customType`` :data:`UNCOMPACT_TYPE`, ``display: true``), which Pi
1.6.0 puts in the model's context as a user message. Its ``details`` name the compaction
and the facts, so views show what was given back.

Decisions:

- The default compaction is the latest on the current path; one not on it is refused.
- The facts are judged against everything the next turn is sent besides the compaction's
  own summary: its kept messages, what came after, and so an earlier give-back too.
  Giving back twice for one compaction gives only what is still lost; when nothing is,
  no entry is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ...display import Displayable
from ...errors import CompactionError, UsageError
from ..describe import node_key
from ..format.entries import Entry
from ..session import Session
from .lost import (
    DEFAULT_GIVE_BACK_KINDS,
    LostFact,
    cite_name,
    cited_from,
    lost_facts,
    text_tokens,
)
from .span import compaction_splits

__all__ = [
    "UNCOMPACT_BUDGET",
    "UNCOMPACT_TYPE",
    "GivenBack",
    "given_back",
    "given_back_costs",
    "given_back_facts",
    "uncompact",
]

#: The ``customType`` of the entry :func:`uncompact` appends.
UNCOMPACT_TYPE: Final = "pinb.uncompact"
#: What one give-back may cost the context by default, in chars/4 tokens.
UNCOMPACT_BUDGET: Final = 2000


@dataclass
class GivenBack(Displayable):
    """What :func:`uncompact` gave back (or would, for a dry run).

    Attributes
    ----------
    compaction_id:
        The compaction whose loss it gives back.
    facts:
        The facts, in rank order, each with its citation.
    tokens:
        chars/4 of the message (what it costs the context).
    budget:
        The budget it was cut to.
    omitted:
        Lost facts that did not fit the budget.
    kinds:
        The kinds looked at.
    text:
        The message's text (``""`` when nothing was lost).
    entry:
        The ``custom_message`` appended, or ``None`` (a dry run, or nothing to give back).
    session_path:
        The session's file, for citations.
    """

    compaction_id: str
    facts: tuple[LostFact, ...] = ()
    tokens: int = 0
    budget: int = UNCOMPACT_BUDGET
    omitted: int = 0
    kinds: tuple[str, ...] = DEFAULT_GIVE_BACK_KINDS
    text: str = ""
    entry: Entry | None = None
    session_path: str | None = None
    judged: int = field(default=0)

    @property
    def nothing(self) -> str:
        """Why nothing is given back, in one line (``""`` when something is)."""
        if self.facts:
            return ""
        kinds = ", ".join(self.kinds)
        return (
            f"nothing to give back: compaction {self.compaction_id} lost no fact of the kinds "
            f"asked for ({kinds}) that the current context does not carry"
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"compactionId", "entryId", "tokens", "budget", "facts": [{"kind", "text",
        "entryId", "line"}], "omitted"}`` (``entryId`` is ``null`` when nothing was written)."""
        return {
            "compactionId": self.compaction_id,
            "entryId": node_key(self.entry.id) if self.entry is not None else None,
            "tokens": self.tokens,
            "budget": self.budget,
            "facts": [f.to_dict() for f in self.facts],
            "omitted": self.omitted,
        }

    def __repr__(self) -> str:
        where = f"entry {self.entry.id}" if self.entry is not None else "not written"
        return (
            f"<GivenBack {self.compaction_id}: {len(self.facts)} facts, {self.tokens} tokens, "
            f"{self.omitted} omitted, {where}>"
        )


def _head(compaction_id: str, where: str | None) -> str:
    return (
        f"[pinb uncompact] Facts of the conversation compaction {compaction_id} summarized "
        f"that its summary lost, given back (each cited {cited_from(where)}):"
    )


def _omitted(omitted: int, budget: int) -> str:
    return f"({omitted:,} more did not fit the {budget:,}-token budget.)"


def _compaction(session: Session, compaction_id: str | None) -> Entry:
    path = session.path_to()
    on_path = [e for e in path if e.type == "compaction"]
    if compaction_id is None:
        if not on_path:
            raise CompactionError(
                "no compaction on the current path: there is nothing to give back "
                "(`pinb compactions FILE` lists every compaction of the file)"
            )
        return on_path[-1]
    found = session[compaction_id]  # EntryNotFoundError: one line naming the id
    if found.type != "compaction":
        raise UsageError(f"entry {compaction_id} is a {found.type!r} entry, not a compaction")
    if all(e is not found for e in on_path):
        raise UsageError(
            f"compaction {compaction_id} is not on the current path (leaf "
            f"{session.leaf_id}): its loss would not reach the model; go to a leaf after it "
            "first (`pinb goto`), or name one on the path"
        )
    return found


def _plan(
    session: Session, compaction_id: str | None, kinds: Sequence[str], budget: int
) -> GivenBack:
    entry = _compaction(session, compaction_id)
    (split,) = compaction_splits(session, (entry,))
    summary = entry.raw.get("summary")
    summary = summary if isinstance(summary, str) else ""
    # Everything the next turn is sent besides this summary: kept messages, later turns,
    # later summaries and earlier give-backs (so giving back twice gives what is left).
    context = session.build_context()
    carried = [
        m
        for m, source in zip(context.messages, context.sources, strict=False)
        if source is not entry and not (isinstance(m, dict) and m.get("role") == "system")
    ]
    where = cite_name(session)
    head = _head(node_key(entry.id), where)
    frame = text_tokens(head + "\n" + _omitted(99_999, budget) + "\n") + 1
    lost = lost_facts(
        zip(split.span.summarized, split.summarized_messages, strict=True),
        summary,
        carried,
        tuple(kinds),
        max(0, budget - frame),
        where=where,
        cwd=session.cwd or None,
    )
    text = ""
    if lost.facts:
        lines = [head, *lost.lines]
        if lost.omitted:
            lines.append(_omitted(lost.omitted, budget))
        text = "\n".join(lines)
    path = session.path
    return GivenBack(
        compaction_id=node_key(entry.id),
        facts=lost.facts,
        tokens=text_tokens(text),
        budget=budget,
        omitted=lost.omitted,
        kinds=tuple(kinds),
        text=text,
        session_path=str(path) if path is not None else None,
        judged=lost.judged,
    )


def uncompact(
    session: Session,
    compaction_id: str | None = None,
    *,
    kinds: Sequence[str] = DEFAULT_GIVE_BACK_KINDS,
    budget: int = UNCOMPACT_BUDGET,
    dry_run: bool = False,
    writer: str = "pinb uncompact",
) -> GivenBack:
    """Give back, as one cited ``custom_message`` at the leaf, what a compaction lost.

    Parameters
    ----------
    session:
        The session; the message goes at its current leaf, inside its turn.
    compaction_id:
        A compaction on the current path (default: the latest on it).
    kinds:
        Kinds of fact (:data:`~pinb.core.compaction.lost.LOST_KINDS`; default: files,
        commands, errors, instructions).
    budget:
        The most the message may cost the context, chars/4 tokens (default
        :data:`UNCOMPACT_BUDGET`); lost facts beyond it are counted as omitted.
    dry_run:
        Say what would be given back, write nothing.
    writer:
        Who writes, for the turn lock's "busy" answer.

    Returns
    -------
    GivenBack
        With ``entry`` the appended ``custom_message`` (``None`` for a dry run, or when
        nothing is lost: then :attr:`GivenBack.nothing` says so).

    Raises
    ------
    CompactionError
        No compaction on the current path.
    UsageError
        ``compaction_id`` is not a compaction, or not on the current path.
    EntryNotFoundError
        No entry has that id.
    """
    if budget <= 0:
        raise UsageError(f"a budget of {budget} tokens can give nothing back; give a positive one")
    if dry_run:
        session.refresh()  # what others appended counts, as it would in the turn
        return _plan(session, compaction_id, kinds, budget)
    with session.turn(writer):  # what others appended is read before the facts are judged
        given = _plan(session, compaction_id, kinds, budget)
        if given.facts:
            given.entry = session.append_custom_message(
                UNCOMPACT_TYPE,
                given.text,
                display=True,
                details={
                    "compactionId": given.compaction_id,
                    "tokens": given.tokens,
                    "budget": given.budget,
                    "omitted": given.omitted,
                    "kinds": list(given.kinds),
                    "facts": [f.to_dict() for f in given.facts],
                },
            )
    return given


def given_back_costs(session: Session, compaction_id: str) -> list[tuple[str, int, int]]:
    """``(entry id, facts, tokens)`` of each give-back of ``compaction_id``, in file order:
    what each gave back and what it costs the context (chars/4 of its message)."""
    found = []
    for entry in given_back(session, compaction_id):
        facts = entry.raw["details"].get("facts")
        content = entry.raw.get("content")
        tokens = text_tokens(content) if isinstance(content, str) else 0
        found.append((node_key(entry.id), len(facts) if isinstance(facts, list) else 0, tokens))
    return found


def given_back_facts(session: Session, compaction_id: str) -> dict[tuple[str, str], str]:
    """``(fact's entry id, fact's text) -> give-back entry id``: which facts of
    ``compaction_id``'s span a give-back has since put back in the context (the first that
    did), read from the entries' ``details`` as :func:`uncompact` wrote them."""
    found: dict[tuple[str, str], str] = {}
    for entry in given_back(session, compaction_id):
        facts = entry.raw["details"].get("facts")
        for fact in facts if isinstance(facts, list) else ():
            if not isinstance(fact, dict):
                continue
            source, text = fact.get("entryId"), fact.get("text")
            if isinstance(source, str) and isinstance(text, str):
                found.setdefault((source, text), node_key(entry.id))
    return found


def given_back(session: Session, compaction_id: str) -> list[Entry]:
    """The give-back entries (:data:`UNCOMPACT_TYPE`) of ``compaction_id`` in the file, in order."""
    return [
        e
        for e in session.entries
        if e.type == "custom_message"
        and e.raw.get("customType") == UNCOMPACT_TYPE
        and isinstance(e.raw.get("details"), dict)
        and e.raw["details"].get("compactionId") == compaction_id
    ]
