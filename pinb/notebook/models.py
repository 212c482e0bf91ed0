"""Which model a ``%%pi`` cell talks to: an explicit spec, a configured provider, a local server, or the demo."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx

from ..errors import PinbError
from ..llm import ChatModel, get_model
from ..llm.credentials import ENV_API_KEYS, find_api_key
from ..llm.discover import clean_model_id
from ..llm.registry import default_registry
from ..llm.resolve import provider_base_url

__all__ = ["DEFAULT_MODELS", "LOCAL_SERVERS", "NoModelConfiguredError", "choose_model"]

#: The model used for a provider when only its key is configured.
DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4o",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "groq": "llama-3.3-70b-versatile",
    "xai": "grok-4",
    "deepseek": "deepseek-chat",
    "mistral": "mistral-large-latest",
    "cerebras": "llama-3.3-70b",
}
#: OpenAI-compatible servers people run on their own machine, probed in this order at
#: their configured address (``<PROVIDER>_BASE_URL``, ``OLLAMA_HOST``, models.json).
LOCAL_SERVERS = ("ollama", "lmstudio", "llamacpp", "vllm")


class NoModelConfiguredError(PinbError):
    """No provider key and no local server: say how to configure one."""

    def __init__(self) -> None:
        super().__init__(
            "no model configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or another provider's "
            "key), or start a local OpenAI-compatible server (Ollama, LM Studio, llama.cpp, vLLM; "
            "LLAMACPP_BASE_URL / OLLAMA_BASE_URL say where it runs), and pick one with "
            "`%pi model provider/model-id` — or try `%%pi --model offline` for the labelled "
            "scripted demo"
        )


def _local_model(timeout: float, base_urls: Mapping[str, str]) -> tuple[str, str] | None:
    registry = default_registry()
    for provider in LOCAL_SERVERS:
        url = provider_base_url(registry.provider(provider), os.environ, base_urls.get(provider))
        try:
            response = httpx.get(f"{url}/models", timeout=timeout)
            data = response.json()
        except (httpx.HTTPError, ValueError):
            continue
        models = data.get("data") if isinstance(data, dict) else None
        if (
            isinstance(models, list)
            and models
            and isinstance(models[0], dict)
            and models[0].get("id")
        ):
            return provider, clean_model_id(str(models[0]["id"]))
    return None


def choose_model(
    spec: str | None,
    *,
    probe_timeout: float = 0.3,
    base_urls: Mapping[str, str] | None = None,
    **options: Any,
) -> ChatModel:
    """The model for ``spec`` (``provider/model``, or ``offline`` for the scripted demo).

    Without a spec: the first provider with a key (environment or Pi's ``auth.json``),
    then the first local OpenAI-compatible server that answers (Ollama, LM Studio,
    llama.cpp, vLLM, each at its configured address). ``base_urls`` maps provider names
    to server URLs chosen in the notebook (``%pi model --base-url``).

    Raises
    ------
    NoModelConfiguredError
        Nothing is configured.
    MissingCredentialsError
        ``spec`` names a provider whose key is missing (the message names the variable).
    """
    if spec in ("offline", "demo", "pinb/offline-demo"):
        from ..llm.offline import OfflineDemoModel

        return OfflineDemoModel()
    urls = dict(base_urls or {})

    def model(provider_spec: str) -> ChatModel:
        provider = provider_spec.partition("/")[0]
        if provider in urls and "base_url" not in options:
            return get_model(provider_spec, base_url=urls[provider], **options)
        return get_model(provider_spec, **options)

    if spec:
        return model(spec)
    for provider, env_vars in ENV_API_KEYS.items():
        if find_api_key(provider, env_vars=env_vars, env=os.environ) is not None:
            return model(f"{provider}/{DEFAULT_MODELS[provider]}")
    local = _local_model(probe_timeout, urls)
    if local is not None:
        return model(f"{local[0]}/{local[1]}")
    raise NoModelConfiguredError()
