"""Compaction and branch navigation carried out on sessions (issue: compaction & branch summaries)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import (
    BRANCH_SUMMARY_PREAMBLE,
    CompactionSettings,
    ExtractiveSummarizer,
    ModelSummarizer,
    Session,
    compact,
    compaction_due,
    load_compaction_settings,
    navigate,
    plan_compaction,
    prepare_compaction,
)
from pinb.errors import CompactionError, NothingToCompactError
from pinb.testing.generate import SessionShape, generate_session
from tests.core.helpers import assistant, tool_result, user

SMALL = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=300)


class RecordingModel:
    """A stand-in model: answers with fixed text and records every request."""

    def __init__(
        self, reply: str = "## Goal\nsummary", *, stop: str = "stop", reasoning: bool = False
    ) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply, self.stop = reply, stop
        self.info = type("Info", (), {"id": "scripted", "reasoning": reasoning})()

    def complete(self, messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
        self.requests.append({"messages": messages, **options})
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": self.reply}],
            "stopReason": self.stop,
            "errorMessage": "boom" if self.stop == "error" else None,
        }


def _conversation(session: Session, turns: int, *, big: int = 400) -> None:
    for i in range(turns):
        session.append_message(
            user(f"turn {i}: please edit src/f{i}.py and always keep tests green")
        )
        session.append_message(
            assistant("", tool_calls=[(f"r{i}", "read", {"path": f"src/f{i}.py"})])
        )
        session.append_message(tool_result(f"r{i}", "read", "x" * big))
        session.append_message(
            assistant(
                "",
                tool_calls=[
                    (f"e{i}", "edit", {"path": f"src/f{i}.py", "oldText": "a", "newText": "b"})
                ],
            )
        )
        session.append_message(tool_result(f"e{i}", "edit", "Successfully replaced text."))
        session.append_message(assistant(f"Done with turn {i}. I decided to use a helper instead."))


def test_compact_appends_a_pi_shaped_entry_and_reports(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    _conversation(session, 6)
    report = compact(session, ExtractiveSummarizer(), settings=SMALL)
    assert report.entry is not None and session.leaf_id == report.entry.id
    assert session.path is not None
    line = json.loads(session.path.read_text().splitlines()[-1])
    assert list(line) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
    ]
    assert line["summary"].startswith("(Extractive summary")
    assert line["summary"].endswith("</modified-files>")
    assert line["details"]["modifiedFiles"] == sorted(
        f"src/f{i}.py" for i in range(6) if f"src/f{i}.py" in report.modified_files
    )
    assert report.tokens_after < report.estimated_before and report.tokens_saved > 0
    assert report.tokens_before == 120  # Pi's number: the last reported usage
    context = session.build_context().messages
    assert context[0]["role"] == "compactionSummary" and context[0]["summary"] == report.summary
    assert [session[i].message for i in report.kept_ids if session[i].message] == context[1:]
    assert set(report.summarized_ids).isdisjoint(report.kept_ids)
    with pytest.raises(NothingToCompactError, match="Already compacted"):
        compact(session, ExtractiveSummarizer(), settings=SMALL)


def test_repeated_compactions_lose_nothing(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    _conversation(session, 5)
    first = compact(session, ExtractiveSummarizer(), settings=SMALL)
    _conversation(session, 5)
    second = compact(session, ExtractiveSummarizer(), settings=SMALL)
    messages_on_path = [e.id for e in session.path_to() if e.type == "message"]
    covered = set(first.summarized_ids) | set(second.summarized_ids) | set(second.kept_ids)
    assert set(messages_on_path) <= covered
    # What the first compaction kept went into the second summary (not dropped, §12.8).
    assert set(first.kept_ids) & {i for i in second.summarized_ids}
    assert second.previous_compaction_id == first.entry.id  # type: ignore[union-attr]
    # File lists are cumulative.
    assert set(first.modified_files) <= set(second.modified_files)


@pytest.mark.parametrize("pi", ["0.58", "1.6"])
def test_a_cut_on_a_bash_execution_needs_no_prefix_summary(tmp_path: Path, pi: str) -> None:
    """v0.58.3 splits the turn there with an empty prefix; Pi 1.x starts a turn at a bash run."""
    session = Session.in_memory(tmp_path, pi=pi)
    session.append_message(user("start " + "y" * 800))
    session.append_message(assistant("answer " + "z" * 800))
    bash = session.append_message(
        {
            "role": "bashExecution",
            "command": "ls",
            "output": "q" * 1200,
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 5,
        }
    )
    session.append_message(assistant("short"))
    settings = CompactionSettings(keep_recent_tokens=250)
    prepared = prepare_compaction(session.path_to(), settings, pi=pi)
    assert prepared is not None and prepared.first_kept_entry_id == bash.id
    assert prepared.is_split_turn is (pi == "0.58")
    assert prepared.turn_prefix_messages == []
    model = RecordingModel()
    report = compact(session, ModelSummarizer(model), settings=settings)
    assert len(model.requests) == 1  # no turn-prefix call for an empty prefix
    assert "Turn Context" not in report.summary


@pytest.mark.parametrize(("pi", "limits"), [("0.58", (800, 500)), ("1.6", (None, None))])
def test_split_turn_summarizes_the_prefix_separately(
    tmp_path: Path, pi: str, limits: tuple[int | None, int | None]
) -> None:
    """Pi 1.x leaves the summary's length to the model; v0.58.3 capped it by the reserve."""
    session = Session.in_memory(tmp_path, pi=pi)
    _conversation(session, 1, big=2000)
    session.append_message(user("second request"))
    for i in range(4):
        session.append_message(assistant("", tool_calls=[(f"b{i}", "bash", {"command": "make"})]))
        session.append_message(tool_result(f"b{i}", "bash", "w" * 900))
    model = RecordingModel()
    report = compact(
        session,
        ModelSummarizer(model),
        settings=CompactionSettings(keep_recent_tokens=400, reserve_tokens=1000),
    )
    assert report.is_split_turn
    assert "\n\n---\n\n**Turn Context (split turn):**\n\n" in report.summary
    history, prefix = model.requests
    assert (history["max_tokens"], prefix["max_tokens"]) == limits
    assert "## Original Request" in prefix["messages"][0]["content"][0]["text"]


