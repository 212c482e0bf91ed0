"""One adapter for every OpenAI-compatible Chat Completions server, configured by data."""

from __future__ import annotations

import json
import logging
from collections.abc import Hashable, Mapping
from typing import Any

from pinb.llm.errors import StreamProtocolError
from pinb.llm.providers.assemble import MessageBuilder
from pinb.llm.providers.client import (
    HTTPChatModel,
    ProviderStreamError,
    StreamDecoder,
    _load_json,
    error_detail,
)
from pinb.llm.providers.retry import RETRYABLE_STATUS
from pinb.llm.providers.sse import SSEEvent
from pinb.llm.types import API_OPENAI, RequestOptions, StreamEvent
from pinb.llm.urls import join_url

__all__ = ["REASONING_EFFORT", "OpenAIChatModel"]

log = logging.getLogger("pinb.llm")

#: Pi thinking level -> ``reasoning_effort``; ``xhigh`` is clamped to ``high`` as in Pi.
REASONING_EFFORT = {
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
}
_REASONING_FIELDS = ("reasoning_content", "reasoning")
_IMAGE_OMITTED = "(image omitted: this model does not accept images)"


def _dumps_args(arguments: Any) -> str:
    return json.dumps(
        arguments if arguments is not None else {}, ensure_ascii=False, separators=(",", ":")
    )


