"""The reply limit the user's Pi 1.6 will send, worked out before a Pi cell, and what to do when it is too small.

Pi 1.6 fits the output limit of every request to the window itself (``clampMaxTokensToContext``
in ``pi-ai/dist/api/simple-options.js``), whatever its compaction settings say:

- it estimates the request as its request code does: the last reported usage plus the
  messages after it, or, without usage, every message at 3.5 characters a token (its
  compaction code counts 4; a system message counts its text and its tools' JSON);
- it keeps a margin beside that estimate of 4,096 tokens, or 15 % of the estimate when
  that is larger;
- when what is left is under 32,768 tokens, it keeps only the 4,096 and asks for at most
  32,768;
- the limit is the model's ``maxTokens`` cut to that room, never less than 1.

So on a 4,096-token window every request carries ``max_completion_tokens: 1`` however
small the conversation, and neither ``--fit-pi`` nor any compaction setting changes it:
the smallest window Pi can use is the request plus 4,096 plus a useful reply.
:func:`pi_reply_room` says it before the cell is sent, so the cell stops with the reason
instead of Pi looping on cut replies, failed summaries and overflows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ...core.context.tokens import context_tokens_of_usage, message_chars, usage_positive
from ...core.format.target import Pi
from ...core.js.wire import dumps, utf16_len
from ...llm.limits import OutputLimit
from .rpc import PiEngineError

__all__ = [
    "PI_CONTEXT_MARGIN",
    "PiCannotFitError",
    "PiReplyRoom",
    "pi_output_limit",
    "pi_reply_room",
    "pi_request_tokens",
]

#: Pi 1.6's fixed margin beside its estimate of the request (``CONTEXT_SAFETY_TOKENS``).
PI_CONTEXT_MARGIN: Final = 4096
#: The share of the estimate kept instead, when larger (``CONTEXT_SAFETY_RATIO``).
_RATIO: Final = 0.15
#: Below this much room only the fixed margin is kept (``MIN_OUTPUT_WITH_RATIO_MARGIN``).
_RATIO_FLOOR: Final = 32768
#: Characters a token in Pi's request estimate (``CHARS_PER_TOKEN`` of pi-ai 1.6).
_CHARS_PER_TOKEN: Final = 3.5


class PiCannotFitError(PiEngineError):
    """Pi would send the cell with no room for a reply: the window is too small for Pi."""


def _system_text(message: dict[str, Any]) -> str:
    """pi-ai's ``getSystemMessageText``: the content's text blocks, then each section."""
    content = message.get("content")
    if isinstance(content, str):
        text = content
    else:
        blocks = content if isinstance(content, list) else []
        text = "\n".join(
            str(b.get("text", ""))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"
        )
    sections = message.get("sections")
    values = list(sections.values()) if isinstance(sections, dict) else []
    parts = [text, *(v for v in values if isinstance(v, str))]
    return "\n\n".join(part for part in parts if part)


def _ceil_tokens(chars: int) -> int:
    return math.ceil(chars / _CHARS_PER_TOKEN)


def _tokens(message: Any) -> int:
    """pi-ai 1.6's ``estimateMessageTokens``."""
    if isinstance(message, dict) and message.get("role") == "system":
        tokens = _ceil_tokens(utf16_len(_system_text(message)))
        for key in ("toolsAdded", "toolsRemoved"):
            tools = message.get(key)
            if isinstance(tools, list) and tools:
                tokens += _ceil_tokens(utf16_len(dumps(tools)))
        return tokens
    chars = message_chars(message, pi=Pi.V1_6)
    return _ceil_tokens(chars) if chars else 0


def _request_usage_index(messages: Sequence[Any]) -> int | None:
    """pi-ai 1.6's ``getLastAssistantUsageInfo``: the last assistant reply whose usage still
    describes the request's prefix.

    Unlike the compaction trigger's rule (:func:`~pinb.core.context.tokens.last_usage_index`),
    a reply older than a message before it (a compaction summary, inserted with the time it
    was written) no longer counts: its usage measured a prefix that is gone. Timestamps
    compare as JavaScript compares them (a missing one is ``NaN``: never newer, and it
    poisons the running maximum, as ``Math.max`` does).
    """
    latest = -math.inf
    found: int | None = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        stamp = message.get("timestamp")
        when = (
            float(stamp)
            if isinstance(stamp, int | float) and not isinstance(stamp, bool)
            else math.nan
        )
        if (
            message.get("role") == "assistant"
            and when >= latest
            and message.get("stopReason") not in ("aborted", "error")
            and usage_positive(message.get("usage"))
        ):
            found = i
        latest = math.nan if math.isnan(when) or math.isnan(latest) else max(latest, when)
    return found


