"""Anthropic Messages end to end through the loopback server."""

from __future__ import annotations

import json

import pytest

from pinb.llm import Done, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolSpec
from pinb.llm.providers.anthropic import thinking_budget
from pinb.testing.llm_server import ToolCallScript

from ..helpers import arun, user

EDIT = ToolSpec(
    "edit", "Edit a file", {"type": "object", "properties": {"path": {"type": "string"}}}
)


async def collect(model, messages, **kw):
    return [event async for event in model.astream(messages, **kw)]


def test_streaming_text_usage_and_cost(server, make_model):
    server.reply(
        "Bonjour à tous ✓",
        usage={"input": 1000, "output": 50, "cache_read": 200, "cache_write": 100},
    )
    events = arun(collect(make_model("anthropic"), [user("hi")]))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Bonjour à tous ✓"
    message = events[-1].message
    assert message["api"] == "anthropic-messages" and message["provider"] == "anthropic"
    assert message["model"] == "claude-sonnet-4-5" and message["stopReason"] == "stop"
    usage = message["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (
        1000,
        50,
        200,
        100,
    )
    assert usage["totalTokens"] == 1350
    # claude-sonnet-4-5: $3 in, $15 out, $0.3 cache read, $3.75 cache write per million
    expected = 1000 * 3e-6 + 50 * 15e-6 + 200 * 0.3e-6 + 100 * 3.75e-6
    assert usage["cost"]["total"] == pytest.approx(expected)
    req = server.last_request
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "test-key-0000"
    assert req.headers["anthropic-version"] == "2023-06-01"


def test_thinking_signature_round_trip(server, make_model):
    server.reply(
        "The answer is 4.", thinking="2 + 2 = 4, clearly.", thinking_signature="EqQBCkYIBxgCKkC"
    )
    model = make_model("anthropic")
    events = arun(collect(model, [user("2+2?")], thinking_level="medium", max_tokens=4096))
    assert (
        "".join(e.thinking for e in events if isinstance(e, ThinkingDelta)) == "2 + 2 = 4, clearly."
    )
    first = events[-1].message
    assert first["content"] == [
        {
            "type": "thinking",
            "thinking": "2 + 2 = 4, clearly.",
            "thinkingSignature": "EqQBCkYIBxgCKkC",
        },
        {"type": "text", "text": "The answer is 4."},
    ]
    body = server.last_request.body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] == 4096 + 8192
    # next turn: the signed thinking block goes back verbatim
    server.reply("Sure.")
    model.complete([user("2+2?"), first, user("thanks", 3)], thinking_level="medium")
    sent = server.last_request.body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "2 + 2 = 4, clearly.", "signature": "EqQBCkYIBxgCKkC"},
            {"type": "text", "text": "The answer is 4."},
        ],
    }


def test_redacted_thinking_kept_and_replayed(server, make_model):
    server.reply("ok", redacted_thinking="ENCRYPTED-PAYLOAD")
    model = make_model("anthropic")
    message = model.complete([user("q")], thinking_level="low")
    assert message["content"][0] == {
        "type": "thinking",
        "thinking": "[Reasoning redacted]",
        "thinkingSignature": "ENCRYPTED-PAYLOAD",
        "redacted": True,
    }
    server.reply("again")
    model.complete([user("q"), message, user("more", 3)])
    sent = server.last_request.body["messages"][1]["content"]
    assert sent[0] == {"type": "redacted_thinking", "data": "ENCRYPTED-PAYLOAD"}


def test_parallel_tool_calls(server, make_model):
    server.reply(
        "Editing both.",
        tool_calls=[
            ToolCallScript("edit", {"path": "a.py", "n": [1, 2]}, "toolu_1"),
            ToolCallScript("edit", {"path": "b.py"}, "toolu_2"),
        ],
        chunk_size=5,
    )
    events = arun(collect(make_model("anthropic"), [user("go")], tools=[EDIT]))
    for call_id, args in (
        ("toolu_1", {"path": "a.py", "n": [1, 2]}),
        ("toolu_2", {"path": "b.py"}),
    ):
        pieces = [e.delta for e in events if isinstance(e, ToolCallDelta) and e.id == call_id]
        assert len(pieces) > 1 and json.loads("".join(pieces)) == args
    assert [e.id for e in events if isinstance(e, ToolCallEnd)] == ["toolu_1", "toolu_2"]
    message = events[-1].message
    assert message["stopReason"] == "toolUse"
    assert [b["type"] for b in message["content"]] == ["text", "toolCall", "toolCall"]
    assert message["content"][1]["arguments"] == {"path": "a.py", "n": [1, 2]}


