"""The two wire formats the loopback LLM server speaks: scripted replies as OpenAI / Anthropic bytes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ServerReply", "ToolCallScript"]

_OVERFLOW_OPENAI = (
    "This model's maximum context length is 128000 tokens. However, your messages "
    "resulted in 131072 tokens. Please reduce the length of the messages."
)
_OVERFLOW_ANTHROPIC = "prompt is too long: 213462 tokens > 200000 maximum"
_OPENAI_STOP = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}
_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}


@dataclass
class ToolCallScript:
    """A tool call the server will stream (id generated when not given)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    #: Arguments sent as this exact text instead of ``arguments`` (JSON too deep to build).
    raw_arguments: str | None = None

    def wire_arguments(self) -> str:
        """The arguments as the server streams them."""
        return (
            self.raw_arguments
            if self.raw_arguments is not None
            else json.dumps(dict(self.arguments))
        )


@dataclass
class ServerReply:
    """One scripted answer, or one fault.

    Content (streamed in this order): ``thinking`` (Anthropic: with
    ``thinking_signature``; OpenAI-compatible: as ``reasoning_content``),
    ``redacted_thinking`` (Anthropic only), ``text``, ``tool_calls``. ``usage`` keys:
    ``input``, ``output``, ``cache_read``, ``cache_write``. ``stop_reason`` is Pi's
    (``stop``/``length``/``toolUse``), chosen from the content when omitted.

    Faults: ``status`` answers with that HTTP error (``error_message`` in the
    provider's error body, ``headers`` e.g. ``{"Retry-After": "1"}``);
    ``overflow=True`` answers 400 with the provider's context-overflow wording;
    ``chunk_delay`` sleeps between SSE events; ``pause`` sleeps once after
    ``pause_after`` events (a model thinking mid-stream); ``stall`` sleeps before answering;
    ``gate`` (a ``threading.Event``) holds the answer until the test sets it (what others do
    while a request is pending, in the order the test says);
    ``disconnect_after`` drops the connection after that many SSE events;
    ``malformed_after`` sends a broken JSON chunk after that many events (and then
    keeps the connection open, so a client that waited for more would hang);
    ``stream_error`` sends an in-stream error event (Anthropic ``error`` / OpenAI
    ``{"error": ...}``) after ``stream_error_after`` events; ``end_after`` ends the body
    cleanly after that many events (no finish chunk, no ``[DONE]``);
    ``disconnect_in_tool_args`` drops the connection right after the first fragment of
    the first tool call's arguments; ``no_usage`` sends no token counts even when asked
    (llama.cpp ignores ``stream_options``).
    """

    text: str = ""
    thinking: str = ""
    thinking_signature: str = "sig-abc123"
    redacted_thinking: str | None = None
    tool_calls: Sequence[ToolCallScript] = ()
    usage: Mapping[str, int] | None = None
    stop_reason: str | None = None
    chunk_size: int = 4
    interleave_tool_calls: bool = False
    status: int | None = None
    error_message: str = "scripted error"
    error_type: str = "api_error"
    headers: Mapping[str, str] = field(default_factory=dict)
    overflow: bool = False
    chunk_delay: float = 0.0
    pause_after: int | None = None
    pause: float = 0.0
    stall: float = 0.0
    gate: Any = None
    disconnect_after: int | None = None
    malformed_after: int | None = None
    stream_error: str | None = None
    stream_error_type: str = "overloaded_error"
    stream_error_after: int = 0
    end_after: int | None = None
    disconnect_in_tool_args: bool = False
    no_usage: bool = False


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _stream_error(path: str, reply: ServerReply) -> bytes:
    if path.rstrip("/").endswith("/chat/completions"):
        payload: dict[str, Any] = {
            "error": {"message": reply.stream_error, "type": "server_error", "code": 503}
        }
        return f"data: {json.dumps(payload)}\n\n".encode()
    payload = {
        "type": "error",
        "error": {"type": reply.stream_error_type, "message": reply.stream_error},
    }
    return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()


