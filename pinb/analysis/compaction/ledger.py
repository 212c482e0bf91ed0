"""The compaction ledger: what every compaction took out, kept and left behind, and how big.

For each ``compaction`` entry (every branch of every session given) the ledger puts Pi's
recorded ``tokensBefore`` beside figures pinb recomputes with the accounting every view
uses (:func:`pinb.core.context.accounting.context_usage`):

- ``before_estimate`` / ``after_estimate``: the chars/4 estimate (``estimated_tokens``) of
  the context built with the compaction's parent as the leaf, and with the compaction
  itself as the leaf. Right after a compaction no reply has reported usage for the new
  context, so chars/4 is the only measure of it; the same measure is used before, so the
  two compare.
- ``next_request_tokens``: the prompt the first reply after the compaction on its branch
  was really sent, ``input + cacheRead + cacheWrite`` of that reply's usage (the output is
  not part of the prompt, unlike Pi's ``calculateContextTokens``). It includes the system
  prompt and tool definitions, which the session does not store, and the new prompt;
  ``next_request_estimate`` is chars/4 of the context sent with it, for comparison.
- ``summary_tokens`` / ``checkpoint_tokens``: what the compaction entry itself sends right
  after it, its summary and (Pi 1.x) its share of the system prompt it replays, by the
  core's one rule (:func:`pinb.core.compaction.span.compaction_cost`); their sum is the
  size the tree and the context views show for the compaction's row.

What a compaction summarized is read from those two contexts: the entries that left the
context (the cut Pi recorded with ``firstKeptEntryId``, from the previous compaction's
kept point on). That is the set the core's planner (:func:`pinb.core.prepare_compaction`)
hands the summarizer, which the tests check against :func:`pinb.core.compact`.

What its summary kept of that span comes from the one retention report
(:func:`pinb.analysis.retention.report.session_retention`, by compaction id): ``score``, ``facts``
(of the span), ``facts_kept`` (by the summary), ``facts_per_1k`` (kept per 1,000 summary
tokens) and ``recall_<kind>`` (NaN for a kind the span has no fact of). What pinb added
is its own columns: ``kept_facts`` / ``kept_facts_tokens`` (the cited section pinb wrote into
the summary, part of ``summary_tokens``) and ``given_back`` / ``given_back_tokens`` /
``given_back_entries`` (``pinb uncompact`` messages for the compaction, in the file).

This module also gives :func:`usage_calibration` (chars/4 against reported usage, from
:mod:`pinb.analysis.compaction.calibration`) and :func:`what_if` (other settings replayed with the
core's planner, from :mod:`pinb.analysis.compaction.whatif`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.compaction.facts import FACT_KINDS, FactCache
from ...core.compaction.lost import kept_facts_of
from ...core.compaction.masking import MaskingEvent, masking_events
from ...core.compaction.plan import find_turn_start
from ...core.compaction.span import CompactionSplit, compaction_cost, compaction_splits
from ...core.compaction.uncompact import given_back_costs
from ...core.context.accounting import context_usage, estimated_by_role
from ...core.context.build import SessionContext
from ...core.context.tokens import estimate_tokens
from ...core.format.entries import Entry
from ...core.format.target import Pi
from ...core.gc import gc_paused
from ...core.js.wire import js_truthy
from ...core.session import Session
from ...display import Displayable
from ...render.tree.graph import node_key
from ..frames import message_text
from ..retention.report import RetentionReport, split_retention
from ..sources import SessionSources, Skipped, iter_sessions
from .calibration import (
    Calibration,
    CalibrationPoint,
    CalibrationRow,
    prompt_tokens_of_usage,
    reported_prompt,
    usage_calibration,
)
from .whatif import WhatIf, WhatIfRow, what_if

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LEDGER_COLUMNS",
    "BlockStats",
    "Calibration",
    "CalibrationPoint",
    "CalibrationRow",
    "CompactionLedger",
    "CompactionRecord",
    "Skipped",
    "WhatIf",
    "WhatIfRow",
    "compaction_ledger",
    "compaction_record",
    "prompt_tokens_of_usage",
    "thinking_stats",
    "usage_calibration",
    "what_if",
]


#: Columns of :meth:`CompactionLedger.to_frame`, in order.
LEDGER_COLUMNS: tuple[str, ...] = (
    "session_id", "session_path", "compaction_id", "parent_id", "timestamp", "on_path",
    "first_kept_entry_id", "first_kept_found", "previous_compaction_id", "split_turn",
    "from_hook", "tokens_before", "before_tokens", "before_measure", "before_estimate",
    "after_estimate", "saved_estimate", "next_request_id", "next_request_tokens",
    "next_request_estimate", "summary_chars", "summary_tokens", "checkpoint_tokens", "read_files",
    "modified_files", "summarized_entries", "summarized_messages", "summarized_user",
    "summarized_assistant", "summarized_toolResult", "summarized_tokens", "tool_results",
    "tool_result_chars", "thinking_blocks", "thinking_chars", "thinking_largest",
    "thinking_largest_id", "kept_thinking_blocks", "kept_thinking_chars",
    "kept_thinking_largest", "kept_thinking_largest_id", "lost_entries", "facts", "facts_kept",
    "score", "facts_per_1k", *(f"recall_{kind}" for kind in FACT_KINDS),
    "kept_facts", "kept_facts_tokens", "given_back", "given_back_tokens", "given_back_entries",
)  # fmt: skip


@dataclass(frozen=True)
class BlockStats:
    """Thinking blocks of some messages: how many, their chars, the largest and where."""

    blocks: int = 0
    chars: int = 0
    largest: int = 0
    largest_id: str | None = None


def thinking_stats(messages: Iterable[tuple[Any, Entry]]) -> BlockStats:
    """:class:`BlockStats` of the thinking blocks in ``(message, source entry)`` pairs."""
    blocks = chars = largest = 0
    largest_id: str | None = None
    for message, entry in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict) or block.get("type") != "thinking":
                continue
            text = block.get("thinking")
            size = len(text) if isinstance(text, str) else 0
            blocks += 1
            chars += size
            if size > largest:
                largest, largest_id = size, node_key(entry.id)
    return BlockStats(blocks, chars, largest, largest_id)


@dataclass(frozen=True)
class CompactionRecord:
    """One compaction: recorded and recomputed sizes, what it summarized and kept.

    Token figures are described in the module docstring. ``summarized_*`` count what
    went into the summary (system messages aside, the previous summary aside; the core's
    :func:`~pinb.core.compaction.span.compaction_span`), ``summarized_tokens`` is their
    chars/4. ``lost_entries`` counts entries that left the
    context without reaching the summarizer (Pi v0.58.3 only: it summarizes from the
    previous compaction on, not from its kept entries). ``kept_thinking`` describes the
    thinking blocks that stayed verbatim. ``facts`` … ``recall``: what its summary kept of
    the span (:class:`~pinb.analysis.retention.report.RetentionReport`; ``recall`` holds the kinds
    with facts).
    """

    session_id: str
    session_path: str | None
    compaction_id: str
    parent_id: str | None
    timestamp: str | None
    on_path: bool
    first_kept_entry_id: str | None
    first_kept_found: bool
    previous_compaction_id: str | None
    split_turn: bool
    from_hook: bool
    tokens_before: int | None
    before_tokens: int
    before_measure: str
    before_estimate: int
    after_estimate: int
    next_request_id: str | None
    next_request_tokens: int | None
    next_request_estimate: int | None
    summary_chars: int
    summary_tokens: int
    read_files: int
    modified_files: int
    summarized_ids: tuple[str, ...]
    summarized_entries: int
    summarized_messages: int
    summarized_by_role: dict[str, int]
    summarized_tokens: int
    tool_results: int
    tool_result_chars: int
    summarized_thinking: BlockStats
    kept_thinking: BlockStats
    lost_entries: int = 0
    checkpoint_tokens: int = 0
    facts: int = 0
    facts_kept: int = 0
    score: float | None = None
    facts_per_1k: float | None = None
    recall: dict[str, float] = field(default_factory=dict)
    kept_facts: int = 0
    kept_facts_tokens: int = 0
    given_back: int = 0
    given_back_tokens: int = 0
    given_back_entries: int = 0

    @property
    def saved_estimate(self) -> int:
        """chars/4 removed from the context (``before_estimate - after_estimate``)."""
        return self.before_estimate - self.after_estimate

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def flat(self) -> dict[str, Any]:
        """One flat row for a frame: role counts and thinking stats get columns of their own."""
        row = {k: v for k, v in self.to_dict().items() if not isinstance(v, dict | tuple)}
        for role in ("user", "assistant", "toolResult"):
            row[f"summarized_{role}"] = self.summarized_by_role.get(role, 0)
        blocks = (("thinking", self.summarized_thinking), ("kept_thinking", self.kept_thinking))
        for prefix, stats in blocks:
            row[f"{prefix}_blocks"] = stats.blocks
            row[f"{prefix}_chars"] = stats.chars
            row[f"{prefix}_largest"] = stats.largest
            row[f"{prefix}_largest_id"] = stats.largest_id
        row["saved_estimate"] = self.saved_estimate
        for kind in FACT_KINDS:
            row[f"recall_{kind}"] = self.recall.get(kind, math.nan)
        return row


def _str(value: Any) -> str | None:
    return node_key(value) if value is not None and js_truthy(value) else None


def _context(session: Session, entry_id: Any) -> SessionContext:
    """The context at ``entry_id``, empty for an absent or unknown id (never the last entry)."""
    if entry_id is None or not js_truthy(entry_id) or entry_id not in session:
        return SessionContext(pi=session.pi)
    return session.build_context(entry_id)


def _next_reply(session: Session, compaction: Entry, active: Sequence[Entry]) -> Entry | None:
    """The first reply with usage after ``compaction``: along the active path if it is on
    it, else down the most recently written child each time; ``None`` past another
    compaction."""
    at = next((i for i, e in enumerate(active) if e is compaction), -1)
    following: Iterator[Entry] = (
        iter(active[at + 1 :]) if at >= 0 else _latest_line(session, compaction)
    )
    for entry in following:
        if entry.type == "compaction":
            return None
        if reported_prompt(entry) > 0:
            return entry
    return None


def _latest_line(session: Session, start: Entry) -> Iterator[Entry]:
    """The entries below ``start``, following its most recently written child each time."""
    seen = {id(start)}
    current = start
    while True:
        children = [c for c in session.children(current.id) if not c.is_navigation]
        if not children or id(children[-1]) in seen:
            return
        current = children[-1]
        seen.add(id(current))
        yield current


def _estimate(context: SessionContext) -> int:
    """``context_usage(context).estimated_tokens``, without Pi's usage-based figure."""
    return sum(estimated_by_role(context).values())


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"


