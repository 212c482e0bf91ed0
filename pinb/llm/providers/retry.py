"""Retry policy for transient provider failures (Pi's defaults, spec §6.5 / §10.5)."""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pinb.llm.providers.overflow import is_context_overflow

__all__ = [
    "RETRYABLE_STATUS",
    "RetryPolicy",
    "is_retryable_error",
    "parse_retry_after",
]

#: HTTP statuses worth another try: timeout, conflict/lock, rate limit, server errors.
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending a failed request again.

    Retries happen only before any content has streamed. Attempt ``n`` (from 1) waits
    ``min(base_delay * 2 ** (n - 1), max_delay)`` seconds, or the provider's
    ``Retry-After`` when given; a ``Retry-After`` above ``max_retry_after`` ends the
    retries (the error is returned instead of waiting that long).

    Parameters
    ----------
    max_retries:
        Retries after the first attempt (Pi: 3).
    base_delay:
        First backoff in seconds (Pi: 2.0, so 2, 4, 8).
    max_delay:
        Cap of one backoff in seconds (Pi: 60).
    max_retry_after:
        Largest ``Retry-After`` honoured, in seconds (60).
    sleep:
        Coroutine function used to wait; tests inject a recorder or a no-op.

    Examples
    --------
    >>> [RetryPolicy().delay(n) for n in (1, 2, 3)]
    [2.0, 4.0, 8.0]
    >>> RetryPolicy(max_retries=0).should_retry(1)
    False
    """

    max_retries: int = 3
    base_delay: float = 2.0
    max_delay: float = 60.0
    max_retry_after: float = 60.0
    sleep: Sleep = field(default=asyncio.sleep, repr=False, compare=False)

    def should_retry(self, attempt: int) -> bool:
        """Whether retry number ``attempt`` (from 1) is allowed."""
        return attempt <= self.max_retries

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt``; ``retry_after`` wins when given."""
        if retry_after is not None:
            return max(0.0, retry_after)
        return float(min(self.base_delay * (2 ** (attempt - 1)), self.max_delay))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RetryPolicy:
        """Build from Pi's ``retry`` settings object (``maxRetries``, ``baseDelayMs``,
        ``maxAgentDelayMs`` or v0.58's ``maxDelayMs``).

        ``enabled: false`` gives a policy with no retries.
        """
        if settings.get("enabled") is False:
            return cls(max_retries=0)
        max_delay = settings.get("maxAgentDelayMs", settings.get("maxDelayMs", 60000))
        return cls(
            max_retries=int(settings.get("maxRetries", 3)),
            base_delay=float(settings.get("baseDelayMs", 2000)) / 1000,
            max_delay=float(max_delay) / 1000,
        )


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


#: Pi 1.6's transient-failure wording (``isRetryableAssistantError``), condensed.
_TRANSIENT = re.compile(
    r"overloaded|server_busy|servers are currently busy|currently experiencing high demand"
    r"|model is at capacity|rate.?limit|too many requests"
    r"|(?<![a-z0-9])(?:429|500|502|503|504|520|524|529)(?![a-z0-9])"
    r"|service.?(?:is.?)?(?:temporarily.?)?unavailable|server.?error|internal.?error"
    r"|provider.?returned.?(?:an.?)?error|upstream|stream was interrupted|http/?2 stream failed"
    r"|network.?error|connection.?error|connection.?refused|connection.?lost|connection.?closed"
    r"|other side closed|fetch failed|request to \S+ failed, reason:|getaddrinfo"
    r"|(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])"
    r"|connection reset by peer|ENOTFOUND|EAI_AGAIN|reset before headers|socket hang up"
    r"|socket connection was closed|timed? ?out|timeout|terminated|websocket.?(?:closed|error)"
    r"|ended without|stream ended before|stream disconnected before completion"
    r"|cut short after the reply had begun|pending stream has been canceled|retry delay"
    r"|you can retry your request|try your request again|please retry your request"
    r"|ResourceExhausted|malformed stream chunk",
    re.IGNORECASE,
)
#: Account limits that look like rate limits but last hours (Pi 1.6), and requests the
#: server rejected as invalid (pinb: a schema error stays one however often it is sent).
_PERMANENT = re.compile(
    r"GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance"
    r"|insufficient_quota|out of budget|quota exceeded|billing"
    r"|subscription_sharing_(?:workplace_individual_)?usage_limit_exceeded"
    r"|\"code\"\s*:\s*\"?1308(?![0-9])"
    r"|validation error|invalid request|could not be sent",
    re.IGNORECASE,
)


def is_retryable_error(message: Mapping[str, Any]) -> bool:
    """Whether a failed reply is worth another try at the agent level (Pi 1.6, spec §10.5).

    True for ``stopReason == "error"`` messages whose ``errorMessage`` reads like a
    transient failure (overloaded, rate limit, 5xx, connection trouble, a cut stream),
    unless it names an exhausted quota or a request the server rejected as invalid.
    Context overflow is *not* retryable this way: compact first.
    """
    if message.get("stopReason") != "error" or is_context_overflow(message):
        return False
    text = message.get("errorMessage")
    if not isinstance(text, str) or not text or _PERMANENT.search(text):
        return False
    return bool(_TRANSIENT.search(text))
