"""The must-keep facts a summary lost: the one rule, and the kept-facts section every
compaction of pinb's writes with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import (
    CompactionSettings,
    ExtractiveSummarizer,
    Session,
    compact,
    load_compaction_settings,
)
from pinb.core.compaction.lost import (
    GROUP_HEADINGS,
    KEPT_FACTS_HEADING,
    cite_name,
    earlier_kept_facts,
    fact_line,
    fact_lines,
    lost_facts,
    parse_kinds,
    section_budget,
    text_tokens,
    without_kept_facts,
)
from pinb.core.compaction.span import split_with_messages
from pinb.core.compaction.summarize import ModelSummarizer
from pinb.core.context.tokens import KEPT_FACTS_BUDGET
from pinb.testing.work import write_work_session
from tests.core.helpers import assistant, tool_result, user

SMALL = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=300)


def _failed(call_id: str, text: str) -> dict[str, Any]:
    return {**tool_result(call_id, "bash", text), "isError": True}


def _work(session: Session, tag: str = "") -> dict[str, str]:
    """A span with one fact of every must-keep kind; returns their entry ids by name."""
    ids: dict[str, str] = {}
    ids["request"] = session.append_message(
        user(f"Port the tokenizer{tag} to the streaming reader and benchmark the result")
    ).id
    ids["constraint"] = session.append_message(
        user(f"Never touch the vendored parser{tag}. Keep the public API stable.")
    ).id
    ids["read"] = session.append_message(
        assistant("", tool_calls=[("r1", "read", {"path": f"src/reader{tag}.py"})])
    ).id
    session.append_message(tool_result("r1", "read", "def read(): ..."))
    ids["edit"] = session.append_message(
        assistant(
            "",
            tool_calls=[
                ("e1", "edit", {"path": f"src/tokens{tag}.py", "oldText": "a", "newText": "b"})
            ],
        )
    ).id
    session.append_message(tool_result("e1", "edit", "Successfully replaced text."))
    ids["command"] = session.append_message(
        assistant("", tool_calls=[("b1", "bash", {"command": f"pytest tests/test_stream{tag}.py"})])
    ).id
    ids["error"] = session.append_message(
        _failed("b1", f"ImportError: cannot import name 'Chunker{tag}' from tokens")
    ).id
    ids["next"] = session.append_message(
        assistant("The import still fails; next I will export Chunker from the tokens module.")
    ).id
    for i in range(4):  # a recent part to keep, carrying none of the facts above
        session.append_message(user(f"unrelated question {i} about lunch plans"))
        session.append_message(assistant(f"answer {i}: " + "soup " * 60))
    return ids


def _span(session: Session, first_kept: str) -> tuple[list[Any], list[Any]]:
    span, summarized, kept = split_with_messages(session.build_context(), first_kept)
    return list(zip(span.summarized, summarized, strict=True)), [m for s in kept for m in s]


def test_lost_facts_are_those_neither_the_summary_nor_the_kept_messages_carry(
    tmp_path: Path,
) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    ids = _work(session)
    kept_from = session.path_to()[-8].id
    span, kept = _span(session, kept_from)
    # The summary keeps the file it read; a kept message carries the request.
    summary = "## Goal\nWe read src/reader.py."
    kept = [*kept, user("Port the tokenizer to the streaming reader and benchmark the result")]
    lost = lost_facts(span, summary, kept, where=cite_name(session))
    got = [(f.kind, f.fact.entry_id) for f in lost.facts]
    # Ranked by what a continuation needs: the user's rule, the next step, the failure,
    # the changed file; the read file and the request are not lost.
    assert got == [
        ("instruction", ids["constraint"]),
        ("instruction", ids["constraint"]),
        ("next", ids["next"]),
        ("error", ids["error"]),
        ("command", ids["command"]),
        ("file", ids["edit"]),
    ]
    assert [f.fact.detail for f in lost.facts[:2]] == ["constraint", "constraint"]
    assert lost.omitted == 0 and lost.tokens <= lost.budget == KEPT_FACTS_BUDGET
    # Cited path:line#entry-id; the line is the entry's own line in the file.
    lines = session.require_path().read_text().splitlines()
    for fact in lost.facts:
        name, rest = fact.cite.split(":", 1)
        line, entry_id = rest.split("#")
        assert name == session.require_path().name
        assert json.loads(lines[int(line) - 1])["id"] == entry_id == fact.fact.entry_id
        assert fact.line.endswith(f"[{line}#{entry_id}]")


def test_a_budget_cuts_the_lowest_ranked_and_counts_them(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    _work(session)
    span, kept = _span(session, session.path_to()[-8].id)
    whole = lost_facts(span, "", kept)
    first = whole.facts[:2]
    headings = {GROUP_HEADINGS[f.group] for f in first}  # each group's heading once
    budget = sum(f.tokens for f in first) + sum(text_tokens(h + "\n") for h in headings)
    cut = lost_facts(span, "", kept, budget=budget)
    assert [f.line for f in cut.facts] == [f.line for f in whole.facts[:2]]
    assert cut.omitted == len(whole.facts) - 2 and cut.tokens <= budget
    only = lost_facts(span, "", kept, kinds=parse_kinds("files,errors", ()))
    assert {f.kind for f in only.facts} == {"file", "error"}


def test_every_compaction_adds_the_section_and_keep_facts_off_writes_pis_text(
    tmp_path: Path,
) -> None:
    texts = {}
    for keep in (True, False):
        session = Session.create(tmp_path / str(keep), tmp_path / str(keep) / "s")
        _work(session)
        settings = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=300, keep_facts=keep)
        report = compact(session, ExtractiveSummarizer(), settings=settings)
        line = json.loads(session.require_path().read_text().splitlines()[-1])
        assert line["type"] == "compaction" and line["summary"] == report.summary
        texts[keep] = report
    with_facts, pi_text = texts[True], texts[False]
    assert KEPT_FACTS_HEADING not in pi_text.summary and pi_text.kept_facts is None
    # The same Pi text, then pinb's labelled section, within the stated budget.
    assert with_facts.summary.startswith(pi_text.summary + "\n\n" + KEPT_FACTS_HEADING)
    section = with_facts.summary[len(pi_text.summary) :]
    assert text_tokens(section) <= KEPT_FACTS_BUDGET
    assert with_facts.kept_facts is not None and with_facts.kept_facts.lines
    for fact_text in with_facts.kept_facts.lines:
        assert fact_text in section
    assert without_kept_facts(with_facts.summary) == pi_text.summary


MUST_KEEP_KINDS = ("file", "command", "error", "instruction")


def _kept_share(session: Session, entry: Any) -> tuple[float, int]:
    """Share of the must-keep facts the continuation still has (the summary keeps them or
    the kept messages carry them), and the summary's chars/4 tokens."""
    from pinb.analysis.retention.report import retention_report

    report = retention_report(session, entry)
    facts = [v for v in report.verdicts if v.fact.kind in MUST_KEEP_KINDS]
    return sum(v.kept or v.kept_messages for v in facts) / len(facts), report.summary_tokens


