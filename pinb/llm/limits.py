"""The output limit every request carries: the model's, cut so the prompt and the reply fit.

A server that is sent no limit lets the model write until its window is full, and then
every later request overflows; one that is sent the model's whole ``maxTokens`` on a
small window refuses the request or cuts it silently. So each request carries
``max_tokens`` (or ``max_completion_tokens``): what the caller asked for, else the model's
output limit, no larger than the window minus the request's size and a small margin for
the error of the chars/4 estimate.

Pi 1.6 keeps a 4,096-token margin, which on a 4,096-token window leaves it sending
``max_completion_tokens: 1``; the margin here grows with the window instead::

    >>> from pinb.llm.types import ModelInfo
    >>> info = ModelInfo("llamacpp", "smol", "openai-completions", 4096, 16_384)
    >>> choose_output_limit(info, 3000).tokens
    968
    >>> print(choose_output_limit(info, 3000))
    968 tokens (the 4,096-token window − a request of ~3,000 − a margin of 128)
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_OUTPUT_CAP",
    "UNREPORTED_WINDOW_OUTPUT",
    "ModelLimits",
    "OutputLimit",
    "choose_output_limit",
    "limit_margin",
    "stream_deadline",
]

log = logging.getLogger("pinb.llm")

#: Seconds one response may take in all, however steadily it trickles (``deadline=``, or
#: the ``PINB_STREAM_DEADLINE`` variable): a byte a second never meets the read timeout.
DEFAULT_DEADLINE = 1800.0
#: The largest limit sent when the caller gives none (hosted models list up to 128,000).
DEFAULT_OUTPUT_CAP = 32_000
#: The model's output limit on a local server that does not say its window (nobody gave
#: one either): a quarter of the 4,096 tokens small local servers are often started with,
#: so the first request fits one of them beside a system prompt of ~2,000 tokens. The
#: first overflow names the real window, and pinb plans with that from then on.
UNREPORTED_WINDOW_OUTPUT = 1024


class ModelLimits(Protocol):
    """What the rule reads of a model: its window and its own output limit, in tokens.

    `pinb.llm.types.ModelInfo` has both; the rule needs nothing else of it, so this module
    sits under the model values (whose `~pinb.llm.types.Done` carries an `OutputLimit`).
    """

    @property
    def context_window(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...


def limit_margin(window: int) -> int:
    """Tokens kept free beside the estimate: 1/32 of the window, from 32 up to 1,024."""
    return max(32, min(1024, window // 32))


@dataclass(frozen=True, slots=True)
class OutputLimit:
    """The limit a request carries, what was wanted, and whether the window cut it.

    Attributes
    ----------
    tokens:
        The value sent.
    wanted:
        What the caller asked for, else the model's output limit (at most
        `DEFAULT_OUTPUT_CAP`).
    window, prompt_tokens, margin:
        The figures of the cut: ``tokens = window - prompt_tokens - margin`` when
        `capped`.
    """

    tokens: int
    wanted: int
    window: int
    prompt_tokens: int
    margin: int

    @property
    def capped(self) -> bool:
        """Whether the window, not the wanted limit, set the value."""
        return self.tokens < self.wanted

    @property
    def starved(self) -> bool:
        """Whether the window leaves the reply less than it needs: less than was wanted
        and less than a sixteenth of the window (256 tokens of 4,096, at least 64). A
        reply that short is cut off (a tool call in its arguments); compact first."""
        return self.tokens < min(self.wanted, max(64, self.window // 16))

    @property
    def fits(self) -> bool:
        """Whether the request and the whole limit fit the window."""
        return self.prompt_tokens + self.tokens <= self.window

    def __str__(self) -> str:
        if not self.capped:
            return f"{self.tokens:,} tokens (the model's output limit)"
        if not self.fits:
            return (
                f"{self.tokens:,} tokens (the request of ~{self.prompt_tokens:,} leaves no room "
                f"in the {self.window:,}-token window)"
            )
        return (
            f"{self.tokens:,} tokens (the {self.window:,}-token window − a request of "
            f"~{self.prompt_tokens:,} − a margin of {self.margin:,})"
        )


def choose_output_limit(
    info: ModelLimits, prompt_tokens: int, requested: int | None = None
) -> OutputLimit:
    """The output limit for a request of about ``prompt_tokens`` tokens to ``info``'s model.

    ``requested`` (a caller's ``max_tokens``) replaces the model's limit but is cut to
    the window the same way. The result is at least 1 (a limit of 0 is an error on most
    servers); a request that leaves no room gets 1, and the server's overflow answer
    says the rest.
    """
    wanted = (
        requested if requested else min(info.max_tokens or DEFAULT_OUTPUT_CAP, DEFAULT_OUTPUT_CAP)
    )
    window = info.context_window
    margin = limit_margin(window)
    room = window - prompt_tokens - margin
    if room < 1:  # keep what the margin would have taken, if anything is left
        room = window - prompt_tokens
    return OutputLimit(max(1, min(wanted, room)), wanted, window, prompt_tokens, margin)


def stream_deadline(value: float | None) -> float | None:
    """The deadline of one response in seconds: ``value``, else ``PINB_STREAM_DEADLINE``,
    else `DEFAULT_DEADLINE`; ``0`` or less: none (``None``)."""
    if value is None:
        raw = os.environ.get("PINB_STREAM_DEADLINE", "").strip()
        try:
            value = float(raw) if raw else DEFAULT_DEADLINE
        except ValueError:
            log.warning(
                "PINB_STREAM_DEADLINE=%r is not a number; using %g s", raw, DEFAULT_DEADLINE
            )
            value = DEFAULT_DEADLINE
    return value if value > 0 else None