def test_model_summarizer_prompts(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    _conversation(session, 4)
    model = RecordingModel(reasoning=True)
    compact(session, ModelSummarizer(model), "focus on the tests", settings=SMALL)
    request = model.requests[0]
    prompt = request["messages"][0]["content"][0]["text"]
    assert prompt.startswith("<conversation>\n[User]: turn 0")
    assert "<previous-summary>" not in prompt and "## Critical Context" in prompt
    assert prompt.endswith("\n\nAdditional focus: focus on the tests")
    assert request["max_tokens"] is None  # Pi 1.x: the model's own output limit
    assert request["thinking_level"] == "high"
    _conversation(session, 4)
    compact(session, ModelSummarizer(model), settings=SMALL)
    update = model.requests[-1]["messages"][0]["content"][0]["text"]
    assert "<previous-summary>\n## Goal\nsummary" in update and "Merge them" in update


def test_a_failed_summary_appends_nothing(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    _conversation(session, 4)
    count = len(session.entries)
    with pytest.raises(CompactionError, match="Summarization failed: boom"):
        compact(session, ModelSummarizer(RecordingModel(stop="error")), settings=SMALL)
    assert len(session.entries) == count


def test_too_small_is_nothing_to_compact(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    session.append_message(user("hi"))
    with pytest.raises(NothingToCompactError, match="too small"):
        compact(session, ExtractiveSummarizer())
    with pytest.raises(NothingToCompactError):
        plan_compaction(session)


def test_plan_reports_without_writing(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    _conversation(session, 5)
    count = len(session.entries)
    plan = plan_compaction(session, SMALL)
    assert plan.entry is None and len(session.entries) == count
    assert plan.summarized_ids and plan.kept_ids and plan.tokens_after < plan.estimated_before
    assert sum(plan.before_by_role.values()) >= sum(plan.after_by_role.values())


@pytest.mark.parametrize("legacy", [False, True], ids=["v3-branchy", "v1-legacy"])
def test_extractive_summary_of_long_sessions(legacy: bool, tmp_path: Path) -> None:
    shape = SessionShape(
        entries=600,
        main_depth=600 if legacy else 450,
        branch_every=0 if legacy else 60,
        compaction_every=300 if legacy else 0,
    )
    copy = generate_session(tmp_path / "long.jsonl", shape, seed=7, legacy=legacy)
    session = Session.open(copy)
    prepared = prepare_compaction(session.path_to(), CompactionSettings())
    assert prepared is not None
    report = compact(session, ExtractiveSummarizer())
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert f"\n{heading}\n" in report.summary
    read_files, modified_files = prepared.file_ops.file_lists()
    assert (report.read_files, report.modified_files) == (read_files, modified_files)
    if read_files:
        assert "<read-files>\n" + "\n".join(read_files) + "\n</read-files>" in report.summary


def test_threshold_percent_and_model_overrides() -> None:
    settings = CompactionSettings(
        threshold_percent=50,
        model_overrides={"openai/gpt-5": {"thresholdPercent": 90, "keepRecentTokens": 5}},
    )
    assert settings.threshold(200_000) == 100_000
    tuned = settings.for_model("openai", "gpt-5")
    assert tuned.threshold(200_000) == 180_000 and tuned.keep_recent_tokens == 5
    assert settings.for_model("anthropic", "x") is settings


def test_settings_files_are_read(tmp_path: Path, isolated_agent_dir: Path) -> None:
    (isolated_agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"reserveTokens": 1000}})
    )
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text(
        json.dumps(
            {
                "compaction": {"keepRecentTokens": 7},
                "pinb": {"compaction": {"summaryModel": "openai/gpt-5-mini"}},
            }
        )
    )
    settings = load_compaction_settings(tmp_path)
    assert (settings.reserve_tokens, settings.keep_recent_tokens, settings.summary_model) == (
        1000,
        7,
        "openai/gpt-5-mini",
    )


def test_compaction_due(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    session.append_message(user("q"))
    session.append_message(assistant("a", total_tokens=9_000))
    assert compaction_due(session, 10_000, CompactionSettings(reserve_tokens=2000))
    assert not compaction_due(session, 20_000, CompactionSettings(reserve_tokens=2000))
    assert not compaction_due(session, None)
    session.append_message({**assistant("x", total_tokens=9_999), "stopReason": "aborted"})
    assert not compaction_due(session, 10_000, CompactionSettings(reserve_tokens=2000))


# --- navigation ----------------------------------------------------------------------------


def _branchy(tmp_path: Path) -> tuple[Session, dict[str, str]]:
    session = Session.create(tmp_path, tmp_path / "s")
    ids = {"u1": session.append_message(user("root question")).id}
    ids["a1"] = session.append_message(assistant("root answer")).id
    ids["u2"] = session.append_message(user("try approach A and never touch setup.py")).id
    ids["a2"] = session.append_message(
        assistant("", tool_calls=[("c", "edit", {"path": "a.py", "oldText": "x", "newText": "y"})])
    ).id
    ids["r2"] = session.append_message(tool_result("c", "edit", "ok")).id
    ids["a3"] = session.append_message(assistant("Approach A failed.")).id
    return session, ids


def test_navigate_with_summary_places_it_at_the_new_position(tmp_path: Path) -> None:
    session, ids = _branchy(tmp_path)
    report = navigate(
        session, ids["a1"], summarize=True, summarizer=ExtractiveSummarizer(), label="checkpoint"
    )
    entry = report.summary_entry
    assert entry is not None and entry.parent_id == ids["a1"]
    assert entry.raw["fromId"] == ids["a3"]  # Pi 1.x records the leaf that was left
    assert entry.raw["summary"].startswith(BRANCH_SUMMARY_PREAMBLE + "(Extractive summary")
    assert entry.raw["details"] == {"readFiles": [], "modifiedFiles": ["a.py"]}
    assert report.summarized_ids == [ids["u2"], ids["a2"], ids["r2"], ids["a3"]]
    assert report.common_ancestor_id == ids["a1"]
    assert session.label(entry.id) == "checkpoint" and report.label_entry is not None
    roles = [m["role"] for m in session.build_context().messages]
    assert roles == ["user", "assistant", "branchSummary"]
    follow = session.append_message(user("approach B"))
    assert follow.parent_id == report.label_entry.id


def test_navigate_to_the_root_user_message_returns_its_text(tmp_path: Path) -> None:
    session, ids = _branchy(tmp_path)
    report = navigate(session, ids["u1"])
    assert report.editor_text == "root question" and session.leaf_id is None
    assert session.build_context().messages == []
    again = Session.open(session.path)  # type: ignore[arg-type]
    assert again.leaf_id is None  # persisted with a leaf entry
    new_root = again.append_message(user("a new start"))
    assert new_root.parent_id is None


def test_empty_branch_summary_when_only_tool_results_were_abandoned(tmp_path: Path) -> None:
    session, ids = _branchy(tmp_path)
    session.branch(ids["a2"])
    session.append_message(tool_result("c", "edit", "again"))
    report = navigate(session, ids["a2"], summarize=True, summarizer=ExtractiveSummarizer())
    assert report.summary == "No content to summarize"
    assert report.summary_entry is not None and report.summary_entry.raw["details"] == {
        "readFiles": [],
        "modifiedFiles": [],
    }


def test_navigate_to_a_descendant_summarizes_nothing(tmp_path: Path) -> None:
    session, ids = _branchy(tmp_path)
    session.branch(ids["a1"])
    model = RecordingModel()
    report = navigate(session, ids["a3"], summarize=True, summarizer=ModelSummarizer(model))
    assert report.summary_entry is None and model.requests == [] and session.leaf_id == ids["a3"]


def test_branch_summary_prompt_and_replace_mode(tmp_path: Path) -> None:
    session, ids = _branchy(tmp_path)
    model = RecordingModel("branch notes")
    report = navigate(
        session,
        ids["a1"],
        summarize=True,
        summarizer=ModelSummarizer(model),
        instructions="ONLY THIS",
        replace_instructions=True,
    )
    prompt = model.requests[0]["messages"][0]["content"][0]["text"]
    assert (
        prompt.endswith("</conversation>\n\nONLY THIS") and model.requests[0]["max_tokens"] is None
    )
    assert (
        report.summary
        == BRANCH_SUMMARY_PREAMBLE + "branch notes\n\n<modified-files>\na.py\n</modified-files>"
    )


def test_compaction_on_a_generated_session_then_navigation(tmp_path: Path) -> None:
    path = generate_session(
        tmp_path / "g.jsonl",
        SessionShape(entries=600, main_depth=400, compaction_every=0, branch_every=30),
        seed=3,
    )
    session = Session.open(path)
    report = compact(
        session, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=2000)
    )
    reopened = Session.open(path)
    assert reopened.build_context().messages[0]["summary"] == report.summary
    assert len(reopened.entries) == len(session.entries)


def test_settings_fit_small_windows() -> None:
    small = CompactionSettings().fit_window(8192)
    assert (small.reserve_tokens, small.keep_recent_tokens) == (2048, 2048)
    assert CompactionSettings().fit_window(200_000) == CompactionSettings()
    assert CompactionSettings().fit_window(None) == CompactionSettings()


def test_one_reader_of_pi_settings_serves_compaction_and_retry(
    tmp_path: Path, isolated_agent_dir: Path
) -> None:
    from pinb.agent.recovery import load_retry_policy

    (isolated_agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"reserveTokens": 1000}, "retry": {"maxRetries": 5}})
    )
    (tmp_path / ".pi").mkdir()
    broken = tmp_path / ".pi" / "settings.json"
    broken.write_text("{not json")
    with pytest.warns(UserWarning, match=f"{broken}: settings ignored"):
        settings = load_compaction_settings(tmp_path)
    with pytest.warns(UserWarning, match="settings ignored"):
        retry = load_retry_policy(tmp_path)
    # The global layer still counts when the project's file is broken.
    assert settings.reserve_tokens == 1000 and retry.max_retries == 5
    broken.write_text(json.dumps({"retry": {"maxRetries": 1}}))
    assert load_retry_policy(tmp_path).max_retries == 1  # the project's layer wins


