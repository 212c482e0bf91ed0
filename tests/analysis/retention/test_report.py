"""What a compaction kept: facts of the replaced span, verdicts against hand-judged ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.retention.report import (
    WEIGHTS,
    plan_retention,
    retention_report,
    session_retention,
    span_messages,
)
from pinb.core import Session, plan_compaction
from pinb.core.compaction.facts import FACT_KINDS, command_parts, error_line, extract_facts
from pinb.core.compaction.matching import TextIndex, judge
from pinb.core.compaction.span import compaction_span
from pinb.core.context.tokens import CompactionSettings
from pinb.errors import UsageError
from pinb.views.compaction.view import report_from_entry
from tests.analysis.builders import PI_FIXTURES
from tests.analysis.retention_story import EXPECTED, write_story
from tests.samples import TREES

#: Where pinb and the reader disagree, and why (compaction, kind, text prefix, pinb's call).
DISAGREEMENTS = {
    # The kept commit message "Configurable free-shipping threshold" shares 4 of the
    # request's 10 content words: by the overlap rule the kept messages carry it; a reader
    # finds only the feature's name there, not the env var or "read it once".
    (2, "instruction", "Make the free-shipping"): ("paraphrased", True),
}


@pytest.fixture
def story(tmp_path: Path) -> tuple[Session, dict[str, str]]:
    return write_story(tmp_path / "sessions" / "--home-dev-shop--")


def _find(report: Any, kind: str, text: str) -> Any:
    found = [v for v in report.verdicts if v.fact.kind == kind and v.fact.text == text]
    assert len(found) == 1, (kind, text, [v.fact.text for v in report.of_kind(kind)])
    return found[0]


def test_hand_judged_verdicts(story: tuple[Session, dict[str, str]]) -> None:
    session, _ = story
    reports = session_retention(session)
    assert len(reports) == 2
    agree = 0
    for number, kind, text, verdict, kept in EXPECTED:
        found = _find(reports[number - 1], kind, text)
        expected = next(
            (
                v
                for k, v in DISAGREEMENTS.items()
                if (number, kind) == k[:2] and text.startswith(k[2])
            ),
            (verdict, kept),
        )
        assert (found.verdict, found.kept_messages) == expected, (number, kind, text)
        agree += (found.verdict, found.kept_messages) == (verdict, kept)
    assert agree == len(EXPECTED) - len(DISAGREEMENTS) == 27
    # Every fact of both spans is one a reader judged: nothing extra, nothing missing.
    assert sum(len(r.verdicts) for r in reports) == len(EXPECTED)


def test_evidence_is_the_summary_text_that_matched(story: tuple[Session, dict[str, str]]) -> None:
    first = session_retention(story[0])[0]
    pricing = _find(first, "file", "src/cart/pricing.py")
    assert pricing.summary.evidence == "src/cart/pricing.py"
    assert pricing.summary.section == "<modified-files>"
    pytest_run = _find(first, "command", "uv run pytest -q")
    assert (
        pytest_run.summary.evidence
        == "- Run the tests with `uv run pytest -q` before claiming success"
    )
    clamp = _find(
        first, "decision", "Done. `apply_coupon` clamps the total at zero; 13 tests pass."
    )
    assert "clamped at zero" in clamp.summary.evidence and clamp.summary.rule.startswith(
        "6 of its 7"
    )
    for verdict in first.verdicts:
        assert bool(verdict.summary.evidence) == verdict.kept  # lost facts show no evidence
        if verdict.summary.verdict == "verbatim" and verdict.fact.kind != "instruction":
            assert verdict.fact.text.casefold() in verdict.summary.evidence.casefold()


def test_facts_cite_their_entries(story: tuple[Session, dict[str, str]]) -> None:
    session, ids = story
    first = session_retention(session)[0]
    failing = _find(first, "command", "uv run pytest -q tests/test_pricing.py")
    assert failing.fact.entry_id == ids["a2"] and failing.fact.detail == "failed"
    assert _find(first, "command", "uv run pytest -q").fact.detail == "ok"
    assert _find(first, "file", "src/cart/pricing.py").fact.detail == "read, edited"
    entry = session[ids["a2"]]
    assert first.cite(failing.fact) == f"{session.path}:{entry.line}#{ids['a2']}"
    assert _find(first, "error", "E AssertionError: assert 100 == 90").fact.entry_id == ids["r2"]
    constraint = [v for v in first.of_kind("instruction") if v.fact.detail == "constraint"]
    assert [v.fact.entry_id for v in constraint] == [ids["u1"], ids["u2"]]


def test_scores_follow_the_stated_weights(story: tuple[Session, dict[str, str]]) -> None:
    first = session_retention(story[0])[0]
    recall = first.recall
    assert recall == {"file": 1.0, "command": 1 / 3, "error": 0.0, "instruction": 1.0,
                      "decision": 1.0, "identifier": 0.5, "number": 1 / 3}  # fmt: skip
    assert first.score == pytest.approx(sum(WEIGHTS[k] * r for k, r in recall.items()))
    assert first.kept_count == 11
    assert first.facts_per_1k == pytest.approx(11_000 / first.summary_tokens)
    second = session_retention(story[0])[1]
    assert set(second.recall) == set(FACT_KINDS)


def test_tokens_are_the_one_measure_the_compaction_view_shows(
    story: tuple[Session, dict[str, str]],
) -> None:
    session, ids = story
    for name in ("c1", "c2"):
        report = retention_report(session, ids[name])
        shown = report_from_entry(session, ids[name])
        assert (report.estimated_before, report.estimated_after) == (
            shown.estimated_before,
            shown.estimated_after,
        )
        assert report.tokens_before == shown.tokens_before
        assert report.summarized_entries == len(compaction_span(session, ids[name]).summarized)
    with pytest.raises(UsageError, match="not a compaction"):
        retention_report(session, ids["u1"])


def _span_paths_and_commands(session: Session, entry: Any) -> dict[tuple[str, str], str]:
    """Every read/write/edit path and bash command of a compaction's span, first entry each."""
    found: dict[tuple[str, str], str] = {}
    before = session.build_context(entry.raw["parentId"])
    summarized, _, _ = span_messages(before, entry.raw.get("firstKeptEntryId"))
    assert [e.id for e, _ in summarized] == compaction_span(session, entry).summarized_ids
    for source, messages in summarized:
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "toolCall":
                    continue
                args = block.get("arguments")
                if not isinstance(args, dict):
                    continue
                name = block.get("name")
                if (
                    name in ("read", "write", "edit")
                    and isinstance(args.get("path"), str)
                    and args["path"]
                ):
                    found.setdefault(("file", args["path"]), str(source.id))
                if (
                    name == "bash"
                    and isinstance(args.get("command"), str)
                    and args["command"].strip()
                ):
                    found.setdefault(("command", args["command"].strip()), str(source.id))
    return found


