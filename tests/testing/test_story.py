"""The demo story: deterministic, valid Pi data, and true to what the real tools return."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pinb.agent import Agent, AgentConfig
from pinb.agent.tools import default_tools
from pinb.analysis.retention.report import retention_report
from pinb.core import ExtractiveSummarizer, Session
from pinb.core.context.accounting import context_usage
from pinb.core.context.tokens import context_tokens_of_usage, estimate_tokens
from pinb.testing.story import (
    EXTRA_TASKS,
    MAIN_TASKS,
    PROJECT,
    READING_SETTINGS,
    READING_WINDOW,
    prompts,
    story_model,
    story_tasks,
    write_project,
    write_story_session,
    write_story_sessions,
)
from pinb.views import CompactionView
from tests.core.test_pi_conformance import compare
from tests.pi.reference import PiReference


def _results(session: Session) -> list[tuple[str, str, bool]]:
    """(tool, text, is_error) of every tool result on the active path, in order."""
    out = []
    for entry in session.path_to():
        message = entry.message or {}
        if message.get("role") == "toolResult":
            text = "".join(b.get("text", "") for b in message["content"])
            out.append((message["toolName"], text, bool(message["isError"])))
    return out


def test_the_same_seed_writes_the_same_file(tmp_path: Path) -> None:
    first = write_story_session(tmp_path / "a")
    again = write_story_session(tmp_path / "b")
    other = write_story_session(tmp_path / "c", seed=1)
    assert first.path is not None and again.path is not None and other.path is not None
    assert first.path.name == again.path.name
    assert first.path.read_bytes() == again.path.read_bytes()
    assert first.path.read_bytes() != other.path.read_bytes()


def test_the_story_has_a_wrong_turn_a_branch_summary_and_real_usage(tmp_path: Path) -> None:
    session = write_story_session(tmp_path)
    kinds = [e.type for e in session.entries]
    assert kinds.count("branch_summary") == 1 and kinds.count("compaction") == 0
    summary = next(e for e in session.entries if e.type == "branch_summary")
    path = session.path_to()
    assert summary in path  # the model sees what the wrong turn taught
    assert session.labels[summary.id] == "whitespace split: abandoned"
    # The abandoned branch is in the file, off the active path.
    abandoned = [e for e in session.entries if e not in path and e.type == "message"]
    assert any("Now fix word_count." in str(e.message) for e in abandoned)
    # Usage grows with the context and is what the views compare with chars/4: the last
    # reported usage is the system prompt plus the context's estimate.
    usage = context_usage(session.build_context())
    assert usage.measure == "usage+estimate" and usage.trailing_tokens == 0
    assert usage.tokens > usage.estimated_tokens > 1_000
    replies = [e.message for e in path if e.role == "assistant"]
    totals = [m["usage"]["totalTokens"] for m in replies]
    assert totals == sorted(totals) and all(m["usage"]["cost"]["total"] > 0 for m in replies)
    assert replies[-1]["usage"]["cacheRead"] > 0  # the previous prompt was cached


def test_a_small_window_compacts_after_the_prompt_that_crosses_it(tmp_path: Path) -> None:
    session = write_story_session(tmp_path, context_window=5_000)
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert len(compactions) == 1
    entry = compactions[0]
    assert entry.raw["tokensBefore"] > 3_750  # above the fitted threshold
    before = session.path_to(entry.parent_id)[-1]
    assert before.role == "assistant"  # after a prompt's run, as the agent does
    assert "Extractive summary" in entry.raw["summary"]


def test_every_variant_is_a_valid_session(tmp_path: Path) -> None:
    variants: list[dict[str, Any]] = [
        {"tasks": story_tasks(wrong_turn=False)},
        {"tasks": story_tasks(extras=EXTRA_TASKS), "context_window": 4_096},
        {"model": "openai/gpt-4.1-mini", "thinking": False},
        {"model": "anthropic/claude-haiku-4-5", "tasks": list(MAIN_TASKS[:2])},
    ]
    for i, options in enumerate(variants):
        session = write_story_session(tmp_path / str(i), seed=i, **options)
        assert session.path is not None
        reopened = Session.open(session.path)
        assert reopened.problems == []
        assert reopened.leaf_id == session.leaf_id
        assert reopened.build_context().messages == session.build_context().messages
    with pytest.raises(ValueError, match="unknown story model"):
        write_story_session(tmp_path / "x", model="acme/brain")


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"context_window": 4_096},
        {"context_window": READING_WINDOW, "settings": READING_SETTINGS, "reading": True},
    ],
    ids=["story", "compacted", "reading"],
)
def test_pi_reads_the_story_as_pinb_does(
    tmp_path: Path, options: dict[str, Any], pi16: PiReference
) -> None:
    options = dict(options)
    tasks = story_tasks(extras=EXTRA_TASKS[:2], reading=options.pop("reading", False))
    session = write_story_session(tmp_path, tasks=tasks, **options)
    assert session.path is not None
    assert compare(session.path, "1.6.0", pi16) == []


def test_the_simulated_tools_return_what_the_real_tools_return(tmp_path: Path) -> None:
    # The file writer simulates read, edit and bash; an agent with the real tools, fed the
    # same steps, must see exactly the same results (python3 runs the project's checks).
    if shutil.which("python3") is None:
        pytest.fail("python3 is needed on PATH: the story's checks run with it")
    tasks = story_tasks(wrong_turn=False, extras=EXTRA_TASKS)
    project = write_project(tmp_path / "project")
    live = Session.create(project, tmp_path / "live")
    agent = Agent(live, story_model(tasks), default_tools(project))
    for prompt in prompts(tasks):
        agent.prompt(prompt)
    written = write_story_session(tmp_path / "written", tasks=tasks)
    assert _results(live) == _results(written)
    assert len(_results(written)) >= 15
    # The story ends with every check passing, in the real project too.
    assert "5 passed, 0 failed" in _results(live)[-1][1]
    assert (project / "textstats/core.py").read_text() != PROJECT["textstats/core.py"]


def test_many_variations_in_pi_folders(tmp_path: Path) -> None:
    sessions = write_story_sessions(tmp_path / "a", 12)
    again = write_story_sessions(tmp_path / "b", 12)
    names = sorted(str(s.path.relative_to(tmp_path / "a")) for s in sessions if s.path)
    assert names == sorted(str(s.path.relative_to(tmp_path / "b")) for s in again if s.path)
    assert all(name.startswith("--home-dev-") for name in names)
    assert len({s.id for s in sessions}) == 12
    sizes = {len(s.entries) for s in sessions}
    models = {e.message["model"] for s in sessions for e in s.entries if e.role == "assistant"}
    assert len(sizes) > 4 and len(models) > 1
    for session in sessions:
        assert session.path is not None
        assert Session.open(session.path).problems == []


def test_the_sessions_are_named_after_what_they_did(tmp_path: Path) -> None:
    sessions = write_story_sessions(tmp_path, 12)
    names = [Session.open(s.path).name for s in sessions if s.path]
    assert len(names) == 12 and all(names)
    assert len(set(names)) > 6  # a listing or a plot tells them apart
    for session, name in zip(sessions, names, strict=True):
        assert session.path is not None and name is not None
        project = session.path.parent.name.removeprefix("--home-dev-").removesuffix("--")
        assert name.startswith(f"{project}: ")
        # The name is the user's words, not the first prompt the listings fall back to.
        assert "The checks in this project" not in name
    assert any("(wrong turn)" in n for n in names if n) and any("question" in n for n in names if n)


def test_the_branch_summary_lists_its_files_once(tmp_path: Path) -> None:
    summary = next(e for e in write_story_session(tmp_path).entries if e.type == "branch_summary")
    text = summary.raw["summary"]
    assert text.count("<modified-files>") == 1 and text.count("<read-files>") == 1
    assert summary.raw["details"]["modifiedFiles"] == ["textstats/core.py"]


def test_a_story_of_the_same_seed_beside_the_variations_has_an_id_of_its_own(
    tmp_path: Path,
) -> None:
    # Notebook 06 writes 40 variations, then the whole story with seed 7 into one folder.
    sessions = write_story_sessions(tmp_path, 10)
    story = write_story_session(tmp_path / "--home-dev-textstats--", seed=7)
    assert len({s.id for s in [*sessions, story]}) == 11
    again = write_story_session(tmp_path / "again", seed=7)
    assert again.id == story.id  # still the same file for the same story


def test_a_small_window_is_a_local_models_and_models_json_says_which(tmp_path: Path) -> None:
    import json

    from pinb.testing.story import local_model, models_json

    session = write_story_session(tmp_path, context_window=4_096)
    model = session.current_context().model or {}
    assert f"{model['provider']}/{model['modelId']}" == local_model(4_096)
    costs = [e.message["usage"]["cost"]["total"] for e in session.entries if e.role == "assistant"]
    assert costs and not any(costs)  # a local server costs nothing
    declared = models_json([4_096, 5_000])["providers"]["ollama"]
    assert {m["id"]: m["contextWindow"] for m in declared["models"]} == {
        "textstats-coder-4096": 4_096,
        "textstats-coder-5000": 5_000,
    }
    assert declared["api"] and declared["apiKey"]  # Pi 1.6 needs both
    json.dumps(declared)


def _reading_story(tmp_path: Path, *, agent: bool) -> Session:
    """The story with its weeks of notes on the window where compaction matters: written
    directly, or played by a real agent with the real tools on the real project."""
    tasks = story_tasks(wrong_turn=False, reading=True)
    if not agent:
        return write_story_session(
            tmp_path, context_window=READING_WINDOW, settings=READING_SETTINGS, tasks=tasks
        )
    project = write_project(tmp_path / "project", notes=True)
    session = Session.create(project, tmp_path / "sessions")
    runner = Agent(
        session,
        story_model(tasks, context_window=READING_WINDOW),
        default_tools(project),
        config=AgentConfig(compaction=READING_SETTINGS),
        summarizer=ExtractiveSummarizer(),
    )
    for prompt in prompts(tasks):
        runner.prompt(prompt)
    return session


@pytest.mark.parametrize("agent", [False, True], ids=["written", "agent"])
def test_the_reading_story_compacts_as_a_real_session_does(tmp_path: Path, agent: bool) -> None:
    # Issue 42: a compaction that saves 6% teaches nothing. Here the reads fill the window,
    # the first compaction removes most of it, its summary is far shorter than what it
    # replaced, it loses facts for real, and the file still holds them.
    session = _reading_story(tmp_path, agent=agent)
    compactions = [e for e in session.path_to() if e.type == "compaction"]
    assert len(compactions) == 2
    first = CompactionView(compactions[0].id, session, context_window=READING_WINDOW)
    report = first.report
    assert report.tokens_saved >= 0.6 * report.estimated_before  # the view's own figure
    assert report.tokens_before > READING_WINDOW - READING_SETTINGS.reserve_tokens
    assert report.is_split_turn  # a week's read is larger than the keep: the cut is mid-turn
    kept = retention_report(session, compactions[0])
    replaced = sum(
        estimate_tokens(e.message) for e in session.path_to() if e.id in set(report.summarized_ids)
    )
    assert 0 < kept.summary_tokens < replaced / 10
    gone = [v for v in kept.lost if not v.kept_messages]
    assert gone  # lost by the summary and not in the kept messages: forgotten
    # The file still holds each: the entry it cites, at its line, off the context.
    assert session.path is not None
    lines = session.path.read_text(encoding="utf-8").splitlines()
    context_ids = {p.entry.id for p in session.build_context(compactions[0].id).entries}
    for verdict in gone:
        fact = verdict.fact
        assert fact.line is not None and json.loads(lines[fact.line - 1])["id"] == fact.entry_id
        assert fact.entry_id not in context_ids
    # No request of the story exceeds the window (a provider would refuse it).
    replies = [e.message for e in session.path_to() if e.role == "assistant"]
    assert max(context_tokens_of_usage(m["usage"]) for m in replies) < READING_WINDOW


def test_the_reading_tools_return_what_the_real_tools_return(tmp_path: Path) -> None:
    # stats.py prints what the story says it prints, before and after word_count's fix.
    live = _reading_story(tmp_path / "live", agent=True)
    written = write_story_session(
        tmp_path / "written", tasks=story_tasks(wrong_turn=False, reading=True)
    )
    assert _results(live) == _results(written)
    stats = [text for tool, text, _ in _results(written) if "words; top words" in text]
    assert len(stats) == 4 and stats[0] != stats[-1]


def test_a_story_never_makes_a_request_above_its_window(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exceeds its 12,000-token window"):
        write_story_session(tmp_path, context_window=12_000, tasks=story_tasks(reading=True))
