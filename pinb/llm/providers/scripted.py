"""`ScriptedLLM`: a model that plays queued replies and records what it was sent (no HTTP).

The offline demo model (:mod:`pinb.llm.providers.offline`) is one; tests use it at the agent seam
(re-exported as :mod:`pinb.testing.scripted`).

It follows the same `pinb.llm.ChatModel` protocol as the HTTP models, so agent and
summarizer tests use it at the seam::

    llm = ScriptedLLM()
    llm.reply_tool_call("read", {"path": "a.py"})
    llm.reply("Done.")
    ...  # run the agent with model=llm
    assert llm.calls[1].messages[-1]["role"] == "toolResult"
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack

from pinb.llm.base import ChatModelBase
from pinb.llm.errors import LLMError
from pinb.llm.providers.assemble import MessageBuilder
from pinb.llm.providers.client import ABORTED_MESSAGE
from pinb.llm.providers.overflow import is_context_overflow
from pinb.llm.types import (
    API_OPENAI,
    CancelToken,
    Done,
    ModelCost,
    ModelInfo,
    RequestFields,
    RequestOptions,
    StreamEvent,
    ToolSpec,
    Usage,
)

__all__ = ["OVERFLOW_ERROR", "Reply", "ScriptExhaustedError", "ScriptedCall", "ScriptedLLM"]

#: ``errorMessage`` of `ScriptedLLM.reply_overflow` (Anthropic's wording).
OVERFLOW_ERROR = "400 prompt is too long: 213462 tokens > 200000 maximum"


class ScriptExhaustedError(LLMError):
    """`ScriptedLLM` was called more often than replies were queued."""


@dataclass
class Reply:
    """One scripted response.

    Parameters
    ----------
    text, thinking:
        Content, streamed in ``chunk_size`` pieces (thinking first).
    tool_calls:
        ``(name, arguments)`` pairs or ``(name, arguments, id)`` triples.
    stop_reason:
        Default ``toolUse`` when there are tool calls, else ``stop``.
    error:
        Ends the response with ``stopReason: "error"`` and this ``errorMessage``
        (after any content given).
    usage:
        ``{"input": .., "output": .., "cacheRead": .., "cacheWrite": ..}``; default a
        chars/4 estimate.
    delay:
        Seconds to wait before each event (to test cancel and UIs).
    thinking_signature:
        Kept on the thinking block, like a provider signature.
    report_usage:
        False plays a server that sends no token counts (llama.cpp): the message keeps
        Pi's zero usage and `Done.usage_reported` is False.
    """

    text: str = ""
    thinking: str = ""
    tool_calls: Sequence[tuple[Any, ...]] = ()
    stop_reason: str | None = None
    error: str | None = None
    usage: Mapping[str, int] | None = None
    delay: float = 0.0
    chunk_size: int = 8
    thinking_signature: str | None = None
    report_usage: bool = True


@dataclass
class ScriptedCall:
    """What one call received: the messages (deep copies, safe to inspect later) and the
    request's options (``call.options.system_prompt``, ``call.options.tools`` ...)."""

    messages: list[dict[str, Any]]
    options: RequestOptions = field(default_factory=RequestOptions)

    # The fields one by one, as a call recorded them before `RequestOptions` held them:
    # tests written against ``call.system_prompt`` keep reading the same values.

    @property
    def system_prompt(self) -> str | None:
        """``options.system_prompt``."""
        return self.options.system_prompt

    @property
    def tools(self) -> list[ToolSpec]:
        """``options.tools`` as a list."""
        return list(self.options.tools)

    @property
    def max_tokens(self) -> int | None:
        """``options.max_tokens``."""
        return self.options.max_tokens

    @property
    def thinking_level(self) -> str:
        """``options.thinking_level``."""
        return self.options.thinking_level

    @property
    def tool_choice(self) -> str | None:
        """``options.tool_choice``."""
        return self.options.tool_choice


ReplyLike = Reply | str | Callable[[ScriptedCall], "Reply | str"]


def _estimate(value: Any) -> int:
    return math.ceil(len(json.dumps(value, ensure_ascii=False, default=str)) / 4)


