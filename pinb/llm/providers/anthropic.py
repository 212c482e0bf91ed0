"""The Anthropic Messages adapter: requests, SSE events, thinking with signatures."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from pinb.llm.errors import StreamProtocolError
from pinb.llm.limits import OutputLimit
from pinb.llm.providers.assemble import MessageBuilder
from pinb.llm.providers.client import HTTPChatModel, ProviderStreamError, StreamDecoder, _load_json
from pinb.llm.providers.sse import SSEEvent
from pinb.llm.providers.transform import anthropic_tool_id
from pinb.llm.types import API_ANTHROPIC, RequestOptions, StreamEvent
from pinb.llm.urls import join_url, split_query

__all__ = ["ANTHROPIC_VERSION", "THINKING_BUDGETS", "AnthropicChatModel", "thinking_budget"]

log = logging.getLogger("pinb.llm")

#: The ``anthropic-version`` header value.
ANTHROPIC_VERSION = "2023-06-01"
#: Pi's thinking budgets in tokens per level (``xhigh`` is clamped to ``high``).
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
_MIN_OUTPUT = 1024
_RETRYABLE_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})
_IMAGE_OMITTED = "(image omitted: this model does not accept images)"
_EPHEMERAL = {"type": "ephemeral"}


def thinking_budget(level: str, max_tokens: int, model_max_tokens: int) -> tuple[int, int]:
    """``(max_tokens, budget_tokens)`` for a thinking level, as Pi computes them.

    The budget is added to the output limit (capped by the model's); if that leaves
    less than the budget, the budget shrinks to leave 1024 tokens for the answer.
    A budget below 1024 (Anthropic's minimum) means "no thinking": 0.

    Examples
    --------
    >>> thinking_budget("medium", 4096, 64000)
    (12288, 8192)
    >>> thinking_budget("high", 8192, 8192)
    (8192, 7168)
    """
    budget = THINKING_BUDGETS.get(level, 0)
    if not budget:
        return max_tokens, 0
    total = min(max_tokens + budget, model_max_tokens)
    if total <= budget:
        budget = max(0, total - _MIN_OUTPUT)
    return total, budget if budget >= 1024 else 0


#: pinb's ``tool_choice`` words in Anthropic's terms (a tool name forces that tool).
_TOOL_CHOICE = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}


class AnthropicChatModel(HTTPChatModel):
    """Anthropic's Messages API over HTTP (streaming or not).

    Thinking blocks keep their signature (``thinkingSignature``) and are sent back
    verbatim to the same model; redacted thinking is kept as ``redacted: true`` with
    the payload in ``thinkingSignature``. The system prompt and the last user turn are
    marked for prompt caching. See `HTTPChatModel` for the constructor parameters.
    """

    api = API_ANTHROPIC

    def _url(self) -> str:
        path, _query = split_query(self.base_url)
        return join_url(self.base_url, "messages" if path.endswith("/v1") else "v1/messages")

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def _headers(self) -> dict[str, str]:
        headers = super()._headers()
        headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
        return headers

    def _normalize_tool_id(self, tool_id: str) -> str:
        return anthropic_tool_id(tool_id)

    # ------------------------------------------------------------------ request

    def _set_output_limit(self, body: dict[str, Any], limit: OutputLimit) -> None:
        thinking = body.get("thinking")
        if not (isinstance(thinking, dict) and thinking.get("budget_tokens")):
            body["max_tokens"] = limit.tokens
            return
        # With thinking, Pi's limit already holds the budget: only the window may lower it,
        # and then the budget shrinks to leave the answer its 1,024 tokens.
        tokens = max(1, limit.window - limit.prompt_tokens - limit.margin)
        if tokens >= int(body.get("max_tokens") or 0):
            return
        body["max_tokens"] = tokens
        budget = min(int(thinking["budget_tokens"]), tokens - _MIN_OUTPUT)
        if budget >= 1024:
            thinking["budget_tokens"] = budget
        else:
            body.pop("thinking")

    def _body(self, messages: list[dict[str, Any]], options: RequestOptions) -> dict[str, Any]:
        limit = options.max_tokens or min(self.info.max_tokens, 32_000)
        budget = 0
        level = options.thinking_level
        if level != "off" and self.info.reasoning:
            limit, budget = thinking_budget(level, limit, self.info.max_tokens)
        body: dict[str, Any] = {"model": self.info.id, "max_tokens": limit}
        if options.system_prompt:
            body["system"] = [
                {"type": "text", "text": options.system_prompt, "cache_control": _EPHEMERAL}
            ]
        body["messages"] = self._messages(messages)
        if options.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in options.tools
            ]
            if options.tool_choice:
                body["tool_choice"] = _TOOL_CHOICE.get(options.tool_choice) or {
                    "type": "tool",
                    "name": options.tool_choice,
                }
        if budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if self.streaming:
            body["stream"] = True
        return body

    def _blocks(self, content: Any) -> list[dict[str, Any]]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}] if content else []
        out: list[dict[str, Any]] = []
        for block in content or []:
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                out.append({"type": "text", "text": block["text"]})
            elif kind == "image":
                if self.info.supports_images:
                    source = {
                        "type": "base64",
                        "media_type": block.get("mimeType", "image/png"),
                        "data": block.get("data", ""),
                    }
                    out.append({"type": "image", "source": source})
                else:
                    out.append({"type": "text", "text": _IMAGE_OMITTED})
        return out

    def _assistant_blocks(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for block in message.get("content") or []:
            kind = block.get("type")
            if kind == "text":
                if str(block.get("text", "")).strip():
                    out.append({"type": "text", "text": block["text"]})
            elif kind == "thinking":
                signature = block.get("thinkingSignature")
                text = str(block.get("thinking", ""))
                if block.get("redacted"):
                    if signature:
                        out.append({"type": "redacted_thinking", "data": signature})
                elif signature:
                    out.append({"type": "thinking", "thinking": text, "signature": signature})
                elif text.strip():  # unsigned thinking cannot be replayed as thinking
                    out.append({"type": "text", "text": text})
            elif kind == "toolCall":
                out.append(
                    {
                        "type": "tool_use",
                        "id": str(block.get("id", "")),
                        "name": str(block.get("name", "")),
                        "input": block.get("arguments") or {},
                    }
                )
        return out

    def _messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        results_open = False  # the last user message holds tool results we may add to
        for message in messages:
            role = message.get("role")
            if role == "user":
                blocks = self._blocks(message.get("content"))
                if blocks:
                    out.append({"role": "user", "content": blocks})
                results_open = False
            elif role == "assistant":
                blocks = self._assistant_blocks(message)
                if blocks:
                    out.append({"role": "assistant", "content": blocks})
                results_open = False
            elif role == "toolResult":
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": str(message.get("toolCallId", "")),
                }
                content = self._blocks(message.get("content"))
                if content:
                    result["content"] = content
                if message.get("isError"):
                    result["is_error"] = True
                if results_open:
                    out[-1]["content"].append(result)
                else:
                    out.append({"role": "user", "content": [result]})
                    results_open = True
            else:
                log.debug("skipping message with role %r (not a model message)", role)
        for item in reversed(out):
            if item["role"] == "user":
                last = item["content"][-1]
                item["content"][-1] = {**last, "cache_control": _EPHEMERAL}
                break
        return out

    # ------------------------------------------------------------------ response

    def _decoder(self, builder: MessageBuilder) -> StreamDecoder:
        return _MessagesDecoder(builder)

    def _parse_response(
        self, data: Any, builder: MessageBuilder
    ) -> tuple[list[StreamEvent], str, str | None]:
        if not isinstance(data, dict):
            raise StreamProtocolError("Malformed response from provider: not a JSON object")
        if data.get("type") == "error":
            err = data.get("error") or {}
            return [], "error", f"{err.get('type', 'error')}: {err.get('message', '')}"
        decoder = _MessagesDecoder(builder)
        events: list[StreamEvent] = []
        decoder.usage(data.get("usage"))
        for index, block in enumerate(data.get("content") or []):
            if not isinstance(block, dict):
                continue
            events += decoder.start(index, block)
            if block.get("type") == "thinking" and block.get("thinking"):
                events.append(builder.thinking(index, str(block["thinking"])))
            if block.get("type") == "thinking" and block.get("signature"):
                builder.signature(index, str(block["signature"]), append=False)
            if block.get("type") == "tool_use":
                events.append(builder.tool_delta(index, json.dumps(block.get("input") or {})))
                end = builder.tool_end(index)
                if end is not None:
                    events.append(end)
        decoder.raw_stop = data.get("stop_reason")
        events += decoder.finish()
        return events, decoder.stop_reason, decoder.error


class _MessagesDecoder(StreamDecoder):
    def __init__(self, builder: MessageBuilder):
        super().__init__(builder)
        self.raw_stop: str | None = None

    def usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return

        def get(name: str) -> int | None:
            value = usage.get(name)
            return int(value) if isinstance(value, int | float) else None

        self.builder.set_usage(
            input_tokens=get("input_tokens"),
            output_tokens=get("output_tokens"),
            cache_read=get("cache_read_input_tokens"),
            cache_write=get("cache_creation_input_tokens"),
        )

    def start(self, index: int, block: Mapping[str, Any]) -> list[StreamEvent]:
        b = self.builder
        kind = block.get("type")
        if kind == "tool_use":
            return [b.tool_start(index, str(block.get("id", "")), str(block.get("name", "")))]
        if kind == "redacted_thinking":
            return [b.redacted_thinking(index, str(block.get("data", "")))]
        if kind == "text" and block.get("text"):
            return [b.text(index, str(block["text"]))]
        if kind not in ("text", "thinking"):
            log.debug("ignoring content block of type %r", kind)
        return []

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        if event.event == "ping":
            return []
        obj = _load_json(event.data, "stream event")
        if not isinstance(obj, dict):
            raise StreamProtocolError(f"Malformed stream event from provider: {event.data[:200]!r}")
        kind = obj.get("type") or event.event
        b = self.builder
        if kind == "content_block_delta":
            index = obj.get("index", 0)
            delta = obj.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta" and delta.get("text"):
                return [b.text(index, str(delta["text"]))]
            if dtype == "thinking_delta" and delta.get("thinking"):
                return [b.thinking(index, str(delta["thinking"]))]
            if dtype == "signature_delta" and delta.get("signature"):
                b.signature(index, str(delta["signature"]))
            elif dtype == "input_json_delta" and delta.get("partial_json"):
                return [b.tool_delta(index, str(delta["partial_json"]))]
            return []
        if kind == "content_block_start":
            return self.start(obj.get("index", 0), obj.get("content_block") or {})
        if kind == "content_block_stop":
            end = b.tool_end(obj.get("index", 0))
            return [end] if end is not None else []
        if kind == "message_start":
            self.usage((obj.get("message") or {}).get("usage"))
        elif kind == "message_delta":
            self.raw_stop = (obj.get("delta") or {}).get("stop_reason") or self.raw_stop
            self.usage(obj.get("usage"))
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            err = obj.get("error") or {}
            etype = str(err.get("type", "error"))
            raise ProviderStreamError(
                f"{etype}: {err.get('message', '')}", retryable=etype in _RETRYABLE_TYPES
            )
        return []

    def at_eof(self) -> None:
        if self.raw_stop is not None:
            self.complete = True

    def finish(self) -> list[StreamEvent]:
        events = super().finish()
        raw = self.raw_stop
        if raw == "max_tokens":
            self.stop_reason = "length"
        elif raw == "tool_use":
            self.stop_reason = "toolUse"
        elif raw == "refusal":
            self.stop_reason = "error"
            self.error = "The model declined to answer (stop_reason: refusal)"
        elif raw == "model_context_window_exceeded":
            self.stop_reason = "error"
            self.error = "model_context_window_exceeded: the response hit the context window"
        else:
            self.stop_reason = "toolUse" if raw is None and self.builder.has_tool_calls else "stop"
        return events
