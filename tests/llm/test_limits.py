"""Every request carries an output limit that fits the window (a real loopback server)."""

from __future__ import annotations

import pytest

from pinb.llm import ModelRegistry, RetryPolicy, get_model
from pinb.llm.config.discover import forget_discoveries
from pinb.llm.limits import choose_output_limit
from pinb.llm.types import ModelInfo
from pinb.testing.llm_server import LLMServer
from pinb.testing.llm_wire import prompt_tokens

from .helpers import arun, user


@pytest.fixture(autouse=True)
def _fresh() -> None:
    forget_discoveries()


def _limit(body: dict) -> int:
    return int(body.get("max_tokens") or body.get("max_completion_tokens"))


def test_the_limit_is_the_models_unless_the_window_cuts_it() -> None:
    info = ModelInfo("llamacpp", "smol", "openai-completions", 4096, 1024)
    assert choose_output_limit(info, 500).tokens == 1024  # room enough: the model's own
    cut = choose_output_limit(info, 3500)
    assert cut.capped and cut.fits and cut.tokens == 4096 - 3500 - 128
    assert "4,096-token window" in str(cut)
    # no room beside the margin: what is left; none at all: 1, never 0 or negative
    assert choose_output_limit(info, 4000).tokens == 96
    full = choose_output_limit(info, 5000)
    assert full.tokens == 1 and not full.fits
    # Pi 1.6 sends 1 on a 4,096 window (a 4,096 margin); a short prompt gets real room here
    assert choose_output_limit(ModelInfo("x", "y", "z", 4096, 16_384), 300).tokens == 3668


def test_a_limit_the_window_cuts_below_a_sixteenth_of_it_is_starved() -> None:
    info = ModelInfo("llamacpp", "smol", "openai-completions", 4096, 1024)
    assert not choose_output_limit(info, 3000).starved  # 968: short, but a reply fits
    assert choose_output_limit(info, 3800).starved  # 168 < 256 = 4,096 / 16
    assert choose_output_limit(info, 5000).starved  # 1
    # a model (or caller) that asks for little is never starved by getting it
    assert not choose_output_limit(info, 3900, requested=50).starved
    assert not choose_output_limit(ModelInfo("x", "y", "z", 200_000, 64_000), 150_000).starved


@pytest.mark.parametrize("spec", ["vllm/qwen", "openai/gpt-4o"])
def test_every_request_fits_a_server_that_checks_the_sum(spec: str) -> None:
    """vLLM answers 400 when prompt + max_tokens exceeds its window; no request earns one."""
    with LLMServer(context_window=4096, window_endpoint="vllm") as server:
        options = {"api_key": "k", "context_window": 4096} if spec.startswith("openai") else {}
        model = get_model(
            spec,
            base_url=server.openai_base_url,
            registry=ModelRegistry(False),
            retry=RetryPolicy(max_retries=0),
            **options,
        )
        for size in (10, 2000, 3500, 3900):
            server.reply("ok")
            message = arun(model.acomplete([user("w" * 4 * size)]))
            assert message["stopReason"] == "stop", message.get("errorMessage")
        for request in server.requests:
            body = request.body
            assert prompt_tokens(body) + _limit(body) <= 4096
    field = "max_completion_tokens" if spec.startswith("openai") else "max_tokens"
    assert all(field in r.body for r in server.requests)


def test_without_the_fit_vllm_would_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server mode is real: the model's whole maxTokens on a full window is refused."""
    import pinb.llm.providers.client as client

    monkeypatch.setattr(
        client,
        "choose_output_limit",
        lambda info, prompt, requested=None: choose_output_limit(
            ModelInfo(info.provider, info.id, info.api, 10**9, info.max_tokens), prompt, requested
        ),
    )
    with LLMServer(context_window=4096, window_endpoint="vllm") as server:
        model = get_model(
            "vllm/qwen",
            base_url=server.url,
            registry=ModelRegistry(False),
            retry=RetryPolicy(max_retries=0),
        )
        message = arun(model.acomplete([user("w" * 8000)]))
    assert message["stopReason"] == "error"
    assert "in the completion" in message["errorMessage"]
