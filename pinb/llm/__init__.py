"""pinb's LLM layer: httpx providers, a pure SSE parser, retries, a model registry.

Quick start::

    from pinb.llm import get_model
    model = get_model("anthropic/claude-sonnet-4-5")        # key from ANTHROPIC_API_KEY
    message = model.complete([{"role": "user", "content": "Hi", "timestamp": 0}])
    message["content"], message["usage"]["cost"]["total"]

Every model follows `ChatModel`: ``astream`` / ``stream`` yield events ending with
`Done`; ``acomplete`` / ``complete`` return the final Pi-shaped assistant message. The
rest of a request is one `RequestOptions` value, or its fields as keyword arguments::

    model.complete(messages, system_prompt="Be terse.", max_tokens=200)
    model.complete(messages, RequestOptions(system_prompt="Be terse.", max_tokens=200))

The modules form four layers, the first at the bottom. Each imports only from the layers
listed before it and, without a cycle, from its own (``tests/llm/test_layers.py`` holds
them to it):

1. ``limits`` ``types`` ``errors`` ``urls`` ``pool`` ``guard`` ``base``: the values every
   model shares (events, tool specs, request options, model info, the output-limit rule),
   the exceptions, URL helpers, the process's connection pool, the cancel guard and the
   base class that derives three request methods from ``astream``.
2. ``config``: what is configured: the built-in catalog, the registry, credentials and
   secrets, Pi's settings files, what a local server says about itself.
3. ``providers``: the models: the HTTP client and its two wire formats, SSE, assembly,
   retries, overflow, the scripted and the offline demo models.
4. ``resolve`` ``window`` ``local``: a spec to a model, a session to its window, the local
   servers of this machine.
"""

from __future__ import annotations

from pinb.llm.base import ChatModelBase, ThreadedStream
from pinb.llm.config.credentials import ENV_API_KEYS, Redactor, Secret, find_api_key, sanitize_key
from pinb.llm.config.discover import clean_model_id, discover_context_window
from pinb.llm.config.registry import (
    ModelRegistry,
    OpenAICompat,
    ProviderConfig,
    default_registry,
    split_spec,
)
from pinb.llm.config.secrets import redact_secrets
from pinb.llm.errors import (
    ContextOverflowError,
    InvalidCredentialsError,
    LLMError,
    MissingCredentialsError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamProtocolError,
    UnknownProviderError,
    UnsupportedApiError,
)
from pinb.llm.limits import OutputLimit, choose_output_limit
from pinb.llm.local import LocalServer, configured_local_servers, discover_local_servers
from pinb.llm.providers.anthropic import AnthropicChatModel
from pinb.llm.providers.assemble import MessageBuilder, parse_partial_json
from pinb.llm.providers.client import DEFAULT_TIMEOUT, HTTPChatModel
from pinb.llm.providers.openai import OpenAIChatModel
from pinb.llm.providers.overflow import OVERFLOW_PATTERNS, is_context_overflow, window_from_error
from pinb.llm.providers.retry import RetryPolicy, is_retryable_error, parse_retry_after
from pinb.llm.providers.sse import SSEEvent, SSEParser, parse_sse
from pinb.llm.providers.transform import NO_RESULT_TEXT, transform_messages
from pinb.llm.resolve import base_url_variable, get_model, provider_base_url, resolve_model
from pinb.llm.types import (
    API_ANTHROPIC,
    API_OPENAI,
    THINKING_LEVELS,
    CancelToken,
    ChatModel,
    Done,
    ModelCost,
    ModelInfo,
    RequestFields,
    RequestOptions,
    Retry,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
    empty_usage,
    make_usage,
)
from pinb.llm.urls import display_url

__all__ = [
    "API_ANTHROPIC",
    "API_OPENAI",
    "DEFAULT_TIMEOUT",
    "ENV_API_KEYS",
    "NO_RESULT_TEXT",
    "OVERFLOW_PATTERNS",
    "THINKING_LEVELS",
    "AnthropicChatModel",
    "CancelToken",
    "ChatModel",
    "ChatModelBase",
    "ContextOverflowError",
    "Done",
    "HTTPChatModel",
    "InvalidCredentialsError",
    "LLMError",
    "LocalServer",
    "MessageBuilder",
    "MissingCredentialsError",
    "ModelCost",
    "ModelInfo",
    "ModelRegistry",
    "OpenAIChatModel",
    "OpenAICompat",
    "OutputLimit",
    "ProviderConfig",
    "ProviderHTTPError",
    "ProviderStreamError",
    "Redactor",
    "RequestFields",
    "RequestOptions",
    "Retry",
    "RetryPolicy",
    "SSEEvent",
    "SSEParser",
    "Secret",
    "StreamEvent",
    "StreamProtocolError",
    "TextDelta",
    "ThinkingDelta",
    "ThreadedStream",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "UnknownProviderError",
    "UnsupportedApiError",
    "Usage",
    "base_url_variable",
    "choose_output_limit",
    "clean_model_id",
    "configured_local_servers",
    "default_registry",
    "discover_context_window",
    "discover_local_servers",
    "display_url",
    "empty_usage",
    "find_api_key",
    "get_model",
    "is_context_overflow",
    "is_retryable_error",
    "make_usage",
    "parse_partial_json",
    "parse_retry_after",
    "parse_sse",
    "provider_base_url",
    "redact_secrets",
    "resolve_model",
    "sanitize_key",
    "split_spec",
    "transform_messages",
    "window_from_error",
]
