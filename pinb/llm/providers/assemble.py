"""Assemble stream deltas into Pi's assistant message, emitting the matching events."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Hashable
from typing import Any

from pinb.llm.types import (
    ModelInfo,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    make_usage,
)

__all__ = [
    "INVALID_ARGUMENTS_KEY",
    "MAX_ARGUMENT_DEPTH",
    "MessageBuilder",
    "json_depth",
    "parse_partial_json",
    "refused_arguments",
]

log = logging.getLogger("pinb.llm")

#: Text Pi shows for a redacted thinking block.
REDACTED_THINKING_TEXT = "[Reasoning redacted]"


class _Block:
    __slots__ = ("args", "ended", "id", "index", "kind", "name", "parts", "redacted", "signature")

    def __init__(self, kind: str, index: int):
        self.kind = kind
        self.index = index
        self.parts: list[str] = []
        self.signature: str | None = None
        self.redacted = False
        self.id = ""
        self.name = ""
        self.ended = False
        self.args: dict[str, Any] | None = None


class MessageBuilder:
    """Collect one response's blocks and usage; ``finish`` returns the Pi message.

    Provider decoders address blocks by a key of their own (Anthropic's block index,
    an OpenAI segment or tool-call index). A block is created on its first content, so
    the ``index`` carried by events is the block's position in the final ``content``.
    """

    def __init__(self, info: ModelInfo, timestamp: int | None = None):
        self.info = info
        self.timestamp = int(time.time() * 1000) if timestamp is None else timestamp
        self.reset()

    def reset(self) -> None:
        """Forget everything received (before a retry)."""
        self._blocks: list[_Block] = []
        self._keys: dict[Hashable, _Block] = {}
        self.content_started = False
        self.input = 0
        self.output = 0
        self.cache_read = 0
        self.cache_write = 0
        self.total: int | None = None
        #: Whether the provider sent token counts (llama.cpp streams none).
        self.usage_reported = False

    # ------------------------------------------------------------------ blocks

    def _open(self, key: Hashable, kind: str) -> _Block:
        block = _Block(kind, len(self._blocks))
        self._blocks.append(block)
        self._keys[key] = block
        self.content_started = True
        return block

    def _get(self, key: Hashable, kind: str) -> _Block:
        block = self._keys.get(key)
        if block is None or block.kind != kind:
            block = self._open(key, kind)
        return block

    def text(self, key: Hashable, delta: str) -> TextDelta:
        """Append text to the text block ``key``."""
        block = self._get(key, "text")
        block.parts.append(delta)
        return TextDelta(block.index, delta)

    def thinking(self, key: Hashable, delta: str) -> ThinkingDelta:
        """Append reasoning text to the thinking block ``key``."""
        block = self._get(key, "thinking")
        block.parts.append(delta)
        return ThinkingDelta(block.index, delta)

    def signature(self, key: Hashable, signature: str, *, append: bool = True) -> None:
        """Set (or extend) the thinking block's signature."""
        block = self._get(key, "thinking")
        if append and block.signature:
            block.signature += signature
        else:
            block.signature = signature

    def redacted_thinking(self, key: Hashable, data: str) -> ThinkingDelta:
        """Record a redacted thinking block; the payload goes to ``thinkingSignature``."""
        block = self._get(key, "thinking")
        block.redacted = True
        block.signature = data
        block.parts = [REDACTED_THINKING_TEXT]
        return ThinkingDelta(block.index, REDACTED_THINKING_TEXT)

    def tool_start(self, key: Hashable, call_id: str, name: str) -> ToolCallStart:
        """Open a tool-call block."""
        block = self._open(key, "toolCall")
        block.id = call_id
        block.name = name
        return ToolCallStart(block.index, call_id, name)

    def has_tool(self, key: Hashable) -> bool:
        """Whether ``key`` names an open tool-call block."""
        block = self._keys.get(key)
        return block is not None and block.kind == "toolCall"

    def tool_update(self, key: Hashable, call_id: str | None, name: str | None) -> None:
        """Fill in an id or name that arrived after the start."""
        block = self._get(key, "toolCall")
        if call_id:
            block.id = call_id
        if name:
            block.name = name

    def tool_delta(self, key: Hashable, fragment: str) -> ToolCallDelta:
        """Append a fragment of the tool call's JSON arguments."""
        block = self._get(key, "toolCall")
        block.parts.append(fragment)
        return ToolCallDelta(block.index, block.id, fragment)

    def tool_end(self, key: Hashable) -> ToolCallEnd | None:
        """Close a tool-call block and parse its arguments."""
        block = self._keys.get(key)
        if block is None or block.kind != "toolCall" or block.ended:
            return None
        return self._end(block)

    def end_tools(self) -> list[ToolCallEnd]:
        """Close every open tool call, in block order."""
        return [self._end(b) for b in self._blocks if b.kind == "toolCall" and not b.ended]

    def _end(self, block: _Block) -> ToolCallEnd:
        raw = "".join(block.parts)
        block.ended = True
        block.args = _parse_arguments(raw, block.name)
        return ToolCallEnd(block.index, block.id, block.name, block.args)

    @property
    def has_tool_calls(self) -> bool:
        """Whether the response holds any tool call."""
        return any(b.kind == "toolCall" for b in self._blocks)

    # ------------------------------------------------------------------ usage

    def set_usage(
        self,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read: int | None = None,
        cache_write: int | None = None,
        total: int | None = None,
    ) -> None:
        """Record token counts the provider reported (``None`` keeps the old value)."""
        self.usage_reported = True
        if input_tokens is not None:
            self.input = int(input_tokens)
        if output_tokens is not None:
            self.output = int(output_tokens)
        if cache_read is not None:
            self.cache_read = int(cache_read)
        if cache_write is not None:
            self.cache_write = int(cache_write)
        if total is not None:
            self.total = int(total)

    def usage(self) -> dict[str, Any]:
        """Pi's usage object with cost from the model's prices."""
        total = self.total
        if not total:
            total = self.input + self.output + self.cache_read + self.cache_write
        return make_usage(
            self.input, self.output, self.cache_read, self.cache_write, total, self.info.cost
        )

    # ------------------------------------------------------------------ result

    def content(self) -> list[dict[str, Any]]:
        """The content blocks received so far, partial tool calls included."""
        out: list[dict[str, Any]] = []
        for b in self._blocks:
            if b.kind == "text":
                out.append({"type": "text", "text": "".join(b.parts)})
            elif b.kind == "thinking":
                block: dict[str, Any] = {"type": "thinking", "thinking": "".join(b.parts)}
                if b.signature is not None:
                    block["thinkingSignature"] = b.signature
                if b.redacted:
                    block["redacted"] = True
                out.append(block)
            else:
                if b.ended and b.args is not None:
                    args = b.args
                    partial = None
                else:
                    partial = "".join(b.parts)
                    args = parse_partial_json(partial) or {}
                call = {"type": "toolCall", "id": b.id, "name": b.name, "arguments": args}
                if partial:
                    call["partialArgs"] = partial
                out.append(call)
        return out

    def finish(self, stop_reason: str, error_message: str | None = None) -> dict[str, Any]:
        """The final assistant message, keys in Pi's order."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.content(),
            "api": self.info.api,
            "provider": self.info.provider,
            "model": self.info.id,
            "usage": self.usage(),
            "stopReason": stop_reason,
            "timestamp": self.timestamp,
        }
        if error_message is not None:
            message["errorMessage"] = error_message
        return message


#: Deepest nesting of tool-call arguments that is parsed; deeper JSON is refused (no
#: tool schema nests like that, and Python's parser would raise RecursionError).
MAX_ARGUMENT_DEPTH = 100
#: The key of the arguments object that stands in for refused arguments; the agent
#: answers such a call with this text as a tool error.
INVALID_ARGUMENTS_KEY = "_pinb_invalid_arguments"


def json_depth(text: str, limit: int = MAX_ARGUMENT_DEPTH) -> int:
    """How deeply ``text`` nests ``{``/``[`` (strings skipped), to tell whether it passes ``limit``.

    When ``text`` has no more brackets than ``limit`` their count is returned (a bound
    that cannot pass it) without a scan; otherwise the scan stops at ``limit + 1``.

    >>> json_depth('{"a": [1, {"b": "[[["}]}', limit=2)
    3
    >>> json_depth('[' * 5000) > MAX_ARGUMENT_DEPTH
    True
    """
    if text.count("{") + text.count("[") <= limit:
        return min(limit, text.count("{") + text.count("["))  # cannot nest deeper
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in "}]":
            depth = max(0, depth - 1)
    return deepest


def refused_arguments(raw: str) -> dict[str, Any] | None:
    """The stand-in object for arguments nested deeper than `MAX_ARGUMENT_DEPTH`, or None."""
    if json_depth(raw) <= MAX_ARGUMENT_DEPTH:
        return None
    return {
        INVALID_ARGUMENTS_KEY: (
            f"the arguments ({len(raw):,} characters) nest JSON deeper than "
            f"{MAX_ARGUMENT_DEPTH} levels; they were not parsed"
        )
    }


def _parse_arguments(raw: str, name: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    refused = refused_arguments(raw)
    if refused is not None:
        log.warning("tool call %r: %s", name, refused[INVALID_ARGUMENTS_KEY])
        return refused
    try:
        value = json.loads(raw)
    except ValueError:
        value = parse_partial_json(raw)
        log.warning("tool call %r: arguments are not valid JSON; kept what parsed", name)
    if isinstance(value, dict):
        return value
    log.warning("tool call %r: arguments are not a JSON object; using {}", name)
    return {}


_CLOSERS = {"{": "}", "[": "]"}


def parse_partial_json(text: str) -> dict[str, Any] | None:
    """Best-effort parse of a truncated JSON object (a tool call cut off mid-stream).

    Closes an open string and open brackets, dropping an incomplete trailing member
    when that is the only way to get valid JSON.

    Examples
    --------
    >>> parse_partial_json('{"path": "a.p')
    {'path': 'a.p'}
    >>> parse_partial_json('{"path": "a.py", "lim')
    {'path': 'a.py'}
    """
    if not text.strip() or json_depth(text) > MAX_ARGUMENT_DEPTH:
        return None
    try:
        value = json.loads(text)
        return value if isinstance(value, dict) else None
    except ValueError:
        pass
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (cut position, closers needed there)
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
            cuts.append((i + 1, "".join(reversed(stack))))
        elif ch in "}]":
            if stack:
                stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    closers = "".join(reversed(stack))
    head = text[:-1] if escaped else text
    candidates = [head + ('"' if in_string else "") + closers]
    candidates += [text[:pos] + close for pos, close in reversed(cuts[-64:])]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None
