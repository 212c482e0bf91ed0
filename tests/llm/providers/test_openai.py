"""OpenAI-compatible Chat Completions end to end through the loopback server."""

from __future__ import annotations

import json

import pytest

from pinb.llm import (
    Done,
    RequestOptions,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from pinb.testing.llm_server import ToolCallScript

from ..helpers import arun, user

READ = ToolSpec(
    "read",
    "Read a file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


async def collect(model, messages, **kw):
    return [event async for event in model.astream(messages, **kw)]


def test_streaming_text_message_shape(server, make_model):
    server.reply("Hello there, friend!", usage={"input": 100, "output": 20, "cache_read": 40})
    model = make_model("openai")
    events = arun(collect(model, [user("hi")]))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == "Hello there, friend!" and len(deltas) > 1
    assert isinstance(events[-1], Done) and isinstance(events[-2], Usage)
    message = events[-1].message
    assert list(message) == [
        "role",
        "content",
        "api",
        "provider",
        "model",
        "usage",
        "stopReason",
        "timestamp",
    ]
    assert message["content"] == [{"type": "text", "text": "Hello there, friend!"}]
    assert (message["api"], message["provider"], message["model"]) == (
        "openai-completions",
        "openai",
        "gpt-4o",
    )
    assert message["stopReason"] == "stop"
    assert isinstance(message["timestamp"], int) and message["timestamp"] > 1_600_000_000_000
    usage = message["usage"]
    # prompt_tokens 140 includes 40 cached: input is the uncached part
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (
        100,
        20,
        40,
        0,
    )
    assert usage["totalTokens"] == 160
    # gpt-4o: $2.5 in, $10 out, $1.25 cache read per million
    assert usage["cost"]["input"] == pytest.approx(100 * 2.5e-6)
    assert usage["cost"]["output"] == pytest.approx(20 * 10e-6)
    assert usage["cost"]["cacheRead"] == pytest.approx(40 * 1.25e-6)
    assert usage["cost"]["total"] == pytest.approx(100 * 2.5e-6 + 20 * 10e-6 + 40 * 1.25e-6)
    json.dumps(message)  # plain JSON values only


def test_request_body(server, make_model):
    server.reply("ok")
    model = make_model("openai")
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "timestamp": 1,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.py"}},
                {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "b.py"}},
            ],
            "api": "openai-completions",
            "provider": "openai",
            "model": "gpt-4o",
            "usage": {},
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "read",
            "content": [{"type": "text", "text": "print(1)"}],
            "isError": False,
            "timestamp": 3,
        },
        {
            "role": "toolResult",
            "toolCallId": "call_2",
            "toolName": "read",
            "content": [{"type": "text", "text": "ENOENT"}],
            "isError": True,
            "timestamp": 4,
        },
        user("thanks", 5),
    ]
    message = model.complete(
        messages, system_prompt="You are terse.", tools=[READ], max_tokens=1000
    )
    assert message["stopReason"] == "stop"
    req = server.last_request
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer test-key-0000"
    body = req.body
    assert body["model"] == "gpt-4o" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 1000
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": READ.parameters,
            },
        }
    ]
    assert "reasoning_effort" not in body
    sent = body["messages"]
    assert sent[0] == {"role": "system", "content": "You are terse."}
    assert sent[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    }
    assert sent[2]["role"] == "assistant" and sent[2]["content"] == "Reading."
    assert [c["function"] for c in sent[2]["tool_calls"]] == [
        {"name": "read", "arguments": '{"path":"a.py"}'},
        {"name": "read", "arguments": '{"path":"b.py"}'},
    ]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"}
    assert sent[4] == {"role": "tool", "tool_call_id": "call_2", "content": "ENOENT"}
    assert sent[5] == {"role": "user", "content": "thanks"}


def test_request_options_whole_or_as_keywords_send_the_same_body(server, make_model):
    """One `RequestOptions` value and its fields as keywords are the same request on the
    wire; keywords given beside a value win over its fields."""
    model = make_model("openai")
    options = RequestOptions(
        system_prompt="You are terse.", tools=[READ], max_tokens=700, tool_choice="required"
    )
    bodies = []
    for call in (
        lambda: model.complete([user("q")], options),
        lambda: model.complete(
            [user("q")],
            system_prompt="You are terse.",
            tools=[READ],
            max_tokens=700,
            tool_choice="required",
        ),
        lambda: model.complete([user("q")], options, max_tokens=300, tool_choice=None),
    ):
        server.reply("ok")
        assert call()["stopReason"] == "stop"
        bodies.append(server.last_request.body)
    whole, keywords, overridden = bodies
    assert whole == keywords
    assert whole["max_completion_tokens"] == 700 and whole["tool_choice"] == "required"
    assert whole["messages"][0] == {"role": "system", "content": "You are terse."}
    assert overridden["max_completion_tokens"] == 300 and "tool_choice" not in overridden
    assert overridden["tools"] == whole["tools"] and options.max_tokens == 700