def _split_turn(selected: Sequence[Entry], first_kept: Entry | None, pi: Pi) -> bool:
    """Whether the kept part starts inside a turn (the core's turn-start rule)."""
    position = next((i for i, e in enumerate(selected) if e is first_kept), -1)
    if position < 0:
        return False
    start = 1 if selected and selected[0].type == "compaction" else 0
    turn_start = find_turn_start(selected, position, start, pi=pi)
    return turn_start not in (-1, position)


def compaction_record(
    session: Session,
    entry: Entry,
    active: Sequence[Entry] | None = None,
    retention: RetentionReport | None = None,
    split: CompactionSplit | None = None,
) -> CompactionRecord:
    """The ledger row of one ``compaction`` entry (``active``: the session's active path;
    ``split``: the entry read back, :func:`~pinb.core.compaction.span.compaction_splits`;
    ``retention``: its retention report; each read when not given)."""
    if active is None:
        active = _active(session)
    if split is None:
        (split,) = compaction_splits(session, (entry,))
    if retention is None:
        retention = split_retention(session, split)
    raw = entry.raw
    pi = session.pi
    before = split.before
    after = split.after
    pairs = zip(after.messages, after.sources, strict=False)
    kept_messages = [(m, s) for m, s in pairs if s is not entry]
    previous = before.compaction
    summarized: list[tuple[Any, Entry]] = []
    summarized_ids: list[str] = []
    span = split.span  # the core's one count of what it summarized
    chosen = {id(e) for e in span.summarized}
    lost = len(span.lost)
    for projected in before.entries:
        source = projected.entry
        if id(source) not in chosen:
            continue
        summarized_ids.append(node_key(source.id))
        summarized.extend((m, source) for m in projected.messages if not _is_system(m))
    roles: Counter[str] = Counter()
    tool_chars = 0
    for message, _ in summarized:
        role = message.get("role") if isinstance(message, dict) else None
        roles[role if isinstance(role, str) else "?"] += 1
        if role == "toolResult":
            tool_chars += len(message_text(message))
    first_kept_id = raw.get("firstKeptEntryId")
    first_kept = next((e for e in after.selected[1:] if e.raw.get("id") == first_kept_id), None)
    summary = raw.get("summary")
    summary = summary if isinstance(summary, str) else ""
    details = raw.get("details")
    details = details if isinstance(details, dict) else {}
    usage_before = context_usage(before)
    reply = _next_reply(session, entry, active)
    cost = compaction_cost(session, entry, after)  # the figure the tree and the context show
    return CompactionRecord(
        session_id=session.id,
        session_path=str(session.path) if session.path is not None else None,
        compaction_id=node_key(entry.id),
        parent_id=_str(raw.get("parentId")),
        timestamp=raw["timestamp"] if isinstance(raw.get("timestamp"), str) else None,
        on_path=any(e is entry for e in active),
        first_kept_entry_id=_str(first_kept_id),
        first_kept_found=first_kept is not None or first_kept_id == entry.id,
        previous_compaction_id=_str(previous.id) if previous is not None else None,
        split_turn=_split_turn(before.selected, first_kept, pi),
        from_hook=js_truthy(raw.get("fromHook")),
        tokens_before=_int_or_none(raw.get("tokensBefore")),
        before_tokens=usage_before.tokens,
        before_measure=usage_before.measure,
        before_estimate=usage_before.estimated_tokens,
        after_estimate=_estimate(after),
        next_request_id=_str(reply.id) if reply is not None else None,
        next_request_tokens=reported_prompt(reply) if reply is not None else None,
        next_request_estimate=(
            _estimate(_context(session, reply.parent_id)) if reply is not None else None
        ),
        summary_chars=len(summary),
        summary_tokens=cost.summary,
        checkpoint_tokens=cost.checkpoint,
        read_files=_count(details.get("readFiles")),
        modified_files=_count(details.get("modifiedFiles")),
        summarized_ids=tuple(summarized_ids),
        summarized_entries=len(summarized_ids),
        summarized_messages=len(summarized),
        summarized_by_role=dict(roles),
        summarized_tokens=sum(estimate_tokens(m, pi=pi) for m, _ in summarized),
        tool_results=roles.get("toolResult", 0),
        tool_result_chars=tool_chars,
        summarized_thinking=thinking_stats(summarized),
        kept_thinking=thinking_stats(kept_messages),
        lost_entries=lost,
        facts=len(retention.verdicts),
        facts_kept=retention.kept_count,
        score=retention.score,
        facts_per_1k=retention.facts_per_1k,
        recall=retention.recall,
        **_pinb_additions(session, entry, summary),
    )


