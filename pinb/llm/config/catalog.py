"""Built-in data: the providers pinb knows and common models with limits and prices."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pinb.llm.types import API_ANTHROPIC, API_OPENAI, ModelCost, ModelInfo
from pinb.llm.urls import display_url

__all__ = [
    "BUILTIN_MODELS",
    "BUILTIN_PROVIDERS",
    "LOCAL_COMPAT",
    "SUPPORTED_APIS",
    "OpenAICompat",
    "ProviderConfig",
]

SUPPORTED_APIS: tuple[str, ...] = (API_OPENAI, API_ANTHROPIC)


@dataclass(frozen=True, slots=True)
class OpenAICompat:
    """How one OpenAI-compatible server differs from the others (data, not subclasses).

    Attributes
    ----------
    max_tokens_field:
        ``max_completion_tokens`` (OpenAI) or ``max_tokens`` (most other servers).
    send_default_max_tokens:
        Put the model's output limit into `HTTPChatModel.build_body` when the caller
        gives none. Requests themselves always carry a limit fitted to the window
        (`pinb.llm.limits.choose_output_limit`), whatever this says.
    supports_developer_role:
        Send the system prompt as a ``developer`` message to reasoning models.
    reasoning_format:
        ``reasoning_effort`` (top-level field), ``openrouter`` (``reasoning: {effort}``)
        or ``none``.
    supports_usage_in_streaming:
        Ask for ``stream_options: {include_usage: true}``.
    supports_store:
        Send ``store: false`` (OpenAI keeps completions otherwise).
    requires_thinking_as_text:
        Replay earlier reasoning as ``<thinking>`` text instead of a reasoning field.
    """

    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_tokens"
    send_default_max_tokens: bool = False
    supports_developer_role: bool = False
    reasoning_format: Literal["reasoning_effort", "openrouter", "none"] = "reasoning_effort"
    supports_usage_in_streaming: bool = True
    supports_store: bool = False
    requires_thinking_as_text: bool = False


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """One provider: where it lives, which wire format it speaks, where its key comes from.

    Attributes
    ----------
    name:
        Provider name as written in ``model_change`` entries.
    api:
        ``openai-completions`` or ``anthropic-messages``.
    base_url:
        Default base URL (``.../v1`` for OpenAI-compatible servers).
    env_keys:
        Environment variables holding the key, first one named in errors.
    base_url_env:
        Environment variable overriding the base URL (``OPENAI_BASE_URL`` ...).
    requires_key:
        False for local servers (Ollama, LM Studio, llama.cpp, vLLM).
    api_key_config:
        A models.json ``apiKey`` value (env-var name or literal).
    headers:
        Extra request headers (values may be secrets; they are never printed).
    compat:
        OpenAI-compatible quirks.
    default_context_window, default_max_tokens:
        Used for model ids the registry does not know.
    """

    name: str
    api: str
    base_url: str
    env_keys: tuple[str, ...] = ()
    base_url_env: str | None = None
    requires_key: bool = True
    api_key_config: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    compat: OpenAICompat = field(default_factory=OpenAICompat)
    default_context_window: int = 128_000
    default_max_tokens: int = 16_384

    def __repr__(self) -> str:
        # The base URL may carry a password or a ?key=: shown masked, as everywhere.
        shown = []
        for f in dataclasses.fields(self):
            if f.repr:
                value = getattr(self, f.name)
                shown.append(f"{f.name}={display_url(value) if f.name == 'base_url' else value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


_OPENAI_COMPAT = OpenAICompat(
    max_tokens_field="max_completion_tokens",
    send_default_max_tokens=True,
    supports_developer_role=True,
    supports_store=True,
)
_HOSTED_COMPAT = OpenAICompat(send_default_max_tokens=True)
LOCAL_COMPAT = OpenAICompat()

BUILTIN_PROVIDERS: dict[str, ProviderConfig] = {
    p.name: p
    for p in (
        ProviderConfig(
            "openai",
            API_OPENAI,
            "https://api.openai.com/v1",
            ("OPENAI_API_KEY",),
            "OPENAI_BASE_URL",
            compat=_OPENAI_COMPAT,
        ),
        ProviderConfig(
            "anthropic",
            API_ANTHROPIC,
            "https://api.anthropic.com",
            ("ANTHROPIC_API_KEY",),
            "ANTHROPIC_BASE_URL",
            default_context_window=200_000,
            default_max_tokens=8192,
        ),
        ProviderConfig(
            "openrouter",
            API_OPENAI,
            "https://openrouter.ai/api/v1",
            ("OPENROUTER_API_KEY",),
            "OPENROUTER_BASE_URL",
            compat=dataclasses.replace(_HOSTED_COMPAT, reasoning_format="openrouter"),
        ),
        ProviderConfig(
            "groq",
            API_OPENAI,
            "https://api.groq.com/openai/v1",
            ("GROQ_API_KEY",),
            compat=_HOSTED_COMPAT,
        ),
        ProviderConfig(
            "xai", API_OPENAI, "https://api.x.ai/v1", ("XAI_API_KEY",), compat=_HOSTED_COMPAT
        ),
        ProviderConfig(
            "deepseek",
            API_OPENAI,
            "https://api.deepseek.com/v1",
            ("DEEPSEEK_API_KEY",),
            compat=_HOSTED_COMPAT,
        ),
        ProviderConfig(
            "mistral",
            API_OPENAI,
            "https://api.mistral.ai/v1",
            ("MISTRAL_API_KEY",),
            compat=dataclasses.replace(_HOSTED_COMPAT, reasoning_format="none"),
        ),
        ProviderConfig(
            "cerebras",
            API_OPENAI,
            "https://api.cerebras.ai/v1",
            ("CEREBRAS_API_KEY",),
            compat=_HOSTED_COMPAT,
        ),
        ProviderConfig(
            "ollama",
            API_OPENAI,
            "http://127.0.0.1:11434/v1",
            requires_key=False,
            compat=LOCAL_COMPAT,
        ),
        ProviderConfig(
            "lmstudio",
            API_OPENAI,
            "http://127.0.0.1:1234/v1",
            requires_key=False,
            compat=LOCAL_COMPAT,
        ),
        ProviderConfig(
            "llamacpp",
            API_OPENAI,
            "http://127.0.0.1:8080/v1",
            requires_key=False,
            compat=LOCAL_COMPAT,
        ),
        ProviderConfig(
            "vllm", API_OPENAI, "http://127.0.0.1:8000/v1", requires_key=False, compat=LOCAL_COMPAT
        ),
    )
}


def _m(
    provider: str,
    model_id: str,
    ctx: int,
    out: int,
    cost: tuple[float, float, float, float],
    reasoning: bool = False,
    images: bool = True,
    name: str = "",
) -> ModelInfo:
    api = BUILTIN_PROVIDERS[provider].api
    return ModelInfo(
        provider,
        model_id,
        api,
        ctx,
        out,
        ModelCost(*cost),
        reasoning,
        ("text", "image") if images else ("text",),
        name or model_id,
    )


# Prices are US dollars per million tokens (input, output, cache read, cache write) as
# published by the providers when this table was written; override them when they change.
BUILTIN_MODELS: tuple[ModelInfo, ...] = (
    _m("openai", "gpt-4o", 128_000, 16_384, (2.5, 10.0, 1.25, 0.0)),
    _m("openai", "gpt-4o-mini", 128_000, 16_384, (0.15, 0.6, 0.075, 0.0)),
    _m("openai", "gpt-4.1", 1_047_576, 32_768, (2.0, 8.0, 0.5, 0.0)),
    _m("openai", "gpt-4.1-mini", 1_047_576, 32_768, (0.4, 1.6, 0.1, 0.0)),
    _m("openai", "gpt-4.1-nano", 1_047_576, 32_768, (0.1, 0.4, 0.025, 0.0)),
    _m("openai", "o3", 200_000, 100_000, (2.0, 8.0, 0.5, 0.0), reasoning=True),
    _m("openai", "o4-mini", 200_000, 100_000, (1.1, 4.4, 0.275, 0.0), reasoning=True),
    _m("openai", "gpt-5", 400_000, 128_000, (1.25, 10.0, 0.125, 0.0), reasoning=True),
    _m("openai", "gpt-5-mini", 400_000, 128_000, (0.25, 2.0, 0.025, 0.0), reasoning=True),
    _m("openai", "gpt-5-nano", 400_000, 128_000, (0.05, 0.4, 0.005, 0.0), reasoning=True),
    _m("anthropic", "claude-sonnet-4-5", 200_000, 64_000, (3.0, 15.0, 0.3, 3.75), True),
    _m("anthropic", "claude-sonnet-4-5-20250929", 200_000, 64_000, (3.0, 15.0, 0.3, 3.75), True),
    _m("anthropic", "claude-sonnet-4-0", 200_000, 64_000, (3.0, 15.0, 0.3, 3.75), True),
    _m("anthropic", "claude-sonnet-4-20250514", 200_000, 64_000, (3.0, 15.0, 0.3, 3.75), True),
    _m("anthropic", "claude-3-7-sonnet-20250219", 200_000, 64_000, (3.0, 15.0, 0.3, 3.75), True),
    _m("anthropic", "claude-opus-4-1", 200_000, 32_000, (15.0, 75.0, 1.5, 18.75), True),
    _m("anthropic", "claude-opus-4-1-20250805", 200_000, 32_000, (15.0, 75.0, 1.5, 18.75), True),
    _m("anthropic", "claude-opus-4-0", 200_000, 32_000, (15.0, 75.0, 1.5, 18.75), True),
    _m("anthropic", "claude-opus-4-20250514", 200_000, 32_000, (15.0, 75.0, 1.5, 18.75), True),
    _m("anthropic", "claude-haiku-4-5", 200_000, 64_000, (1.0, 5.0, 0.1, 1.25), True),
    _m("anthropic", "claude-haiku-4-5-20251001", 200_000, 64_000, (1.0, 5.0, 0.1, 1.25), True),
    _m("anthropic", "claude-3-5-haiku-20241022", 200_000, 8_192, (0.8, 4.0, 0.08, 1.0)),
    _m(
        "openrouter", "anthropic/claude-sonnet-4.5", 1_000_000, 64_000, (3.0, 15.0, 0.3, 3.75), True
    ),
    _m("openrouter", "openai/gpt-4o-mini", 128_000, 16_384, (0.15, 0.6, 0.075, 0.0)),
    _m("openrouter", "openai/gpt-5", 400_000, 128_000, (1.25, 10.0, 0.125, 0.0), reasoning=True),
)
