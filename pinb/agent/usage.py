"""A reply's usage when the server reported none: chars/4 of what was sent and what came back.

One rule for both engines: pinb's agent estimates each reply of a server that reports no
usage (llama.cpp ignores ``stream_options``), and a Pi cell's replies are estimated the
same way from the session Pi wrote, so every footer marks an estimate as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.context.build import SessionContext
from ..core.context.tokens import estimate_tokens
from ..llm.types import ModelCost, make_usage

__all__ = ["estimate_usage", "reported_nothing"]


def estimate_usage(
    context: SessionContext,
    sent_messages: Sequence[Any],
    message: dict[str, Any],
    *,
    system_prompt: str = "",
    cost: ModelCost | None = None,
) -> dict[str, Any]:
    """Usage of ``message``, a reply to ``sent_messages`` of ``context``, by chars/4.

    The system prompt sent is the context's replayed system message, else
    ``system_prompt`` (the one the request carried when the session records none).
    """
    pi = context.pi
    system = context.system_message()
    sent = estimate_tokens(system, pi=pi) if system is not None else 0
    sent += sum(
        estimate_tokens(m, pi=pi)
        for m in sent_messages
        if not (isinstance(m, dict) and m.get("role") == "system")
    )
    if system is None:
        sent += -(-len(system_prompt) // 4)
    received = estimate_tokens(message, pi=pi)
    return make_usage(sent, received, 0, 0, sent + received, cost)


def reported_nothing(message: Any) -> bool:
    """Whether a saved assistant message carries no usage at all (all zero or missing)."""
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return True
    return not any(
        isinstance(usage.get(k), int | float) and usage.get(k)
        for k in ("input", "output", "totalTokens", "cacheRead", "cacheWrite")
    )