def _check_run(call_id: str, output: str, *, error: bool) -> list[dict[str, Any]]:
    """An assistant message calling ``bash`` and its result."""
    call = {
        "type": "toolCall",
        "id": call_id,
        "name": "bash",
        "arguments": {"command": "python3 check.py"},
    }
    return [
        {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2},
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "bash",
            "content": [{"type": "text", "text": output}],
            "isError": error,
            "timestamp": 3,
        },
    ]


def _section(summary: str, heading: str) -> list[str]:
    lines = summary.split(f"\n{heading}\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [line for line in lines if not line.startswith("#")]


def test_a_blocker_is_what_failed_last_never_a_passing_line() -> None:
    # A failing check run prints its passes first; the blocker is the failure it names.
    first = "FAIL test_median_even: expected 2.5, got 3\nok test_median_odd\n\nCommand exited with code 1"
    second = (
        "ok test_median_even\nok test_median_odd\nFAIL test_word_count: expected 6, got 8\n\n"
        "Command exited with code 1"
    )
    messages = [
        user("Why do the checks fail?"),
        *_check_run("c1", first, error=True),
        *_check_run("c2", second, error=True),
    ]
    summary = ExtractiveSummarizer().summarize("", messages=messages)
    blocked = _section(summary, "### Blocked")
    assert blocked == ["- ran `python3 check.py`: FAIL test_word_count: expected 6, got 8"]
    assert not any("ok test" in line for line in summary.splitlines() if line.startswith("- "))
    # The same command passing later resolves it: nothing is blocked any more.
    passed = [*messages, *_check_run("c3", "ok test_word_count\n5 passed, 0 failed", error=False)]
    summary = ExtractiveSummarizer().summarize("", messages=passed)
    assert _section(summary, "### Blocked") == ["(none)"]
