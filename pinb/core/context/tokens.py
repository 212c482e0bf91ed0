"""Token accounting as Pi does it: a chars/4 estimate, usage from the provider, the compact rule (§6)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from ...errors import UsageError
from ..format.entries import id_key
from ..format.target import Pi, PiLike
from ..js.jsontext import value_text
from ..js.wire import MISSING, dumps, js_string, js_to_number, js_truthy, utf16_len
from .build import current_system_message

if TYPE_CHECKING:
    from .build import SessionContext

__all__ = [
    "IMAGE_CHARS",
    "KEPT_FACTS_BUDGET",
    "STRATEGIES",
    "CompactionSettings",
    "ContextEstimate",
    "context_tokens_of_usage",
    "estimate_context_tokens",
    "estimate_projected_tokens",
    "estimate_tokens",
    "estimate_trigger_tokens",
    "last_usage_index",
    "message_chars",
    "should_compact",
    "tokens_by_role",
    "usage_positive",
]

#: The compaction strategies (:attr:`CompactionSettings.strategy`).
STRATEGIES: Final = ("pi", "mask-first")
#: Characters an image counts for in an estimate (1200 tokens).
IMAGE_CHARS: Final = 4800
#: The most a summary pinb writes grows by its kept-facts section (chars/4 tokens): the
#: bar issue 41 set (at most 2,500 more summary tokens for 95% of the must-keep facts).
KEPT_FACTS_BUDGET: Final = 2500


def _text_len(value: object) -> int:
    """JavaScript's ``value.length``: UTF-16 units of a string, items of an array.

    Any other value has no length, and Pi's sum becomes NaN (JSON ``null``); pinb counts
    it as 0, a best effort that keeps every estimate a number.
    """
    if isinstance(value, str):
        return utf16_len(value)
    return len(value) if isinstance(value, list) else 0


def _content_chars(content: object, *, images: bool) -> int:
    if isinstance(content, str):
        return utf16_len(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += _text_len(block.get("text"))
            elif kind == "image" and images:
                chars += IMAGE_CHARS
    return chars


def _system_chars(message: dict[str, Any]) -> int:
    chars = _content_chars(message.get("content"), images=True)
    sections = message.get("sections")
    if isinstance(sections, dict):
        chars += sum(_text_len(value) for value in sections.values() if js_truthy(value))
    tools = message.get("toolsAdded", MISSING)
    if js_truthy(tools):
        chars += utf16_len(dumps(tools))
    return chars


def estimate_tokens(message: Any, *, pi: PiLike | None = None) -> int:
    """``estimateTokens``: ``ceil(chars / 4)`` with chars in UTF-16 code units (§6.1).

    Images count 4800 chars in tool results and custom messages, and in Pi 1.x in user
    messages too (v0.58.3 counts nothing for them). Pi 1.x also estimates ``system``
    messages: content, section texts and the JSON of the tools they add.
    """
    chars = message_chars(message, pi=pi)
    return 0 if chars is None else math.ceil(chars / 4)


def message_chars(message: Any, *, pi: PiLike | None = None) -> int | None:
    """The characters :func:`estimate_tokens` counts in ``message`` (``None``: a message
    Pi does not estimate). Pi's request code divides the same count by 3.5, not 4
    (:mod:`pinb.agent.pi.limits`)."""
    if not isinstance(message, dict):
        return None
    newer = Pi.resolve(pi) >= Pi.V1_6
    role = message.get("role")
    chars = 0
    if role == "user":
        chars = _content_chars(message.get("content"), images=newer)
    elif role == "assistant":
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += _text_len(block.get("text"))
            elif kind == "thinking":
                chars += _text_len(block.get("thinking"))
            elif kind == "toolCall":
                arguments = block.get("arguments", MISSING)
                chars += _text_len(block.get("name"))
                if arguments is not MISSING:
                    chars += utf16_len(dumps(arguments))
    elif role in ("toolResult", "custom"):
        chars = _content_chars(message.get("content"), images=True)
    elif role == "bashExecution":
        chars = _text_len(message.get("command")) + _text_len(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        chars = _text_len(message.get("summary"))
    elif role == "system" and newer:
        chars = _system_chars(message)
    else:
        return None
    return chars


def tokens_by_role(messages: Sequence[Any], *, pi: PiLike | None = None) -> dict[str, int]:
    """Estimated tokens (chars/4) per message role, in first-seen order."""
    target = Pi.resolve(pi)
    totals: dict[str, int] = {}
    for message in messages:
        role = value_text(message.get("role")) if isinstance(message, dict) else "?"
        totals[role] = totals.get(role, 0) + estimate_tokens(message, pi=target)
    return totals


def _number(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if float(value).is_integer() else value  # type: ignore[return-value]


def context_tokens_of_usage(usage: Any) -> int:
    """``calculateContextTokens``: ``totalTokens`` if non-zero, else input+output+cache.

    Numbers are returned as the provider reported them; a missing or non-numeric part
    counts as 0 (JavaScript would make the sum NaN; pinb's writers always write all four).
    """
    if not isinstance(usage, dict):
        return 0
    total = _number(usage.get("totalTokens"))
    if total:
        return total
    return (
        _number(usage.get("input"))
        + _number(usage.get("output"))
        + _number(usage.get("cacheRead"))
        + _number(usage.get("cacheWrite"))
    )


def _js_plus(left: Any, right: Any) -> Any:
    """JavaScript's ``left + right`` on JSON values: text if either side is not a number."""
    if isinstance(left, str | list | dict) or isinstance(right, str | list | dict):
        return js_string(left) + js_string(right)
    return js_to_number(left) + js_to_number(right)


def usage_positive(usage: Any) -> bool:
    """``calculateContextTokens(usage) > 0`` evaluated as JavaScript does, odd values included.

    ``totalTokens || input + output + cacheRead + cacheWrite``: a string there is text,
    and text compares with 0 as the number it spells (NaN for most: never positive).
    """
    if not isinstance(usage, dict):
        return False
    total = usage.get("totalTokens", MISSING)
    if not js_truthy(total):
        total = usage.get("input", MISSING)
        for key in ("output", "cacheRead", "cacheWrite"):
            total = _js_plus(total, usage.get(key, MISSING))
    return js_to_number(total) > 0


def last_usage_index(messages: Sequence[Any], *, pi: PiLike | None = None) -> int | None:
    """Index of the last assistant message whose usage counts.

    Aborted and failed replies never count; Pi 1.x also skips usage that totals 0.
    """
    skip_zero = Pi.resolve(pi) >= Pi.V1_6
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        usage = message.get("usage")
        if not js_truthy(usage) or message.get("stopReason") in ("aborted", "error"):
            continue
        if skip_zero and not usage_positive(usage):
            continue
        return i
    return None


@dataclass(frozen=True)
class ContextEstimate:
    """``estimateContextTokens`` result: provider usage plus an estimate of what follows it.

    ``tokens`` is what Pi compares with the window. When ``last_usage_index`` is ``None``
    it is a pure chars/4 estimate; otherwise the reported usage of that message plus
    chars/4 for the messages after it.
    """

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None

    @property
    def measure(self) -> str:
        """How ``tokens`` was made: ``"usage+estimate"`` or ``"estimate"`` (chars/4)."""
        return "estimate" if self.last_usage_index is None else "usage+estimate"

    def to_wire(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        }


def estimate_context_tokens(
    messages: Sequence[Any], *, pi: PiLike | None = None
) -> ContextEstimate:
    """``estimateContextTokens``: last valid assistant usage + estimates of later messages."""
    target = Pi.resolve(pi)
    index = last_usage_index(messages, pi=target)
    if index is None:
        total = sum(estimate_tokens(m, pi=target) for m in messages)
        return ContextEstimate(total, 0, total, None)
    usage_tokens = context_tokens_of_usage(messages[index].get("usage"))
    trailing = sum(estimate_tokens(m, pi=target) for m in messages[index + 1 :])
    return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)


