"""What a compaction lost that a continuation needs: the one rule for keeping and giving back.

A compaction's summary is judged against the span it replaced, fact by fact
(:mod:`pinb.core.compaction.facts`, :mod:`pinb.core.compaction.matching`). The must-keep
facts it lost, and that the messages the model is still sent do not carry either, are what
pinb adds to a summary it writes (the "kept facts" section, :func:`kept_facts_section`) and
what ``pinb uncompact`` gives back (:mod:`pinb.core.compaction.uncompact`). Both call
:func:`lost_facts`, so the two never disagree about what was lost.

The rule, in order:

1. The facts of the span, of the kinds asked for (:data:`MUST_KEEP`: files read, written and
   edited; commands, failed ones first; errors; the user's instructions and constraints; the
   next step, which is the span's last final text).
2. Each is judged against the summary and against the messages still sent; a fact either
   keeps (verbatim or paraphrased, the retention rules) is not lost.
3. The lost ones are ranked by what a continuation needs (:data:`RANKS`): the user's
   constraints, then the next step, errors and failed commands, files written or edited,
   the user's requests, files read, other commands; within a rank the most recent first.
4. They are taken in that order while their lines fit the budget (the one chars/4
   measure, over the lines as written); a fact whose line does not fit is omitted, and a
   shorter one after it may still fit. The omitted are counted, never hidden.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..context.tokens import KEPT_FACTS_BUDGET, estimate_tokens
from ..describe import node_key
from ..format.entries import Entry
from .facts import FACT_KINDS, KIND_LABELS, Fact, FactCache, content_words, extract_facts
from .matching import TextIndex, judge

__all__ = [
    "DEFAULT_GIVE_BACK_KINDS",
    "GROUP_HEADINGS",
    "KEPT_FACTS_BUDGET",
    "KEPT_FACTS_HEADING",
    "LOST_KINDS",
    "MUST_KEEP",
    "RANKS",
    "LostFact",
    "LostFacts",
    "carried_text",
    "cite_name",
    "cited_from",
    "earlier_kept_facts",
    "fact_line",
    "fact_lines",
    "kept_facts_of",
    "kept_facts_section",
    "lost_facts",
    "parse_kinds",
    "read_fact_lines",
    "section_budget",
    "text_tokens",
    "without_kept_facts",
]

#: Every kind :func:`lost_facts` takes: the retention kinds, and ``next`` (the next step).
LOST_KINDS: Final = (*FACT_KINDS, "next")
#: What every summary pinb writes must keep (the kept-facts section's kinds).
MUST_KEEP: Final = ("instruction", "next", "error", "command", "file")
#: What ``pinb uncompact`` gives back unless told otherwise.
DEFAULT_GIVE_BACK_KINDS: Final = ("file", "command", "error", "instruction")
#: The heading of the section pinb adds to a summary: it says pinb wrote it, not Pi.
KEPT_FACTS_HEADING: Final = "## Kept facts (added by pinb, not Pi's summarizer)"
#: The rank of each group of lost facts (lower first), by what a continuation needs most.
#: Each group is written under its own heading (:data:`GROUP_HEADINGS`), in this order.
RANKS: Final = {
    "constraint": 0,  # the user's rules: breaking one is the worst failure after a compaction
    "next": 1,  # where the work stands, so the next turn continues it
    "error": 2,  # what failed, so it is not tried again blindly
    "failed command": 3,
    "changed file": 4,  # what the work changed
    "request": 5,  # what the user asked
    "read file": 6,
    "command": 7,
    "decision": 8,
    "identifier": 9,
    "number": 10,
}
#: The heading each group's facts are listed under (the label is said once per group, not
#: once per fact: on a long span that leaves room for a fifth more facts).
GROUP_HEADINGS: Final = {
    "constraint": "The user's constraints:",
    "next": "Next step:",
    "error": "Errors:",
    "failed command": "Failed commands:",
    "changed file": "Files written or edited:",
    "request": "The user's requests:",
    "read file": "Files read:",
    "command": "Commands run:",
    "decision": "Decisions:",
    "identifier": "Names:",
    "number": "Numbers:",
}
#: The text of one fact in a line is cut to this many characters (its citation stays whole):
#: long enough that a cut request still matches its fact by the overlap rule, short enough
#: that the budget holds the lost facts of a long span (measured on real Pi files).
LINE_TEXT_LIMIT: Final = 160

_KIND_NAMES: Final = {**KIND_LABELS, "next": "next"}


@dataclass(frozen=True)
class LostFact:
    """One fact a compaction lost, with its group and the line that gives it back.

    ``kind`` is the fact's kind (``"next"`` for the next step); ``group`` its group
    (:data:`RANKS`); ``cite`` is ``path:line#entry-id`` (the entry id alone for a session
    not on disk); ``line`` the list item written under the group's heading.
    """

    fact: Fact
    kind: str
    group: str
    cite: str
    line: str

    @property
    def rank(self) -> int:
        return RANKS[self.group]

    @property
    def body(self) -> str:
        """``group: text``, without the list mark and the short citation (one line)."""
        return f"{self.group}: " + self.line[2:].rsplit(" [", 1)[0]

    @property
    def tokens(self) -> int:
        """chars/4 of its line."""
        return text_tokens(self.line + "\n")

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", "text", "entryId", "line"}`` (the ``--json`` shape of one fact)."""
        return {
            "kind": self.kind,
            "text": self.fact.text,
            "entryId": self.fact.entry_id,
            "line": self.fact.line,
        }


