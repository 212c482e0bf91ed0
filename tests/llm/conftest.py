"""Fixtures for the LLM tests: an isolated environment, a loopback server, fast retries."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from pinb.llm import ENV_API_KEYS, HTTPChatModel, ModelRegistry, RetryPolicy, get_model
from pinb.testing import messages
from pinb.testing.llm_server import LLMServer

#: Every test coroutine runs under this deadline, so a hang fails instead of blocking CI.
DEADLINE = 15.0

SPECS = {"openai": "openai/gpt-4o", "anthropic": "anthropic/claude-sonnet-4-5"}


def arun(coro: Coroutine[Any, Any, Any], timeout: float = DEADLINE) -> Any:
    """Run a coroutine to completion with a deadline."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """No test reads the real home or a real key."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    for names in ENV_API_KEYS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    for name in (
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OPENROUTER_BASE_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        yield srv


class SleepRecorder:
    """An injected retry sleep that records the delays and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def make_model(server: LLMServer, sleeps: SleepRecorder):
    """``make_model("openai" | "anthropic", **options)`` pointed at the loopback server."""

    def make(wire: str = "openai", **options: Any) -> HTTPChatModel:
        base = server.openai_base_url if wire == "openai" else server.anthropic_base_url
        options.setdefault("retry", RetryPolicy(sleep=sleeps))
        options.setdefault("timeout", 5.0)
        options.setdefault("api_key", "test-key-0000")
        return get_model(
            options.pop("spec", SPECS[wire]),
            base_url=base,
            registry=ModelRegistry(False),
            **options,
        )

    return make


def user(text: str, ts: int = 1) -> dict[str, Any]:
    """A Pi user message with one text block."""
    return messages.user(text, ts=ts)
