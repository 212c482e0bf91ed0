"""Which model a ``%%pi`` cell talks to: an explicit spec, a configured provider, a local server, or the demo."""

from __future__ import annotations

import os
from typing import Any

import httpx

from ..errors import PinbError
from ..llm import ChatModel, get_model
from ..llm.credentials import ENV_API_KEYS, find_api_key

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
#: OpenAI-compatible servers people run on their own machine: (provider, models URL).
LOCAL_SERVERS = (
    ("ollama", "http://127.0.0.1:11434/v1/models"),
    ("lmstudio", "http://127.0.0.1:1234/v1/models"),
    ("llamacpp", "http://127.0.0.1:8080/v1/models"),
)


class NoModelConfiguredError(PinbError):
    """No provider key and no local server: say how to configure one."""

    def __init__(self) -> None:
        super().__init__(
            "no model configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or another provider's "
            "key), start a local OpenAI-compatible server (Ollama, LM Studio, llama.cpp), and pick "
            "one with `%pi model provider/model-id` — or try `%%pi --model offline` for the "
            "labelled scripted demo"
        )


def _local_model(timeout: float) -> tuple[str, str] | None:
    for provider, url in LOCAL_SERVERS:
        try:
            response = httpx.get(url, timeout=timeout)
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
            return provider, str(models[0]["id"])
    return None


def choose_model(spec: str | None, *, probe_timeout: float = 0.3, **options: Any) -> ChatModel:
    """The model for ``spec`` (``provider/model``, or ``offline`` for the scripted demo).

    Without a spec: the first provider with a key (environment or Pi's ``auth.json``),
    then the first local OpenAI-compatible server that answers on 127.0.0.1.

    Raises
    ------
    NoModelConfiguredError
        Nothing is configured.
    MissingCredentialsError
        ``spec`` names a provider whose key is missing (the message names the variable).
    """
    if spec in ("offline", "demo", "pinb/offline-demo"):
        from ..testing.demo import OfflineDemoModel

        return OfflineDemoModel()
    if spec:
        return get_model(spec, **options)
    for provider, env_vars in ENV_API_KEYS.items():
        if find_api_key(provider, env_vars=env_vars, env=os.environ) is not None:
            return get_model(f"{provider}/{DEFAULT_MODELS[provider]}", **options)
    local = _local_model(probe_timeout)
    if local is not None:
        return get_model(f"{local[0]}/{local[1]}", **options)
    raise NoModelConfiguredError()