def fact_lines(facts: Sequence[LostFact]) -> list[str]:
    """The facts as written: each group's heading, then its items (facts in rank order)."""
    lines: list[str] = []
    group = None
    for fact in facts:
        if fact.group != group:
            group = fact.group
            lines.append(GROUP_HEADINGS[group])
        lines.append(fact.line)
    return lines


@dataclass(frozen=True)
class LostFacts:
    """What :func:`lost_facts` found: the facts within the budget, and what was left out.

    Attributes
    ----------
    facts:
        The lost facts given, in rank order.
    budget:
        The budget in chars/4 tokens.
    omitted:
        Lost facts that did not fit the budget.
    judged:
        Facts of the kinds asked for that were judged (lost or not).
    """

    facts: tuple[LostFact, ...] = ()
    budget: int = KEPT_FACTS_BUDGET
    omitted: int = 0
    judged: int = 0
    kinds: tuple[str, ...] = field(default=MUST_KEEP)
    where: str | None = None

    def __bool__(self) -> bool:
        return bool(self.facts)

    def __len__(self) -> int:
        return len(self.facts)

    @property
    def tokens(self) -> int:
        """chars/4 of the facts' lines (what they cost wherever they are written)."""
        return text_tokens("".join(line + "\n" for line in self.lines))

    @property
    def lines(self) -> list[str]:
        """The lines written: each group's heading, then its facts."""
        return fact_lines(self.facts)


def cite_name(session: Any) -> str | None:
    """How a session's facts are cited: its file's name, or ``None`` while it is not on disk
    (then by entry id alone)."""
    path = getattr(session, "path", None)
    return path.name if path is not None and path.exists() else None


def text_tokens(text: str) -> int:
    """chars/4 of a text, as every message is counted (:func:`~pinb.core.context.tokens.estimate_tokens`)."""
    return estimate_tokens({"role": "user", "content": text}) if text else 0


def parse_kinds(text: str | Sequence[str] | None, default: Sequence[str]) -> tuple[str, ...]:
    """Kinds named by the user (``"files,errors"``, singular or plural) as :data:`LOST_KINDS`.

    Raises
    ------
    ValueError
        A name that is no kind (the message lists the kinds).
    """
    if text is None:
        return tuple(default)
    names = text.split(",") if isinstance(text, str) else list(text)
    plural = {v: k for k, v in _KIND_NAMES.items()}
    kinds: list[str] = []
    for raw in names:
        name = raw.strip().lower()
        if not name:
            continue
        kind = name if name in LOST_KINDS else plural.get(name)
        if kind is None:
            known = ", ".join(_KIND_NAMES[k] for k in LOST_KINDS)
            raise ValueError(f"{raw.strip()!r} is not a kind of fact; the kinds: {known}")
        if kind not in kinds:
            kinds.append(kind)
    return tuple(kinds) or tuple(default)


def carried_text(message: Any) -> str:
    """Everything of a message a later turn can read: text, tool-call arguments, results."""
    if not isinstance(message, dict):
        return ""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "toolCall" and isinstance(block.get("arguments"), dict):
                parts += [v for v in block["arguments"].values() if isinstance(v, str)]
    for key in ("command", "output", "summary", "errorMessage"):
        if isinstance(message.get(key), str):
            parts.append(message[key])
    return "\n".join(parts)


def _rank_name(fact: Fact, kind: str) -> str:
    if kind == "next":
        return "next"
    if kind == "instruction":
        return "constraint" if fact.detail == "constraint" else "request"
    if kind == "command":
        return "failed command" if fact.detail == "failed" else "command"
    if kind == "file":
        verbs = fact.detail.split(", ")
        return "changed file" if ("edited" in verbs or "written" in verbs) else "read file"
    return kind


def fact_line(fact: Fact, kind: str, cite: str) -> str:
    """One fact as an item under its group's heading: its text (code in backticks, on one
    line, cut at :data:`LINE_TEXT_LIMIT`) and its citation."""
    flat = " ".join(fact.text.split())  # one line each: a command may span many
    text = flat if len(flat) <= LINE_TEXT_LIMIT else flat[: LINE_TEXT_LIMIT - 1] + "…"
    if kind == "command" or kind == "file":
        text = f"`{text}`"
    return f"- {text} [{cite}]"


