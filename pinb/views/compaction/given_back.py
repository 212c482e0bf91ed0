"""How what a compaction lost and pinb kept or gave back shows: text and sanitizer-safe HTML.

One home for the lines every front end prints (``pinb uncompact``, ``%pi uncompact``, the
chat's ``/uncompact`` and ``/kept``, ``pinb compactions``, ``CompactionView``, the explorer's
panel), so they never say it two ways.
"""

from __future__ import annotations

from typing import Any

from ...core.compaction.lost import kept_facts_of
from ...core.compaction.uncompact import GivenBack, given_back_costs
from ...core.describe import one_line, plural
from ...render.html import div, escape, muted, wrap

__all__ = [
    "given_back_headline",
    "given_back_html",
    "given_back_text",
    "kept_facts_brief",
    "pinb_additions",
    "pinb_additions_text",
]


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
    """``"pinb kept 12 facts the summary lost (340 tokens)"``, or ``""`` without a section."""
    facts, tokens = kept_facts_of(summary)
    if not facts:
        return ""
    return (
        f"pinb kept {plural(facts, 'fact')} the summary lost ({tokens:,} tokens, its own section)"
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
