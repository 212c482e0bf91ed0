"""Which model a ``%%pi`` cell talks to: an explicit spec, a configured provider, a local server, or the demo."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import PinbError
from ..llm import ChatModel, get_model
from ..llm.config.credentials import ENV_API_KEYS, find_api_key
from ..llm.config.discover import server_root
from ..llm.local import (
    LOCAL_PROVIDERS,
    LocalServer,
    configured_local_servers,
    discover_local_servers,
    list_models,
)
from ..llm.urls import display_url

__all__ = [
    "DEFAULT_MODELS",
    "LOCAL_SERVERS",
    "OFFLINE_SPECS",
    "NoModelConfiguredError",
    "choose_model",
    "discover_local_servers",
    "discovery_report",
]

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
#: OpenAI-compatible servers people run on their own machine, asked in this order, and
#: only when their address is configured (``<PROVIDER>_BASE_URL``, ``OLLAMA_HOST``,
#: models.json, ``%pi model --base-url``).
LOCAL_SERVERS = LOCAL_PROVIDERS
#: What names pinb's own offline demo model (``--model offline``); no other program has it.
OFFLINE_SPECS = ("offline", "demo", "pinb/offline-demo")


class NoModelConfiguredError(PinbError):
    """No provider key and no local server: say how to configure one, and what runs without."""

    def __init__(self) -> None:
        super().__init__(
            "no model configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or another "
            "provider's key), or run a local OpenAI-compatible server (`%pi model --discover` "
            "finds it; LLAMACPP_BASE_URL / OLLAMA_BASE_URL say where), then `%pi model "
            "provider/model-id`. Without a model: `%pi compact --offline` and `%pi goto ID "
            "--summarize --offline` summarize by extraction, `%%pi --model offline` runs the "
            "labelled scripted demo"
        )


def _local_model(timeout: float, base_urls: Mapping[str, str]) -> tuple[str, str] | None:
    """The first configured local server that lists a model; unconfigured ports are not asked."""
    for provider, url, _source in configured_local_servers(base_urls=base_urls):
        models = list_models(url, timeout=timeout)
        if models:
            return provider, models[0]
    return None


def discovery_report(servers: Sequence[LocalServer]) -> str:
    """What ``%pi model --discover`` prints: one line per server, and how to pick one."""
    if not servers:
        return (
            "No local server answered on the usual ports (Ollama 11434, LM Studio 1234, "
            "llama.cpp 8080, vLLM 8000) or at a configured address."
        )
    lines = [f"- {server}" for server in servers]
    first = next((s for s in servers if s.spec), None)
    if first is not None:
        # Masked like every shown URL: the user knows the password the real one holds.
        root = display_url(server_root(first.base_url))
        lines.append(f"Nothing was chosen. To use one: %pi model {first.spec} --base-url {root}")
    return "Local servers found:\n" + "\n".join(lines)


def choose_model(
    spec: str | None,
    *,
    probe_timeout: float = 0.3,
    base_urls: Mapping[str, str] | None = None,
    **options: Any,
) -> ChatModel:
    """The model for ``spec`` (``provider/model``, or ``offline`` for the scripted demo).

    Without a spec: the first provider with a key (environment or Pi's ``auth.json``),
    then the first configured local OpenAI-compatible server that lists a model (Ollama,
    LM Studio, llama.cpp, vLLM); a server whose address nobody configured is never asked
    (``%pi model --discover`` lists them). ``base_urls`` maps provider names
    to server URLs chosen in the notebook (``%pi model --base-url``).

    Raises
    ------
    NoModelConfiguredError
        Nothing is configured.
    MissingCredentialsError
        ``spec`` names a provider whose key is missing (the message names the variable).
    """
    if spec in OFFLINE_SPECS:
        from ..llm.providers.offline import OfflineDemoModel

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