def _cite(fact: Fact, where: str | None) -> str:
    if not where or fact.line is None:  # not on disk yet: the entry id alone
        return fact.entry_id
    return f"{where}:{fact.line}#{fact.entry_id}"


def _short_cite(fact: Fact, where: str | None) -> str:
    """The citation as a line writes it: ``line#entry-id`` (the file is named once, above)."""
    if not where or fact.line is None:
        return f"#{fact.entry_id}"
    return f"{fact.line}#{fact.entry_id}"


def _chosen(facts: Sequence[Fact], kinds: Sequence[str]) -> list[tuple[Fact, str]]:
    """The facts of ``kinds``, each with the kind it is given as (``next`` for the next step)."""
    wanted = set(kinds)
    # A request made only of constraints says nothing the constraints do not: left out.
    said: dict[str, str] = {}
    for f in facts:
        if f.kind == "instruction" and f.detail == "constraint":
            said[f.entry_id] = said.get(f.entry_id, "") + " " + f.text
    chosen = [
        (f, f.kind)
        for f in facts
        if f.kind in wanted
        and not (
            f.detail == "request"
            and f.entry_id in said
            and set(content_words(f.text)) <= set(content_words(said[f.entry_id]))
        )
    ]
    if "next" in wanted:
        decisions = [f for f in facts if f.kind == "decision"]
        if decisions:
            last = decisions[-1]  # facts of a kind come in the order first seen
            chosen = [(f, k) for f, k in chosen if f is not last]
            chosen.append((last, "next"))
    return chosen


def lost_facts(
    span: Iterable[tuple[Entry, Sequence[Any]]],
    summary: str,
    kept: Sequence[Any] | TextIndex,
    kinds: Sequence[str] = MUST_KEEP,
    budget: int = KEPT_FACTS_BUDGET,
    *,
    where: str | None = None,
    cwd: str | None = None,
    cache: FactCache | None = None,
    facts: Sequence[Fact] | None = None,
    earlier: Sequence[Fact] = (),
) -> LostFacts:
    """The must-keep facts a summary lost and the kept messages do not carry, within a budget.

    Parameters
    ----------
    span:
        The replaced span as ``(entry, messages it sent)`` pairs in path order (the facts
        are read from them, unless ``facts`` gives them already read).
    summary:
        The summary text judged.
    kept:
        The messages the model is still sent beside the summary (or their index).
    kinds:
        Kinds of :data:`LOST_KINDS` to look at.
    budget:
        The most the facts' lines may take, in chars/4 tokens.
    where:
        How the session is cited (its file's name or path); ``None``: by entry id only.
    cwd:
        The session's folder (a file fact matches its relative path).
    cache:
        What each message says, kept for the next span.
    facts:
        The span's facts, when the caller has read them (:func:`extract_facts`).
    earlier:
        Facts of an earlier kept-facts section (:func:`earlier_kept_facts`): judged and
        ranked as the span's, after them within a rank.

    Returns
    -------
    LostFacts
    """
    items = [(e, list(m)) for e, m in span]
    order = {node_key(e.id): i for i, (e, _) in enumerate(items)}
    if facts is None:
        facts = extract_facts(items, cache=cache)
    chosen = [(f, k, 0) for f, k in _chosen(facts, kinds)]
    seen = {(f.kind, f.text.casefold()) for f, _, _ in chosen}
    chosen += [
        (f, f.kind, 1)
        for f in earlier
        if f.kind in kinds and (f.kind, f.text.casefold()) not in seen
    ]
    summary_index = TextIndex(summary)
    kept_index = (
        kept
        if isinstance(kept, TextIndex)
        else TextIndex("\n\n".join(carried_text(m) for m in kept))
    )
    lost: list[tuple[int, int, int, Fact, str]] = []
    for fact, kind, is_earlier in chosen:
        if judge(fact, summary_index, cwd=cwd).verdict != "lost":
            continue
        if judge(fact, kept_index, cwd=cwd).verdict != "lost":
            continue
        rank = RANKS[_rank_name(fact, kind)]
        # The most recent first: its place in the span, else its line in the file.
        at = order.get(fact.entry_id, fact.line or 0) if not is_earlier else (fact.line or 0)
        lost.append((rank, is_earlier, -at, fact, kind))
    lost.sort(key=lambda t: t[:3])
    given: list[LostFact] = []
    used = 0
    omitted = 0
    headed: set[str] = set()
    for _, _, _, fact, kind in lost:
        group = _rank_name(fact, kind)
        line = fact_line(fact, kind, _short_cite(fact, where))
        item = LostFact(fact, kind, group, _cite(fact, where), line)
        # A group's heading is paid for by its first fact.
        cost = item.tokens + (0 if group in headed else text_tokens(GROUP_HEADINGS[group] + "\n"))
        if used + cost > budget:
            omitted += 1
            continue
        headed.add(group)
        given.append(item)
        used += cost
    return LostFacts(tuple(given), budget, omitted, len(chosen), tuple(kinds), where)


