"""Every injected fault ends in a retry or a clean error/aborted message, within a deadline."""

from __future__ import annotations

import _thread
import threading
import time

import pytest

from pinb.llm import (
    CancelToken,
    ContextOverflowError,
    Done,
    ModelRegistry,
    ProviderHTTPError,
    Retry,
    RetryPolicy,
    TextDelta,
    get_model,
    is_context_overflow,
)
from pinb.testing.llm_server import ServerReply

from .helpers import arun, user

WIRES = ["openai", "anthropic"]


async def collect(model, messages, **kw):
    return [event async for event in model.astream(messages, **kw)]


@pytest.mark.parametrize("wire", WIRES)
def test_429_with_retry_after_is_retried(server, make_model, sleeps, wire):
    server.fail(429, retry_after=7, message="Rate limit reached").reply("finally")
    events = arun(collect(make_model(wire), [user("q")]))
    retries = [e for e in events if isinstance(e, Retry)]
    assert [(r.attempt, r.max_retries, r.delay, r.status_code) for r in retries] == [
        (1, 3, 7.0, 429)
    ]
    assert "429" in retries[0].error and "Rate limit" in retries[0].error
    assert sleeps.delays == [7.0]
    message = events[-1].message
    assert message["stopReason"] == "stop" and message["content"] == [
        {"type": "text", "text": "finally"}
    ]
    assert len(server.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
def test_500_until_retries_are_exhausted(server, make_model, sleeps, wire):
    server.fail(500, times=4, message="internal boom")
    events = arun(collect(make_model(wire), [user("q")]))
    assert sleeps.delays == [2.0, 4.0, 8.0]  # Pi's backoff
    assert [e.attempt for e in events if isinstance(e, Retry)] == [1, 2, 3]
    message = events[-1].message
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "500 internal boom (gave up after 3 retries)"
    assert message["content"] == [] and message["usage"]["totalTokens"] == 0
    assert len(server.requests) == 4


def test_5xx_then_success(server, make_model, sleeps):
    server.fail(503, times=2).reply("ok")
    assert make_model("openai").complete([user("q")])["stopReason"] == "stop"
    assert sleeps.delays == [2.0, 4.0]


def test_retry_after_above_limit_is_not_waited_for(server, make_model, sleeps):
    server.fail(429, retry_after=120)
    message = make_model("openai").complete([user("q")])
    assert message["stopReason"] == "error" and sleeps.delays == []
    assert "Retry-After 120 s exceeds the 60 s limit" in message["errorMessage"]


def test_client_errors_are_not_retried(server, make_model, sleeps):
    server.fail(401, message="invalid x-api-key", error_type="authentication_error")
    message = make_model("anthropic").complete([user("q")])
    assert message["errorMessage"] == "401 invalid x-api-key"
    assert sleeps.delays == [] and len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_slow_chunks_still_complete(server, make_model, wire):
    server.reply("slow but sure", chunk_size=4, chunk_delay=0.03)
    start = time.monotonic()
    message = make_model(wire, timeout=2.0).complete([user("q")])
    assert message["stopReason"] == "stop" and message["content"][0]["text"] == "slow but sure"
    assert time.monotonic() - start > 0.1


def test_stall_beyond_read_timeout_is_retried_then_reported(server, make_model, sleeps):
    server.add(ServerReply(text="late", stall=3.0), ServerReply(text="late", stall=3.0))
    model = make_model("openai", timeout=0.3, retry=RetryPolicy(max_retries=1, sleep=sleeps))
    message = model.complete([user("q")])
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("Request timed out (ReadTimeout)")
    assert len(server.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
def test_mid_stream_disconnect_keeps_partial(server, make_model, sleeps, wire):
    server.reply("abcdefghijklmnopqrstuvwxyz", chunk_size=2, disconnect_after=6)
    events = arun(collect(make_model(wire), [user("q")]))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    message = events[-1].message
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("Connection error")
    assert text and message["content"] == [{"type": "text", "text": text}]
    assert sleeps.delays == [] and len(server.requests) == 1  # content had streamed: no retry


@pytest.mark.parametrize("wire", WIRES)
def test_disconnect_before_any_content_is_retried(server, make_model, sleeps, wire):
    server.add(ServerReply(text="never", disconnect_after=1)).reply("second time lucky")
    message = make_model(wire).complete([user("q")])
    assert message["stopReason"] == "stop" and message["content"][0]["text"] == "second time lucky"
    assert sleeps.delays == [2.0]


def test_disconnect_inside_tool_call_keeps_partial_arguments(server, make_model):
    server.reply(
        tool_calls=[("write", {"path": "notes.txt", "content": "x" * 40})],
        chunk_size=8,
        disconnect_after=5,
    )
    message = make_model("anthropic").complete([user("q")])
    assert message["stopReason"] == "error"
    call = message["content"][0]
    assert call["type"] == "toolCall" and call["name"] == "write"
    assert call["partialArgs"].startswith('{"path"')
    assert "notes.txt".startswith(call["arguments"].get("path", ""))  # best-effort parse


@pytest.mark.parametrize("wire", WIRES)
def test_malformed_chunk_is_an_error_not_a_hang(server, make_model, wire):
    server.reply("partial text here", chunk_size=3, malformed_after=4)
    start = time.monotonic()
    message = make_model(wire).complete([user("q")])
    assert time.monotonic() - start < 3
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("Malformed stream")
    assert message["content"] and message["content"][0]["type"] == "text"


@pytest.mark.parametrize("wire", WIRES)
def test_overflow_body_is_recognised(server, make_model, sleeps, wire):
    server.overflow()
    model = make_model(wire)
    events = arun(collect(model, [user("q")]))
    done = events[-1]
    assert isinstance(done, Done) and done.overflow
    assert done.message["stopReason"] == "error" and done.message["errorMessage"].startswith("400 ")
    assert is_context_overflow(done.message, model.info.context_window)
    assert sleeps.delays == []
    server.overflow()
    with pytest.raises(ContextOverflowError) as info:
        arun(model.acomplete([user("q")], raise_on_overflow=True))
    assert info.value.message is not None and info.value.message["stopReason"] == "error"
    server.overflow()
    with pytest.raises(ContextOverflowError):
        model.complete([user("q")], raise_on_overflow=True)


@pytest.mark.parametrize("wire", WIRES)
def test_stream_error_event_before_content_is_retried(server, make_model, sleeps, wire):
    server.add(ServerReply(text="x", stream_error="Overloaded", stream_error_after=1)).reply(
        "ok now"
    )
    message = make_model(wire).complete([user("q")])
    assert message["content"][0]["text"] == "ok now" and sleeps.delays == [2.0]


def test_stream_error_event_after_content_is_final(server, make_model, sleeps):
    server.add(
        ServerReply(text="some text", chunk_size=2, stream_error="Overloaded", stream_error_after=5)
    )
    message = make_model("anthropic").complete([user("q")])
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "overloaded_error: Overloaded"
    assert message["content"][0]["text"] and sleeps.delays == []


def test_connection_refused_is_retried_then_reported(sleeps):
    model = get_model(
        "openai/gpt-4o",
        base_url="http://127.0.0.1:9/v1",
        api_key="k" * 8,
        retry=RetryPolicy(sleep=sleeps),
        timeout=2,
        registry=ModelRegistry(False),
    )
    message = model.complete([user("q")])
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("Connection error (ConnectError)")
    assert sleeps.delays == [2.0, 4.0, 8.0]


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_from_the_consumer_keeps_partial(server, make_model, wire):
    server.reply("one two three four five six seven", chunk_size=4, chunk_delay=0.01)
    token = CancelToken()

    async def run():
        events = []
        async for event in make_model(wire).astream([user("q")], cancel=token):
            events.append(event)
            if isinstance(event, TextDelta) and len(events) >= 2:
                token.cancel()
        return events

    events = arun(run())
    message = events[-1].message
    assert message["stopReason"] == "aborted" and message["errorMessage"] == "Request was aborted"
    received = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert message["content"] == [{"type": "text", "text": received}]
    assert len(received) < len("one two three four five six seven")


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_from_another_thread_interrupts_a_slow_read(server, make_model, wire):
    # the pause comes right after the first text chunk (OpenAI: role chunk + 1; Anthropic: 3 + 1)
    server.reply(
        "first chunk, then a very long pause",
        chunk_size=12,
        pause=20.0,
        pause_after=2 if wire == "openai" else 4,
    )
    token = CancelToken()
    got_text = threading.Event()

    def watch(stream):
        for event in stream:
            if isinstance(event, TextDelta):
                got_text.set()
            if isinstance(event, Done):
                return event.message
        return None

    threading.Thread(target=lambda: got_text.wait(5) and token.cancel(), daemon=True).start()
    start = time.monotonic()
    message = watch(make_model(wire, timeout=30.0).stream([user("q")], cancel=token))
    assert time.monotonic() - start < 3  # did not wait for the 5 s chunk
    assert message["stopReason"] == "aborted"
    assert message["content"][0]["text"] == "first chunk,"


def test_cancel_during_retry_backoff(server, make_model):
    server.fail(503, times=2)
    token = CancelToken()
    model = make_model("openai", retry=RetryPolicy(base_delay=10.0))
    threading.Timer(0.3, token.cancel).start()
    start = time.monotonic()
    message = model.complete([user("q")], cancel=token)
    assert time.monotonic() - start < 3
    assert message["stopReason"] == "aborted"


def test_keyboard_interrupt_in_sync_facade(server, make_model):
    server.reply("streaming slowly " * 10, chunk_size=6, chunk_delay=0.2)
    stop = threading.Event()

    def interrupt_mid_stream() -> None:  # once the reply streams, however loaded the machine
        deadline = time.monotonic() + 20
        while not server.requests and time.monotonic() < deadline and not stop.is_set():
            time.sleep(0.01)
        if not stop.wait(0.3):
            _thread.interrupt_main()

    threading.Thread(target=interrupt_mid_stream, daemon=True).start()
    start = time.monotonic()
    try:
        message = make_model("openai").complete([user("q")])
    finally:
        stop.set()
    assert time.monotonic() - start < 3
    assert message["stopReason"] == "aborted"
    assert message["content"] and message["content"][0]["text"].startswith("stream")


def test_raise_on_error_and_status_code(server, make_model):
    server.fail(401, message="bad key")
    events = arun(collect(make_model("openai"), [user("q")]))
    assert events[-1].status_code == 401 and not events[-1].overflow
    server.fail(500, times=4)
    with pytest.raises(ProviderHTTPError) as info:
        make_model("anthropic").complete([user("q")], raise_on_error=True)
    assert info.value.status_code == 500 and info.value.message["stopReason"] == "error"
    server.overflow()
    with pytest.raises(ContextOverflowError):
        make_model("openai").complete([user("q")], raise_on_error=True)
    server.reply("fine")
    assert make_model("openai").complete([user("q")], raise_on_error=True)["stopReason"] == "stop"
