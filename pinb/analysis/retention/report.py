"""What a compaction kept: every fact of the span it replaced, scored against its summary.

The span is the core's one count (:func:`pinb.core.compaction.span.split_at_cut`, read back
for every compaction of a session by :func:`~pinb.core.compaction.span.compaction_splits`):
the entries from the previous compaction's kept start (or the root) to
``firstKeptEntryId``, a split turn's prefix included, with the messages the summarizer was
given. Its facts
(:mod:`pinb.core.compaction.facts`) are each judged against the summary and, separately, against
the messages the compaction kept (:mod:`pinb.core.compaction.matching`).

Scores:

- ``recall[kind]``: the share of a kind's facts the summary keeps (verbatim or
  paraphrased); only kinds with facts have one.
- ``score``: the weighted mean of those recalls with :data:`WEIGHTS`, the weights of
  the kinds present scaled to sum to 1 (``None`` when the span has no fact).
- ``facts_per_1k``: facts the summary keeps per 1,000 summary tokens (chars/4).

Token figures are the project's one measure: chars/4 of the context before (at the
compaction's parent) and after (at the compaction), :func:`pinb.core.context.accounting.
estimated_by_role`, as :class:`~pinb.views.CompactionView` and the ledger show them;
``tokens_before`` is Pi's recorded figure, as recorded.

What this cannot see: meaning that no string carries. A summary that says "the parser
bug is fixed" keeps a decision whose words differ ("Changed the tokenizer to accept empty
input") only if enough of the words are shared; a verdict of ``paraphrased`` says that
the words are there, not that the sense survived. The model probes
(:mod:`pinb.analysis.compaction.probes`) ask about meaning, with a model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ...core.compaction.facts import FACT_KINDS, KIND_LABELS, Fact, FactCache, extract_facts
from ...core.compaction.lost import carried_text
from ...core.compaction.matching import RULES, Match, TextIndex, judge
from ...core.compaction.reports import CompactionReport
from ...core.compaction.span import CompactionSplit, compaction_splits, split_at_cut
from ...core.compaction.words import forget_fact_words
from ...core.context.build import UNSET, SessionContext
from ...core.context.tokens import estimate_tokens
from ...core.describe import node_key
from ...core.format.entries import Entry, transient_decoding
from ...core.gc import gc_paused
from ...core.session import Session
from ...display import Displayable
from ...errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "KIND_LABELS",
    "WEIGHTS",
    "FactVerdict",
    "RetentionReport",
    "carried_text",
    "iter_session_retention",
    "plan_retention",
    "retention_of_text",
    "retention_report",
    "session_retention",
    "span_messages",
    "split_retention",
]

#: The weight of each kind in :attr:`RetentionReport.score` (scaled over the kinds present).
#: What a continuation cannot do without weighs most: what was decided and asked, and
#: which files it was about; then what failed, what was run, names, numbers.
WEIGHTS: Final = {
    "decision": 0.20,
    "instruction": 0.20,
    "file": 0.20,
    "error": 0.15,
    "command": 0.10,
    "identifier": 0.10,
    "number": 0.05,
}
_KEPT: Final = ("verbatim", "paraphrased")


@dataclass(frozen=True)
class FactVerdict:
    """One fact, whether the summary keeps it, and whether the kept messages carry it.

    ``summary`` is the :class:`~pinb.core.compaction.matching.Match` against the summary (its
    ``verdict``, ``evidence``, ``section``, ``rule``); ``kept_messages`` whether the
    messages kept after the cut still carry the fact (by the same rules).
    """

    fact: Fact
    summary: Match
    kept_messages: bool

    @property
    def verdict(self) -> str:
        """``"verbatim"``, ``"paraphrased"`` or ``"lost"``."""
        return self.summary.verdict

    @property
    def kept(self) -> bool:
        """The summary keeps the fact (verbatim or paraphrased)."""
        return self.summary.verdict in _KEPT


@dataclass
class RetentionReport(Displayable):
    """What one compaction (recorded, planned or replayed) kept of the span it replaced.

    Attributes
    ----------
    compaction_id:
        The compaction entry, or ``None`` for a plan or a what-if.
    kind:
        ``"recorded"`` (an entry of the file), ``"plan"`` or a strategy's name.
    first_kept_entry_id:
        Where the kept part starts.
    tokens_before:
        Pi's recorded ``tokensBefore`` (the planner's, for a plan); ``None`` if not recorded.
    estimated_before / estimated_after:
        chars/4 of the context before and after (one measure on both sides).
    summary_tokens:
        chars/4 of the summary message.
    summarized_entries:
        Entries the summary replaced (the core's count).
    summary:
        The summary text judged.
    verdicts:
        One per fact, in :data:`~pinb.core.compaction.facts.FACT_KINDS` order.
    session_id / session_path / cwd:
        The session, its file and folder (citations are ``path:line#entry-id``).
    summarizer:
        Who wrote the summary, when known (``"offline-extractive"``, a model id, …).
    note:
        What to know about this report in words (``""``: nothing).
    """

    compaction_id: str | None
    kind: str
    first_kept_entry_id: str | None
    tokens_before: int | None
    estimated_before: int
    estimated_after: int
    summary_tokens: int
    summarized_entries: int
    summary: str
    verdicts: list[FactVerdict] = field(default_factory=list)
    session_id: str = ""
    session_path: str | None = None
    cwd: str | None = None
    summarizer: str = ""
    note: str = ""

    def __iter__(self) -> Iterator[FactVerdict]:
        return iter(self.verdicts)

    def __len__(self) -> int:
        return len(self.verdicts)

    @property
    def facts(self) -> list[Fact]:
        return [v.fact for v in self.verdicts]

    def of_kind(self, kind: str) -> list[FactVerdict]:
        return [v for v in self.verdicts if v.fact.kind == kind]

    @property
    def recall(self) -> dict[str, float]:
        """Share of each kind's facts the summary keeps (kinds with facts only)."""
        result: dict[str, float] = {}
        for kind in FACT_KINDS:
            found = self.of_kind(kind)
            if found:
                result[kind] = sum(v.kept for v in found) / len(found)
        return result

    @property
    def score(self) -> float | None:
        """The recalls weighted by :data:`WEIGHTS` over the kinds present, or ``None``."""
        recall = self.recall
        total = sum(WEIGHTS[k] for k in recall)
        if not total:
            return None
        return sum(WEIGHTS[k] * r for k, r in recall.items()) / total

    @property
    def kept_count(self) -> int:
        """Facts the summary keeps."""
        return sum(v.kept for v in self.verdicts)

    @property
    def lost(self) -> list[FactVerdict]:
        """Facts the summary loses, those the kept messages do not carry either first."""
        lost = [v for v in self.verdicts if not v.kept]
        return sorted(lost, key=lambda v: v.kept_messages)

    @property
    def facts_per_1k(self) -> float | None:
        """Facts the summary keeps per 1,000 summary tokens (``None`` for no summary)."""
        if not self.summary_tokens:
            return None
        return self.kept_count * 1000 / self.summary_tokens

    def cite(self, fact: Fact) -> str:
        """``path:line#entry-id`` of a fact (as search hits cite entries)."""
        where = self.session_path or self.session_id
        return f"{where}:{fact.line if fact.line is not None else ''}#{fact.entry_id}"

    def to_dict(self) -> dict[str, Any]:
        """One compaction as ``pinb compactions --json`` prints it (a stable shape).

        ``{"id", "kind", "firstKeptEntryId", "tokensBefore" (Pi's, as recorded),
        "estimatedBefore", "estimatedAfter" (chars/4), "summaryTokens",
        "summarizedEntries", "summarizer", "facts": [{"kind", "text", "detail", "entryId",
        "line", "cite" (path:line#entry-id), "summary" ("verbatim"|"paraphrased"|"lost"),
        "keptMessages", "evidence", "section", "rule"}], "recall": {kind: share},
        "score", "weights", "factsPer1kSummaryTokens", "note"}``; ``recall`` holds only
        the kinds with facts; ``score`` and ``factsPer1kSummaryTokens`` may be ``null``.
        """
        return {
            "id": self.compaction_id,
            "kind": self.kind,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
            "estimatedBefore": self.estimated_before,
            "estimatedAfter": self.estimated_after,
            "summaryTokens": self.summary_tokens,
            "summarizedEntries": self.summarized_entries,
            "summarizer": self.summarizer,
            "facts": [
                {
                    "kind": v.fact.kind,
                    "text": v.fact.text,
                    "detail": v.fact.detail,
                    "entryId": v.fact.entry_id,
                    "line": v.fact.line,
                    "cite": self.cite(v.fact),
                    "summary": v.verdict,
                    "keptMessages": v.kept_messages,
                    "evidence": v.summary.evidence,
                    "section": v.summary.section,
                    "rule": v.summary.rule,
                }
                for v in self.verdicts
            ],
            "recall": self.recall,
            "score": self.score,
            "weights": dict(WEIGHTS),
            "factsPer1kSummaryTokens": self.facts_per_1k,
            "note": self.note,
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per fact: kind, text, detail, entry, line, verdict, kept, evidence."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "kind": v.fact.kind,
                    "text": v.fact.text,
                    "detail": v.fact.detail,
                    "entry_id": v.fact.entry_id,
                    "line": v.fact.line,
                    "summary": v.verdict,
                    "kept_messages": v.kept_messages,
                    "evidence": v.summary.evidence,
                    "rule": v.summary.rule,
                }
                for v in self.verdicts
            ],
            columns=[
                "kind",
                "text",
                "detail",
                "entry_id",
                "line",
                "summary",
                "kept_messages",
                "evidence",
                "rule",
            ],
        )

    def __repr__(self) -> str:
        score = f"{self.score:.0%}" if self.score is not None else "—"
        name = self.compaction_id or self.kind
        return f"<RetentionReport {name}: {self.kept_count}/{len(self.verdicts)} facts kept, score {score}>"


