"""The agent loop shapes the session file as Pi does (spec §10), with a scripted model."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pinb.agent import Agent, AgentConfig, ToolContext, ToolResult
from pinb.agent.events import AgentEnd, CompactionDone, EntrySaved, ModelEvent, ToolEnd
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.llm import CancelToken, TextDelta
from pinb.testing import Reply, ScriptedLLM


class Echo:
    name = "echo"
    description = "Echo the text back."

    def __init__(self) -> None:
        self.parameters = {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        }
        self.calls: list[dict[str, Any]] = []

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.calls.append(arguments)
        if arguments["text"] == "boom":
            raise RuntimeError("exploded")
        return ToolResult.text(f"echo: {arguments['text']}", details={"n": len(self.calls)})


class Meet:
    """A read-only tool whose calls wait for each other: they finish only if all run at once."""

    name = "read"  # read-only: may run alongside others
    description = "Wait for the others."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def __init__(self, calls: int) -> None:
        self.barrier = threading.Barrier(calls, timeout=60)  # a guard against a hang only

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            return ToolResult.text("ran alone")
        return ToolResult.text("met the others")


def _lines(session: Session) -> list[dict[str, Any]]:
    assert session.path is not None
    return [json.loads(line) for line in session.path.read_text().splitlines()]


def test_a_prompt_with_tool_calls_writes_pis_chain(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    llm = ScriptedLLM().reply_tool_call("echo", {"text": "hi"}).reply("All done.")
    echo = Echo()
    events = list(
        Agent(session, llm, [echo], config=AgentConfig(thinking_level="low")).run("say hi")
    )
    kinds = [
        line["type"] + ":" + line.get("message", {}).get("role", "") for line in _lines(session)
    ]
    assert kinds == [
        "session:",
        "model_change:",
        "thinking_level_change:",
        "message:system",
        "message:user",
        "message:assistant",
        "message:toolResult",
        "message:assistant",
    ]
    system, user, call, result, final = (line["message"] for line in _lines(session)[3:])
    # Pi 1.x: the prompt as sections and the tools as declarations, before the prompt.
    assert system["content"] == "" and "preamble" in system["sections"]
    assert [t["name"] for t in system["toolsAdded"]] == ["echo"]
    assert system["toolsAdded"][0]["parameters"]["required"] == ["text"]
    assert user["content"] == [{"type": "text", "text": "say hi"}]
    assert result["toolCallId"] == call["content"][-1]["id"] and result["toolName"] == "echo"
    assert result["content"] == [{"type": "text", "text": "echo: hi"}] and result["details"] == {
        "n": 1
    }
    assert list(result) == [
        "role",
        "toolCallId",
        "toolName",
        "content",
        "details",
        "isError",
        "timestamp",
    ]
    assert final["content"][0]["text"] == "All done."
    assert any(isinstance(e, ModelEvent) and isinstance(e.event, TextDelta) for e in events)
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.stop_reason == "stop" and len(end.messages) == 2
    # The second request carried the tool result; the system prompt names the tool.
    assert llm.calls[1].messages[-1]["role"] == "toolResult"
    assert "- echo: Echo the text back." in (llm.calls[0].system_prompt or "")
    assert llm.calls[0].thinking_level == "low"
    # A second prompt does not repeat model/thinking entries.
    llm.reply("again")
    Agent(session, llm, [echo], config=AgentConfig(thinking_level="low")).prompt("more")
    assert [line["type"] for line in _lines(session)].count("model_change") == 1


def test_tool_errors_become_error_results(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = (
        ScriptedLLM()
        .add(Reply(tool_calls=[("echo", {"text": "boom"}), ("nope", {}), ("echo", {})]))
        .reply("ok")
    )
    Agent(session, llm, [Echo()]).prompt("go")
    results = [e.message for e in session.entries if e.role == "toolResult"]
    assert [r["isError"] for r in results] == [True, True, True]
    texts = [r["content"][0]["text"] for r in results]
    assert texts[0] == "RuntimeError: exploded"
    assert texts[1] == "Tool nope not found"
    assert "missing text" in texts[2]
    assert all(r["details"] == {} for r in results)


def test_read_only_calls_run_concurrently(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = (
        ScriptedLLM().add(Reply(tool_calls=[("read", {}), ("read", {}), ("read", {})])).reply("ok")
    )
    Agent(session, llm, [Meet(3)]).prompt("go")
    results = [e.message for e in session.entries if e.role == "toolResult"]
    assert [r["content"][0]["text"] for r in results] == ["met the others"] * 3


def test_error_reply_is_saved_and_ends_the_run(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM().reply_error("401 invalid api key")  # not worth a retry
    end = Agent(session, llm).prompt("go")
    assert end.stop_reason == "error" and end.error == "401 invalid api key"
    assert len(llm.calls) == 1
    assert session.entries[-1].message["stopReason"] == "error"  # type: ignore[index]


def test_overflow_compacts_and_retries_once(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM()
    for i in range(6):
        llm.reply(f"answer {i} " + "x" * 2000)
    agent = Agent(
        session,
        llm,
        summarizer=ExtractiveSummarizer(),
        config=AgentConfig(compaction=CompactionSettings(keep_recent_tokens=600)),
    )
    for i in range(6):
        agent.prompt(f"question {i}")
    llm.reply_overflow().reply("fits now")
    events = list(agent.run("one more"))
    compactions = [e for e in events if isinstance(e, CompactionDone)]
    assert len(compactions) == 1 and compactions[0].report.reason == "overflow"
    assert isinstance(events[-1], AgentEnd) and events[-1].stop_reason == "stop"
    roles = [
        e.type
        if e.type != "message"
        else e.message["stopReason"]
        if e.role == "assistant"
        else e.role
        for e in session.path_to()
    ][-5:]  # type: ignore[index]
    # Pi 1.6: the failed reply is hidden before the compaction, then the retry.
    assert roles == ["user", "error", "context_edit", "compaction", "stop"]
    # The retried request saw the summary first.
    assert (
        llm.calls[-1]
        .messages[0]["content"][0]["text"]
        .startswith("The conversation history before this point")
    )
    # A second overflow in the same prompt is not retried again.
    llm.reply_overflow().reply_overflow()
    assert agent.prompt("and again").stop_reason == "error"


def test_threshold_compaction_before_a_prompt(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM(context_window=3000)
    llm.add(
        *(
            Reply(
                text="y" * 800,
                usage={"input": 2900 * (i + 1) // 3, "output": 10, "cacheRead": 0, "cacheWrite": 0},
            )
            for i in range(3)
        )
    )
    agent = Agent(
        session,
        llm,
        summarizer=ExtractiveSummarizer(),
        config=AgentConfig(
            compaction=CompactionSettings(reserve_tokens=500, keep_recent_tokens=200)
        ),
    )
    reasons = []
    for i in range(3):
        reasons += [
            e.report.reason
            for e in agent.run(f"q{i} " + "z" * 400)
            if isinstance(e, CompactionDone)
        ]
    assert "threshold" in reasons
    assert any(e.type == "compaction" for e in session.path_to())


def test_cancel_saves_an_aborted_reply(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    session.append_message({"role": "user", "content": "earlier", "timestamp": 1})
    llm = ScriptedLLM().reply("a" * 400, delay=0.02, chunk_size=4)
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    end = Agent(session, llm).prompt("long answer please", cancel=token)
    assert end.stop_reason == "aborted"
    last = session.entries[-1].message
    assert last is not None and last["stopReason"] == "aborted"
    assert 0 < len(last["content"][0]["text"]) < 400  # the partial text is kept
    # The session stays usable.
    llm.reply("next")
    assert Agent(session, llm).prompt("next").stop_reason == "stop"


def test_closing_the_run_cancels_and_saves(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM().reply("b" * 400, delay=0.02, chunk_size=4)
    with pytest.raises(KeyboardInterrupt), contextlib.closing(Agent(session, llm).run("go")) as run:
        for event in run:
            if isinstance(event, ModelEvent):
                raise KeyboardInterrupt
    assert session.entries[-1].message["stopReason"] == "aborted"  # type: ignore[index]


def test_sigint_while_waiting_aborts_cleanly(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM().reply("c" * 400, delay=0.02, chunk_size=4)
    threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    seen = []
    with pytest.raises(KeyboardInterrupt):
        for event in Agent(session, llm).run("go"):
            seen.append(event)
    last = session.entries[-1].message
    assert last is not None and last["stopReason"] == "aborted" and seen


def test_entries_are_reported_as_saved(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM().reply_tool_call("echo", {"text": "x"}).reply("done")
    events = list(Agent(session, llm, [Echo()]).run("go"))
    saved = [e.entry for e in events if isinstance(e, EntrySaved)] + [
        e.entry for e in events if isinstance(e, ToolEnd)
    ]
    assert {e.id for e in saved} == {e.id for e in session.entries}