def test_parallel_tool_calls_with_argument_deltas(server, make_model):
    server.reply(
        "Let me look.",
        tool_calls=[
            ToolCallScript("read", {"path": "src/a.py"}, "call_a"),
            ToolCallScript("bash", {"command": "ls -la"}, "call_b"),
        ],
        interleave_tool_calls=True,
        chunk_size=3,
    )
    events = arun(collect(make_model("openai"), [user("go")], tools=[READ]))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.id, s.name, s.index) for s in starts] == [
        ("call_a", "read", 1),
        ("call_b", "bash", 2),
    ]
    for call_id, args in (("call_a", {"path": "src/a.py"}), ("call_b", {"command": "ls -la"})):
        pieces = [e.delta for e in events if isinstance(e, ToolCallDelta) and e.id == call_id]
        assert len(pieces) > 1 and json.loads("".join(pieces)) == args
    ends = {e.id: e.arguments for e in events if isinstance(e, ToolCallEnd)}
    assert ends == {"call_a": {"path": "src/a.py"}, "call_b": {"command": "ls -la"}}
    message = events[-1].message
    assert message["stopReason"] == "toolUse"
    assert message["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "toolCall", "id": "call_a", "name": "read", "arguments": {"path": "src/a.py"}},
        {"type": "toolCall", "id": "call_b", "name": "bash", "arguments": {"command": "ls -la"}},
    ]


def test_reasoning_content_and_effort(server, make_model):
    server.reply("42", thinking="Let me think step by step.")
    model = make_model("openai", spec="openai/o4-mini")
    events = arun(collect(model, [user("q")], thinking_level="high", system_prompt="sys"))
    thinking = "".join(e.thinking for e in events if isinstance(e, ThinkingDelta))
    assert thinking == "Let me think step by step."
    message = events[-1].message
    assert message["content"] == [
        {
            "type": "thinking",
            "thinking": "Let me think step by step.",
            "thinkingSignature": "reasoning_content",
        },
        {"type": "text", "text": "42"},
    ]
    body = server.last_request.body
    assert body["reasoning_effort"] == "high"
    assert body["messages"][0]["role"] == "developer"  # OpenAI reasoning models


@pytest.mark.parametrize(
    ("level", "effort"),
    [
        ("minimal", "minimal"),
        ("low", "low"),
        ("medium", "medium"),
        ("xhigh", "high"),
        ("max", "high"),
        ("off", None),
    ],
)
def test_thinking_levels_map_to_reasoning_effort(server, make_model, level, effort):
    server.reply("x")
    make_model("openai", spec="openai/gpt-5-mini").complete([user("q")], thinking_level=level)
    assert server.last_request.body.get("reasoning_effort") == effort


def test_openrouter_uses_reasoning_object(server, make_model):
    server.reply("x")
    model = make_model("openai", spec="openrouter/openai/gpt-5")
    model.complete([user("q")], thinking_level="low")
    body = server.last_request.body
    assert body["model"] == "openai/gpt-5" and body["reasoning"] == {"effort": "low"}
    assert "reasoning_effort" not in body and body["max_tokens"] == 32000


def test_local_server_defaults(server, make_model):
    server.reply("hi")
    model = make_model("openai", spec="vllm/Qwen/Qwen3-8B", api_key=None)
    message = model.complete([user("q")])
    assert message["provider"] == "vllm" and message["model"] == "Qwen/Qwen3-8B"
    body = server.last_request.body
    # every request carries a limit, in the field local servers read; a server that says
    # no window is asked for little (pinb.llm.limits.UNREPORTED_WINDOW_OUTPUT)
    assert body["max_tokens"] == 1024 and "max_completion_tokens" not in body
    assert "store" not in body
    assert "authorization" not in {k.lower() for k in server.last_request.headers}
    assert message["usage"]["cost"]["total"] == 0


def test_non_streaming_mode(server, make_model):
    server.reply(
        "Plain answer.",
        thinking="hmm",
        tool_calls=[("read", {"path": "x"})],
        usage={"input": 7, "output": 3},
    )
    model = make_model("openai", stream=False)
    events = arun(collect(model, [user("q")]))
    assert server.last_request.body.get("stream") is None
    assert [type(e).__name__ for e in events] == [
        "ThinkingDelta",
        "TextDelta",
        "ToolCallStart",
        "ToolCallDelta",
        "ToolCallEnd",
        "Usage",
        "Done",
    ]
    message = events[-1].message
    assert message["stopReason"] == "toolUse"
    assert message["content"][1:] == [
        {"type": "text", "text": "Plain answer."},
        {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "x"}},
    ]
    assert (message["usage"]["input"], message["usage"]["output"]) == (7, 3)


def test_tool_result_images_follow_as_user_message(server, make_model):
    server.reply("seen")
    messages = [
        user("shot"),
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "screenshot", "arguments": {}}],
            "api": "openai-completions",
            "provider": "openai",
            "model": "gpt-4o",
            "usage": {},
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "screenshot",
            "content": [{"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}],
            "isError": False,
            "timestamp": 3,
        },
    ]
    make_model("openai").complete(messages)
    sent = server.last_request.body["messages"]
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": "(see attached image)"}
    assert sent[3]["role"] == "user"
    assert sent[3]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/jpeg;base64,AAAA"},
    }


def test_length_stop_reason(server, make_model):
    server.reply("cut off", stop_reason="length")
    assert make_model("openai").complete([user("q")])["stopReason"] == "length"