def _usage(reply: ServerReply) -> dict[str, int]:
    u = dict(reply.usage or {})
    return {
        "input": u.get("input", 10),
        "output": u.get("output", 5),
        "cache_read": u.get("cache_read", 0),
        "cache_write": u.get("cache_write", 0),
    }


def _stop(reply: ServerReply) -> str:
    return reply.stop_reason or ("toolUse" if reply.tool_calls else "stop")


def _call_id(call: ToolCallScript, i: int, prefix: str) -> str:
    return call.id or f"{prefix}{i + 1}"


def _openai_events(
    reply: ServerReply, model: str, include_usage: bool
) -> Iterator[tuple[str | None, str]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
        payload = {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return None, json.dumps(payload)

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.thinking, reply.chunk_size):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(reply.text, reply.chunk_size):
        yield chunk({"content": piece})
    starts = []
    arg_pieces = []
    for i, call in enumerate(reply.tool_calls):
        fn = {"name": call.name, "arguments": ""}
        starts.append(
            {"index": i, "id": _call_id(call, i, "call_"), "type": "function", "function": fn}
        )
        arg_pieces.append(_pieces(call.wire_arguments(), reply.chunk_size))
    if reply.interleave_tool_calls:
        for start in starts:
            yield chunk({"tool_calls": [start]})
        for step in range(max((len(p) for p in arg_pieces), default=0)):
            for i, pieces in enumerate(arg_pieces):
                if step < len(pieces):
                    yield chunk(
                        {"tool_calls": [{"index": i, "function": {"arguments": pieces[step]}}]}
                    )
    else:
        for i, start in enumerate(starts):
            yield chunk({"tool_calls": [start]})
            for piece in arg_pieces[i]:
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, _OPENAI_STOP.get(_stop(reply), "stop"))
    if include_usage and not reply.no_usage:
        u = _usage(reply)
        prompt = u["input"] + u["cache_read"]
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": u["output"],
            "total_tokens": prompt + u["output"],
            "prompt_tokens_details": {"cached_tokens": u["cache_read"]},
        }
        yield (
            None,
            json.dumps(
                {
                    "id": "chatcmpl-loopback",
                    "object": "chat.completion.chunk",
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            ),
        )
    yield None, "[DONE]"


def _openai_json(reply: ServerReply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.thinking:
        message["reasoning_content"] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(c, i, "call_"),
                "type": "function",
                "function": {"name": c.name, "arguments": c.wire_arguments()},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
    u = _usage(reply)
    prompt = u["input"] + u["cache_read"]
    usage: dict[str, Any] | None = {
        "prompt_tokens": prompt,
        "completion_tokens": u["output"],
        "total_tokens": prompt + u["output"],
        "prompt_tokens_details": {"cached_tokens": u["cache_read"]},
    }
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _OPENAI_STOP.get(_stop(reply), "stop"),
            }
        ],
        "usage": None if reply.no_usage else usage,
    }


def _anthropic_blocks(reply: ServerReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking:
        blocks.append(
            {"type": "thinking", "thinking": reply.thinking, "signature": reply.thinking_signature}
        )
    if reply.redacted_thinking is not None:
        blocks.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for i, c in enumerate(reply.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": _call_id(c, i, "toolu_"),
                "name": c.name,
                "input": dict(c.arguments),
            }
        )
    return blocks


