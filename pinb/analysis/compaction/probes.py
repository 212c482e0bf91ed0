"""Probes with a model: questions about a replaced span, answered from the compacted context
and from the full span, and judged (optional: nothing else in pinb needs a model for this).

The questions are made from the span's facts (:mod:`pinb.core.compaction.facts`), without a model,
in Factory.ai's four kinds of compression probe:

``recall``
    a specific detail (an error, a number, a name);
``artifact``
    which files and commands (a path, a command and whether it failed);
``continuation``
    what the user asked and the constraints they set;
``decision``
    what the assistant concluded.

Each is answered once from the compacted context (the summary and the kept messages) and
once from the full context (the span and the kept messages), then a judge call decides
whether each answer states the expected fact. The score is labelled with its method and
the model (:attr:`ProbeResult.method`); it measures meaning as that model reads it, so it
is as good as the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ...core.compaction.facts import Fact, content_words
from ...core.describe import one_line
from ...core.format.content import content_text
from ..retention.report import RetentionReport, carried_text

__all__ = [
    "ANSWER_PROMPT",
    "JUDGE_PROMPT",
    "PROBE_KINDS",
    "Probe",
    "ProbeAnswer",
    "ProbeResult",
    "make_probes",
    "run_probes",
]

#: Factory.ai's probe kinds, and the fact kinds each is made from.
PROBE_KINDS: Final = {
    "recall": ("error", "number", "identifier"),
    "artifact": ("file", "command"),
    "continuation": ("instruction",),
    "decision": ("decision",),
}
ANSWER_PROMPT: Final = (
    "You are continuing a coding session. Answer the question from the conversation below "
    "only, in one or two sentences. If the conversation does not say, answer exactly: unknown."
)
JUDGE_PROMPT: Final = (
    "You grade answers. Given a question, the expected fact and an answer, reply with one "
    "word: PASS if the answer states the expected fact (in any words), FAIL otherwise."
)
_CONTEXT_LIMIT: Final = 400_000  # characters of context sent with a question


@dataclass(frozen=True)
class Probe:
    """A question made from a fact, and the fact it expects."""

    kind: str
    question: str
    expected: str
    fact: Fact


@dataclass(frozen=True)
class ProbeAnswer:
    """A probe's two answers and the judge's verdicts (``True``: states the fact)."""

    probe: Probe
    compacted: str
    full: str
    compacted_pass: bool
    full_pass: bool


@dataclass
class ProbeResult:
    """Probes of one compaction, answered and judged by one model.

    ``method`` names how the score was made (shown beside it); ``score`` is the share of
    probes answered right from the compacted context, ``full_score`` from the full one
    (what the model manages at all: read the first against it).
    """

    model: str
    answers: list[ProbeAnswer] = field(default_factory=list)

    @property
    def method(self) -> str:
        return (
            f"model probes (Factory.ai's four kinds), answered and judged by {self.model}: "
            "share of probes answered right from the compacted context"
        )

    @property
    def score(self) -> float | None:
        return (
            sum(a.compacted_pass for a in self.answers) / len(self.answers)
            if self.answers
            else None
        )

    @property
    def full_score(self) -> float | None:
        return sum(a.full_pass for a in self.answers) / len(self.answers) if self.answers else None

    def by_kind(self) -> dict[str, float]:
        """Score per probe kind (kinds with probes only)."""
        result: dict[str, float] = {}
        for kind in PROBE_KINDS:
            found = [a for a in self.answers if a.probe.kind == kind]
            if found:
                result[kind] = sum(a.compacted_pass for a in found) / len(found)
        return result

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "model": self.model,
            "score": self.score,
            "fullScore": self.full_score,
            "byKind": self.by_kind(),
            "probes": [
                {
                    "kind": a.probe.kind,
                    "question": a.probe.question,
                    "expected": a.probe.expected,
                    "entryId": a.probe.fact.entry_id,
                    "compacted": a.compacted,
                    "full": a.full,
                    "compactedPass": a.compacted_pass,
                    "fullPass": a.full_pass,
                }
                for a in self.answers
            ],
        }

    def __repr__(self) -> str:
        score = f"{self.score:.0%}" if self.score is not None else "—"
        return f"<ProbeResult {len(self.answers)} probes by {self.model}: {score}>"


def _question(fact: Fact) -> tuple[str, str]:
    """``(probe kind, question)`` for a fact."""
    text = fact.text
    if fact.kind == "file":
        name = text.rsplit("/", 1)[-1]
        return (
            "artifact",
            f"What is the full path of the file {name!r}, and was it read, edited or written?",
        )
    if fact.kind == "command":
        return "artifact", (
            f"Which shell command was run that starts with {text.split()[0]!r}, and did it fail?"
        )
    if fact.kind == "error":
        return (
            "recall",
            f"What error came up{f' from the {fact.detail} tool' if fact.detail else ''}?",
        )
    if fact.kind == "number":
        unit = text.split()[-1] if " " in text else text.lstrip("0123456789.,")
        return "recall", f"Which figure measured in {unit!r} came up, and what was it?"
    if fact.kind == "identifier":
        return "recall", f"Which name in the code, starting with {text[:3]!r}, came up repeatedly?"
    topic = " ".join(list(dict.fromkeys(content_words(text)))[:6])
    if fact.kind == "instruction":
        return "continuation", f"What did the user ask or require about: {topic}?"
    return "decision", f"What did the assistant conclude about: {topic}?"


def make_probes(report: RetentionReport, limit: int = 12) -> list[Probe]:
    """Up to ``limit`` probes from the report's facts, spread over the four kinds.

    Deterministic: the facts are taken in turn from each kind (in :data:`PROBE_KINDS`
    order), each kind's facts in the report's order.
    """
    queues: dict[str, list[Fact]] = {kind: [] for kind in PROBE_KINDS}
    for fact in report.facts:
        for kind, fact_kinds in PROBE_KINDS.items():
            if fact.kind in fact_kinds:
                queues[kind].append(fact)
    probes: list[Probe] = []
    while len(probes) < limit and any(queues.values()):
        for kind in PROBE_KINDS:
            if queues[kind] and len(probes) < limit:
                fact = queues[kind].pop(0)
                probe_kind, question = _question(fact)
                probes.append(Probe(probe_kind, question, fact.text, fact))
    return probes


def _text_of(reply: Any) -> str:
    return content_text(reply.get("content") if isinstance(reply, dict) else None, "")


def _ask(model: Any, system: str, text: str, max_tokens: int) -> str:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}
    reply = model.complete([message], system_prompt=system, max_tokens=max_tokens)
    return _text_of(reply).strip()


def run_probes(
    report: RetentionReport,
    model: Any,
    *,
    span: Sequence[Any],
    kept: Sequence[Any],
    limit: int = 12,
    probes: Sequence[Probe] | None = None,
) -> ProbeResult:
    """Ask ``model`` the probes of ``report`` from the compacted and the full context.

    Parameters
    ----------
    report:
        The retention report (its summary is the compacted context's first part).
    model:
        Anything with ``complete(messages, *, system_prompt, max_tokens)`` returning a Pi
        assistant message (``pinb.llm`` models, ``pinb.testing.ScriptedLLM``).
    span / kept:
        The messages the compaction summarized and kept
        (:func:`pinb.analysis.retention.report.span_messages`).
    limit / probes:
        How many probes to make, or the probes to ask.

    Three calls per probe: the compacted answer, the full answer, one judge call for both.
    """
    asked = list(probes) if probes is not None else make_probes(report, limit)
    kept_text = "\n\n".join(carried_text(m) for m in kept)
    compacted = f"[Summary of the earlier conversation]\n{report.summary}\n\n{kept_text}"
    full = "\n\n".join(carried_text(m) for m in span) + "\n\n" + kept_text
    name = getattr(getattr(model, "info", None), "id", None) or getattr(model, "name", None)
    result = ProbeResult(model=str(name or type(model).__name__))
    for probe in asked:
        answers = []
        for context in (compacted, full):
            prompt = f"<conversation>\n{context[-_CONTEXT_LIMIT:]}\n</conversation>\n\nQuestion: {probe.question}"
            answers.append(_ask(model, ANSWER_PROMPT, prompt, 200))
        verdict = _ask(
            model,
            JUDGE_PROMPT,
            f"Question: {probe.question}\nExpected fact: {one_line(probe.expected, 400)}\n"
            f"Answer A: {answers[0]}\nAnswer B: {answers[1]}\n"
            "Reply with two words, for A then B: PASS or FAIL each (e.g. 'PASS FAIL').",
            10,
        )
        words = [w.strip(".,:;").upper() for w in verdict.split()]
        grades = [w for w in words if w in ("PASS", "FAIL")] + ["FAIL", "FAIL"]
        result.answers.append(
            ProbeAnswer(probe, answers[0], answers[1], grades[0] == "PASS", grades[1] == "PASS")
        )
    return result