@pytest.mark.parametrize("path", [*PI_FIXTURES, *TREES], ids=lambda p: p.name)
def test_every_path_and_command_of_a_span_is_a_fact(path: Path) -> None:
    session = Session.open(path)
    compactions = [e for e in session.entries if e.type == "compaction"]
    for entry in compactions:
        report = retention_report(session, entry)
        facts = {(f.kind, f.text): f.entry_id for f in report.facts}
        for key, first in _span_paths_and_commands(session, entry).items():
            assert facts.get(key) == first, (path.name, entry.id, key)


def test_story_paths_and_commands_are_all_facts(story: tuple[Session, dict[str, str]]) -> None:
    session, ids = story
    for name in ("c1", "c2"):
        entry = session[ids[name]]
        wanted = _span_paths_and_commands(session, entry)
        assert len(wanted) >= 3
        facts = {(f.kind, f.text): f.entry_id for f in retention_report(session, entry).facts}
        assert all(facts.get(k) == v for k, v in wanted.items())


def test_a_plan_without_a_summary_and_with_one(story: tuple[Session, dict[str, str]]) -> None:
    session, ids = story
    session.branch(ids["a17"], persist=False)
    report = plan_compaction(session, CompactionSettings(keep_recent_tokens=60))
    empty = plan_retention(session, report)
    assert empty.compaction_id is None and empty.kind == "plan"
    assert empty.verdicts and all(v.verdict == "lost" for v in empty.verdicts)
    assert "no summary yet" in empty.note
    assert empty.estimated_after == report.estimated_after and empty.summary_tokens == 0
    written = plan_retention(
        session, report, summary="Edited src/cart/shipping.py; ran `uv run mypy src`."
    )
    assert _find(written, "file", "src/cart/shipping.py").verdict == "verbatim"
    assert _find(written, "command", "uv run mypy src").verdict == "verbatim"
    assert written.estimated_after == report.estimated_after + written.summary_tokens