def _anthropic_events(reply: ServerReply, model: str) -> Iterator[tuple[str | None, str]]:
    def ev(name: str, payload: dict[str, Any]) -> tuple[str, str]:
        return name, json.dumps({"type": name, **payload})

    u = _usage(reply)
    message: dict[str, Any] = {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "usage": {
            "input_tokens": u["input"],
            "output_tokens": 1,
            "cache_read_input_tokens": u["cache_read"],
            "cache_creation_input_tokens": u["cache_write"],
        },
    }
    yield ev("message_start", {"message": message})
    yield "ping", json.dumps({"type": "ping"})
    for index, block in enumerate(_anthropic_blocks(reply)):
        kind = block["type"]
        if kind == "thinking":
            yield ev(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
            for piece in _pieces(block["thinking"], reply.chunk_size):
                yield ev(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
                )
            yield ev(
                "content_block_delta",
                {
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                },
            )
        elif kind == "redacted_thinking":
            yield ev("content_block_start", {"index": index, "content_block": block})
        elif kind == "text":
            yield ev(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
            for piece in _pieces(block["text"], reply.chunk_size):
                yield ev(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "text_delta", "text": piece}},
                )
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield ev("content_block_start", {"index": index, "content_block": start})
            for piece in _pieces(json.dumps(block["input"]), reply.chunk_size):
                yield ev(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                )
        yield ev("content_block_stop", {"index": index})
    stop = _ANTHROPIC_STOP.get(_stop(reply), "end_turn")
    yield ev(
        "message_delta",
        {
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": u["output"]},
        },
    )
    yield ev("message_stop", {})


def _anthropic_json(reply: ServerReply, model: str) -> dict[str, Any]:
    u = _usage(reply)
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(reply),
        "stop_reason": _ANTHROPIC_STOP.get(_stop(reply), "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": u["input"],
            "output_tokens": u["output"],
            "cache_read_input_tokens": u["cache_read"],
            "cache_creation_input_tokens": u["cache_write"],
        },
    }


def first_argument_event(events: Sequence[tuple[str | None, str]]) -> int | None:
    """Index of the event carrying the first fragment of a tool call's arguments."""
    for i, (_name, data) in enumerate(events):
        if data == "[DONE]":
            continue
        obj = json.loads(data)
        delta = obj.get("delta") if isinstance(obj, dict) else None
        if isinstance(delta, dict) and delta.get("type") == "input_json_delta":
            return i
        for choice in obj.get("choices") or () if isinstance(obj, dict) else ():
            for call in (choice.get("delta") or {}).get("tool_calls") or ():
                if (call.get("function") or {}).get("arguments"):
                    return i
    return None


def prompt_tokens(body: Any) -> int:
    """chars/4 of every text a request carries: what the loopback server counts as tokens."""
    chars = 0

    def walk(value: Any) -> None:
        nonlocal chars
        if isinstance(value, str):
            chars += len(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in ("role", "type", "id", "tool_call_id", "model"):
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    if isinstance(body, dict):
        walk(body.get("system"))
        walk(body.get("messages"))
        walk(body.get("tools"))
    return -(-chars // 4)


#: What Jinja2's autoescape (MarkupSafe) makes of each character it escapes.
_HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", '"': "&#34;"}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def render_chatml(body: Any, *, escape: bool) -> str:
    """The prompt a ChatML template renders from an OpenAI request's messages.

    With ``escape``, each message's text is HTML-escaped as llama-cpp-python's
    ``chatml-function-calling`` template (Jinja2 with autoescape) does: the model is shown
    ``&#39;`` where the request said ``'``. Tool messages are left out, as that template does.
    """
    messages = body.get("messages") if isinstance(body, dict) else None
    parts = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "developer",
            "user",
            "assistant",
        ):
            continue
        text = _text_of(message.get("content"))
        if escape:
            text = "".join(_HTML_ENTITIES.get(c, c) for c in text)
        parts.append(f"<|im_start|>{message['role']}\n{text}<|im_end|>\n")
    return "".join(parts) + "<|im_start|>assistant\n"


def null_content_error(body: Any) -> str | None:
    """llama-cpp-python's schema error for an assistant message with ``content: null``."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for i, message in enumerate(messages or ()):
        if isinstance(message, dict) and message.get("role") == "assistant":
            if "content" in message and message["content"] is None:
                return (
                    "1 validation error for ChatCompletionRequestAssistantMessage\n"
                    f"messages.{i}.content\n  Input should be a valid string "
                    "[type=string_type, input_value=None, input_type=NoneType]"
                )
    return None