class OpenAIChatModel(HTTPChatModel):
    """Chat Completions over HTTP: OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio ...

    Differences between servers live in `OpenAICompat` data, not in subclasses. See
    `HTTPChatModel` for the constructor parameters.
    """

    api = API_OPENAI

    def _url(self) -> str:
        return join_url(self.base_url, "chat/completions")

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    # ------------------------------------------------------------------ request

    def _body(self, messages: list[dict[str, Any]], options: RequestOptions) -> dict[str, Any]:
        compat = self.compat
        body: dict[str, Any] = {
            "model": self.info.id,
            "messages": self._messages(messages, options.system_prompt),
        }
        if self.streaming:
            body["stream"] = True
            if compat.supports_usage_in_streaming:
                body["stream_options"] = {"include_usage": True}
        limit = options.max_tokens
        if limit is None and compat.send_default_max_tokens:
            limit = min(self.info.max_tokens, 32_000)
        if limit:
            body[compat.max_tokens_field] = limit
        if compat.supports_store:
            body["store"] = False
        if options.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in options.tools
            ]
            choice = options.tool_choice
            if choice:
                body["tool_choice"] = (
                    choice
                    if choice in ("auto", "required", "none")
                    else {"type": "function", "function": {"name": choice}}
                )
        effort = REASONING_EFFORT.get(options.thinking_level)
        if effort and self.info.reasoning:
            if compat.reasoning_format == "reasoning_effort":
                body["reasoning_effort"] = effort
            elif compat.reasoning_format == "openrouter":
                body["reasoning"] = {"effort": effort}
        return body

    def _user_parts(self, content: Any) -> str | list[dict[str, Any]]:
        if isinstance(content, str):
            return content
        parts: list[dict[str, Any]] = []
        for block in content or []:
            kind = block.get("type")
            if kind == "text":
                parts.append({"type": "text", "text": block.get("text", "")})
            elif kind == "image":
                if self.info.supports_images:
                    url = (
                        f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"
                    )
                    parts.append({"type": "image_url", "image_url": {"url": url}})
                else:
                    parts.append({"type": "text", "text": _IMAGE_OMITTED})
        if len(parts) == 1 and parts[0]["type"] == "text":
            return str(parts[0]["text"])  # the most widely accepted form
        return parts

    def _assistant(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        blocks = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
        texts = [
            str(b.get("text", "")) for b in blocks if b.get("type") == "text" and b.get("text")
        ]
        thinking = [b for b in blocks if b.get("type") == "thinking" and b.get("thinking")]
        # "" rather than null beside tool calls: llama-cpp-python's schema rejects null
        # (a 500), and every server that takes null takes "" too.
        out: dict[str, Any] = {"role": "assistant", "content": ""}
        if thinking and self.compat.requires_thinking_as_text:
            joined = "\n".join(f"<thinking>\n{b['thinking']}\n</thinking>" for b in thinking)
            texts.insert(0, joined)
        elif thinking:
            field = thinking[0].get("thinkingSignature")
            if field in _REASONING_FIELDS:
                out[str(field)] = "\n".join(str(b["thinking"]) for b in thinking)
        if texts:
            out["content"] = "".join(texts)
        calls = [
            {
                "id": str(b.get("id", "")),
                "type": "function",
                "function": {
                    "name": str(b.get("name", "")),
                    "arguments": _dumps_args(b.get("arguments")),
                },
            }
            for b in blocks
            if b.get("type") == "toolCall"
        ]
        if calls:
            out["tool_calls"] = calls
        if not out["content"] and not calls:
            return None  # e.g. a response that produced nothing; servers reject it
        return out

    def _messages(
        self, messages: list[dict[str, Any]], system_prompt: str | None
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if system_prompt:
            sys_role = (
                "developer"
                if self.compat.supports_developer_role and self.info.reasoning
                else "system"
            )
            out.append({"role": sys_role, "content": system_prompt})
        images: list[dict[str, Any]] = []

        def flush_images() -> None:
            # Tool messages carry text only, so tool-result images follow as a user message.
            if images:
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Attached image(s) from tool result:"},
                            *images,
                        ],
                    }
                )
                images.clear()

        for message in messages:
            role = message.get("role")
            if role != "toolResult":
                flush_images()
            if role == "user":
                content = self._user_parts(message.get("content"))
                if content:
                    out.append({"role": "user", "content": content})
            elif role == "assistant":
                converted = self._assistant(message)
                if converted is not None:
                    out.append(converted)
            elif role == "toolResult":
                blocks = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
                text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
                has_images = False
                for b in blocks:
                    if b.get("type") == "image":
                        has_images = True
                        if self.info.supports_images:
                            url = (
                                f"data:{b.get('mimeType', 'image/png')};base64,{b.get('data', '')}"
                            )
                            images.append({"type": "image_url", "image_url": {"url": url}})
                if not text:
                    text = (
                        "(see attached image)"
                        if has_images and self.info.supports_images
                        else "(no output)"
                    )
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(message.get("toolCallId", "")),
                        "content": text,
                    }
                )
            else:
                log.debug("skipping message with role %r (not a model message)", role)
        flush_images()
        return out

    # ------------------------------------------------------------------ response

    def _decoder(self, builder: MessageBuilder) -> StreamDecoder:
        return _ChatDecoder(builder)

    def _parse_response(
        self, data: Any, builder: MessageBuilder
    ) -> tuple[list[StreamEvent], str, str | None]:
        if not isinstance(data, dict):
            raise StreamProtocolError("Malformed response from provider: not a JSON object")
        if data.get("error"):
            return [], "error", error_detail(json.dumps(data).encode())
        decoder = _ChatDecoder(builder)
        events: list[StreamEvent] = []
        choices = data.get("choices") or []
        if choices:
            choice = choices[0]
            decoder.choice(
                {
                    "delta": choice.get("message") or {},
                    "finish_reason": choice.get("finish_reason"),
                },
                events,
            )
        if isinstance(data.get("usage"), dict):
            decoder.usage(data["usage"])
        events += decoder.finish()
        return events, decoder.stop_reason, decoder.error


