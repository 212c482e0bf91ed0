"""Recognise context-overflow responses from their error text or usage (spec §6.6)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["NON_OVERFLOW_PATTERNS", "OVERFLOW_PATTERNS", "is_context_overflow", "window_from_error"]

#: Provider phrasings of "the prompt does not fit", matched case-insensitively: Pi 1.6's
#: list (spec §6.6) plus llama-cpp-python's, which Pi does not know.
OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt (?:is )?too long",
        r"prompt exceeds max length",
        r"request_too_large",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"exceeds (?:the )?(?:model'?s )?maximum context length"
        r"(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        r"context window exceeded",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
        r"model_context_window_exceeded",
        r"prompt too long; exceeded (?:max )?context length",
        r"range of input length should be",
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
        # llama-cpp-python: "Requested tokens (8521) exceed context window of 4096"
        r"requested tokens \(\d+\) exceed context window",
    )
)
#: Rate limits that mention tokens are not overflows (Bedrock: "Too many tokens, please wait").
NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (r"^(Throttling error|Service unavailable):", r"rate limit", r"too many requests")
)
# Some servers answer an oversized prompt with a bare 400/413.
_NO_BODY = re.compile(r"^4(00|13)\s*(status code)?\s*\(no body\)", re.IGNORECASE)


def is_context_overflow(message: Mapping[str, Any], context_window: int | None = None) -> bool:
    """Whether an assistant message reports that the prompt did not fit.

    Three cases, as in Pi 1.6: ``stopReason == "error"`` with an ``errorMessage``
    matching a known provider phrasing (or a bare ``400``/``413 (no body)``) and no
    rate-limit wording; a *silent* overflow: ``stopReason == "stop"`` with
    ``usage.input + usage.cacheRead`` above ``context_window`` (servers that accept and
    truncate); or a ``length`` stop with no output after a prompt that filled the window.

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
            if any(p.search(text) for p in NON_OVERFLOW_PATTERNS):
                return False
            if any(p.search(text) for p in OVERFLOW_PATTERNS):
                return True
            if _NO_BODY.search(text):
                return True
        return False
    usage = message.get("usage")
    if context_window and isinstance(usage, Mapping):
        used = (usage.get("input") or 0) + (usage.get("cacheRead") or 0)
        if stop == "stop":
            return bool(used > context_window)
        if stop == "length" and not usage.get("output"):
            # A server that cut the prompt to the window, leaving no room to answer.
            return bool(used >= context_window * 0.99)
    return False


_WINDOW_IN_ERROR = re.compile(
    r"context window of ([\d,]+)|context (?:size|length) (?:is |of )?\(?([\d,]+)\)?"
    r"|maximum context length (?:is |of )?\(?([\d,]+)|n_ctx[ =:]+([\d,]+)",
    re.IGNORECASE,
)


def window_from_error(text: str) -> int | None:
    """The context window an overflow error names, if it names one.

    Local servers say how large their window is when a prompt does not fit; that is the
    window pinb then uses for this model, so compaction plans for the right size.

    >>> window_from_error("Requested tokens (8521) exceed context window of 4096")
    4096
    >>> window_from_error("prompt is too long") is None
    True
    """
    match = _WINDOW_IN_ERROR.search(text)
    if match is None:
        return None
    digits = next(g for g in match.groups() if g)
    value = int(digits.replace(",", ""))
    return value if value > 0 else None
