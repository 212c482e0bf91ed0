"""The offline demo model against the real agent and tools: it does what the prompt asks,
in its scripted way, says it is scripted, and never repeats what a tool just showed."""

from __future__ import annotations

from pathlib import Path

from pinb.agent import Agent
from pinb.agent.tools import all_tools
from pinb.core import Session
from pinb.llm.providers.offline import DEMO_LABEL, OfflineDemoModel
from pinb.testing.story import PROJECT, write_project


def _run(tmp_path: Path, prompt: str) -> tuple[list[tuple[str, dict[str, object]]], list[str], str]:
    """(tool calls, tool outputs, final answer) of one prompt in the story's project."""
    project = write_project(tmp_path / "project")
    session = Session.create(project, tmp_path / "sessions")
    Agent(session, OfflineDemoModel(), all_tools(project), cwd=project).prompt(prompt)
    calls, outputs, texts = [], [], []
    for entry in session.entries:
        message = entry.message or {}
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                calls.append((block["name"], block["arguments"]))
            if isinstance(block, dict) and block.get("type") == "text":
                (outputs if message.get("role") == "toolResult" else texts).append(block["text"])
    return calls, outputs, texts[-1]


def test_asked_to_run_the_tests_it_runs_them(tmp_path: Path) -> None:
    calls, outputs, answer = _run(tmp_path, "Please run the tests and tell me what fails.")
    assert [name for name, _ in calls] == ["bash"]
    assert "check.py" in str(calls[0][1]["command"])
    assert "FAIL test_median_even" in outputs[0]  # the project's real checks ran
    assert answer.startswith(DEMO_LABEL)
    assert "2 failed (`test_median_even`, `test_word_count_contractions`)" in answer
    assert "it exited with code 1" in answer
    # Nothing the tool printed is printed again: no line of its output is in the answer.
    assert not [line for line in outputs[0].splitlines() if len(line) > 20 and line in answer]


def test_a_command_in_backticks_is_run_and_a_named_file_read(tmp_path: Path) -> None:
    calls, _, answer = _run(tmp_path, "Run `python3 check.py` for me.")
    assert calls == [("bash", {"command": "python3 check.py"})]
    calls, outputs, answer = _run(tmp_path / "b", "Read textstats/core.py and explain it.")
    assert calls == [("read", {"path": "textstats/core.py"})]
    assert outputs[0] == PROJECT["textstats/core.py"]
    assert answer.startswith(DEMO_LABEL) and "`median`" in answer and "`word_count`" in answer
    assert "def median" not in answer  # described, not quoted


def test_a_question_without_a_file_or_command_uses_no_tool(tmp_path: Path) -> None:
    calls, _, answer = _run(tmp_path, "What is a good name for a word counter?")
    assert calls == []
    assert answer.startswith(DEMO_LABEL) and "Configure a real model" in answer
    calls, _, answer = _run(tmp_path / "b", "Which files are in this folder?")
    assert [name for name, _ in calls] == ["ls"]
    assert "file(s) and" in answer and "check.py" not in answer


def test_a_command_that_prints_nothing_is_said_to_print_nothing(tmp_path: Path) -> None:
    # The bash tool's result for an empty output is "(no output)": not a line it printed.
    calls, outputs, answer = _run(tmp_path, "Run `true` please")
    assert calls == [("bash", {"command": "true"})]
    assert outputs == ["(no output)"]
    assert "The command printed nothing; it succeeded." in answer
