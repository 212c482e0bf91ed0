"""Local OpenAI-compatible servers through the loopback server: where they are, their window, their quirks."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pinb.llm import ModelRegistry, RetryPolicy, get_model
from pinb.llm.config.discover import forget_discoveries
from pinb.testing.llm_server import LLMServer, ServerReply, ToolCallScript

from ..helpers import arun, user


@pytest.fixture(autouse=True)
def _fresh_discoveries() -> Iterator[None]:
    forget_discoveries()
    yield
    forget_discoveries()


def _local(server: LLMServer, spec: str = "llamacpp/smol", **options):
    options.setdefault("retry", RetryPolicy(max_retries=0))
    return get_model(
        spec, base_url=server.openai_base_url, registry=ModelRegistry(False), **options
    )


def _complete(model, messages=None, **options):
    return arun(model.acomplete(messages or [user("hi")], **options))


@pytest.mark.parametrize(
    ("endpoint", "spec"),
    [("llamacpp", "llamacpp/smol"), ("ollama", "ollama/qwen3:8b"), ("vllm", "vllm/qwen")],
)
def test_the_window_comes_from_the_server(endpoint: str, spec: str) -> None:
    with LLMServer(context_window=4096, window_endpoint=endpoint) as server:
        model = _local(server, spec)
        assert model.info.context_window == 4096
        asked = len(server.probes)
        assert asked >= 1
        _local(server, spec)  # asked once per server and model
        assert len(server.probes) == asked


def test_a_server_that_does_not_tell_keeps_the_default_and_a_given_window_wins(server) -> None:
    assert _local(server).info.context_window == 128_000
    assert server.probes  # it was asked
    forget_discoveries()
    server.probes.clear()
    assert _local(server, context_window=2048).info.context_window == 2048
    assert server.probes == []  # an explicit window needs no question


def test_base_url_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ModelRegistry(False)
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://127.0.0.1:8765")
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11500")
    monkeypatch.setenv("VLLM_BASE_URL", "http://box:9000/v1/")
    llama = get_model("llamacpp/smol", registry=registry, discover=False)
    assert llama.base_url == "http://127.0.0.1:8765/v1"  # a bare server address gets /v1
    assert get_model("ollama/qwen3", registry=registry, discover=False).base_url == (
        "http://127.0.0.1:11500/v1"
    )
    assert get_model("vllm/x", registry=registry, discover=False).base_url == "http://box:9000/v1"
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:11600/v1")
    assert get_model("ollama/qwen3", registry=registry, discover=False).base_url == (
        "http://127.0.0.1:11600/v1"  # the pinb variable wins over Ollama's own
    )


def test_null_content_beside_tool_calls_is_never_sent() -> None:
    history = [
        user("list"),
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}],
            "api": "openai-completions",
            "provider": "llamacpp",
            "model": "smol",
            "stopReason": "toolUse",
            "usage": {},
            "timestamp": 1,
        },
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "ls",
            "content": [{"type": "text", "text": "a.py"}],
            "isError": False,
            "timestamp": 2,
        },
    ]
    with LLMServer(reject_null_content=True) as server:
        server.reply("It holds a.py.")
        message = _complete(_local(server), history)
        assert message["stopReason"] == "stop"
        sent = server.requests[0].body["messages"][1]
        assert sent["content"] == "" and sent["tool_calls"][0]["id"] == "c1"


def test_a_rejected_request_is_not_retried(server, sleeps) -> None:
    server.fail(500, times=4, message="7 validation errors: Input should be a valid string")
    model = _local(server, retry=RetryPolicy(sleep=sleeps))
    events = []

    async def run() -> None:
        async for event in model.astream([user("hi")]):
            events.append(event)

    arun(run())
    done = events[-1]
    assert len(server.requests) == 1 and sleeps.delays == []
    assert done.stop_reason == "error" and done.retryable is False and not done.overflow


@pytest.mark.parametrize("style", ["status", "sse_error", "drop"])
def test_overflow_in_every_form_is_recognised_at_once(style: str, sleeps) -> None:
    with LLMServer(context_window=1000, overflow_style=style) as server:
        model = _local(server, retry=RetryPolicy(sleep=sleeps))
        message = _complete(model, [user("word " * 1200)])
        assert message["stopReason"] == "error"
        assert model.info.context_window == 128_000  # the model did not know the window
        from pinb.llm import is_context_overflow

        assert is_context_overflow(message), message["errorMessage"]
        assert sleeps.delays == []  # never retried
        # llama-cpp-python's empty stream is asked once more without streaming
        assert len(server.requests) == (2 if style == "drop" else 1)
        if style == "drop":
            assert server.requests[1].body.get("stream") is None
            assert "maximum context length is 1000 tokens" in message["errorMessage"]


def test_a_drop_after_a_large_request_counts_as_overflow(server, sleeps) -> None:
    # one event (the role chunk), no content, then the connection is gone
    server.add(ServerReply(text="partial", disconnect_after=1))
    model = _local(server, context_window=1000, retry=RetryPolicy(sleep=sleeps))
    message = _complete(model, [user("word " * 1000)])
    assert "probably exceeds the context window (1,000 tokens)" in message["errorMessage"]
    assert sleeps.delays == []


def test_usage_is_asked_for_and_missing_usage_is_flagged(server) -> None:
    server.reply("counted", usage={"input": 7, "output": 2})
    server.add(ServerReply(text="uncounted", no_usage=True))
    model = _local(server)

    async def final():
        done = None
        async for event in model.astream([user("hi")]):
            done = event
        return done

    counted, uncounted = arun(final()), arun(final())
    assert server.requests[0].body["stream_options"] == {"include_usage": True}
    assert counted.usage_reported and counted.message["usage"]["input"] == 7
    assert not uncounted.usage_reported
    assert uncounted.message["usage"]["totalTokens"] == 0  # Pi's shape: zeros, not a guess


def test_a_stream_cut_mid_reply_is_left_to_the_caller_to_retry(server, sleeps) -> None:
    server.add(ServerReply(text="a long answer that breaks", chunk_size=3, disconnect_after=4))
    model = _local(server, retry=RetryPolicy(sleep=sleeps))

    async def final():
        async for event in model.astream([user("hi")]):
            done = event
        return done

    done = arun(final())
    assert done.stop_reason == "error" and done.retryable is True
    assert done.message["content"][0]["text"]  # the partial text is kept
    assert len(server.requests) == 1  # content had started: the agent decides


def test_a_cut_inside_tool_arguments_keeps_the_partial_call(server) -> None:
    server.add(
        ServerReply(
            tool_calls=[ToolCallScript("write", {"path": "a.py", "content": "x" * 40})],
            chunk_size=5,
            disconnect_in_tool_args=True,
        )
    )
    message = _complete(_local(server), [user("write")])
    call = message["content"][0]
    assert message["stopReason"] == "error" and call["type"] == "toolCall"
    assert call["name"] == "write" and "partialArgs" in call


@pytest.mark.parametrize(
    ("choice", "openai_value", "anthropic_value"),
    [
        ("required", "required", {"type": "any"}),
        (
            "read",
            {"type": "function", "function": {"name": "read"}},
            {"type": "tool", "name": "read"},
        ),
    ],
)
def test_tool_choice(make_model, server, choice, openai_value, anthropic_value) -> None:
    tools = [{"name": "read", "description": "Read", "parameters": {"type": "object"}}]
    for wire, value in (("openai", openai_value), ("anthropic", anthropic_value)):
        server.reply("ok")
        arun(make_model(wire).acomplete([user("hi")], tools=tools, tool_choice=choice))
        assert server.last_request.body["tool_choice"] == value
    server.reply("ok")
    arun(make_model("openai").acomplete([user("hi")], tool_choice=choice))
    assert "tool_choice" not in server.last_request.body  # no tools, nothing to choose


def test_discovered_window_is_logged_not_printed(server, capsys) -> None:
    _local(server)
    assert capsys.readouterr().out == ""
    assert json.loads(json.dumps(server.probes))  # probes are plain paths