def estimate_projected_tokens(context: SessionContext) -> ContextEstimate:
    """Pi 1.x's ``estimateProjectedContextTokens`` for a built context (§6.4).

    Usage reported before the latest ``context_edit`` or ``compaction`` on the path no
    longer describes the context, so it is not trusted: then the estimate is chars/4 of
    the current system prompt (all system messages replayed, counted once) plus every
    other message. For v0.58.3 this is :func:`estimate_context_tokens`.
    """
    estimate = estimate_context_tokens(context.messages, pi=context.pi)
    if context.pi < Pi.V1_6:
        return estimate
    if estimate.last_usage_index is not None:
        source = context.sources[estimate.last_usage_index]
        source_key = id_key(source.raw.get("id", MISSING))
        usage_position = -1
        if js_truthy(source.raw.get("id")):
            usage_position = next(
                (i for i, e in enumerate(context.path) if id_key(e.raw.get("id")) == source_key),
                -1,
            )
        invalidated = -1
        for i in range(len(context.path) - 1, -1, -1):
            if context.path[i].raw.get("type") in ("context_edit", "compaction"):
                invalidated = i
                break
        if usage_position > invalidated:
            return estimate
    system = current_system_message(context.messages)
    tokens = estimate_tokens(system, pi=context.pi) if system is not None else 0
    for message in context.messages:
        if not (isinstance(message, dict) and message.get("role") == "system"):
            tokens += estimate_tokens(message, pi=context.pi)
    return ContextEstimate(tokens, 0, tokens, None)


def estimate_trigger_tokens(context: SessionContext) -> ContextEstimate:
    """The size both compaction triggers compare with the threshold: pinb's
    ``compaction_due`` and Pi 1.6's check after a run (``estimateContextTokens`` of its
    messages), so a footer can show the figure the next check will use.

    Without any usage to go by (a server that reports none) that is every message's
    chars/4, each ``system`` message counted: after an engine switch both engines' system
    prompts, as both are sent. With usage it is the usage plus what follows it; usage from
    before the latest context edit or compaction is not trusted
    (:func:`estimate_projected_tokens`, which a branch with context edits always uses).
    """
    estimate = estimate_context_tokens(context.messages, pi=context.pi)
    if context.pi < Pi.V1_6:
        return estimate
    if estimate.last_usage_index is None and not context.branch_edits:
        return estimate
    return estimate_projected_tokens(context)