def pi_request_tokens(messages: Sequence[Any]) -> int:
    """Pi 1.6's estimate of a request of ``messages`` (its request code's, at 3.5 chars a
    token): the last assistant usage that still counts plus the messages after it, else all."""
    index = _request_usage_index(messages)
    if index is None:
        return sum(_tokens(m) for m in messages)
    reported = context_tokens_of_usage(messages[index].get("usage"))
    return reported + sum(_tokens(m) for m in messages[index + 1 :])


def pi_output_limit(window: int, request_tokens: int, max_tokens: int) -> int:
    """The output limit Pi 1.6 sends for a request of ``request_tokens`` on ``window``."""
    if window <= 0:
        return max(1, max_tokens)
    margin = max(PI_CONTEXT_MARGIN, math.ceil(request_tokens * _RATIO))
    room = window - request_tokens - margin
    if room < _RATIO_FLOOR:
        room = min(_RATIO_FLOOR, window - request_tokens - PI_CONTEXT_MARGIN)
    return min(max_tokens, max(1, room))


def _limit(window: int, request_tokens: int, max_tokens: int) -> OutputLimit:
    # pinb's one rule for "too short a reply" (OutputLimit.starved), on Pi's figures.
    tokens = pi_output_limit(window, request_tokens, max_tokens)
    return OutputLimit(tokens, max_tokens, window, request_tokens, PI_CONTEXT_MARGIN)


def _smallest_window(request_tokens: int, max_tokens: int) -> int:
    """The smallest window on which Pi's limit for this request is a useful reply."""
    window = request_tokens + PI_CONTEXT_MARGIN + 1
    while _limit(window, request_tokens, max_tokens).starved:
        window += 64
    return window


@dataclass(frozen=True)
class PiReplyRoom:
    """What Pi 1.6 will ask for as the next reply's limit, on which window, and why.

    Attributes
    ----------
    spec, window, max_tokens:
        Pi's model, its window and its own ``maxTokens``.
    request_tokens:
        Pi's estimate of the request (:func:`pi_request_tokens`, the prompt included).
    fixed_tokens:
        The part no compaction shrinks: the system prompts and the prompt.
    """

    spec: str
    window: int
    max_tokens: int
    request_tokens: int
    fixed_tokens: int

    @property
    def limit(self) -> OutputLimit:
        """The limit Pi sends, with pinb's verdict on it (``starved``: too short)."""
        return _limit(self.window, self.request_tokens, self.max_tokens)

    @property
    def starved(self) -> bool:
        """Whether Pi's reply would be cut before it is useful (pinb's `OutputLimit` rule)."""
        return self.limit.starved

    def line(self) -> str:
        """Why Pi cannot answer, and what works, in one line."""
        tokens = self.limit.tokens
        smallest = _smallest_window(self.fixed_tokens, self.max_tokens)
        head = (
            f"Pi 1.6 would ask {self.spec} for a reply of at most {tokens:,} token"
            f"{'' if tokens == 1 else 's'} (max_completion_tokens): it keeps {PI_CONTEXT_MARGIN:,} "
            f"tokens free beside its estimate of the request (~{self.request_tokens:,}) on the "
            f"{self.window:,}-token window, whatever its compaction settings say"
        )
        if smallest <= self.window:  # the context, not the window, leaves no room
            return (
                f"{head}. The context is what has grown: a built-in cell "
                "(`%%pi --engine pinb`) compacts it with settings fitted to the window, then "
                "Pi has room again"
            )
        n_ctx = -(-smallest // 1024) * 1024
        return (
            f"{head}. Give the server a window of at least {smallest:,} tokens (e.g. "
            f"`--n_ctx {n_ctx}` for llama-cpp-python, `-c {n_ctx}` for llama-server), or run "
            "this model with the built-in engine (`%%pi --engine pinb`), which fits its "
            "limit to the window"
        )


def pi_reply_room(
    messages: Sequence[Any], prompt: str, *, spec: str, window: int, max_tokens: int
) -> PiReplyRoom:
    """What Pi will send for ``prompt`` after ``messages`` (the session's context).

    Before Pi's first cell on a file its own system prompt is not in the file yet, so
    the estimate is the lower bound of what Pi sends, and the verdict errs towards running.
    """
    sent = {"role": "user", "content": [{"type": "text", "text": prompt}]}
    everything = [*messages, sent]
    fixed = sum(_tokens(m) for m in everything if isinstance(m, dict) and m.get("role") == "system")
    return PiReplyRoom(
        spec=spec,
        window=window,
        max_tokens=max_tokens,
        request_tokens=pi_request_tokens(everything),
        fixed_tokens=fixed + _tokens(sent),
    )
