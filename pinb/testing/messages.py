"""Pi-shaped messages for tests and demos: one set of builders, one set of defaults.

Every test that needs a user message, an assistant reply, a tool result or a system message
builds it here, so a message means the same thing in every test file. The shapes are Pi
1.x's (``@earendil-works/pi-coding-agent``): content as a list of blocks, ``api``,
``provider``, ``model``, ``usage`` with its ``cost``, ``stopReason``, ``timestamp`` in
milliseconds since the epoch.

Defaults, the same for every builder:

- ``ts``: :data:`BASE_MS` (2025-03-01T10:00:00Z); :func:`at` gives a moment ``n`` seconds
  after it, for tests that need an order.
- An assistant reply is Anthropic's Claude Sonnet 4.5 over ``anthropic-messages`` and used
  :data:`USAGE` (100 in, 20 out, 120 in all, $0.0006) unless told otherwise; ``total=N``
  reports N tokens (``N - 20`` in, 20 out; all in when ``N < 20``).
- A tool call is ``(call_id, name, arguments)``; a reply with calls stops with
  ``"toolUse"``, else ``"stop"``.

Examples
--------
>>> user("hi")["content"]
[{'type': 'text', 'text': 'hi'}]
>>> reply = assistant("ok", calls=[("c1", "bash", {"command": "ls"})])
>>> reply["stopReason"], reply["content"][1]["name"]
('toolUse', 'bash')
>>> tool_result("c1", "bash", "a.py")["toolCallId"]
'c1'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BASE_MS",
    "IMAGE",
    "USAGE",
    "ZERO_USAGE",
    "assistant",
    "at",
    "bash_execution",
    "system",
    "text",
    "tool_call",
    "tool_result",
    "usage",
    "user",
]

#: The default moment of every message: 2025-03-01T10:00:00Z, in milliseconds.
BASE_MS = 1_740_823_200_000
#: A one-pixel PNG's start, as an image block.
IMAGE: dict[str, Any] = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def at(seconds: float) -> int:
    """The moment ``seconds`` after :data:`BASE_MS`, in milliseconds."""
    return BASE_MS + round(seconds * 1000)


def usage(
    total: int = 120,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cache_read: int = 0,
    cache_write: int = 0,
    cost: float | None = None,
) -> dict[str, Any]:
    """A reply's ``usage``: ``total`` tokens, split in and out (default: 20 out, the rest in).

    ``cost`` is the total in dollars (default: $0.000005 a token, half in, half out).
    """
    cached = cache_read + cache_write
    if output_tokens is None:
        output_tokens = (
            min(20, total) if input_tokens is None else max(total - input_tokens - cached, 0)
        )
    if input_tokens is None:
        input_tokens = max(total - output_tokens - cached, 0)
    spent = total * 0.000005 if cost is None else cost
    return {
        "input": input_tokens,
        "output": output_tokens,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": total,
        "cost": {
            "input": round(spent / 2, 12),
            "output": round(spent / 2, 12),
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": round(spent, 12),
        },
    }


_usage = usage  # for the builders whose parameter of that name shadows it

#: The usage of a reply when a test says nothing about it.
USAGE: dict[str, Any] = usage()
#: A reply that reported nothing (a local server, an aborted stream).
ZERO_USAGE: dict[str, Any] = usage(0, cost=0.0)


def text(value: str) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value}


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``toolCall`` block."""
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments or {}}


def user(content: Any, *, ts: int = BASE_MS, block: bool = True) -> dict[str, Any]:
    """A user message: ``content`` as one text block, or the blocks (or value) as given.

    ``block=False`` keeps a string as the content itself, Pi's other shape of a user message.
    """
    blocks = [text(content)] if isinstance(content, str) and block else content
    return {"role": "user", "content": blocks, "timestamp": ts}


def assistant(
    content: str | list[Any] | None = "ok",
    *,
    thinking: str | None = None,
    signature: str | None = "sig",
    calls: Sequence[tuple[str, str, dict[str, Any]]] = (),
    total: int | None = None,
    usage: dict[str, Any] | None = None,
    stop: str | None = None,
    error: str | None = None,
    ts: int = BASE_MS,
    model: str = "claude-sonnet-4-5",
    provider: str = "anthropic",
    api: str = "anthropic-messages",
) -> dict[str, Any]:
    """An assistant reply.

    Parameters
    ----------
    content:
        The reply's text (one text block; ``None`` or ``""``: none), or its blocks as given.
    thinking, signature:
        A thinking block before the text, with ``signature`` as Anthropic sends one
        (``None``: no signature, as other providers send thinking).
    calls:
        Tool calls after the text, each ``(call_id, name, arguments)``.
    total, usage:
        The usage of :func:`usage` for ``total`` tokens, or the usage as given (default
        :data:`USAGE`).
    stop, error:
        ``stopReason`` (default ``"toolUse"`` with calls, else ``"stop"``) and
        ``errorMessage``.
    """
    if isinstance(content, list):
        blocks = list(content)
    else:
        blocks = []
        if thinking is not None:
            block = {"type": "thinking", "thinking": thinking}
            if signature is not None:
                block["thinkingSignature"] = signature
            blocks.append(block)
        if content:
            blocks.append(text(content))
    blocks.extend(tool_call(*call) for call in calls)
    if usage is None:
        usage = _usage(total) if total is not None else dict(USAGE)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": blocks,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": usage,
        "stopReason": stop or ("toolUse" if calls else "stop"),
        "timestamp": ts,
    }
    if error is not None:
        message["errorMessage"] = error
    return message


def tool_result(
    call_id: str,
    name: str,
    content: str | list[Any] = "",
    *,
    error: bool = False,
    ts: int = BASE_MS,
    **fields: Any,
) -> dict[str, Any]:
    """A tool's result for call ``call_id``: ``content`` as one text block, or the blocks."""
    blocks = [text(content)] if isinstance(content, str) else content
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": blocks,
        "isError": error,
        **fields,
        "timestamp": ts,
    }


def system(content: Any = "", *, ts: int = BASE_MS, **fields: Any) -> dict[str, Any]:
    """A Pi 1.x ``system`` message (a prompt section or a tool delta: ``fields``)."""
    return {"role": "system", "content": content, **fields, "timestamp": ts}


def bash_execution(
    command: str, output: str, *, ts: int = BASE_MS, **fields: Any
) -> dict[str, Any]:
    """A ``bashExecution`` message (Pi's ``!command``), exit code 0 unless ``fields`` say."""
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        **fields,
        "timestamp": ts,
    }