def test_matching_rules_one_by_one() -> None:
    index = TextIndex(
        "## Files\n- Edited `packages/core/src/agent.ts` and main.py\n"
        "- Ran npm run check: all green\n- The session took 1,100 lines and 3 seconds\n"
        "- AgentSession keeps listeners; agent session stays\n<read-files>\nREADME.md\n</read-files>"
    )
    cases = [
        (
            "file",
            "/home/x/packages/core/src/agent.ts",
            "paraphrased",
            "the path relative to the session's folder",
        ),
        ("file", "/other/packages/core/src/agent.ts", "paraphrased", "its last 4 parts"),
        ("file", "core/src/agent.ts", "paraphrased", "the path inside a longer one"),
        ("file", "src/main.py", "paraphrased", "its file name"),
        ("file", "README.md", "verbatim", "the path"),
        ("file", "ADME.md", "lost", ""),
        (
            "command",
            "cd /repo && npm run check 2>&1 | tail",
            "paraphrased",
            "its program and target",
        ),
        ("command", "npm test", "lost", ""),
        ("number", "1100 lines", "paraphrased", "the same value and unit"),
        ("number", "3 s", "paraphrased", "the same value and unit"),
        ("number", "3 tests", "lost", ""),
        ("identifier", "AgentSession", "verbatim", "the name"),
        ("identifier", "agent_session", "paraphrased", "the name, case, _ and - aside"),
        ("identifier", "keepsListeners", "paraphrased", "its parts as words"),
    ]
    from pinb.core.compaction.facts import Fact

    for kind, text, verdict, rule in cases:
        found = judge(Fact(kind, text, "x", 1), index, cwd="/home/x")
        assert (found.verdict, found.rule) == (verdict, rule), (kind, text)


def test_command_parts_and_error_lines() -> None:
    assert command_parts("cd /w && uv run pytest -q tests/t.py") == ("pytest", "tests/t.py")
    assert command_parts("FOO=1 .venv/bin/python -m mypy pinb") == ("mypy", "pinb")
    assert command_parts("git commit -am 'x y'") == ("git commit", "x")
    assert command_parts("ls") == ("ls", None)
    traceback = 'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\nZeroDivisionError: division by zero\n\nCommand exited with code 1'
    assert error_line(traceback) == "ZeroDivisionError: division by zero"
    assert error_line("  12 │ throw new Error(x)\nsrc/a.ts(3,4): error TS2305: no export") == (
        "src/a.ts(3,4): error TS2305: no export"
    )
    assert error_line("\n\n") == ""


def test_facts_from_bash_executions_and_failed_replies(tmp_path: Path) -> None:
    from tests.analysis.builders import assistant, user

    session = Session.create("/w", tmp_path)
    first = session.append_message(user("please check the build")).id
    bang = session.append_message(
        {"role": "bashExecution", "command": "make build", "output": "make: *** [all] Error 2",
         "exitCode": 2, "cancelled": False, "truncated": False, "timestamp": 1}
    ).id  # fmt: skip
    failed = session.append_message(
        assistant(stop="error") | {"errorMessage": "overloaded_error: try later"}
    ).id
    items = [(session[i], [session[i].message]) for i in (first, bang, failed)]
    facts = {(f.kind, f.text): (f.entry_id, f.detail) for f in extract_facts(items)}
    assert facts[("command", "make build")] == (bang, "failed")
    assert facts[("error", "make: *** [all] Error 2")] == (bang, "bash")
    assert facts[("error", "overloaded_error: try later")] == (failed, "reply failed")


