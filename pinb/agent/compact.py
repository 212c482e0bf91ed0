"""Compaction that works on a small window: a summary request that fits, and a plan that finds work.

Pi's planner (`pinb.core.compaction.prepare_compaction`) and Pi's summary prompts stay as
they are. Around them, for the agent and ``%pi compact``:

- `FittedSummarizer` makes every summary request fit the model's window. The summary
  gets its own output limit (a quarter of the window at most); a conversation too long
  for one request is summarized in passes, each merging the next part into the summary
  so far (Pi's update prompt); one message too long for a pass is cut in its middle; and
  when even that cannot work (more than `MAX_PASSES` passes, or no room at all) the
  extractive summarizer writes it, saying so in its first line.
- `fit_budget` sizes the summary and the kept messages so that, beside the system prompt
  and tools (which no compaction shrinks), they end below the threshold on a small window.
- `compact_to_fit` compacts as Pi would; when Pi's plan keeps everything but the context
  is over the window, or the user asked, it plans again with Pi's planner and a smaller
  ``keepRecentTokens``: first the size of the last user turn (so everything before that
  turn is summarized), then halving down to 1 token (Pi's rules then split the turn
  where they allow).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from ..core import Session
from ..core.compaction import serialize_conversation
from ..core.operations import compact
from ..core.reports import CompactionReport
from ..core.summarize import (
    SUMMARIZER_SYSTEM_PROMPT,
    ExtractiveSummarizer,
    ModelSummarizer,
    Summarizer,
    SummaryKind,
    build_prompt,
)
from ..core.tokens import CompactionSettings, estimate_tokens
from ..errors import NothingToCompactError, SummaryCutError
from ..llm.limits import limit_margin

__all__ = ["MAX_PASSES", "FittedSummarizer", "compact_to_fit", "fit_budget", "fit_summarizer"]

log = logging.getLogger("pinb.agent")

#: Most summary requests one summary may take before the extractive summarizer writes it.
MAX_PASSES = 6
#: Text tokens are counted as chars/4 of the text, but a request carries it JSON-escaped
#: (newlines, quotes): a pass is filled to this share of the room only.
_FILL = 0.85


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


def summary_cap(window: int) -> int:
    """The longest summary asked for on ``window``: a quarter of it (at least 64 tokens)."""
    return max(64, window // 4)


def _cut_middle(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    note = f"\n[… {len(text) - chars:,} characters left out to fit the context window …]\n"
    head = max(0, (chars - len(note)) // 2)
    return text[:head] + note + text[len(text) - head :]


class FittedSummarizer:
    """A `ModelSummarizer` whose every request fits ``window`` (see the module docstring).

    Parameters
    ----------
    inner:
        The summarizer that writes (its model is asked).
    window:
        The model's context window in tokens.
    max_passes:
        Requests one summary may take.
    """

    def __init__(
        self,
        inner: ModelSummarizer,
        window: int,
        *,
        max_passes: int = MAX_PASSES,
        max_summary_tokens: int | None = None,
    ):
        self.inner = inner
        self.window = window
        self.max_passes = max_passes
        #: The longest summary asked for (below a quarter of the window); see `compact_to_fit`.
        self.max_summary_tokens = max_summary_tokens
        self.name = inner.name
        #: How each summary was written: ``"whole"``, ``"cut"``, ``"passes:N"``, ``"extractive"``.
        self.modes: list[str] = []

    def _limit(self, requested: int | None) -> int:
        model_max = int(getattr(getattr(self.inner.model, "info", None), "max_tokens", 0) or 0)
        cap = summary_cap(self.window)
        if self.max_summary_tokens:
            cap = min(cap, max(64, self.max_summary_tokens))
        return min(x for x in (requested, model_max or None, cap) if x)

    def _room(
        self,
        kind: SummaryKind,
        previous: str | None,
        instructions: str | None,
        replace: bool,
        limit: int,
    ) -> int:
        """Tokens left for the conversation in one request."""
        frame = build_prompt(
            "",
            kind=kind,
            previous_summary=previous,
            instructions=instructions,
            replace_instructions=replace,
        )
        used = _tokens(SUMMARIZER_SYSTEM_PROMPT) + _tokens(frame) + limit
        return int((self.window - used - limit_margin(self.window) - 64) * _FILL)

    def summarize(
        self,
        conversation: str,
        *,
        previous_summary: str | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
        kind: SummaryKind = "history",
        replace_instructions: bool = False,
        messages: Sequence[Any] | None = None,
    ) -> str:
        # A summary is never longer than what it replaces (the span and the summary before
        # it): else a compaction of a short span would leave the context larger.
        replaced = _tokens(conversation) + _tokens(previous_summary or "")
        limit = min(self._limit(max_tokens), max(64, replaced))
        options: dict[str, Any] = {
            "instructions": instructions,
            "max_tokens": limit,
            "kind": kind,
            "replace_instructions": replace_instructions,
        }
        try:
            return self._summarize(conversation, previous_summary, messages, options, limit=limit)
        except SummaryCutError:
            # A small model often writes on until its limit; Pi writes nothing from a cut
            # summary, so the extractive summarizer writes this one, and says why.
            log.info("the model's summary ran past its %d-token limit", limit)
            why = f"the model's summary ran past its {limit:,}-token limit"
            return self._extractive(conversation, previous_summary, messages, options, why=why)

    def _summarize(
        self,
        conversation: str,
        previous_summary: str | None,
        messages: Sequence[Any] | None,
        options: dict[str, Any],
        *,
        limit: int,
    ) -> str:
        kind: SummaryKind = options["kind"]
        instructions = options["instructions"]
        replace_instructions = options["replace_instructions"]
        room = self._room(kind, previous_summary, instructions, replace_instructions, limit)
        if _tokens(conversation) <= room:
            self.modes.append("whole")
            return self.inner.summarize(
                conversation, previous_summary=previous_summary, messages=messages, **options
            )
        if kind != "history" or not messages:
            # Turn prefixes and branch summaries have no update prompt: cut to fit.
            if room < 256:
                return self._extractive(conversation, previous_summary, messages, options)
            self.modes.append("cut")
            return self.inner.summarize(
                _cut_middle(conversation, room * 4),
                previous_summary=previous_summary,
                messages=messages,
                **options,
            )
        # Passes: each merges the next part into the summary so far (at most `limit` long).
        pass_room = self._room(kind, "x" * (limit * 4), instructions, replace_instructions, limit)
        parts = self._parts(messages, pass_room) if pass_room >= 256 else None
        if parts is None or len(parts) > self.max_passes:
            return self._extractive(conversation, previous_summary, messages, options)
        summary = previous_summary
        for part in parts:
            summary = self.inner.summarize(part, previous_summary=summary, **options)
        self.modes.append(f"passes:{len(parts)}")
        log.info("summary written in %d passes to fit a %d-token window", len(parts), self.window)
        return summary or ""

    def _parts(self, messages: Sequence[Any], room: int) -> list[str]:
        """The serialized conversation in consecutive parts of at most ``room`` tokens."""
        parts: list[str] = []
        current: list[str] = []
        size = 0
        for message in messages:
            text = _cut_middle(serialize_conversation([message]), room * 4)
            tokens = _tokens(text) + 1
            if current and size + tokens > room:
                parts.append("\n\n".join(current))
                current, size = [], 0
            current.append(text)
            size += tokens
        if current:
            parts.append("\n\n".join(current))
        return parts

    def _extractive(
        self,
        conversation: str,
        previous: str | None,
        messages: Sequence[Any] | None,
        options: dict[str, Any],
        *,
        why: str | None = None,
    ) -> str:
        self.modes.append("extractive")
        why = why or (
            f"the conversation does not fit {self.window:,}-token window requests to the model"
        )
        note = f"(Written by pinb's extractive summarizer: {why}.)\n\n"
        text = ExtractiveSummarizer().summarize(
            conversation, previous_summary=previous, messages=messages, **options
        )
        return note + text


def fit_summarizer(summarizer: Summarizer, window: int | None) -> Summarizer:
    """``summarizer`` made to fit ``window`` when it asks a model (else as it is)."""
    if isinstance(summarizer, ModelSummarizer) and window:
        own = getattr(getattr(summarizer.model, "info", None), "context_window", None)
        return FittedSummarizer(summarizer, min(window, own or window))
    return summarizer


def compact_to_fit(
    session: Session,
    summarizer: Summarizer,
    instructions: str | None = None,
    settings: CompactionSettings | None = None,
    *,
    reason: str = "manual",
    context_window: int | None = None,
) -> CompactionReport:
    """`pinb.core.operations.compact`, with requests that fit and a plan that finds work.

    When Pi's plan keeps everything, the plan is made again with ``keepRecentTokens``
    halved, down to 1, if the compaction was asked for (``reason="manual"``) or the
    context is larger than the window's threshold. The compaction entry is Pi's, with
    the ``firstKeptEntryId`` Pi's planner chose for those settings.

    Raises
    ------
    NothingToCompactError
        Even a plan keeping only the last message summarizes nothing.
    """
    settings = settings or CompactionSettings()
    settings, summary_cap = fit_budget(session, settings, context_window)
    fitted = fit_summarizer(summarizer, context_window)
    if summary_cap and isinstance(fitted, FittedSummarizer):
        fitted.max_summary_tokens = summary_cap
    try:
        return compact(session, fitted, instructions, settings, reason=reason)
    except NothingToCompactError as exc:
        if reason != "manual" and not _over_threshold(session, settings, context_window):
            raise
        first = exc  # says why with the user's own keepRecentTokens
    # First the keep that cuts right before the last user turn, then ever smaller ones.
    keeps = [_last_turn_tokens(session)]
    keep = settings.keep_recent_tokens
    while keep > 1:
        keep = max(1, keep // 2)
        keeps.append(keep)
    for keep in dict.fromkeys(k for k in keeps if 0 < k < settings.keep_recent_tokens):
        smaller = dataclasses.replace(settings, keep_recent_tokens=keep)
        try:
            report = compact(session, fitted, instructions, smaller, reason=reason)
        except NothingToCompactError:
            continue
        log.info(
            "compacted keeping %d recent tokens (settings: %d)", keep, settings.keep_recent_tokens
        )
        return report
    raise first


def fit_budget(
    session: Session, settings: CompactionSettings, context_window: int | None
) -> tuple[CompactionSettings, int | None]:
    """Settings and a summary length with which a compaction ends below the threshold.

    What stays after a compaction is the system prompt and tools (which no compaction
    shrinks), the summary and the kept messages. On a small window the first can take
    half of it: a summary of a quarter of the window beside a quarter kept would end
    above the threshold, and the next prompt would compact again. When they do not fit,
    the room left below the threshold is shared, a third for the summary and the rest
    kept. Large windows are left to Pi's settings (``None``: no cap of pinb's).
    """
    if not context_window:
        return settings, None
    context = session.current_context()
    system = context.system_message()
    fixed = estimate_tokens(system, pi=context.pi) if system is not None else 0
    room = int(settings.threshold(context_window)) - fixed - limit_margin(context_window)
    if room <= 0 or settings.keep_recent_tokens + summary_cap(context_window) <= room:
        return settings, None
    summary = max(64, room // 3)
    keep = max(1, room - summary)
    log.info(
        "compaction budget: %d tokens below the threshold beside %d of system prompt and "
        "tools; summary up to %d, keeping %d",
        room,
        fixed,
        summary,
        keep,
    )
    if keep < settings.keep_recent_tokens:
        settings = dataclasses.replace(settings, keep_recent_tokens=keep)
    return settings, summary


def _last_turn_tokens(session: Session) -> int:
    """Tokens from the last user message to the end (a keep that cuts just before it)."""
    context = session.current_context()
    total = 0
    for message in reversed(context.messages):
        total += estimate_tokens(message, pi=context.pi)
        if isinstance(message, dict) and message.get("role") == "user":
            return total
    return 0


def _over_threshold(
    session: Session, settings: CompactionSettings, context_window: int | None
) -> bool:
    if not context_window:
        return False
    context = session.current_context()
    tokens = sum(estimate_tokens(m, pi=context.pi) for m in context.messages)
    return tokens > settings.threshold(context_window)
