"""Kept connections: how many an agent turn opens, and the first token of a request on one.

Run: ``.venv/bin/python benchmarks/bench_connections.py [--rounds N]``. A loopback TLS
server (a self-signed certificate made for the run, `pinb.testing.tls`) counts the TCP
connections it accepts. The first-token figure is from sending a request to its first
text arriving, medians of the 2nd and later requests (the 1st opens the connection);
"raw httpx" reads the same stream with a kept-alive client and nothing else. Each round
sends one request each way, in turn, so a busy machine slows every way alike. Prints
Markdown tables for docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from pinb.agent import Agent, ModelEvent, ToolContext, ToolResult
from pinb.core import Session
from pinb.llm import HTTPChatModel, ModelRegistry, RetryPolicy, TextDelta, get_model, pool
from pinb.testing.llm_server import LLMServer
from pinb.testing.tls import Certificate, self_signed_certificate

MARK = "FIRST"  # within the first 8-character piece
REPLY = MARK + " and the rest of a short answer, streamed in small pieces as models do."
MESSAGES = [{"role": "user", "content": "benchmark", "timestamp": 0}]


class Count:
    name = "count"
    description = "Count one more."
    parameters: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}  # noqa: RUF012

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.text(f"counted {arguments.get('n')}")


def _model(server: LLMServer) -> HTTPChatModel:
    return get_model(
        "openai/gpt-4o",
        base_url=server.openai_base_url,
        api_key="bench-key",
        registry=ModelRegistry(False),
        retry=RetryPolicy(max_retries=0),
    )


def _queue(server: LLMServer, n: int) -> None:
    for _ in range(n):
        server.reply(text=REPLY, chunk_size=8)


def _median_after_first(times: list[float]) -> float:
    return statistics.median(times[1:]) * 1000


class Paths:
    """One request each way, to be called in turn (so a busy machine slows them alike).

    Each call returns seconds from sending the request to its first text arriving.
    """

    def __init__(self, server: LLMServer, cert: Certificate, folder: Path) -> None:
        self.server = server
        self.url = f"{server.openai_base_url}/chat/completions"
        self.model = _model(server)
        self.body = self.model.build_body(MESSAGES)
        tls = ssl.create_default_context(cafile=str(cert.ca))
        self.loop = asyncio.new_event_loop()  # the raw async client's own, kept loop
        self.raw_async_client = httpx.AsyncClient(verify=tls)
        self.raw_sync_client = httpx.Client(verify=tls)
        self.session = Session.create(folder, folder / "sessions")
        self.asked = 0

    def close(self) -> None:
        self.loop.run_until_complete(self.raw_async_client.aclose())
        self.loop.close()
        self.raw_sync_client.close()

    def raw_async(self) -> float:
        async def one() -> float:
            start = time.perf_counter()
            first = None
            async with self.raw_async_client.stream("POST", self.url, json=self.body) as response:
                seen = b""
                async for chunk in response.aiter_bytes():
                    if first is None:
                        seen += chunk
                        if MARK.encode() in seen:
                            first = time.perf_counter() - start
            assert first is not None
            return first

        return self.loop.run_until_complete(one())

    def raw_sync(self) -> float:
        start = time.perf_counter()
        first = None
        with self.raw_sync_client.stream("POST", self.url, json=self.body) as response:
            seen = b""
            for chunk in response.iter_bytes():
                if first is None:
                    seen += chunk
                    if MARK.encode() in seen:
                        first = time.perf_counter() - start
        assert first is not None
        return first

    def pinb_stream(self) -> float:
        start = time.perf_counter()
        first = None
        for event in self.model.stream(MESSAGES):
            if first is None and isinstance(event, TextDelta):
                first = time.perf_counter() - start
        assert first is not None
        return first

    def pinb_astream_on_loop(self) -> float:
        async def one() -> float:
            start = time.perf_counter()
            first = None
            async for event in self.model.astream(MESSAGES):
                if first is None and isinstance(event, TextDelta):
                    first = time.perf_counter() - start
            assert first is not None
            return first

        return pool.submit(one()).result()

    def pinb_agent(self) -> float:
        self.asked += 1
        start = time.perf_counter()
        first = None
        for event in Agent(self.session, self.model).run(f"question {self.asked}"):
            is_text = isinstance(event, ModelEvent) and isinstance(event.event, TextDelta)
            if first is None and is_text:
                first = time.perf_counter() - start
        assert first is not None
        return first

    def pinb_new_connection(self) -> float:
        """What every request did before: a client (and connection) of its own."""

        async def one() -> float:
            start = time.perf_counter()
            first = None
            async for event in self.model.astream(MESSAGES):  # not the shared loop: own client
                if first is None and isinstance(event, TextDelta):
                    first = time.perf_counter() - start
            assert first is not None
            return first

        return self.loop.run_until_complete(one())


def turn_connections(server: LLMServer, folder: Path, requests: int = 10) -> tuple[int, int]:
    """Connections a fresh pool opens for one agent turn of ``requests`` requests."""
    pool.close_pool()
    before = server.connections
    for n in range(requests - 1):
        server.reply(f"step {n}", tool_calls=[("count", {"n": n})])
    server.reply("done")
    session = Session.create(folder, folder / "turn")
    asked = len(server.requests)
    end = Agent(session, _model(server), [Count()]).prompt("count")
    assert end.stop_reason == "stop", end.error
    return len(server.requests) - asked, server.connections - before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    n = args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cert = self_signed_certificate(folder / "tls")
        os.environ["SSL_CERT_FILE"] = str(cert.ca)  # what pinb's pooled clients trust
        with LLMServer(certificate=cert) as server:
            requests, opened = turn_connections(server, folder)
            pool.close_pool()
            paths = Paths(server, cert, folder)
            ways: dict[str, Callable[[], float]] = {
                "raw httpx, kept-alive `AsyncClient` (baseline)": paths.raw_async,
                "raw httpx, kept-alive `Client` (sync)": paths.raw_sync,
                "pinb `astream`, awaited on the shared loop": paths.pinb_astream_on_loop,
                "pinb `model.stream` (sync, from another thread)": paths.pinb_stream,
                "pinb `Agent.run` (the session's work included)": paths.pinb_agent,
                "pinb, a new connection each request (as before)": paths.pinb_new_connection,
            }
            times: dict[str, list[float]] = {label: [] for label in ways}
            before = server.connections
            for round_ in range(n):
                _queue(server, len(ways))
                order = list(ways.items())
                order = order[round_ % len(order) :] + order[: round_ % len(order)]
                for label, way in order:
                    times[label].append(way())
            opened_by_ways = server.connections - before
            paths.close()
    print("| agent turn | requests | TCP connections opened |\n|---|---:|---:|")
    print(f"| 9 tool calls and an answer, TLS loopback | {requests} | **{opened}** |\n")
    labels = list(times)
    base = _median_after_first(times[labels[0]])
    print(
        "| path | first token, 1st request ms | 2nd+ requests, median ms | above raw httpx |"
        "\n|---|---:|---:|---:|"
    )
    for label in labels:
        median = _median_after_first(times[label])
        above = "" if label == labels[0] else f"{median - base:+.2f} ms"
        print(f"| {label} | {times[label][0] * 1000:.1f} | {median:.2f} | {above} |")
    print(
        f"\nPython {sys.version.split()[0]}, {n} rounds, the ways taken in turn; loopback TLS. "
        f"Connections opened by all of them: {opened_by_ways} "
        "(one for each kept client: raw async, raw sync and pinb's pool, which pinb's rows "
        "share; then one per request of the last row)."
    )


if __name__ == "__main__":
    main()