# -- building ------------------------------------------------------------------------------


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"


def span_messages(
    before: SessionContext, first_kept_id: Any
) -> tuple[list[tuple[Entry, list[Any]]], list[Any], int]:
    """``(summarized, kept messages, summarized entry count)`` of a cut of ``before``.

    The entries are the core's count (:func:`~pinb.core.compaction.span.split_at_cut`),
    each with the messages it sent the model (context edits applied, system messages out).
    """
    span = split_at_cut(before, first_kept_id)
    sent = {id(p.entry): p.messages for p in before.entries}
    summarized = [
        (e, [m for m in sent.get(id(e), ()) if not _is_system(m)]) for e in span.summarized
    ]
    kept = [m for e in span.kept for m in sent.get(id(e), ()) if not _is_system(m)]
    return summarized, kept, len(span.summarized)


def retention_of_text(
    facts: Sequence[Fact], summary: str, kept: Sequence[Any] | TextIndex, cwd: str | None = None
) -> list[FactVerdict]:
    """Judge ``facts`` against ``summary`` and the kept messages (or their index)."""
    summary_index = TextIndex(summary)
    kept_index = (
        kept
        if isinstance(kept, TextIndex)
        else TextIndex("\n\n".join(carried_text(m) for m in kept))
    )
    return [
        FactVerdict(
            fact,
            judge(fact, summary_index, cwd=cwd),
            judge(fact, kept_index, cwd=cwd).verdict != "lost",
        )
        for fact in facts
    ]


