"""How what a compaction lost and pinb kept or gave back shows: text and sanitizer-safe HTML.

One home for the lines every front end prints (``pinb uncompact``, ``%pi uncompact``, the
chat's ``/uncompact`` and ``/kept``, ``pinb compactions``, ``CompactionView``, the explorer's
panel), so they never say it two ways.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ...core.compaction.facts import KIND_LABELS, Fact
from ...core.compaction.lost import KEPT_FACTS_HEADING, earlier_kept_facts, kept_facts_of
from ...core.compaction.uncompact import GivenBack, given_back_costs, given_back_facts
from ...core.describe import one_line, plural
from ...render.html import div, escape, muted, wrap

__all__ = [
    "PinbAdditions",
    "given_back_headline",
    "given_back_html",
    "given_back_text",
    "kept_facts_brief",
    "pinb_added",
    "pinb_additions",
    "pinb_additions_text",
]

#: How one fact of each kind of a kept-facts section is named (``next``: the next step).
_KIND_NAMES: Final = {**{kind: kind for kind in KIND_LABELS}, "next": "next step"}


def given_back_headline(given: GivenBack) -> str:
    """One line: what was (or would be) given back, at what cost, and what was left out."""
    if not given.facts:
        return given.nothing
    verb = "gave back" if given.entry is not None else "would give back"
    where = (
        f" in entry {given.entry.id}" if given.entry is not None else " (dry run: nothing written)"
    )
    omitted = f", {given.omitted:,} more left out (budget)" if given.omitted else ""
    return (
        f"{verb} {plural(len(given.facts), 'fact')} compaction {given.compaction_id} lost"
        f"{where}: {given.tokens:,} of {given.budget:,} tokens{omitted}"
    )


def given_back_text(given: GivenBack) -> str:
    """The headline, then one line per fact as the message gives it, with its citation."""
    lines = [given_back_headline(given)]
    for fact in given.facts:
        lines.append(f"  {fact.body}  {fact.cite}")
    return "\n".join(lines)


def given_back_html(given: GivenBack) -> str:
    items = "".join(
        f"<li>{escape(one_line(f.body, 300))} {muted(escape(f.cite))}</li>" for f in given.facts
    )
    body = f"<ul>{items}</ul>" if items else ""
    return wrap(div(f"<div><b>{escape(given_back_headline(given))}</b></div>{body}"))


# -- what a compaction entry shows: pinb's kept facts and its give-backs -------------------


def kept_facts_brief(summary: str) -> str:
    """``"pinb kept 12 facts the summary lost (5 files, 3 commands, …; 340 tokens, its own
    section)"``, or ``""`` without a section."""
    facts, tokens = kept_facts_of(summary)
    if not facts:
        return ""
    kinds = Counter(f.kind for f in earlier_kept_facts(summary))
    named = ", ".join(plural(n, _KIND_NAMES.get(kind, kind)) for kind, n in kinds.most_common())
    return (
        f"pinb kept {plural(facts, 'fact')} the summary lost ({named}; {tokens:,} tokens, its "
        "own section)"
    )


def pinb_additions(session: Any, entry: Any) -> dict[str, Any]:
    """``{"keptFacts": {"facts", "tokens"}, "givenBack": [{"entryId", "facts", "tokens"}]}``:
    what pinb added to a compaction (its section) and gave back after it (``pinb
    compactions --json`` adds it to each compaction as ``"pinb"``)."""
    summary = entry.raw.get("summary")
    facts, tokens = kept_facts_of(summary if isinstance(summary, str) else "")
    return {
        "keptFacts": {"facts": facts, "tokens": tokens},
        "givenBack": [
            {"entryId": i, "facts": n, "tokens": t}
            for i, n, t in given_back_costs(session, str(entry.id))
        ],
    }


def pinb_additions_text(session: Any, entry: Any) -> list[str]:
    """What pinb added to a compaction: its kept facts and each give-back, one line each."""
    summary = entry.raw.get("summary")
    lines = []
    brief = kept_facts_brief(summary if isinstance(summary, str) else "")
    if brief:
        lines.append(brief)
    for entry_id, facts, tokens in given_back_costs(session, str(entry.id)):
        lines.append(
            f"given back in {entry_id}: {plural(facts, 'fact')} ({tokens:,} tokens, `pinb uncompact`)"
        )
    return lines


@dataclass(frozen=True)
class PinbAdditions:
    """What pinb added to one compaction, as every view of it marks its facts.

    Attributes
    ----------
    lines:
        :func:`pinb_additions_text`: the kept-facts section and each give-back, one line each.
    section:
        The facts of the kept-facts section, read back from the summary.
    given:
        ``(fact's entry id, fact's text) -> give-back entry id``
        (:func:`~pinb.core.compaction.uncompact.given_back_facts`).
    """

    lines: tuple[str, ...] = ()
    section: tuple[Fact, ...] = ()
    given: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def mark(self, fact: Fact, section: str = "") -> str:
        """What pinb did for one fact of the span, in words (``""``: nothing).

        ``section`` is the heading above the summary's passage that matched the fact: a
        fact matched under pinb's heading was kept by pinb's section, not by the
        summarizer. A fact the judge calls lost may still sit in the section (its line is
        cut at 160 characters) or have been given back since.
        """
        given = self.given.get((fact.entry_id, fact.text))
        if given is not None:
            return f"given back in {given}"
        if section == KEPT_FACTS_HEADING or self._in_section(fact):
            return "kept by pinb's section"
        return ""

    def _in_section(self, fact: Fact) -> bool:
        flat = " ".join(fact.text.split())
        for kept in self.section:
            if kept.entry_id != fact.entry_id:
                continue
            text = kept.text.removesuffix("…")
            if text and flat.startswith(text):
                return True
        return False


def pinb_added(session: Any, entry: Any) -> PinbAdditions:
    """:class:`PinbAdditions` of a compaction entry of ``session`` (every view's one reading)."""
    summary = entry.raw.get("summary")
    text = summary if isinstance(summary, str) else ""
    return PinbAdditions(
        lines=tuple(pinb_additions_text(session, entry)),
        section=tuple(earlier_kept_facts(text)),
        given=given_back_facts(session, str(entry.id)),
    )
