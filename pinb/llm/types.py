"""Plain values shared by every model: stream events, tool specs, request options, model info, the cancel token."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, TypedDict, Unpack, runtime_checkable

from pinb.llm.limits import OutputLimit

__all__ = [
    "API_ANTHROPIC",
    "API_OPENAI",
    "STOP_REASONS",
    "THINKING_LEVELS",
    "CancelToken",
    "ChatModel",
    "Done",
    "ModelCost",
    "ModelInfo",
    "RequestFields",
    "RequestOptions",
    "Retry",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "Usage",
    "empty_usage",
    "make_usage",
]

#: The ``api`` value of messages produced by the OpenAI-compatible adapter.
API_OPENAI = "openai-completions"
#: The ``api`` value of messages produced by the Anthropic adapter.
API_ANTHROPIC = "anthropic-messages"

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]
STOP_REASONS: tuple[str, ...] = ("stop", "length", "toolUse", "error", "aborted")
#: Pi's thinking levels (spec §3.9); ``max`` is newer Pi's alias of the top level.
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


# --------------------------------------------------------------------------- models


@dataclass(frozen=True, slots=True)
class ModelCost:
    """US dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What pinb knows about one model.

    Attributes
    ----------
    provider, id:
        ``"openai"``, ``"gpt-4o"``: the pair written to ``model_change`` entries.
    api:
        Wire protocol, ``"openai-completions"`` or ``"anthropic-messages"``.
    context_window, max_tokens:
        Input window and output limit, in tokens.
    cost:
        Prices per million tokens, used to fill ``usage.cost``.
    reasoning:
        Whether the model takes a thinking level (reasoning effort / thinking budget).
    input:
        Accepted input kinds, ``("text",)`` or ``("text", "image")``.
    name:
        Display name.
    known:
        False when the id was not in the registry and defaults were used.
    window_source:
        Where ``context_window`` came from: ``"setting"`` (given by the caller),
        ``"server"`` (asked of a local server), or empty: the registry's entry when
        ``known``, else the provider's default (see :attr:`window_origin`).
    note:
        What the figures above cannot say alone, in one line (``""``: nothing), e.g. that
        a local server did not say its window and replies are limited until it is known.
    """

    provider: str
    id: str
    api: str
    context_window: int = 128_000
    max_tokens: int = 16_384
    cost: ModelCost = field(default_factory=ModelCost)
    reasoning: bool = False
    input: tuple[str, ...] = ("text",)
    name: str = ""
    known: bool = True
    window_source: str = ""
    note: str = ""

    @property
    def window_origin(self) -> str:
        """How the window was found, for labels: setting, server, models.json, model
        registry, or ``provider default`` (a guess for a model the registry does not list)."""
        if self.window_source:
            return self.window_source
        return "model registry" if self.known else "provider default"

    @property
    def spec(self) -> str:
        """``"provider/id"``, the string `pinb.llm.get_model` takes."""
        return f"{self.provider}/{self.id}"

    @property
    def supports_images(self) -> bool:
        """Whether image blocks can be sent to this model."""
        return "image" in self.input


def empty_usage() -> dict[str, Any]:
    """A zero Pi usage object (spec §3.5)."""
    return make_usage(0, 0, 0, 0, 0, None)


def make_usage(
    input_tokens: int,
    output_tokens: int,
    cache_read: int,
    cache_write: int,
    total_tokens: int,
    cost: ModelCost | None,
) -> dict[str, Any]:
    """Build Pi's usage object, with the cost computed from per-million prices."""
    price = cost or ModelCost()
    c_in = input_tokens * price.input / 1e6
    c_out = output_tokens * price.output / 1e6
    c_read = cache_read * price.cache_read / 1e6
    c_write = cache_write * price.cache_write / 1e6
    return {
        "input": input_tokens,
        "output": output_tokens,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": total_tokens,
        "cost": {
            "input": c_in,
            "output": c_out,
            "cacheRead": c_read,
            "cacheWrite": c_write,
            "total": c_in + c_out + c_read + c_write,
        },
    }


