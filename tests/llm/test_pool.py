"""One connection pool per process: requests, retries and probes reuse kept connections.

Connections are counted by a real loopback TLS server from its side (accepted and still
open), so a test sees what the network saw, not what the client believes.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from pinb.llm import HTTPChatModel, ModelRegistry, RetryPolicy, TextDelta, get_model, pool
from pinb.llm.config.discover import discover_window, forget_discoveries
from pinb.llm.local import list_models
from pinb.testing.llm_server import LLMServer
from pinb.testing.tls import Certificate, self_signed_certificate

from .helpers import DEADLINE, SleepRecorder, arun, user


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture()
def tls(certificate: Certificate, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """A TLS loopback server the process trusts, and a pool with nothing kept before or after."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.ca))
    pool.close_pool()
    forget_discoveries()
    with LLMServer(certificate=certificate, context_window=8000, window_endpoint="llamacpp") as srv:
        yield srv
        pool.close_pool()


def _model(server: LLMServer, **options: object) -> HTTPChatModel:
    options.setdefault("retry", RetryPolicy(sleep=SleepRecorder()))
    return get_model(
        "openai/gpt-4o",
        base_url=server.openai_base_url,
        api_key="test-key-0000",
        registry=ModelRegistry(False),
        **options,  # type: ignore[arg-type]
    )


def _settles(condition: Callable[[], bool], what: str) -> None:
    """Wait until the server has seen a close (it learns of it a moment later)."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def test_requests_in_a_row_share_one_tls_connection(tls: LLMServer) -> None:
    model = _model(tls)
    for i in range(5):
        tls.reply(text=f"answer {i}")
        message = model.complete([user(f"question {i}")])
        assert message["content"] == [{"type": "text", "text": f"answer {i}"}]
    assert len(tls.requests) == 5
    assert tls.connections == 1 and tls.open_connections == 1
    assert pool.pool_clients() == 1
    pool.close_pool()
    _settles(lambda: tls.open_connections == 0, "the kept connection closed with the pool")


def test_a_retry_goes_on_the_same_connection(tls: LLMServer) -> None:
    tls.fail(503, message="busy").reply(text="second time lucky")
    message = _model(tls).complete([user("hi")])
    assert message["stopReason"] == "stop" and len(tls.requests) == 2
    assert tls.connections == 1


def test_a_cancelled_stream_closes_its_connection_and_the_next_request_gets_a_clean_one(
    tls: LLMServer,
) -> None:
    model = _model(tls)
    tls.reply(text="warm up")
    model.complete([user("first")])
    tls.reply(text="slow " * 300, chunk_delay=0.01)
    with model.stream([user("talk slowly")]) as events:
        for event in events:
            if isinstance(event, TextDelta):
                events.interrupt()
    assert events.final is not None and events.final.stop_reason == "aborted"
    _settles(lambda: tls.open_connections == 0, "the half-read connection closed")
    tls.reply(text="fresh")
    message = model.complete([user("next")])
    assert message["content"] == [{"type": "text", "text": "fresh"}]  # nothing left over
    assert tls.connections == 2 and tls.open_connections == 1


def test_a_connection_the_server_closed_as_the_request_came_is_sent_again_once(
    tls: LLMServer,
) -> None:
    model = _model(tls, retry=RetryPolicy(max_retries=0))
    tls.reply(text="one").reply(text="two")
    model.complete([user("first")])
    tls.drop_reused = 1
    message = model.complete([user("second")])
    assert message["stopReason"] == "stop"
    assert message["content"] == [{"type": "text", "text": "two"}]
    assert [r.body["messages"][-1]["content"] for r in tls.requests] == ["first", "second"]
    assert tls.connections == 2


def test_a_request_on_a_new_connection_is_never_sent_twice() -> None:
    """A server that closes every new connection unanswered: one attempt, one failure."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                accepted.append(conn.recv(65536))

    threading.Thread(target=serve, daemon=True).start()
    port = listener.getsockname()[1]

    async def once() -> None:
        async with httpx.AsyncClient() as client:
            request = client.build_request("POST", f"http://127.0.0.1:{port}/v1", content=b"{}")
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                await pool.send(client, request)

    try:
        arun(once())
    finally:
        listener.close()
    assert len(accepted) == 1


def test_a_model_on_a_loop_of_its_own_uses_a_client_of_its_own(tls: LLMServer) -> None:
    model = _model(tls)
    for text in ("a", "b"):
        tls.reply(text=text)
        assert arun(model.acomplete([user(text)]))["content"][0]["text"] == text
    assert tls.connections == 2 and pool.pool_clients() == 0
    _settles(lambda: tls.open_connections == 0, "each request's own client closed")


def test_an_injected_transport_is_used_and_left_open() -> None:
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        body = {"choices": [{"message": {"content": "mocked"}, "finish_reason": "stop"}]}
        return httpx.Response(200, json=body)

    transport = httpx.MockTransport(handler)
    model = get_model(
        "openai/gpt-4o",
        base_url="https://example.invalid/v1",
        api_key="k",
        registry=ModelRegistry(False),
        transport=transport,
        stream=False,
    )
    for _ in range(2):  # the transport still works after the first request
        assert model.complete([user("hi")])["content"] == [{"type": "text", "text": "mocked"}]
    assert sent == ["https://example.invalid/v1/chat/completions"] * 2
    assert pool.pool_clients() == 0  # nothing of the transport's is kept in the pool


def test_window_and_model_probes_share_the_synchronous_client(tls: LLMServer) -> None:
    answer = discover_window(tls.openai_base_url, "loopback", provider="llamacpp", timeout=5)
    assert answer is not None and answer.tokens == 8000
    assert list_models(tls.openai_base_url, timeout=5) == ("loopback-135M.Q4_1",)
    assert list_models(tls.openai_base_url, timeout=5) == ("loopback-135M.Q4_1",)
    assert len(tls.probes) == 3 and tls.connections == 1


def test_the_blocking_api_called_on_the_shared_loop_does_not_wait_for_itself(
    tls: LLMServer,
) -> None:
    model = _model(tls)
    tls.reply(text="from inside")

    async def inside() -> str:
        return str(model.complete([user("hi")])["content"][0]["text"])

    assert pool.submit(inside()).result(timeout=DEADLINE) == "from inside"


def test_clients_past_the_limit_are_closed_least_recently_used_first(
    certificate: Certificate, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.ca))
    monkeypatch.setattr(pool, "MAX_CLIENTS", 2)
    pool.close_pool()
    servers = [LLMServer().start() for _ in range(3)]
    try:
        for server in servers:
            server.reply(text="hi")
            _model(server).complete([user("hi")])
        assert pool.pool_clients() == 2
        _settles(lambda: servers[0].open_connections == 0, "the oldest idle client closed")
        assert [s.open_connections for s in servers[1:]] == [1, 1]
    finally:
        pool.close_pool()
        for server in servers:
            server.stop()


def test_the_loop_survives_a_failed_run_and_keeps_serving() -> None:
    async def boom() -> None:
        raise ValueError("inside the loop")

    with pytest.raises(ValueError, match="inside the loop"):
        pool.submit(boom()).result(timeout=DEADLINE)

    async def fine() -> str:
        await asyncio.sleep(0)
        return "still here"

    assert pool.submit(fine()).result(timeout=DEADLINE) == "still here"
