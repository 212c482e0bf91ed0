"""Failed turns through the real loopback HTTP server: retries, overflow recovery, missing usage, Pi 1.6's file shape."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinb.agent import Agent, AgentConfig, ToolContext, ToolResult
from pinb.agent.events import AgentEnd, CompactionDone, RetryScheduled, UsageEstimated
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.llm import ModelRegistry, RetryPolicy, get_model
from pinb.testing.llm_server import LLMServer, ServerReply, ToolCallScript


class Note:
    """A tool that records its calls (and can stop the run while it works)."""

    name = "note"
    description = "Write a note."

    def __init__(self, on_call: Any = None) -> None:
        self.parameters = {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        }
        self.calls: list[str] = []
        self.on_call = on_call

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.calls.append(arguments["text"])
        if self.on_call is not None:
            self.on_call()
        return ToolResult.text(f"noted {arguments['text']}")


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        yield srv


def _model(server: LLMServer, window: int = 128_000) -> Any:
    return get_model(
        "llamacpp/smol",
        base_url=server.openai_base_url,
        registry=ModelRegistry(False),
        context_window=window,
        timeout=5.0,
    )


def _agent(session: Session, model: Any, tools=(), sleeps: Sleeps | None = None, **config: Any):
    config.setdefault("retry", RetryPolicy(sleep=sleeps or Sleeps()))
    return Agent(
        session, model, list(tools), config=AgentConfig(**config), summarizer=ExtractiveSummarizer()
    )


def _shape(session: Session) -> list[str]:
    """The file's entries after the header, as Pi's readers see their kinds."""
    out = []
    for entry in session.entries:
        if entry.type != "message":
            out.append(entry.type)
        elif entry.role == "assistant":
            out.append("assistant:" + str(entry.message.get("stopReason")))  # type: ignore[union-attr]
        else:
            out.append(str(entry.role))
    return out


def _every_call_answered(session: Session) -> None:
    calls = {
        b["id"]
        for e in session.entries
        if e.role == "assistant"
        for b in e.message["content"]  # type: ignore[index]
        if b.get("type") == "toolCall"
    }
    results = {e.message["toolCallId"] for e in session.entries if e.role == "toolResult"}  # type: ignore[index]
    assert calls <= results, f"calls without a result: {calls - results}"


@pytest.mark.parametrize("cut_request", [0, 1])
def test_a_tool_run_survives_a_stream_cut_mid_reply(
    tmp_path: Path, server: LLMServer, cut_request: int
) -> None:
    call = ToolCallScript("note", {"text": "milk"}, id="call_1")
    replies = [
        ServerReply(text="Noting it.", tool_calls=[call]),
        ServerReply(text="Noted the milk for you."),
    ]
    cut = ServerReply(**{**replies[cut_request].__dict__, "chunk_size": 3, "disconnect_after": 4})
    script = [*replies[:cut_request], cut, *replies[cut_request:]]
    server.add(*script)
    session = Session.create(tmp_path, tmp_path / "s")
    note, sleeps = Note(), Sleeps()
    events = list(_agent(session, _model(server), [note], sleeps).run("remember milk"))
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.stop_reason == "stop"
    assert note.calls == ["milk"]  # the tool ran once
    retries = [e for e in events if isinstance(e, RetryScheduled)]
    assert [r.attempt for r in retries] == [1] and sleeps.delays == [2.0]
    assert "Connection" in retries[0].error
    shape = _shape(session)
    failed = shape.index("assistant:error")
    assert shape[failed + 1] == "context_edit"  # the failed attempt is hidden, as Pi 1.6 does
    assert shape[-1] == "assistant:stop"
    # The retried request does not carry the broken attempt.
    retried = server.requests[cut_request + 1].body["messages"]
    assert all("Noted the mi" not in json.dumps(m) for m in retried)
    assert Session.open(session.path).build_context().messages[-1]["content"][0]["text"] == (  # type: ignore[arg-type]
        "Noted the milk for you."
    )


def test_a_cut_inside_tool_arguments_leaves_no_call_without_a_result(
    tmp_path: Path, server: LLMServer
) -> None:
    call = ToolCallScript("note", {"text": "a long note " * 4}, id="call_9")
    server.add(ServerReply(tool_calls=[call], chunk_size=6, disconnect_in_tool_args=True))
    server.add(ServerReply(tool_calls=[call]), ServerReply(text="done"))
    session = Session.create(tmp_path, tmp_path / "s")
    note = Note()
    end = _agent(session, _model(server), [note]).prompt("write it")
    assert end.stop_reason == "stop" and len(note.calls) == 1
    _every_call_answered(session)
    shape = _shape(session)
    i = shape.index("assistant:error")
    assert shape[i : i + 4] == ["assistant:error", "toolResult", "context_edit", "context_edit"]
    unrun = session.entries[i + 1].message
    assert unrun["isError"] and unrun["content"][0]["text"].startswith("Not run")  # type: ignore[index]
    # Neither the half call nor its result reaches the model again.
    assert "call_9" not in json.dumps(server.requests[1].body["messages"])


@pytest.mark.parametrize(
    "fault",
    [
        {"end_after": 3},  # no [DONE] and no finish after the first bytes
        {"malformed_after": 2},
        {"stream_error": "upstream connect error", "stream_error_after": 2},
    ],
)
def test_other_broken_streams_are_retried(tmp_path: Path, server: LLMServer, fault) -> None:
    server.add(ServerReply(text="first try", chunk_size=2, **fault), ServerReply(text="second try"))
    session = Session.create(tmp_path, tmp_path / "s")
    started = time.monotonic()
    end = _agent(session, _model(server)).prompt("hi")
    assert end.stop_reason == "stop" and end.final_message["content"][0]["text"] == "second try"  # type: ignore[index]
    assert time.monotonic() - started < 10


def test_retries_back_off_and_give_up_with_one_error(tmp_path: Path, server: LLMServer) -> None:
    server.fail(503, times=4, message="overloaded")
    session = Session.create(tmp_path, tmp_path / "s")
    sleeps = Sleeps()
    events = list(_agent(session, _model(server), sleeps=sleeps).run("hi"))
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.stop_reason == "error"
    assert sleeps.delays == [2.0, 4.0, 8.0] and len(server.requests) == 4
    assert end.error is not None and end.error.endswith("(gave up after 3 retries)")
    assert end.error.count("overloaded") == 1
    # The three retried failures are hidden; the last one stays, as Pi keeps it.
    assert _shape(session).count("context_edit") == 3


def test_requests_that_cannot_succeed_are_not_retried(tmp_path: Path, server: LLMServer) -> None:
    server.fail(401, message="invalid api key")
    server.fail(500, message="1 validation error for ChatCompletionRequest")
    session = Session.create(tmp_path, tmp_path / "s")
    agent = _agent(session, _model(server))
    assert agent.prompt("a").stop_reason == "error"
    assert agent.prompt("b").stop_reason == "error"
    assert len(server.requests) == 2


def test_null_content_is_never_sent_so_strict_servers_run_tool_loops(tmp_path: Path) -> None:
    with LLMServer(reject_null_content=True) as server:
        server.reply("", tool_calls=[ToolCallScript("note", {"text": "one"})])
        server.reply("", tool_calls=[ToolCallScript("note", {"text": "two"})])
        server.reply("Both noted.")
        session = Session.create(tmp_path, tmp_path / "s")
        note = Note()
        end = _agent(session, _model(server), [note]).prompt("note twice")
        assert end.stop_reason == "stop" and note.calls == ["one", "two"]


def test_without_usage_a_long_talk_in_a_small_window_compacts_itself(tmp_path: Path) -> None:
    with LLMServer() as server:
        session = Session.create(tmp_path, tmp_path / "s")
        agent = _agent(
            session,
            _model(server, window=4096),
            compaction=CompactionSettings().fit_window(4096),
        )
        estimates: list[UsageEstimated] = []
        compactions: list[CompactionDone] = []
        for i in range(8):
            server.add(ServerReply(text=f"answer {i} " + "w" * 1600, no_usage=True))
            for event in agent.run(f"question {i} " + "q" * 800):
                if isinstance(event, UsageEstimated):
                    estimates.append(event)
                elif isinstance(event, CompactionDone):
                    compactions.append(event)
        assert compactions, "the estimate crossed the threshold and compaction followed"
        assert all(e.usage["input"] > 0 and e.usage["output"] > 400 for e in estimates)
        assert len(estimates) == 8
        compaction = next(e for e in session.entries if e.type == "compaction")
        assert compaction.raw["tokensBefore"] > 2000  # an estimate, never the zeros
        # The file keeps Pi's shape: zero usage on the replies themselves.
        replies = [e.message for e in session.entries if e.role == "assistant"]
        assert all(m["usage"]["totalTokens"] == 0 for m in replies)  # type: ignore[index]


@pytest.mark.parametrize("style", ["sse_error", "drop", "status"])
def test_an_oversized_prompt_fails_fast_and_the_next_one_works(tmp_path: Path, style: str) -> None:
    with LLMServer(context_window=2000, overflow_style=style) as server:
        session = Session.create(tmp_path, tmp_path / "s")
        model = _model(server, window=2000 if style == "status" else 128_000)
        agent = _agent(session, model)
        server.reply("hello back")
        assert agent.prompt("hello").stop_reason == "stop"
        asked = len(server.requests)
        end = agent.prompt("word " * 3000)  # about 3,750 tokens
        # fails fast: the request that overflowed, retried only when the connection dropped
        # (a drop may be the network, so it is asked once more; an overflow said is not)
        assert len(server.requests) - asked == (2 if style == "drop" else 1)
        assert end.stop_reason == "error" and end.error is not None
        assert "your message alone is about 3,750 tokens" in end.error
        assert "next cell works" in end.error
        if style != "status":  # the window was learned from the server's words
            assert model.info.context_window == 2000
        server.reply("still here")
        assert agent.prompt("are you there?").stop_reason == "stop"
        last = server.requests[-1].body["messages"]
        assert "word word" not in json.dumps(last)
        assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]


def test_overflow_compacts_and_retries_once_with_pi_16s_file_shape(tmp_path: Path) -> None:
    with LLMServer(context_window=3000, overflow_style="sse_error") as server:
        session = Session.create(tmp_path, tmp_path / "s")
        agent = _agent(
            session,
            _model(server, window=6000),  # the server is smaller than the model thinks
            compaction=CompactionSettings(keep_recent_tokens=300),
        )
        for i in range(5):
            server.reply(f"answer {i} " + "a" * 2400, usage={"input": 10, "output": 600})
            agent.prompt(f"question {i}")
        server.reply("short answer")
        end = agent.prompt("one more question")
        assert (
            end.stop_reason == "stop" and end.final_message["content"][0]["text"] == "short answer"
        )  # type: ignore[index]
        tail = _shape(session)[-5:]
        assert tail == ["user", "assistant:error", "context_edit", "compaction", "assistant:stop"]


def test_an_aborted_batch_answers_the_calls_that_never_started(tmp_path: Path, server: LLMServer):
    from pinb.llm import CancelToken

    token = CancelToken()
    server.reply(
        "",
        tool_calls=[
            ToolCallScript("note", {"text": "first"}, id="c1"),
            ToolCallScript("bash", {"command": "rm -rf /"}, id="c2"),
        ],
    )
    session = Session.create(tmp_path, tmp_path / "s")
    note = Note(on_call=lambda: token.cancel("stop"))
    end = _agent(session, _model(server), [note]).prompt("go", cancel=token)
    assert end.stop_reason == "aborted"
    results = {
        e.message["toolCallId"]: e.message for e in session.entries if e.role == "toolResult"
    }  # type: ignore[index]
    assert results["c1"]["content"][0]["text"] == "noted first"
    assert results["c2"]["content"][0]["text"] == "Operation aborted"


def test_system_messages_are_stored_once_and_patched(tmp_path: Path, server: LLMServer) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    for _ in range(3):
        server.reply("ok")
    model = _model(server)
    _agent(session, model, [Note()]).prompt("one")
    reopened = Session.open(session.path)
    _agent(reopened, model, [Note()]).prompt("two")  # resumed, nothing changed
    systems = [e.message for e in reopened.entries if e.role == "system"]
    assert len(systems) == 1 and [t["name"] for t in systems[0]["toolsAdded"]] == ["note"]  # type: ignore[index]
    _agent(reopened, model, [], append_system_prompt="Be brief.").prompt("three")
    patch = [e.message for e in reopened.entries if e.role == "system"][-1]
    assert patch["sections"] == {"tools": None, "addendum": "Be brief."}  # type: ignore[index]
    assert patch["toolsRemoved"] == [{"name": "note"}] and "toolsAdded" not in patch  # type: ignore[index]
    sent = server.requests[-1].body
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][0]["content"].endswith("Be brief.")
    assert "Available tools" not in sent["messages"][0]["content"] and "tools" not in sent
    assert [m["role"] for m in sent["messages"]].count("system") == 1


def test_tool_choice_goes_with_the_first_request_only(tmp_path: Path, server: LLMServer) -> None:
    server.reply("", tool_calls=[ToolCallScript("note", {"text": "x"})])
    server.reply("done")
    session = Session.create(tmp_path, tmp_path / "s")
    _agent(session, _model(server), [Note()], tool_choice="required").prompt("note x")
    first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == "required" and "tool_choice" not in second


def test_a_v058_session_steps_back_instead_of_hiding(tmp_path: Path) -> None:
    with LLMServer(context_window=2000, overflow_style="sse_error") as server:
        session = Session.create(tmp_path, tmp_path / "s", pi="0.58")
        agent = _agent(session, _model(server))
        server.reply("hello back")
        agent.prompt("hello")
        assert agent.prompt("word " * 3000).stop_reason == "error"
        server.reply("still here")
        assert agent.prompt("there?").stop_reason == "stop"
    kinds = {e.type for e in Session.open(session.path, pi="0.58").entries}
    assert "context_edit" not in kinds and not any(e.role == "system" for e in session.entries)
    assert "word word" not in json.dumps(server.requests[-1].body)


def test_an_estimated_input_counts_what_was_sent_not_the_reply(tmp_path: Path) -> None:
    # The session extends its kept context when the reply is appended; the estimate of
    # what was sent must not take the reply in too.
    from pinb.core import estimate_tokens

    with LLMServer() as server:
        session = Session.create(tmp_path, tmp_path / "s")
        agent = _agent(session, _model(server))
        server.add(ServerReply(text="a long answer " + "w" * 4000, no_usage=True))
        estimates = [e for e in agent.run("short question") if isinstance(e, UsageEstimated)]
        assert len(estimates) == 1
        context = session.build_context()
        reply = context.messages[-1]
        system = context.system_message()
        sent = [m for m in context.messages[:-1] if m.get("role") != "system"]
        expected = estimate_tokens(system) + sum(estimate_tokens(m) for m in sent)
        assert estimates[0].usage["input"] == expected
        assert estimates[0].usage["output"] == estimate_tokens(reply) > 1000


def test_an_estimate_counts_the_tool_schemas_only_when_they_were_sent(tmp_path: Path) -> None:
    # Issue 22: "~1,870 tokens of system prompt and tool schemas when the request carried
    # no tools". The estimate of a reply without usage, and the context's own estimate,
    # count the prompt as sent: with the schemas while the tools go along, without after.
    from pinb.agent.tools import default_tools
    from pinb.core.context.accounting import context_usage
    from pinb.core.context.system_prompt import system_prompt_tokens

    with LLMServer() as server:
        session = Session.create(tmp_path, tmp_path / "s")
        model = _model(server)
        sizes = []
        for tools in (default_tools(tmp_path), []):
            server.add(ServerReply(text="fine", no_usage=True))
            agent = _agent(session, model, tools)
            estimate = next(e for e in agent.run("a question") if isinstance(e, UsageEstimated))
            body = server.requests[-1].body
            schemas = -(-len(json.dumps(body.get("tools", []))) // 4) if body.get("tools") else 0
            context = session.build_context()
            sizes.append((estimate.usage["input"], schemas, system_prompt_tokens(context.messages)))
        (with_tools, schemas, prompt_before), (without, none, prompt_after) = sizes
        assert schemas > 500 and none == 0  # the second request carried no tools
        assert prompt_before - prompt_after > 500  # and its prompt no tool schema
        # The second estimate holds more conversation, yet less prompt: no schema counted.
        assert without < with_tools - 500
        usage = context_usage(session.build_context())
        assert usage.measure == "estimate" and usage.by_role["system"] == prompt_after


def _small_window_agent(session: Session, model: Any, cwd: Path, summarizer: Any) -> Agent:
    """An agent with every tool on a 4,096-token window, compaction fitted to it."""
    from pinb.agent.tools import all_tools

    return Agent(
        session,
        model,
        all_tools(cwd),
        config=AgentConfig(
            compaction=CompactionSettings().fit_window(4096), retry=RetryPolicy(sleep=Sleeps())
        ),
        summarizer=summarizer,
    )


def test_a_small_model_that_writes_to_its_limit_on_4096_tokens_never_gets_stuck(
    tmp_path: Path,
) -> None:
    # SmolLM2-135M on llama-cpp-python --n_ctx 4096, by hand: every reply and every summary
    # ran to its limit; the system prompt and seven tools take about half the window.
    from pinb.core.compaction.summarize import ModelSummarizer

    with LLMServer(
        context_window=4096,
        overflow_style="drop",
        window_endpoint="llama-cpp-python",
        writes_to_limit=True,
    ) as server:
        session = Session.create(tmp_path, tmp_path / "s")
        model = _model(server, window=4096)
        agent = _small_window_agent(session, model, tmp_path, ModelSummarizer(model))
        ends = [agent.prompt(f"chapter {i}: write at least 800 words") for i in range(6)]
        # Each prompt is answered: a compaction that makes room for the reply keeps less
        # rather than end larger than it began (the prompts sit at the window's edge).
        assert [end.stop_reason for end in ends] == ["length"] * 6, [e.error for e in ends]
        compactions = [e for e in session.entries if e.type == "compaction"]
        assert len(compactions) >= 2
        # every summary the model cut was written by the extractive summarizer, and says so
        assert all("ran past its" in e.raw["summary"] for e in compactions)
        posted = [r.body for r in server.requests if r.method == "POST"]
        sent = [(round(len(json.dumps(body)) / 4), body.get("max_tokens")) for body in posted]
        for body in posted:
            limit = body["max_tokens"]
            prompt = len(json.dumps(body)) / 4
            assert prompt + limit <= 4096, sent  # a reply can never fill the window
            assert limit >= 64  # never a limit of a few tokens (a tool call cut mid-arguments)
        assert not any("overflow" in str(end.error or "") for end in ends)


def test_a_prompt_that_would_leave_the_reply_no_room_compacts_before_it_is_sent(
    tmp_path: Path,
) -> None:

    with LLMServer(context_window=4096) as server:
        session = Session.create(tmp_path, tmp_path / "s")
        agent = _small_window_agent(
            session, _model(server, window=4096), tmp_path, ExtractiveSummarizer()
        )
        server.reply("first answer " + "a" * 1200)
        assert agent.prompt("first question " + "q" * 1200).stop_reason == "stop"
        server.reply("second answer")
        # below the threshold before it, but the prompt itself fills the window
        end = agent.prompt("please read this: " + "p" * 5000)
        assert end.stop_reason == "stop"
        assert [e.type for e in session.entries].count("compaction") == 1
        last = server.requests[-1].body
        room = 4096 - len(json.dumps(last)) / 4
        assert last["max_tokens"] >= 256 and last["max_tokens"] <= room


def test_a_paste_that_leaves_no_room_even_after_compacting_is_not_sent_and_the_next_works(
    tmp_path: Path,
) -> None:
    """Issue 35: 8,000 characters on 4,096 tokens went out with max_tokens 1 ("The")."""
    with LLMServer(context_window=4096) as server:
        session = Session.create(tmp_path, tmp_path / "s")
        agent = _small_window_agent(
            session, _model(server, window=4096), tmp_path, ExtractiveSummarizer()
        )
        server.reply("first answer " + "a" * 1200)
        assert agent.prompt("first question " + "q" * 1200).stop_reason == "stop"
        sent = len(server.requests)
        # Below the window alone (no overflow), but with the system prompt and seven tools
        # no compaction can leave a reply of any use.
        end = agent.prompt("please read this: " + "p" * 9000)
        assert end.stop_reason == "error" and end.error is not None
        assert end.error.startswith("No room for a reply: even after compacting")
        assert "was left out of the context" in end.error
        assert len(server.requests) == sent  # nothing sent with a limit of a few tokens
        assert [e.type for e in session.entries].count("compaction") == 1
        server.reply("second answer")
        assert agent.prompt("a short question").stop_reason == "stop"
        last = server.requests[-1].body
        assert "pppp" not in json.dumps(last) and last["max_tokens"] >= 256
