"""Fixtures for the LLM tests: an isolated environment, a loopback server, fast retries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pinb.llm import ENV_API_KEYS, HTTPChatModel, ModelRegistry, RetryPolicy, get_model
from pinb.testing.llm_server import LLMServer
from tests.llm.helpers import SPECS, SleepRecorder


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
