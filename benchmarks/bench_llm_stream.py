"""Measure pinb's overhead per streamed chunk: SSE parse + event + message assembly.

Run: ``.venv/bin/python benchmarks/bench_llm_stream.py [--chunks N] [--runs R]``. Prints a
Markdown table (medians of R runs) for docs/performance.md. The "pinb overhead" rows
subtract the cost of reading the same body through httpx alone, so they show what pinb
adds per chunk; the loopback rows include a real socket and the scripted server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from pinb.llm import Done, ModelRegistry, get_model
from pinb.llm.providers.sse import SSEParser
from pinb.testing.llm_server import LLMServer

MESSAGES = [{"role": "user", "content": "benchmark", "timestamp": 0}]


def openai_chunks(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        payload = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": {"content": f"tok{i % 97} "}, "finish_reason": None}],
        }
        out.append(b"data: " + json.dumps(payload).encode() + b"\n\n")
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": n + 10},
    }
    out += [
        b"data: " + json.dumps(end).encode() + b"\n\n",
        b"data: " + json.dumps(usage).encode() + b"\n\n",
    ]
    return [*out, b"data: [DONE]\n\n"]


def anthropic_chunks(n: int) -> list[bytes]:
    def ev(name: str, obj: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps({'type': name, **obj})}\n\n".encode()

    out = [
        ev("message_start", {"message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    out += [
        ev(
            "content_block_delta",
            {"index": 0, "delta": {"type": "text_delta", "text": f"tok{i % 97} "}},
        )
        for i in range(n)
    ]
    out += [
        ev("content_block_stop", {"index": 0}),
        ev("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": n}}),
        ev("message_stop", {}),
    ]
    return out


class Chunks(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]):
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def transport(pieces: list[bytes]) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(200, stream=Chunks(pieces)))


def median(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def raw_httpx(pieces: list[bytes]) -> None:
    client = httpx.AsyncClient(transport=transport(pieces))
    async with client, client.stream("POST", "http://bench/v1/chat/completions") as response:
        async for _ in response.aiter_bytes():
            pass


async def consume(model: Any) -> dict[str, Any]:
    final: dict[str, Any] = {}
    async for event in model.astream(MESSAGES):
        if isinstance(event, Done):
            final = event.message
    return final


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    n, runs = args.chunks, args.runs
    registry = ModelRegistry(False)
    rows: list[tuple[str, float]] = []

    oa, an = openai_chunks(n), anthropic_chunks(n)

    def sse_only() -> None:
        parser = SSEParser()
        for chunk in oa:
            parser.feed(chunk)

    rows.append(("SSE parser only (bytes -> events)", median(sse_only, runs)))
    base_oa = median(lambda: asyncio.run(raw_httpx(oa)), runs)
    base_an = median(lambda: asyncio.run(raw_httpx(an)), runs)
    rows.append(("httpx alone, MockTransport (baseline, OpenAI body)", base_oa))

    openai = get_model(
        "openai/gpt-4o", api_key="bench-key", transport=transport(oa), registry=registry
    )
    anthropic = get_model(
        "anthropic/claude-sonnet-4-5",
        api_key="bench-key",
        transport=transport(an),
        registry=registry,
    )
    assert asyncio.run(consume(openai))["content"][0]["text"].startswith("tok0 ")
    t_oa = median(lambda: asyncio.run(consume(openai)), runs)
    t_an = median(lambda: asyncio.run(consume(anthropic)), runs)
    rows.append(("OpenAI adapter, astream, MockTransport", t_oa))
    rows.append(("  pinb overhead (minus httpx baseline)", t_oa - base_oa))
    rows.append(("Anthropic adapter, astream, MockTransport", t_an))
    rows.append(("  pinb overhead (minus httpx baseline)", t_an - base_an))
    rows.append(
        (
            "OpenAI adapter, sync stream() (worker thread)",
            median(lambda: list(openai.stream(MESSAGES)), runs),
        )
    )

    with LLMServer() as server:
        text = " ".join(f"tok{i % 97}" for i in range(n))
        for _ in range(runs * 2):
            server.reply(text, chunk_size=len(text) // n or 1)
        loop_oa = get_model(
            "openai/gpt-4o", api_key="bench-key", base_url=server.openai_base_url, registry=registry
        )
        loop_an = get_model(
            "anthropic/claude-sonnet-4-5",
            api_key="bench-key",
            base_url=server.anthropic_base_url,
            registry=registry,
        )
        rows.append(
            (
                "OpenAI, loopback server (socket + server included)",
                median(lambda: asyncio.run(consume(loop_oa)), runs),
            )
        )
        rows.append(
            (
                "Anthropic, loopback server (socket + server included)",
                median(lambda: asyncio.run(consume(loop_an)), runs),
            )
        )

    print(f"Streamed chunks per run: {n}; median of {runs} runs.\n")
    print("| path | total ms | µs per chunk |")
    print("|---|---:|---:|")
    for label, seconds in rows:
        print(f"| {label} | {seconds * 1e3:.1f} | {seconds / n * 1e6:.2f} |")


if __name__ == "__main__":
    main()