# --------------------------------------------------------------------------- tools


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call.

    Attributes
    ----------
    name:
        Tool name (``read``, ``bash`` ...).
    description:
        What the tool does, for the model.
    parameters:
        JSON Schema of the arguments object.
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    @classmethod
    def coerce(cls, tool: ToolSpec | Mapping[str, Any] | Any) -> ToolSpec:
        """Accept a `ToolSpec`, a mapping or any object with the three attributes."""
        if isinstance(tool, ToolSpec):
            return tool
        if isinstance(tool, Mapping):
            get: Callable[[str, Any], Any] = tool.get
        else:

            def get(key: str, default: Any) -> Any:
                return getattr(tool, key, default)

        params = get("parameters", None) or get("input_schema", None)
        return cls(
            name=str(get("name", "")),
            description=str(get("description", "") or ""),
            parameters=dict(params) if params else {"type": "object", "properties": {}},
        )


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """What one request asks of a model besides the messages: one value, every layer.

    The request methods take it whole (``model.complete(messages, options)``) or build it
    from their keyword arguments (``model.complete(messages, max_tokens=500)``, see
    `of`); it goes unchanged to the provider that turns it into a request body, and a
    `~pinb.llm.providers.scripted.ScriptedLLM` records it. The cancel token is not part of
    it: a token is a live switch shared with other threads, and the same options are sent
    again (a retry, a fallback without streaming) under the caller's one token.

    Attributes
    ----------
    system_prompt:
        The system prompt (``None`` or ``""``: none).
    tools:
        The tools the model may call; `ToolSpec` objects, mappings or objects with the
        three attributes, made `ToolSpec` objects here (`ToolSpec.coerce`).
    max_tokens:
        The output limit asked for; ``None``: the model's. Either way the window cuts it
        (`pinb.llm.limits.choose_output_limit`).
    thinking_level:
        One of `THINKING_LEVELS` (reasoning effort, thinking budget); ``"off"``: none.
    tool_choice:
        ``"auto"``, ``"required"``, ``"none"`` or a tool's name (small local models
        rarely call a tool unless asked to); sent only with tools. ``None``: not sent.

    Examples
    --------
    >>> options = RequestOptions.of(system_prompt="Be terse.", max_tokens=200)
    >>> RequestOptions.of(options, max_tokens=50).max_tokens, options.max_tokens
    (50, 200)
    >>> RequestOptions(tools=[{"name": "ls"}]).tools[0].name
    'ls'
    """

    system_prompt: str | None = None
    tools: Sequence[ToolSpec] = ()
    max_tokens: int | None = None
    thinking_level: str = "off"
    tool_choice: str | None = None

    def __post_init__(self) -> None:
        specs = tuple(ToolSpec.coerce(tool) for tool in self.tools or ())
        object.__setattr__(self, "tools", specs)  # frozen: once, while it is made

    @classmethod
    def of(
        cls, options: RequestOptions | None = None, /, **fields: Unpack[RequestFields]
    ) -> RequestOptions:
        """``options`` (default: all defaults) with ``fields`` set over it: what a request
        method's ``options`` and keyword arguments mean together."""
        given: dict[str, Any] = dict(fields)  # the tools, before they are coerced
        if options is None:
            return cls(**given)
        return dataclasses.replace(options, **given) if given else options


class RequestFields(TypedDict, total=False):
    """The fields of `RequestOptions` as keyword arguments of the request methods."""

    system_prompt: str | None
    tools: Sequence[ToolSpec | Mapping[str, Any]] | None
    max_tokens: int | None
    thinking_level: str
    tool_choice: str | None


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class TextDelta:
    """More text for the text block at ``index`` of the final content."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """More reasoning text for the thinking block at ``index``."""

    index: int
    thinking: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """The model began a tool call (block ``index``)."""

    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of the tool call's arguments: partial JSON text, to be concatenated."""

    index: int
    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """A tool call is complete; ``arguments`` is the parsed object."""

    index: int
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """Final token usage and cost (Pi's usage object), sent just before `Done`."""

    usage: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Retry:
    """A transient failure before any content; the request will be sent again.

    ``attempt`` counts retries from 1; ``delay`` is the wait in seconds, e.g. for a UI
    line "retrying in 4 s (attempt 2 of 3)".
    """

    attempt: int
    max_retries: int
    delay: float
    error: str
    status_code: int | None = None


