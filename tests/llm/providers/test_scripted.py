"""ScriptedLLM follows the ChatModel protocol and records what it was sent."""

from __future__ import annotations

import asyncio

import pytest

from pinb.llm import (
    CancelToken,
    ChatModel,
    ContextOverflowError,
    Done,
    RequestOptions,
    TextDelta,
    ToolCallEnd,
    ToolSpec,
)
from pinb.llm.providers.scripted import Reply, ScriptedLLM, ScriptExhaustedError

from ..helpers import arun, user


def test_protocol_and_recording():
    llm = ScriptedLLM(["first"])
    assert isinstance(llm, ChatModel)
    msgs = [user("hello")]
    message = llm.complete(
        msgs,
        system_prompt="sys",
        tools=[{"name": "read", "description": "d"}],
        max_tokens=99,
        thinking_level="low",
    )
    assert message["content"] == [{"type": "text", "text": "first"}]
    assert list(message)[:8] == [
        "role",
        "content",
        "api",
        "provider",
        "model",
        "usage",
        "stopReason",
        "timestamp",
    ]
    call = llm.calls[0]
    assert call.messages == msgs and call.messages is not msgs
    assert call.options == RequestOptions(
        system_prompt="sys", tools=(ToolSpec("read", "d"),), max_tokens=99, thinking_level="low"
    )
    # The fields are still readable one by one, as before they were one value.
    assert call.system_prompt == "sys" and call.max_tokens == 99 and call.thinking_level == "low"
    assert call.tools == [ToolSpec("read", "d")] and call.tool_choice is None
    msgs[0]["content"][0]["text"] = "mutated later"
    assert call.messages[0]["content"][0]["text"] == "hello"


def test_thinking_tool_calls_and_events():
    llm = ScriptedLLM().reply(
        "ok", thinking="hmm", thinking_signature="s1", tool_calls=[("read", {"path": "a"})]
    )
    events = arun(_collect(llm, [user("q")]))
    assert isinstance(events[-1], Done)
    assert [e.arguments for e in events if isinstance(e, ToolCallEnd)] == [{"path": "a"}]
    assert events[-1].message["content"] == [
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "s1"},
        {"type": "text", "text": "ok"},
        {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a"}},
    ]
    assert events[-1].message["stopReason"] == "toolUse"


def test_errors_and_overflow():
    llm = ScriptedLLM().reply_error("529 overloaded").reply_overflow().reply_overflow()
    err = llm.complete([user("q")])
    assert err["stopReason"] == "error" and err["errorMessage"] == "529 overloaded"
    events = llm.stream([user("q")])
    done = next(e for e in events if isinstance(e, Done))
    assert done.overflow
    with pytest.raises(ContextOverflowError):
        llm.complete([user("q")], raise_on_overflow=True)


def test_dynamic_reply_and_exhaustion():
    llm = ScriptedLLM([lambda call: f"you said {call.messages[-1]['content'][0]['text']}"])
    assert llm.complete([user("ping")])["content"][0]["text"] == "you said ping"
    with pytest.raises(ScriptExhaustedError, match="no reply is queued"):
        llm.complete([user("again")])
    assert len(llm.calls) == 2


def test_usage_given_or_estimated():
    llm = ScriptedLLM(cost=None).reply("x", usage={"input": 5, "output": 2}).reply("y" * 40)
    assert llm.complete([user("q")])["usage"]["totalTokens"] == 7
    assert llm.complete([user("q")])["usage"]["output"] > 0


def test_cancel_keeps_partial():
    llm = ScriptedLLM([Reply(text="abcdefghijklmnop", chunk_size=2)])
    token = CancelToken()

    async def run():
        out = []
        async for e in llm.astream([user("q")], cancel=token):
            out.append(e)
            if isinstance(e, TextDelta) and len(out) == 3:
                token.cancel()
        return out

    events = arun(run())
    message = events[-1].message
    assert message["stopReason"] == "aborted" and message["content"] == [
        {"type": "text", "text": "abcdef"}
    ]


def test_sync_facade_inside_a_running_loop():
    llm = ScriptedLLM(["from a loop"])

    async def notebook_cell():
        # Jupyter runs cells inside an event loop: the sync API must still work there
        return llm.complete([user("q")])

    assert asyncio.run(notebook_cell())["content"][0]["text"] == "from a loop"


async def _collect(model, messages, **kw):
    return [e async for e in model.astream(messages, **kw)]