def test_request_body(server, make_model):
    server.reply("done")
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "timestamp": 1,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "toolu_1", "name": "edit", "arguments": {"path": "a"}},
                {"type": "toolCall", "id": "toolu_2", "name": "edit", "arguments": {"path": "b"}},
            ],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {},
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "toolu_1",
            "toolName": "edit",
            "content": [{"type": "text", "text": "ok"}],
            "isError": False,
            "timestamp": 3,
        },
        {
            "role": "toolResult",
            "toolCallId": "toolu_2",
            "toolName": "edit",
            "content": [{"type": "text", "text": "no such file"}],
            "isError": True,
            "timestamp": 4,
        },
    ]
    make_model("anthropic").complete(messages, system_prompt="Be careful.", tools=[EDIT])
    body = server.last_request.body
    assert body["system"] == [
        {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {"name": "edit", "description": "Edit a file", "input_schema": EDIT.parameters}
    ]
    assert body["max_tokens"] == 32000 and "thinking" not in body and body["stream"] is True
    sent = body["messages"]
    assert sent[0]["content"] == [
        {"type": "text", "text": "see"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
    ]
    assert sent[1]["content"][0] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "edit",
        "input": {"path": "a"},
    }
    # both results in one user turn, the error flagged, the last block marked for caching
    assert sent[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "ok"}],
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": [{"type": "text", "text": "no such file"}],
                "is_error": True,
                "cache_control": {"type": "ephemeral"},
            },
        ],
    }


def test_replay_from_another_model(server, make_model):
    server.reply("fine")
    foreign = {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "private musing",
                "thinkingSignature": "reasoning_content",
            },
            {"type": "toolCall", "id": "call|1.x", "name": "edit", "arguments": {}},
        ],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-4o",
        "usage": {},
        "stopReason": "toolUse",
        "timestamp": 2,
    }
    result = {
        "role": "toolResult",
        "toolCallId": "call|1.x",
        "toolName": "edit",
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
        "timestamp": 3,
    }
    make_model("anthropic").complete([user("q"), foreign, result])
    sent = server.last_request.body["messages"]
    assert sent[1]["content"] == [
        {"type": "text", "text": "private musing"},
        {"type": "tool_use", "id": "call_1_x", "name": "edit", "input": {}},
    ]
    assert sent[2]["content"][0]["tool_use_id"] == "call_1_x"


def test_non_streaming_mode(server, make_model):
    server.reply(
        "Answer.", thinking="hmm", thinking_signature="SIG", tool_calls=[("edit", {"path": "p"})]
    )
    events = arun(collect(make_model("anthropic", stream=False), [user("q")], thinking_level="low"))
    assert "stream" not in server.last_request.body
    message = events[-1].message
    assert isinstance(events[-1], Done)
    assert message["content"] == [
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "SIG"},
        {"type": "text", "text": "Answer."},
        {"type": "toolCall", "id": "toolu_1", "name": "edit", "arguments": {"path": "p"}},
    ]
    assert message["stopReason"] == "toolUse"


def test_max_tokens_stop_is_length(server, make_model):
    server.reply("trunc", stop_reason="length")
    assert make_model("anthropic").complete([user("q")])["stopReason"] == "length"


def test_no_thinking_for_models_without_reasoning(server, make_model):
    server.reply("x")
    make_model("anthropic", spec="anthropic/claude-3-5-haiku-20241022").complete(
        [user("q")], thinking_level="high"
    )
    body = server.last_request.body
    assert "thinking" not in body and body["max_tokens"] == 8192


@pytest.mark.parametrize(
    ("level", "base", "model_max", "expected"),
    [
        ("minimal", 1000, 64000, (2024, 1024)),
        ("high", 32000, 64000, (48384, 16384)),
        ("xhigh", 32000, 64000, (48384, 16384)),
        ("high", 8192, 8192, (8192, 7168)),
        ("low", 1500, 1500, (1500, 0)),
        ("off", 1000, 64000, (1000, 0)),
    ],
)
def test_thinking_budget(level, base, model_max, expected):
    assert thinking_budget(level, base, model_max) == expected