def _pinb_additions(session: Session, entry: Entry, summary: str) -> dict[str, int]:
    """What pinb added to a compaction: its kept-facts section (facts, chars/4 tokens, part
    of ``summary_tokens``) and its give-backs (facts, tokens, entries), from the file."""
    kept, kept_tokens = kept_facts_of(summary)
    given = given_back_costs(session, str(entry.id))
    return {
        "kept_facts": kept,
        "kept_facts_tokens": kept_tokens,
        "given_back": sum(n for _, n, _ in given),
        "given_back_tokens": sum(t for _, _, t in given),
        "given_back_entries": len(given),
    }


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def _int_or_none(value: Any) -> int | None:
    """A recorded number as an int; ``None`` for anything else (text, ``true``, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value)


# -- many sessions ------------------------------------------------------------------------------


def _active(session: Session) -> list[Entry]:
    leaf = session.leaf_id
    return session.path_to(leaf) if leaf is not None else []


@dataclass
class CompactionLedger(Displayable):
    """Every compaction of the sessions given, one :class:`CompactionRecord` each.

    ``sessions`` counts the sessions read; ``skipped`` lists files that could not be read.
    """

    records: list[CompactionRecord] = field(default_factory=list)
    sessions: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    #: Maskings (pinb's mask-first compactions), each one summary request not made.
    maskings: list[MaskingEvent] = field(default_factory=list)

    @property
    def summary_calls_avoided(self) -> int:
        """Summary requests the maskings took the place of."""
        return sum(m.summary_calls_avoided for m in self.maskings)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[CompactionRecord]:
        return iter(self.records)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "records": [r.to_dict() for r in self.records],
            "skipped": [asdict(s) for s in self.skipped],
            "maskings": [asdict(m) for m in self.maskings],
            "summaryCallsAvoided": self.summary_calls_avoided,
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per compaction (:meth:`CompactionRecord.flat` columns)."""
        import pandas as pd

        return pd.DataFrame([r.flat() for r in self.records], columns=list(LEDGER_COLUMNS))

    def __repr__(self) -> str:
        return (
            f"<CompactionLedger {len(self.records)} compactions in {self.sessions} sessions"
            f"{f', {len(self.skipped)} skipped' if self.skipped else ''}>"
        )


