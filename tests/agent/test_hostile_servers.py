"""The loop against hostile loopback servers: huge error bodies, deep JSON, a trickling stream."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinb.agent import Agent, AgentConfig, ToolContext, ToolResult
from pinb.agent.events import AgentEnd
from pinb.core import ExtractiveSummarizer, Session
from pinb.llm import ModelRegistry, RetryPolicy, get_model
from pinb.llm.providers.client import ERROR_KEEP
from pinb.testing.llm_server import LLMServer, ServerReply, ToolCallScript


class Echo:
    name = "echo"
    description = "Say it back."

    def __init__(self) -> None:
        self.parameters = {"type": "object", "properties": {"text": {}}, "required": ["text"]}
        self.calls = 0

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.calls += 1
        return ToolResult.text("echo")


async def _no_sleep(delay: float) -> None:
    await asyncio.sleep(0)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        yield srv


def _run(session: Session, server: LLMServer, tools=(), **model: Any) -> AgentEnd:
    chat = get_model(
        "llamacpp/smol",
        base_url=server.openai_base_url,
        registry=ModelRegistry(False),
        context_window=128_000,
        **model,
    )
    agent = Agent(
        session,
        chat,
        list(tools),
        config=AgentConfig(retry=RetryPolicy(sleep=_no_sleep)),
        summarizer=ExtractiveSummarizer(),
    )
    return agent.prompt("go")


def test_a_10_mb_error_body_is_kept_as_a_few_kb(tmp_path: Path, server: LLMServer) -> None:
    server.fail(500, times=4, message="boom " + "x" * 10_000_000)
    session = Session.create(tmp_path, tmp_path / "s")
    end = _run(session, server)
    assert end.stop_reason == "error"
    errors = [m["errorMessage"] for m in end.messages]
    assert len(errors) == 4  # Pi's three retries, each saved
    for error in errors:
        assert error.startswith("500 boom xxx") and len(error) < ERROR_KEEP + 200
        assert (
            "[error body of more than 64.0 KB; its first" in error
            or "[error body of 9.5 MB" in error
        )
    assert session.path.stat().st_size < 100_000  # was 40 MB
    assert len(end.error or "") < ERROR_KEEP + 300


def test_tool_arguments_nested_1000_deep_are_refused_and_the_reply_saved(
    tmp_path: Path, server: LLMServer
) -> None:
    deep = '{"text": ' + "[" * 1000 + "]" * 1000 + "}"
    server.reply("calling", tool_calls=[ToolCallScript("echo", raw_arguments=deep, id="c1")])
    server.reply("I will not do that again.")
    session = Session.create(tmp_path, tmp_path / "s")
    echo = Echo()
    end = _run(session, server, [echo])
    assert end.stop_reason == "stop" and echo.calls == 0
    reopened = Session.open(session.path)
    result = next(e.message for e in reopened.entries if e.role == "toolResult")
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("Invalid arguments for tool echo: the arguments (2,010 characters)")
    assert "deeper than 100 levels" in text
    saved = next(e.message for e in reopened.entries if e.role == "assistant")
    assert saved["content"][1]["name"] == "echo"


def test_a_trickling_stream_meets_the_overall_deadline(tmp_path: Path, server: LLMServer) -> None:
    # one character every 50 ms: no read timeout ever fires
    server.add(ServerReply(text="slow " * 200, chunk_size=1, chunk_delay=0.05))
    session = Session.create(tmp_path, tmp_path / "s")
    started = time.monotonic()
    end = _run(session, server, deadline=1.0)
    took = time.monotonic() - started
    assert end.stop_reason == "error" and 1.0 <= took < 60  # at the deadline; < 60: no hang
    assert "did not finish within the 1 s deadline" in (end.error or "")
    assert len(server.requests) == 1  # not retried: it would trickle again
    message = Session.open(session.path).entries[-1].message
    assert message["stopReason"] == "error" and message["content"][0]["text"].startswith("slow")


def test_the_deadline_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PINB_STREAM_DEADLINE", "42")
    model = get_model("llamacpp/smol", base_url="http://127.0.0.1:9/v1", discover=False)
    assert model.deadline == 42.0
    monkeypatch.setenv("PINB_STREAM_DEADLINE", "0")
    assert (
        get_model("llamacpp/smol", base_url="http://127.0.0.1:9/v1", discover=False).deadline
        is None
    )
    monkeypatch.delenv("PINB_STREAM_DEADLINE")
    assert (
        get_model("llamacpp/smol", base_url="http://127.0.0.1:9/v1", discover=False).deadline
        == 1800
    )
