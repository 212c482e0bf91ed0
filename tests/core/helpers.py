"""Small builders for Pi-shaped messages used across the core tests."""

from __future__ import annotations

from typing import Any

_USAGE = {
    "input": 100,
    "output": 20,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 120,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(
    text: str = "ok",
    *,
    tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    total_tokens: int = 120,
    stop: str = "stop",
    ts: int = 2,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for call_id, name, arguments in tool_calls:
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {**_USAGE, "totalTokens": total_tokens},
        "stopReason": "toolUse" if tool_calls else stop,
        "timestamp": ts,
    }


def tool_result(call_id: str, name: str, text: str, ts: int = 3) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": ts,
    }
