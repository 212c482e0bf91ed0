"""Recognise context-overflow responses from their error text or usage (spec §6.6)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["OVERFLOW_PATTERNS", "is_context_overflow"]

#: Provider phrasings of "the prompt does not fit", matched case-insensitively (spec §6.6).
OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt is too long",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        r"model_context_window_exceeded",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
    )
)
# Some servers answer an oversized prompt with a bare 400/413.
_NO_BODY = re.compile(r"^4(00|13)\s*(status code)?\s*\(no body\)", re.IGNORECASE)


def is_context_overflow(message: Mapping[str, Any], context_window: int | None = None) -> bool:
    """Whether an assistant message reports that the prompt did not fit.

    Two cases, as in Pi: ``stopReason == "error"`` with an ``errorMessage`` matching a
    known provider phrasing (or a bare ``400``/``413 (no body)``), or a *silent*
    overflow: ``stopReason == "stop"`` with ``usage.input + usage.cacheRead`` above
    ``context_window`` (servers that accept and truncate).

    Parameters
    ----------
    message:
        A Pi-shaped assistant message.
    context_window:
        The model's window, to detect silent overflow; ``None`` or 0 skips that check.

    Examples
    --------
    >>> is_context_overflow({"stopReason": "error",
    ...                      "errorMessage": "400 prompt is too long: 213462 tokens > 200000 maximum"})
    True
    >>> is_context_overflow({"stopReason": "stop", "usage": {"input": 9, "cacheRead": 2}}, 10)
    True
    """
    stop = message.get("stopReason")
    if stop == "error":
        text = message.get("errorMessage")
        if isinstance(text, str) and text:
            if any(p.search(text) for p in OVERFLOW_PATTERNS):
                return True
            if _NO_BODY.search(text):
                return True
        return False
    if context_window and stop == "stop":
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            used = (usage.get("input") or 0) + (usage.get("cacheRead") or 0)
            return bool(used > context_window)
    return False