def _summary_tokens(summary: str, session: Session) -> int:
    if not summary:
        return 0
    return estimate_tokens({"role": "compactionSummary", "summary": summary}, pi=session.pi)


def _where(session: Session) -> tuple[str | None, str | None]:
    path = os.fspath(session.path) if session.path is not None else None
    return path, (session.cwd or None)


def retention_report(
    session: Session, entry: Entry | str, *, cache: FactCache | None = None
) -> RetentionReport:
    """The retention report of a ``compaction`` entry of ``session`` (Pi's or pinb's).

    ``cache`` keeps what each message says for the next report (see
    :func:`session_retention`).

    Raises
    ------
    EntryNotFoundError
        No such entry.
    UsageError
        ``entry`` is not a compaction (a ``ValueError`` too).
    """
    found: Entry = entry if isinstance(entry, Entry) else session[entry]
    if found.type != "compaction":
        raise UsageError(f"entry {found.id!r} is a {found.type!r} entry, not a compaction")
    (split,) = compaction_splits(session, (found,))
    return split_retention(session, split, cache)


def split_retention(
    session: Session, split: CompactionSplit, cache: FactCache | None = None
) -> RetentionReport:
    """The retention report of a compaction already read back
    (:func:`~pinb.core.compaction.span.compaction_splits`), for a caller that walks them."""
    raw = split.entry.raw
    summarized = list(zip(split.span.summarized, split.summarized_messages, strict=True))
    kept = [m for sent in split.kept_messages for m in sent]
    summary = raw.get("summary")
    summary = summary if isinstance(summary, str) else ""
    path, cwd = _where(session)
    recorded = raw.get("tokensBefore")
    first_kept = raw.get("firstKeptEntryId")
    note = ""
    if raw.get("fromHook"):
        note = "the summary came from an extension (fromHook), not Pi's summarizer"
    return RetentionReport(
        compaction_id=node_key(split.entry.id),
        kind="recorded",
        first_kept_entry_id=node_key(first_kept) if first_kept is not None else None,
        tokens_before=recorded
        if isinstance(recorded, int) and not isinstance(recorded, bool)
        else None,
        estimated_before=split.estimated_before,
        estimated_after=split.estimated_after,
        summary_tokens=_summary_tokens(summary, session),
        summarized_entries=len(split.span.summarized),
        summary=summary,
        verdicts=retention_of_text(extract_facts(summarized, cache=cache), summary, kept, cwd),
        session_id=session.id,
        session_path=path,
        cwd=cwd,
        summarizer="extension" if raw.get("fromHook") else "",
        note=note,
    )


