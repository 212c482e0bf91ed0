"""The core tests' defaults for the builders of :mod:`pinb.testing.messages` (times 1, 2, 3)."""

from __future__ import annotations

from typing import Any

from pinb.testing import messages

_USAGE = {
    "input": 100,
    "output": 20,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 120,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return messages.user(text, ts=ts)


def assistant(
    text: str = "ok",
    *,
    tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    total_tokens: int = 120,
    stop: str = "stop",
    ts: int = 2,
) -> dict[str, Any]:
    return messages.assistant(
        text,
        calls=tool_calls,
        usage={**_USAGE, "totalTokens": total_tokens},
        stop="toolUse" if tool_calls else stop,
        ts=ts,
    )


def tool_result(call_id: str, name: str, text: str, ts: int = 3) -> dict[str, Any]:
    return messages.tool_result(call_id, name, text, ts=ts)