# -- the kept-facts section of a summary ----------------------------------------------------


def cited_from(where: str | None) -> str:
    """How a section's lines cite, in words: ``[line#entry-id] of name.jsonl``."""
    return (
        f"[line#entry-id] of {where}" if where else "[#entry-id] (the session is not on disk yet)"
    )


def _section_head(where: str | None) -> list[str]:
    return [
        "",
        "",
        KEPT_FACTS_HEADING,
        "What the summary above lost of the conversation it replaced, each fact cited "
        f"{cited_from(where)}:",
    ]


def _omitted_line(omitted: int, budget: int) -> str:
    return f"({omitted:,} more did not fit the {budget:,}-token budget.)"


def section_budget(budget: int, where: str | None) -> int:
    """What of ``budget`` the facts' lines may take in a kept-facts section: the heading,
    its line and an omitted count are paid from it too (and one token for rounding)."""
    frame = "\n".join([*_section_head(where), _omitted_line(99_999, budget)]) + "\n"
    return max(0, budget - text_tokens(frame) - 1)


def kept_facts_section(lost: LostFacts, budget: int | None = None) -> str:
    """The section pinb appends to a summary it writes (``""`` when nothing was lost).

    It starts on a blank line with :data:`KEPT_FACTS_HEADING`, says what it is and how it
    cites in one line, and lists the facts; an omitted count closes it. ``budget``: the
    whole section's (default: the facts' own, :attr:`LostFacts.budget`).
    """
    if not lost.facts:
        return ""
    lines = [*_section_head(lost.where), *lost.lines]
    if lost.omitted:
        lines.append(_omitted_line(lost.omitted, budget or lost.budget))
    return "\n".join(lines)


def kept_facts_of(summary: str) -> tuple[int, int]:
    """``(facts, tokens)`` of the kept-facts section pinb added to ``summary``; ``(0, 0)``
    when it has none (the summary is its summarizer's text as written)."""
    at = summary.find("\n\n" + KEPT_FACTS_HEADING)
    if at < 0:
        return 0, 0
    return len(earlier_kept_facts(summary)), text_tokens(summary[at:])


def without_kept_facts(summary: str) -> str:
    """``summary`` without a kept-facts section pinb added (Pi's text, as Pi wrote it)."""
    at = summary.find("\n\n" + KEPT_FACTS_HEADING)
    return summary if at < 0 else summary[:at]


def earlier_kept_facts(summary: str | None) -> list[Fact]:
    """The facts of the kept-facts section of ``summary``, read back from its lines.

    A later compaction is given the previous summary without its section (so a model never
    rewrites it); its facts come back here, are judged against the new summary like the new
    span's, and share the one budget, so the section never grows past it.
    """
    if not summary:
        return []
    at = summary.find("\n\n" + KEPT_FACTS_HEADING)
    if at < 0:
        return []
    return read_fact_lines(summary[at:].splitlines())


_GROUPS: Final = {heading: group for group, heading in GROUP_HEADINGS.items()}
#: ``(kind, detail)`` of each group's facts, as read back.
_GROUP_FACTS: Final = {
    "constraint": ("instruction", "constraint"),
    "next": ("next", "final text"),
    "error": ("error", ""),
    "failed command": ("command", "failed"),
    "changed file": ("file", "edited"),
    "request": ("instruction", "request"),
    "read file": ("file", "read"),
    "command": ("command", "ok"),
    "decision": ("decision", "final text"),
    "identifier": ("identifier", ""),
    "number": ("number", ""),
}


def read_fact_lines(lines: Iterable[str]) -> list[Fact]:
    """The facts of lines :func:`fact_lines` wrote (a group's heading, then its items)."""
    facts: list[Fact] = []
    group = None
    for raw in lines:
        if raw in _GROUPS:
            group = _GROUPS[raw]
            continue
        if group is None or not raw.startswith("- ") or not raw.endswith("]") or " [" not in raw:
            continue
        text, cite = raw[2:-1].rsplit(" [", 1)
        kind, detail = _GROUP_FACTS[group]
        if kind in ("file", "command") and len(text) > 1 and text[0] == text[-1] == "`":
            text = text[1:-1]
        where, _, entry_id = cite.rpartition("#")
        line = int(where) if where.isdigit() else None
        facts.append(Fact(kind, text, entry_id, line, detail))
    return facts
