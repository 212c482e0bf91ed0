"""Unit tests of the adapters on httpx.MockTransport (no sockets)."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from pinb.llm import Done, ModelRegistry, RetryPolicy, TextDelta, get_model

from .helpers import SleepRecorder, arun, user


class Chunks(httpx.AsyncByteStream):
    """A response body delivered in the given pieces."""

    def __init__(self, pieces):
        self.pieces = pieces

    async def __aiter__(self):
        for piece in self.pieces:
            yield piece


def sse(*objs, done=True):
    body = b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in objs)
    return body + (b"data: [DONE]\n\n" if done else b"")


def openai(handler, sleeps=None, **kw):
    return get_model(
        "openai/gpt-4o",
        api_key="k" * 8,
        transport=httpx.MockTransport(handler),
        retry=RetryPolicy(sleep=sleeps or SleepRecorder()),
        registry=ModelRegistry(False),
        **kw,
    )


def delta(**d):
    return {"choices": [{"index": 0, "delta": d, "finish_reason": None}]}


def finish(reason):
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def test_byte_by_byte_body_gives_same_message():
    body = sse(delta(content="héllo "), delta(content="wörld"), finish("stop"))
    whole = openai(lambda r: httpx.Response(200, content=body)).complete([user("q")])
    pieces = [body[i : i + 1] for i in range(len(body))]
    split = openai(lambda r: httpx.Response(200, stream=Chunks(pieces))).complete([user("q")])
    assert split["content"] == whole["content"] == [{"type": "text", "text": "héllo wörld"}]


def test_truncated_stream_without_finish_is_an_error_and_retried():
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(200, content=sse(delta(role="assistant"), done=False))

    sleeps = SleepRecorder()
    message = openai(handler, sleeps).complete([user("q")])
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith(
        "Connection lost: the stream ended before the response was complete"
    )
    assert len(calls) == 4 and sleeps.delays == [2.0, 4.0, 8.0]


def test_truncated_after_content_keeps_it_without_retry():
    body = sse(delta(content="partial"), done=False)
    message = openai(lambda r: httpx.Response(200, content=body)).complete([user("q")])
    assert message["stopReason"] == "error" and message["content"][0]["text"] == "partial"


def test_missing_done_after_finish_reason_is_fine():
    body = sse(delta(content="ok"), finish("stop"), done=False)
    assert (
        openai(lambda r: httpx.Response(200, content=body)).complete([user("q")])["stopReason"]
        == "stop"
    )


def test_x_should_retry_header_wins():
    calls = []

    def handler(request):
        calls.append(1)
        return httpx.Response(
            500, json={"error": {"message": "nope"}}, headers={"x-should-retry": "false"}
        )

    message = openai(handler).complete([user("q")])
    assert message["errorMessage"] == "500 nope" and len(calls) == 1


def test_error_body_forms():
    cases = [
        (b"", "400 status code (no body)"),
        (b"plain text oops", "400 plain text oops"),
        (b'{"error": "flat string"}', "400 flat string"),
        (b'{"message": "top level"}', "400 top level"),
    ]
    for raw, expected in cases:
        msg = openai(lambda r, raw=raw: httpx.Response(400, content=raw)).complete([user("q")])
        assert msg["errorMessage"] == expected


def test_stop_with_tool_calls_is_tool_use_and_content_filter_is_error():
    calls = delta(
        tool_calls=[{"index": 0, "id": "c1", "function": {"name": "ls", "arguments": "{}"}}]
    )
    msg = openai(lambda r: httpx.Response(200, content=sse(calls, finish("stop")))).complete(
        [user("q")]
    )
    assert msg["stopReason"] == "toolUse"
    msg = openai(
        lambda r: httpx.Response(200, content=sse(delta(content="x"), finish("content_filter")))
    ).complete([user("q")])
    assert msg["stopReason"] == "error" and "content_filter" in msg["errorMessage"]


def test_server_reusing_index_zero_for_parallel_calls():
    body = sse(
        delta(
            tool_calls=[
                {"index": 0, "id": "a", "function": {"name": "read", "arguments": '{"path":"1"}'}}
            ]
        ),
        delta(
            tool_calls=[
                {"index": 0, "id": "b", "function": {"name": "read", "arguments": '{"path":"2"}'}}
            ]
        ),
        finish("tool_calls"),
    )
    msg = openai(lambda r: httpx.Response(200, content=body)).complete([user("q")])
    assert [(c["id"], c["arguments"]) for c in msg["content"]] == [
        ("a", {"path": "1"}),
        ("b", {"path": "2"}),
    ]


def test_invalid_tool_arguments_are_kept_best_effort(caplog):
    body = sse(
        delta(
            tool_calls=[
                {"index": 0, "id": "a", "function": {"name": "w", "arguments": '{"p": "x", oops'}}
            ]
        ),
        finish("tool_calls"),
    )
    with caplog.at_level(logging.WARNING):
        msg = openai(lambda r: httpx.Response(200, content=body)).complete([user("q")])
    assert msg["content"][0]["arguments"] == {"p": "x"}
    assert "not valid JSON" in caplog.text


def test_in_stream_error_chunk_is_reported():
    body = sse(
        delta(content="so far"),
        {"error": {"message": "backend exploded", "type": "server_error"}},
        done=False,
    )
    msg = openai(lambda r: httpx.Response(200, content=body)).complete([user("q")])
    assert msg["stopReason"] == "error" and msg["errorMessage"] == "backend exploded"
    assert msg["content"][0]["text"] == "so far"


def test_lone_surrogate_in_input_does_not_crash():
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx.Response(200, content=sse(delta(content="ok"), finish("stop")))

    openai(handler).complete([user("bad \ud800 text")])
    assert seen[0]["messages"][0]["content"] == "bad ? text"


def test_anthropic_unknown_blocks_and_missing_message_stop():
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"usage": {"input_tokens": 3, "output_tokens": 1}},
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "server_tool_use", "id": "s", "name": "web"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "hi"},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "citations_delta", "citation": {}},
            },
        ),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 9},
            },
        ),
    ]
    body = b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events)
    model = get_model(
        "anthropic/claude-haiku-4-5",
        api_key="k" * 8,
        registry=ModelRegistry(False),
        transport=httpx.MockTransport(lambda r: httpx.Response(200, content=body)),
    )
    stream = arun(_collect(model, [user("q")]))
    assert [e.index for e in stream if isinstance(e, TextDelta)] == [0]
    msg = stream[-1].message
    assert isinstance(stream[-1], Done)
    assert msg["content"] == [{"type": "text", "text": "hi"}] and msg["stopReason"] == "stop"
    assert (msg["usage"]["input"], msg["usage"]["output"]) == (3, 9)


@pytest.mark.parametrize(
    ("raw", "stop", "error"),
    [
        ("refusal", "error", "The model declined to answer (stop_reason: refusal)"),
        (
            "model_context_window_exceeded",
            "error",
            "model_context_window_exceeded: the response hit the context window",
        ),
        ("pause_turn", "stop", None),
    ],
)
def test_anthropic_special_stop_reasons(raw, stop, error):
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": {}}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": raw}, "usage": {}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    body = b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events)
    model = get_model(
        "anthropic/claude-haiku-4-5",
        api_key="k" * 8,
        registry=ModelRegistry(False),
        transport=httpx.MockTransport(lambda r: httpx.Response(200, content=body)),
    )
    msg = model.complete([user("q")])
    assert msg["stopReason"] == stop and msg.get("errorMessage") == error


async def _collect(model, messages, **kw):
    return [e async for e in model.astream(messages, **kw)]