class _ChatDecoder(StreamDecoder):
    def __init__(self, builder: MessageBuilder):
        super().__init__(builder)
        self._segment = 0
        self._kind = ""
        self._finish_reason: str | None = None
        self._tool_keys: dict[int, Hashable] = {}
        self._tool_ids: dict[int, str] = {}
        self._tool_count = 0

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        data = event.data
        if data == "[DONE]":
            self.complete = True
            return []
        obj = _load_json(data, "stream chunk")
        if not isinstance(obj, dict):
            raise StreamProtocolError(f"Malformed stream chunk from provider: {data[:200]!r}")
        error = obj.get("error")
        if error:
            detail = error_detail(json.dumps(obj).encode())
            code = error.get("code") if isinstance(error, dict) else None
            retryable = code in RETRYABLE_STATUS or (
                isinstance(error, dict) and error.get("type") == "server_error"
            )
            raise ProviderStreamError(
                f"{code} {detail}" if isinstance(code, int) else detail, retryable=retryable
            )
        events: list[StreamEvent] = []
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self.usage(usage)
        for choice in obj.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self.choice(choice, events)
        return events

    def usage(self, usage: Mapping[str, Any]) -> None:
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details")
        cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
        self.builder.set_usage(
            input_tokens=max(prompt - cached, 0),
            output_tokens=completion,
            cache_read=cached,
            cache_write=0,
            total=int(usage.get("total_tokens") or prompt + completion),
        )

    def _switch(self, kind: str) -> int:
        if self._kind != kind:
            self._kind = kind
            self._segment += 1
        return self._segment

    def choice(self, choice: Mapping[str, Any], events: list[StreamEvent]) -> None:
        b = self.builder
        delta = choice.get("delta") or {}
        for field in _REASONING_FIELDS:
            reasoning = delta.get(field)
            if isinstance(reasoning, str) and reasoning:
                new = self._kind != "thinking"
                key = ("thinking", self._switch("thinking"))
                events.append(b.thinking(key, reasoning))
                if new:  # Pi records which field carried the reasoning, to send it back
                    b.signature(key, field, append=False)
                break
        text = delta.get("content")
        if isinstance(text, str) and text:
            events.append(b.text(("text", self._switch("text")), text))
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, call in enumerate(calls):
                if isinstance(call, dict):
                    self._tool_call(position, call, events)
        finish = choice.get("finish_reason")
        if finish:
            self._finish_reason = str(finish)

    def _tool_call(self, position: int, call: Mapping[str, Any], events: list[StreamEvent]) -> None:
        b = self.builder
        index = call.get("index", position)
        index = index if isinstance(index, int) else position
        fn = call.get("function") or {}
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        key = self._tool_keys.get(index)
        if key is not None and call_id and self._tool_ids.get(index) not in (None, call_id):
            key = None  # a server that reuses index 0 for every call, with new ids
        if key is None:
            self._tool_count += 1
            key = ("tool", self._tool_count)
            self._tool_keys[index] = key
            self._kind = "tool"
            self._tool_ids[index] = call_id or ""
            events.append(b.tool_start(key, call_id or f"call_{index}", str(fn.get("name") or "")))
        else:
            b.tool_update(key, call_id, fn.get("name"))
            if call_id:
                self._tool_ids[index] = call_id
        args = fn.get("arguments")
        if isinstance(args, dict):  # some servers send an object in non-streaming replies
            args = _dumps_args(args)
        if isinstance(args, str) and args:
            events.append(b.tool_delta(key, args))

    def at_eof(self) -> None:
        # Some servers close the connection after the finish chunk without "[DONE]".
        if self._finish_reason is not None:
            self.complete = True

    def finish(self) -> list[StreamEvent]:
        events = super().finish()
        reason = self._finish_reason
        if reason in ("tool_calls", "function_call"):
            self.stop_reason = "toolUse"
        elif reason == "length":
            self.stop_reason = "length"
        elif reason == "content_filter":
            self.stop_reason = "error"
            self.error = (
                "The provider's content filter stopped the response (finish_reason: content_filter)"
            )
        else:
            self.stop_reason = "toolUse" if self.builder.has_tool_calls else "stop"
        return events