@pytest.mark.parametrize("seed", [0, 1])
def test_kept_facts_keep_95_percent_for_at_most_2500_tokens(tmp_path: Path, seed: int) -> None:
    shares = {}
    for keep in (False, True):
        session = write_work_session(tmp_path / str(keep), turns=60, seed=seed)
        settings = CompactionSettings(keep_facts=keep)
        report = compact(session, ExtractiveSummarizer(), settings=settings)
        shares[keep] = _kept_share(session, report.entry)
    (without, plain_tokens), (with_facts, tokens) = shares[False], shares[True]
    assert without < 0.9, "the offline summary alone loses must-keep facts of this session"
    assert with_facts >= 0.95
    assert 0 < tokens - plain_tokens <= KEPT_FACTS_BUDGET


class _Recorder:
    """A model that answers with a fixed summary and records what it was asked."""

    def __init__(self, reply: str) -> None:
        self.prompts: list[str] = []
        self.reply = reply
        self.info = type("Info", (), {"id": "scripted", "reasoning": False})()

    def complete(self, messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
        self.prompts.append(json.dumps(messages))
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": self.reply}],
            "stopReason": "stop",
        }


def test_a_later_compaction_carries_earlier_kept_facts_within_one_budget(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    first_ids = _work(session, "_one")
    model = _Recorder("## Goal\nKeep going.")
    first = compact(session, ModelSummarizer(model), settings=SMALL)  # type: ignore[arg-type]
    assert first.kept_facts is not None
    carried = earlier_kept_facts(first.summary)
    assert {f.entry_id for f in carried} >= {first_ids["constraint"], first_ids["error"]}
    _work(session, "_two")
    asked = len(model.prompts)
    second = compact(session, ModelSummarizer(model), settings=SMALL)  # type: ignore[arg-type]
    # The model never saw pinb's section: it was given Pi's text of the previous summary.
    prompts = model.prompts[asked:]
    assert prompts and not any(KEPT_FACTS_HEADING in p for p in prompts)
    assert any("Keep going." in p for p in prompts)
    # One section, holding the new span's facts and the first's, cited where they were.
    assert second.summary.count(KEPT_FACTS_HEADING) == 1
    assert second.kept_facts is not None
    given = {f.fact.entry_id for f in second.kept_facts.facts}
    assert first_ids["constraint"] in given and first_ids["error"] in given
    # Still within the budget, however many compactions there are.
    tight = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=300, keep_facts_tokens=200)
    for tag in ("_three", "_four"):
        _work(session, tag)
        later = compact(session, ModelSummarizer(model), settings=tight)  # type: ignore[arg-type]
        section = later.summary[later.summary.index("\n\n" + KEPT_FACTS_HEADING) :]
        assert text_tokens(section) <= 200 and later.kept_facts is not None
        assert later.kept_facts.omitted > 0