@dataclass(frozen=True)
class CompactionSettings:
    """Pi's ``compaction`` settings with its defaults (§6.5), plus what Pi users ask for.

    Attributes
    ----------
    enabled:
        Automatic compaction on or off (manual compaction is always possible).
    reserve_tokens:
        Head-room kept free for the reply; also sizes the summary budget.
    keep_recent_tokens:
        Roughly how much of the recent conversation is kept verbatim.
    threshold_percent:
        Compact when the context exceeds this percentage of the window, instead of
        ``window - reserve_tokens`` (``None``: Pi's rule).
    summary_model:
        ``provider/model`` to write summaries with (a cheaper model); ``None``: the
        conversation's own model.
    model_overrides:
        Per-model settings, keyed ``provider/model``, each a dict of these attribute names
        (snake_case or Pi's camelCase); see :meth:`for_model`.
    strategy:
        pinb's: ``"pi"`` (a summary, as Pi compacts) or ``"mask-first"`` (old tool results
        masked first, a summary only when that cannot get under the threshold:
        :mod:`pinb.core.compaction.masking`). Read from ``"pinb": {"compaction":
        {"strategy": ...}}`` in Pi's settings files, which Pi ignores.
    keep_facts:
        pinb's own: every summary pinb writes gets a cited "kept facts" section for the
        must-keep facts it lost (:mod:`pinb.core.compaction.lost`); ``False`` writes Pi's
        exact text. Read from ``"pinb": {"compaction": {"keepFacts": false}}``.
    keep_facts_tokens:
        pinb's own: the most that section may add to a summary (chars/4 tokens;
        ``keepFactsTokens``).
    """

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000
    threshold_percent: float | None = None
    summary_model: str | None = None
    model_overrides: dict[str, dict[str, Any]] = field(default_factory=dict, hash=False)
    strategy: str = "pi"
    keep_facts: bool = True
    keep_facts_tokens: int = KEPT_FACTS_BUDGET

    @classmethod
    def from_wire(cls, data: dict[str, Any] | None) -> CompactionSettings:
        """From the ``compaction`` object of Pi's ``settings.json`` (camelCase keys)."""
        return cls()._with(data or {})

    def _with(self, data: dict[str, Any]) -> CompactionSettings:
        names = {
            "enabled": "enabled",
            "reserveTokens": "reserve_tokens",
            "keepRecentTokens": "keep_recent_tokens",
            "thresholdPercent": "threshold_percent",
            "summaryModel": "summary_model",
            "modelOverrides": "model_overrides",  # Pi 1.x's name
            "models": "model_overrides",
            "strategy": "strategy",
            "keepFacts": "keep_facts",
            "keepFactsTokens": "keep_facts_tokens",
        }
        changes: dict[str, Any] = {}
        for key, value in data.items():
            name = names.get(key, key)
            if name == "model_overrides" and isinstance(value, dict):
                # User and project settings merge before the model is looked up, as in Pi.
                value = {**changes.get(name, self.model_overrides), **value}
            if name == "strategy" and value not in STRATEGIES:
                raise UsageError(
                    f"compaction strategy {value!r} is not one pinb knows: set "
                    f"pinb.compaction.strategy to {' or '.join(map(repr, STRATEGIES))}"
                )
            if name in self.__dataclass_fields__:
                changes[name] = value
        return replace(self, **changes) if changes else self

    def for_model(self, provider: str | None, model_id: str | None) -> CompactionSettings:
        """The settings in force for one model (its override applied, if any)."""
        override = self.model_overrides.get(f"{provider}/{model_id}")
        return self._with(override) if override else self

    def fit_window(self, context_window: int | None) -> CompactionSettings:
        """Shrink reserve and kept tokens that would not fit a small window.

        Pi's defaults (16k reserve, 20k kept) assume a large window; with an 8k local model
        they would compact on every turn yet keep everything. Each is capped at a quarter
        of the window when it exceeds half of it.
        """
        if not context_window:
            return self
        changes: dict[str, Any] = {}
        if self.reserve_tokens * 2 > context_window:
            changes["reserve_tokens"] = context_window // 4
        if self.keep_recent_tokens * 2 > context_window:
            changes["keep_recent_tokens"] = context_window // 4
        return replace(self, **changes) if changes else self

    def threshold(self, context_window: int) -> float:
        """Context size above which automatic compaction starts."""
        if self.threshold_percent is not None:
            return context_window * self.threshold_percent / 100
        return context_window - self.reserve_tokens


def should_compact(
    context_tokens: int, context_window: int, settings: CompactionSettings | None = None
) -> bool:
    """``shouldCompact``: ``enabled and tokens > window - reserveTokens`` (strict).

    With ``threshold_percent`` set, the threshold is that share of the window instead.
    """
    settings = settings or CompactionSettings()
    return settings.enabled and context_tokens > settings.threshold(context_window)