def test_session_retention_is_each_compactions_report(
    story: tuple[Session, dict[str, str]],
) -> None:
    # One walk and one cache for the session; the same reports as one compaction at a time.
    for path in [*PI_FIXTURES, *TREES, story[0].require_path()]:
        session = Session.open(path)
        together = [r.to_dict() for r in session_retention(session)]
        one_by_one = [
            retention_report(session, e).to_dict()
            for e in session.entries
            if e.type == "compaction"
        ]
        assert together == one_by_one, path.name


def test_a_message_read_for_one_span_is_not_read_again(
    story: tuple[Session, dict[str, str]],
) -> None:
    # Two cuts of one context (the what-if's columns; compactions on two branches) share
    # the entries before the earlier cut: with one cache each message is read once.
    from pinb.core.compaction.facts import FactCache, message_said

    session, ids = story
    before = session.build_context(ids["a17"])
    session.branch(ids["a17"], persist=False)
    cuts = [
        plan_compaction(session, CompactionSettings(keep_recent_tokens=keep)).first_kept_entry_id
        for keep in (60, 200)
    ]
    spans = [span_messages(before, cut)[0] for cut in cuts]
    cache = FactCache()
    first = extract_facts(spans[0], cache=cache)
    assert first == extract_facts(spans[0])  # the cache changes nothing
    read = len(cache)
    assert read == sum(len(sent) for _, sent in spans[0])
    second = extract_facts(spans[1], cache=cache)
    assert second == extract_facts(spans[1]) and second != first
    shared = {id(m) for _, sent in spans[0] for m in sent} & {
        id(m) for _, sent in spans[1] for m in sent
    }
    assert shared and len(cache) == read + sum(len(sent) for _, sent in spans[1]) - len(shared)
    message = spans[0][0][1][0]
    assert cache.said(message) is cache.said(message) == message_said(message)