def plan_retention(
    session: Session,
    report: CompactionReport,
    *,
    leaf_id: Any = UNSET,
    summary: str | None = None,
    kind: str = "plan",
    cache: FactCache | None = None,
) -> RetentionReport:
    """The retention report of a planned or carried-out compaction (a :class:`CompactionReport`).

    A report with an entry is read back from the session (:func:`retention_report`).
    A plan (``plan_compaction``, ``plan_to_fit``) has no summary yet: give ``summary`` to
    judge one written for it; without one every fact is judged against an empty summary,
    which says what the kept messages alone carry. ``leaf_id`` is where it was planned
    (default: the session's leaf). ``cache`` keeps what each message says for the next
    plan (several cuts of one context share most of their span).
    """
    if report.entry is not None and summary is None:
        return retention_report(session, report.entry, cache=cache)
    before = session.build_context(leaf_id)
    summarized, kept, count = span_messages(before, report.first_kept_entry_id)
    text = summary if summary is not None else report.summary
    path, cwd = _where(session)
    tokens = _summary_tokens(text, session)
    after = report.estimated_after
    note = ""
    if report.entry is None and not report.summary:
        after += tokens  # a plan counts the kept messages only; the summary comes on top
        if summary is None:
            note = "a plan: no summary yet, so only the kept messages are judged"
    return RetentionReport(
        compaction_id=node_key(report.entry.id) if report.entry is not None else None,
        kind=kind,
        first_kept_entry_id=report.first_kept_entry_id,
        tokens_before=report.tokens_before,
        estimated_before=report.estimated_before,
        estimated_after=after,
        summary_tokens=tokens,
        summarized_entries=count,
        summary=text,
        verdicts=retention_of_text(extract_facts(summarized, cache=cache), text, kept, cwd),
        session_id=session.id,
        session_path=path,
        cwd=cwd,
        summarizer=report.summarizer,
        note=note,
    )


def session_retention(session: Session) -> list[RetentionReport]:
    """The retention report of every compaction of ``session`` (every branch), in file order.

    Each context is walked once (:func:`~pinb.core.compaction.span.compaction_splits`), and
    a message read for one span is not read again for the next (Pi 1.6 summarizes the
    previous kept range again). :func:`iter_session_retention` gives them one at a time.
    """
    return list(iter_session_retention(session))


def iter_session_retention(session: Session) -> Iterator[RetentionReport]:
    """:func:`session_retention`, one report at a time: what is held while it runs is one
    compaction's span (its context, the facts and what the span's messages said), never
    the whole file's, so a caller that lets each report go (``pinb compactions``, the
    frame) needs memory for one span.

    The collector is paused while a report is made: a report is many small objects and
    no garbage cycles.
    """
    cache = FactCache()
    compactions = [e for e in session.entries if e.type == "compaction"]
    splits = compaction_splits(session, compactions)
    for left in range(len(compactions) - 1, -1, -1):
        # The lines a span's contexts decode are let go once its report is made (read
        # again, if the next span needs them): the file is never held decoded whole.
        with gc_paused(), transient_decoding() as release:
            split = next(splits)
            report = split_retention(session, split, cache)
            if left:
                cache.next_span()  # a later span shares messages with this one, not older
            else:
                cache.clear()  # the last: nothing of it is needed while the caller reads
            del split  # its contexts go before the next one is built
            # The fields of the contexts' entries are checked now, while they are decoded
            # (the session checks them in bulk later otherwise: every line decoded at once).
            session.problems  # noqa: B018 - read for its check
            release()
            forget_fact_words()  # the words of this span's facts, needed for its judging
        yield report


def rules() -> dict[str, str]:
    """How each kind is matched, in words (for views and docs)."""
    return dict(RULES)