def test_a_section_reads_back_as_its_facts() -> None:
    from pinb.core.compaction.facts import Fact
    from pinb.core.compaction.lost import LostFact

    facts = [
        (
            Fact("instruction", "Never push: ok [x]", "ab12cd36", 9, "constraint"),
            "instruction",
            "constraint",
        ),
        (Fact("error", "TypeError: x", "ab12cd37", 10, ""), "error", "error"),
        (Fact("command", "npm test -- x", "ab12cd35", 8, "failed"), "command", "failed command"),
        (Fact("file", "src/a b.py", "ab12cd34", 7, "edited"), "file", "changed file"),
        (Fact("file", "src/c.py", "ab12cd38", 6, "read"), "file", "read file"),
    ]
    given = [LostFact(f, k, g, "", fact_line(f, k, f"{f.line}#{f.entry_id}")) for f, k, g in facts]
    text = "Pi's text\n\n" + KEPT_FACTS_HEADING + "\nintro:\n" + "\n".join(fact_lines(given))
    # Each group's label is written once, above its facts.
    assert text.count("Files read:") == 1 and "- `src/c.py` [6#ab12cd38]" in text
    assert earlier_kept_facts(text) == [f for f, _, _ in facts]
    assert without_kept_facts(text) == "Pi's text"


def test_the_setting_is_read_from_pinbs_part_of_settings_json(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    (folder / ".pi").mkdir(parents=True)
    (folder / ".pi" / "settings.json").write_text(
        json.dumps({"pinb": {"compaction": {"keepFacts": False, "keepFactsTokens": 900}}})
    )
    settings = load_compaction_settings(folder)
    assert settings.keep_facts is False and settings.keep_facts_tokens == 900
    assert load_compaction_settings(tmp_path / "elsewhere").keep_facts is True
    assert 0 < section_budget(900, "x.jsonl") < 900
