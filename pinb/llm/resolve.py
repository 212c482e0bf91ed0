"""Turn ``"provider/model-id"`` into a ready model: registry entry, base URL, key, adapter."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from pinb.llm.config.credentials import Secret, auth_json_path, find_api_key, resolve_config_value
from pinb.llm.config.discover import discover_window
from pinb.llm.config.registry import ModelRegistry, ProviderConfig, default_registry
from pinb.llm.errors import MissingCredentialsError, UnknownProviderError, UnsupportedApiError
from pinb.llm.limits import UNREPORTED_WINDOW_OUTPUT
from pinb.llm.providers.anthropic import AnthropicChatModel
from pinb.llm.providers.client import HTTPChatModel
from pinb.llm.providers.openai import OpenAIChatModel
from pinb.llm.providers.retry import RetryPolicy
from pinb.llm.types import API_ANTHROPIC, API_OPENAI, ModelCost, ModelInfo
from pinb.llm.urls import join_url, split_query

__all__ = ["base_url_variable", "get_model", "provider_base_url", "resolve_model"]

_ADAPTERS: dict[str, type[HTTPChatModel]] = {
    API_OPENAI: OpenAIChatModel,
    API_ANTHROPIC: AnthropicChatModel,
}


def base_url_variable(provider: str) -> str:
    """The environment variable that moves a provider's server: ``LLAMACPP_BASE_URL`` ...

    >>> base_url_variable("llamacpp"), base_url_variable("my-box")
    ('LLAMACPP_BASE_URL', 'MY_BOX_BASE_URL')
    """
    return re.sub(r"[^A-Za-z0-9]", "_", provider).upper() + "_BASE_URL"


def provider_base_url(
    config: ProviderConfig, env: Mapping[str, str] | None = None, explicit: str | None = None
) -> str:
    """Where a provider's server is: ``explicit``, its variables, else its configured URL.

    Variables: the provider's own (``OPENAI_BASE_URL`` ...), then ``<PROVIDER>_BASE_URL``
    for every provider, and Ollama's ``OLLAMA_HOST``. A local OpenAI-compatible URL
    given without a path gets ``/v1`` (``http://127.0.0.1:8000`` → ``.../v1``).
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    url = explicit
    for name in (config.base_url_env, base_url_variable(config.name)):
        if not url and name:
            url = environ.get(name, "").strip() or None
    if not url and config.name == "ollama" and environ.get("OLLAMA_HOST", "").strip():
        host = environ["OLLAMA_HOST"].strip()
        url = host if "://" in host else f"http://{host}"
    if not url:
        return config.base_url
    path, query = split_query(url)
    url = path.rstrip("/") + query
    if not config.requires_key and config.api == API_OPENAI and urlsplit(url).path in ("", "/"):
        url = join_url(url, "v1")  # before a ?key=, not inside it
    return url


def resolve_model(
    spec: str | ModelInfo,
    *,
    api_key: str | Secret | None = None,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | httpx.Timeout | None = None,
    stream: bool = True,
    deadline: float | None = None,
    context_window: int | None = None,
    max_tokens: int | None = None,
    reasoning: bool | None = None,
    cost: ModelCost | Mapping[str, float] | None = None,
    registry: ModelRegistry | None = None,
    env: Mapping[str, str] | None = None,
    discover: bool | None = None,
) -> HTTPChatModel:
    """Build a model from ``"provider/model-id"`` (or a `ModelInfo`).

    Any model id is accepted for a known provider; ids the registry does not list get
    the provider's conservative defaults (``info.known`` is False). Providers come from
    the built-in table (openai, anthropic, openrouter, ollama, lmstudio, llamacpp, vllm,
    groq, xai, deepseek, mistral, cerebras) and from Pi's ``<agentDir>/models.json``.

    Parameters
    ----------
    spec:
        ``"openai/gpt-4o"``, ``"openrouter/anthropic/claude-sonnet-4.5"``,
        ``"ollama/qwen3:8b"``, or a bare id the registry knows (``"gpt-4o"``).
    api_key:
        Key to use instead of ``auth.json`` / environment / models.json.
    base_url:
        Server URL; otherwise the provider's variable (``OPENAI_BASE_URL``,
        ``LLAMACPP_BASE_URL``, ``OLLAMA_BASE_URL`` or ``OLLAMA_HOST`` ...: see
        `provider_base_url`), then models.json, then the built-in default.
    headers:
        Extra request headers.
    transport:
        ``httpx.AsyncBaseTransport`` to use instead of the network (tests).
    retry, timeout, stream, deadline:
        See `HTTPChatModel` (``deadline``: seconds one response may take in all).
    context_window, max_tokens, reasoning, cost:
        Override the registry's values for this model object only.
    registry:
        Registry to read (default: `default_registry`).
    env:
        Environment to read keys and URLs from (default ``os.environ``).
    discover:
        Ask the server at the resolved base URL (and no other) for the context window
        (`pinb.llm.config.discover.discover_window`). Default: for keyless (local) providers
        when the id is not in the registry or models.json and no ``context_window`` is
        given; the answer replaces pinb's 128,000 guess, and ``info.window_source`` says
        where it came from (``server: /props n_ctx``).

    Returns
    -------
    HTTPChatModel
        An `OpenAIChatModel` or an `AnthropicChatModel`.

    Raises
    ------
    UnknownProviderError
        For a provider no layer defines.
    MissingCredentialsError
        When the provider needs a key and none is found; the message names the
        environment variable to set.
    UnsupportedApiError
        For a models.json model whose ``api`` pinb does not speak.

    Examples
    --------
    >>> model = resolve_model(
    ...     "ollama/llama3.2", base_url="http://127.0.0.1:11434/v1", discover=False
    ... )
    >>> model.info.spec, model.info.known
    ('ollama/llama3.2', False)
    """
    reg = registry or default_registry()
    info = reg.info(spec) if isinstance(spec, str) else spec
    changes: dict[str, Any] = {
        k: v
        for k, v in (
            ("context_window", context_window),
            ("max_tokens", max_tokens),
            ("reasoning", reasoning),
        )
        if v is not None
    }
    if cost is not None:
        changes["cost"] = cost if isinstance(cost, ModelCost) else ModelCost(**dict(cost))
    if context_window is not None:
        changes["window_source"] = "setting"
    if changes:
        info = dataclasses.replace(info, **changes)
    try:
        config = reg.provider(info.provider)
    except UnknownProviderError:
        if base_url is None:
            raise
        config = ProviderConfig(info.provider, info.api, base_url, requires_key=False)
    adapter = _ADAPTERS.get(info.api)
    if adapter is None:
        raise UnsupportedApiError(
            f"{info.spec} uses the {info.api!r} API; pinb speaks {', '.join(_ADAPTERS)}."
        )
    environ: Mapping[str, str] = os.environ if env is None else env
    url = provider_base_url(config, environ, base_url)
    if discover is None:
        discover = (
            not config.requires_key
            and not info.known
            and context_window is None
            and transport is None  # a test double stands in for the server
        )
    if discover:
        answer = discover_window(url, info.id, provider=info.provider)
        if answer:
            info = dataclasses.replace(
                info, context_window=answer.tokens, window_source=answer.label
            )
        elif info.max_tokens > UNREPORTED_WINDOW_OUTPUT:
            # A guessed window on a server that may have a small one: ask for little.
            info = dataclasses.replace(
                info,
                max_tokens=UNREPORTED_WINDOW_OUTPUT,
                note=(
                    f"the server does not say its window, so replies are limited to "
                    f"{UNREPORTED_WINDOW_OUTPUT:,} tokens; give the window (`--window N`, "
                    "or contextWindow in models.json) to plan for it"
                ),
            )
    key = find_api_key(
        config.name,
        env_vars=config.env_keys,
        config_value=config.api_key_config,
        explicit=api_key,
        env=env,
    )
    if key is None and config.requires_key:
        raise MissingCredentialsError(
            config.name,
            config.env_keys[0] if config.env_keys else None,
            auth_path=str(auth_json_path(env)),
        )
    all_headers: dict[str, str] = {}
    for name, value in config.headers.items():
        resolved = resolve_config_value(value, environ)
        if resolved:
            all_headers[name] = resolved
    all_headers.update(headers or {})
    return adapter(
        info,
        base_url=url,
        api_key=key,
        headers=all_headers,
        compat=config.compat,
        transport=transport,
        retry=retry,
        timeout=timeout,
        stream=stream,
        deadline=deadline,
    )


def get_model(spec: str | ModelInfo, **options: Any) -> HTTPChatModel:
    """Shorthand for `resolve_model` (same parameters).

    Examples
    --------
    >>> get_model("lmstudio/qwen2.5-7b-instruct", discover=False).base_url
    'http://127.0.0.1:1234/v1'
    """
    return resolve_model(spec, **options)