@dataclass(frozen=True, slots=True)
class Done:
    """Always the last event: the final Pi-shaped assistant message.

    Failed and cancelled requests end here too, with ``stopReason`` ``"error"`` or
    ``"aborted"`` and ``errorMessage`` set. ``overflow`` tells whether the message
    reports a context overflow (see `pinb.llm.is_context_overflow`); ``status_code`` is
    the HTTP status of a failed request, when there was one.

    ``retryable`` is the adapter's own verdict on a failure (``None``: it has none, the
    caller judges by the error text, as Pi does); ``retry_after`` is the wait a server
    asked for, in seconds. ``usage_reported`` is False when the server sent no token
    counts (llama.cpp ignores ``stream_options``): the message then holds Pi's zero usage
    and callers estimate instead. ``output_limit`` is the output limit the request
    carried and why (`pinb.llm.limits.OutputLimit`), when the model chose one.
    """

    message: dict[str, Any]
    overflow: bool = False
    status_code: int | None = None
    retryable: bool | None = None
    retry_after: float | None = None
    usage_reported: bool = True
    output_limit: OutputLimit | None = None

    @property
    def stop_reason(self) -> str:
        """The message's ``stopReason``."""
        return str(self.message.get("stopReason", ""))

    @property
    def error_message(self) -> str | None:
        """The message's ``errorMessage``, if any."""
        value = self.message.get("errorMessage")
        return None if value is None else str(value)


StreamEvent: TypeAlias = (
    TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Usage | Retry | Done
)


# --------------------------------------------------------------------------- cancel


class CancelToken:
    """A thread-safe cancellation flag a stream watches.

    Calling `cancel` from any thread (a UI button, a signal handler, another task)
    stops the stream at its next read, even while it waits for a slow chunk; the stream
    then ends with ``stopReason: "aborted"`` and keeps the partial content.

    Examples
    --------
    >>> token = CancelToken()
    >>> token.cancelled
    False
    >>> token.cancel()
    >>> token.cancelled, token.reason
    (True, 'cancelled')
    """

    __slots__ = ("_callbacks", "_event", "_lock", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """Whether `cancel` was called."""
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        """Request cancellation (idempotent)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on cancellation (now, if already cancelled).

        Returns a function that removes the callback.
        """
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; return `cancelled`."""
        return self._event.wait(timeout)

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled})"


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class ChatModel(Protocol):
    """What the agent loop and the summarizers call. HTTP models and `ScriptedLLM` match it.

    ``messages`` is the output of Pi's ``convertToLlm`` (roles ``user``, ``assistant``,
    ``toolResult`` with Pi content blocks). ``options`` is the rest of the request, as one
    `RequestOptions` or as its fields given as keyword arguments (which win over
    ``options``). Every stream ends with a `Done` event.
    """

    info: ModelInfo

    def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        **fields: Unpack[RequestFields],
    ) -> AsyncIterator[StreamEvent]:
        """Stream events for one model response."""
        ...

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        **fields: Unpack[RequestFields],
    ) -> Iterator[StreamEvent]:
        """Synchronous `astream` (works inside a running event loop too)."""
        ...

    async def acomplete(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        raise_on_overflow: bool = False,
        raise_on_error: bool = False,
        **fields: Unpack[RequestFields],
    ) -> dict[str, Any]:
        """Return the final Pi-shaped assistant message."""
        ...

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        raise_on_overflow: bool = False,
        raise_on_error: bool = False,
        **fields: Unpack[RequestFields],
    ) -> dict[str, Any]:
        """Synchronous `acomplete`."""
        ...