def compaction_ledger(source: SessionSources) -> CompactionLedger:
    """The compaction ledger of one session or many.

    Parameters
    ----------
    source:
        A :class:`~pinb.core.Session`, a session file, a folder (searched recursively),
        a glob, or an iterable of these (see :func:`~pinb.analysis.frames.session_paths`).

    Returns
    -------
    CompactionLedger
        A record per compaction entry, every branch, in file order; ``on_path`` marks the
        ones on each session's active path.

    Examples
    --------
    >>> ledger = compaction_ledger("~/.pi/agent/sessions")  # doctest: +SKIP
    >>> ledger.to_frame()[["tokens_before", "after_estimate", "next_request_tokens"]]  # doctest: +SKIP
    """
    ledger = CompactionLedger()
    for session in iter_sessions(source, ledger.skipped):
        ledger.sessions += 1
        ledger.maskings.extend(masking_events(session))
        compactions = [e for e in session.entries if e.type == "compaction"]
        if not compactions:
            continue
        active = _active(session)
        cache = FactCache()  # Pi 1.6 summarizes the previous kept range again: read it once
        with gc_paused():  # many small objects, no garbage cycles
            for split in compaction_splits(session, compactions):
                retention = split_retention(session, split, cache)
                cache.next_span()  # later spans share messages with this one, not older ones
                record = compaction_record(session, split.entry, active, retention, split)
                ledger.records.append(record)
    return ledger