def _odd_texts(count: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    pool = [*"abcXYZ019_.-'’ /\\:;,!?\n\t#`()[]{}%×µ\"<>*", "İ", "ı", "ſ", "\u212a", "ß", "ﬁ",
            "e\u0301", "Σσς", "ǅ", "Ⅻ", "１", "٣", "²", "\x1c", "\xa0", "ms", " s", "MB", "tests",
            "1,100", "snake_case", "__init__", "camelCase", "HTTPServer", "A1B", "a.b", "x.py",
            "Foo.bar", "(Foo", "Bar.", ".Baz", "don't", "must", "Never", "do not", "can't",
            "KEEP", "instead of", "forbidden"]  # fmt: skip
    return ["".join(rng.choice(pool) for _ in range(rng.randint(0, 40))) for _ in range(count)]


def test_the_quick_readings_are_the_regular_expressions() -> None:
    # Plain ASCII is read at C speed and prose tokens are passed over; the definitions are
    # the regular expressions, read whole, and every reading must equal them.
    from pinb.core.compaction import facts, words

    def content_ref(text: str) -> list[str]:
        return [c for w in words._WORD.findall(text.casefold()) if (c := words._stem(w))]

    def has_ref(text: str, count: int) -> bool:
        found = [m for m in words._WORD.finditer(text) if words._stem(m.group(0).casefold())]
        return len(found) >= count

    def names_ref(text: str) -> list[str]:
        found = (m.group(0) for m in words._IDENT.finditer(text))
        return [name for name in found if words._is_identifier(name)]

    texts = _odd_texts(30_000, 7)
    assert any(words.content_words(t) for t in texts) and any(
        words.identifiers_in(t) for t in texts
    )
    for text in texts:
        assert words.content_words(text) == content_ref(text), text
        assert words.has_content_words(text, 3) == has_ref(text, 3), text
        assert words.identifiers_in(text) == names_ref(text), text
        assert facts._constraint(text) == bool(facts._CONSTRAINT.search(text)), text


#: Commands a reviewer found the fact extraction quadratic on, or would be: long runs of
#: whitespace around and between the operators that chain commands.
_LONG_RUNS = {
    "spaces": "ls" + " " * 16_000 + "src",
    "40 KB of spaces": " " * 40_000 + "pytest -q tests/test_app.py",
    "alternating": "&& " * 8_000 + "make test",
    "operators and runs": ("&&" + " " * 1_000 + "||" + "\t" * 1_000 + ";" + "\n" * 500) * 20
    + "cargo test parser",
    "a pipe of spaces": "grep -r parser src |" + " " * 40_000 + "| wc -l",
}


def test_long_whitespace_runs_finish_and_give_the_right_facts(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from tests.analysis.builders import assistant, tool_result, user

    session = Session.create("/w", tmp_path)
    session.append_message(user("please" + " " * 40_000 + "never delete the parser tests"))
    for n, command in enumerate(_LONG_RUNS.values()):
        session.append_message(assistant("", calls=((f"c{n}", "bash", {"command": command}),)))
        output = " " * 40_000 + "\n" + "\t" * 40_000 + "\nError: boom " + str(n)
        session.append_message(tool_result(f"c{n}", "bash", output, error=n == 0))
    session.append_message(assistant("Fixed" + " " * 40_000 + "3 tests in 340 ms for the parser"))
    keep = session.append_message(user("and now the docs")).id
    session.append_compaction("ls src; make test; cargo test parser", keep, 1000)
    # A process, so a hang is stopped (a regular expression holds the interpreter lock).
    result = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "compactions", str(session.require_path()), "--json"],
        capture_output=True, text=True, timeout=600,  # a hang guard only
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [report] = json.loads(result.stdout)
    facts = {(f["kind"], f["text"]): f for f in report["facts"]}
    for command in _LONG_RUNS.values():
        assert facts[("command", command.strip())]["detail"] in ("failed", "ok")
    assert facts[("command", _LONG_RUNS["spaces"])]["detail"] == "failed"
    assert facts[("command", _LONG_RUNS["spaces"])]["summary"] == "verbatim"  # "ls src"
    assert facts[("command", _LONG_RUNS["alternating"])]["summary"] == "paraphrased"  # make test
    assert facts[("error", "Error: boom 0")]["detail"] == "bash"
    assert ("instruction", "please never delete the parser tests") in facts
    assert ("decision", "Fixed 3 tests in 340 ms for the parser") in facts
    assert ("number", "340 ms") in facts and ("number", "3 tests") in facts
    assert [command_parts(c) for c in _LONG_RUNS.values()] == [
        ("ls", "src"),
        ("pytest", "tests/test_app.py"),
        ("make test", None),
        ("cargo test", "parser"),
        ("grep", "parser"),
    ]


def test_a_walk_over_every_compaction_holds_one_span_not_the_file(tmp_path: Path) -> None:
    import tracemalloc

    from pinb.analysis.retention.report import iter_session_retention
    from pinb.testing.generate import SessionShape, generate_session

    peaks = []
    for entries in (2_000, 8_000):  # spans of about 250 entries either way
        shape = SessionShape(entries=entries, main_depth=entries, tool_result_chars=200,
                             compaction_every=250, branch_every=0)  # fmt: skip
        session = Session.open(generate_session(tmp_path / f"{entries}.jsonl", shape, seed=1))
        lazy = [e for e in session.entries if not e.decoded]
        tracemalloc.start()
        try:
            held = tracemalloc.get_traced_memory()[0]
            reports = sum(1 for _ in iter_session_retention(session))
            peaks.append(tracemalloc.get_traced_memory()[1] - held)
        finally:
            tracemalloc.stop()
        assert reports == sum(e.type == "compaction" for e in session.entries) > entries // 300
        assert not any(e.decoded for e in lazy)  # the walk leaves the lines as it found them
    # Four times the file and the compactions; the memory of one span, and the session's
    # own bookkeeping (a few bytes an entry). Holding every line decoded, or every span's
    # facts, made it four times too.
    assert peaks[1] < 2 * peaks[0], peaks