class ScriptedLLM(ChatModelBase):
    """A `ChatModel` that answers from a queue instead of a server.

    Parameters
    ----------
    replies:
        Initial queue: `Reply` objects, plain strings (text replies), or callables
        receiving the `ScriptedCall` and returning one of those.
    provider, model, api:
        Written into every message (``api`` defaults to ``openai-completions``).
    context_window, max_tokens, reasoning, cost:
        The model's `ModelInfo` (``context_window`` 128,000 unless given).
    window_source:
        How views label the window (default ``"setting"`` when ``context_window`` is
        given, else ``"model"``).

    Attributes
    ----------
    calls:
        One `ScriptedCall` per request, in order.
    """

    def __init__(
        self,
        replies: Sequence[ReplyLike] = (),
        *,
        provider: str = "scripted",
        model: str = "scripted-model",
        api: str = API_OPENAI,
        context_window: int | None = None,
        max_tokens: int = 16_384,
        reasoning: bool = False,
        cost: ModelCost | None = None,
        window_source: str | None = None,
    ):
        self.info = ModelInfo(
            provider,
            model,
            api,
            context_window or 128_000,
            max_tokens,
            cost or ModelCost(),
            reasoning,
            ("text", "image"),
            model,
            # A window the caller gave is a setting; else the scripted model's own.
            window_source=window_source or ("setting" if context_window else "model"),
        )
        self._queue: deque[ReplyLike] = deque(replies)
        self.calls: list[ScriptedCall] = []

    def __repr__(self) -> str:
        return (
            f"ScriptedLLM({self.info.spec!r}, queued={len(self._queue)}, calls={len(self.calls)})"
        )

    # ------------------------------------------------------------------ script

    def add(self, *replies: ReplyLike) -> ScriptedLLM:
        """Queue replies."""
        self._queue.extend(replies)
        return self

    def reply(self, text: str = "", **options: Any) -> ScriptedLLM:
        """Queue ``Reply(text, **options)``."""
        return self.add(Reply(text=text, **options))

    def reply_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        text: str = "",
    ) -> ScriptedLLM:
        """Queue a response with one tool call."""
        call = (name, dict(arguments or {})) if id is None else (name, dict(arguments or {}), id)
        return self.add(Reply(text=text, tool_calls=[call]))

    def reply_error(self, message: str = "500 scripted failure", **options: Any) -> ScriptedLLM:
        """Queue a failed response (``stopReason: "error"``)."""
        return self.add(Reply(error=message, **options))

    def reply_overflow(self) -> ScriptedLLM:
        """Queue a context-overflow error response."""
        return self.add(Reply(error=OVERFLOW_ERROR))

    @property
    def pending(self) -> int:
        """Replies still queued."""
        return len(self._queue)

    # ------------------------------------------------------------------ model

    async def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        **fields: Unpack[RequestFields],
    ) -> AsyncIterator[StreamEvent]:
        """Play the next queued reply as events; record the call first."""
        call = ScriptedCall(
            copy.deepcopy([dict(m) for m in messages]), RequestOptions.of(options, **fields)
        )
        self.calls.append(call)
        if not self._queue:
            raise ScriptExhaustedError(
                f"ScriptedLLM got call {len(self.calls)} but no reply is queued"
            )
        item = self._queue.popleft()
        reply = item(call) if callable(item) else item
        if isinstance(reply, str):
            reply = Reply(text=reply)
        builder = MessageBuilder(self.info, int(time.time() * 1000))
        token = cancel or CancelToken()
        message: dict[str, Any] | None = None
        events = self._content_events(reply, builder)
        while True:
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if token.cancelled:
                message = builder.finish("aborted", ABORTED_MESSAGE)
                break
            event = next(events, None)
            if event is None:
                break
            yield event
            await asyncio.sleep(0)  # let other tasks (and cancellers) run, as real I/O would
        if message is None:
            usage = reply.usage or {}
            if reply.report_usage:
                # What a provider counts: the messages, the system prompt and the tools'
                # declarations, each as the JSON it was sent.
                declared = [
                    {"name": t.name, "description": t.description, "parameters": t.parameters}
                    for t in call.options.tools
                ]
                sent = _estimate(call.messages) + _estimate(call.options.system_prompt or "")
                builder.set_usage(
                    input_tokens=usage.get(
                        "input", sent + (_estimate(declared) if declared else 0)
                    ),
                    output_tokens=usage.get("output", _estimate(builder.content())),
                    cache_read=usage.get("cacheRead", 0),
                    cache_write=usage.get("cacheWrite", 0),
                )
            if reply.error is not None:
                message = builder.finish("error", reply.error)
            else:
                stop = reply.stop_reason or ("toolUse" if reply.tool_calls else "stop")
                message = builder.finish(stop)
        yield Usage(message["usage"])
        yield Done(
            message,
            is_context_overflow(message, self.info.context_window),
            usage_reported=builder.usage_reported,
        )

    @staticmethod
    def _content_events(reply: Reply, builder: MessageBuilder) -> Iterator[StreamEvent]:
        # A generator, so the builder only holds what was streamed when a cancel stops it.
        size = max(1, reply.chunk_size)
        for i in range(0, len(reply.thinking), size):
            yield builder.thinking("thinking", reply.thinking[i : i + size])
            if i == 0 and reply.thinking_signature:
                builder.signature("thinking", reply.thinking_signature, append=False)
        for i in range(0, len(reply.text), size):
            yield builder.text("text", reply.text[i : i + size])
        for n, spec in enumerate(reply.tool_calls):
            name, arguments = spec[0], spec[1] if len(spec) > 1 else {}
            call_id = spec[2] if len(spec) > 2 else f"call_{n + 1}"
            key = ("tool", n)
            yield builder.tool_start(key, str(call_id), str(name))
            yield builder.tool_delta(key, json.dumps(arguments, ensure_ascii=False))
            end = builder.tool_end(key)
            if end is not None:
                yield end
