"""Compaction that works on a small window: a summary request that fits, and a plan that finds work.

Pi's planner (`pinb.core.compaction.plan.prepare_compaction`) and Pi's summary prompts stay as
they are. Around them, for the agent and ``%pi compact``:

- `FittedSummarizer` makes every summary request fit the model's window. The summary
  gets its own output limit (a quarter of the window at most); a conversation too long
  for one request is summarized in passes, each merging the next part into the summary
  so far (Pi's update prompt); one message too long for a pass is cut in its middle; and
  when even that cannot work (more than `MAX_PASSES` passes, or no room at all) the
  extractive summarizer writes it, saying so in its first line.
- `compact_to_fit` compacts on the one plan every command and view shows
  (`pinb.core.compaction.operations.plan_to_fit`: Pi's cut, the keep fitted so that beside the system
  prompt and tools the compaction ends below the threshold, a smaller keep when Pi's own
  keeps everything), with its summary request fitted.
- `mask_or_compact` follows the settings' strategy (``"mask-first"``: old tool results
  masked first, `pinb.core.compaction.masking`; a summary only when that cannot get under
  the threshold, and then no mask is written).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from ..core import Session
from ..core.compaction.masking import MaskReport, plan_masking, write_masks
from ..core.compaction.operations import compact, plan_to_fit, summary_cap
from ..core.compaction.plan import serialize_conversation
from ..core.compaction.reports import CompactionReport
from ..core.compaction.summarize import (
    SUMMARIZER_SYSTEM_PROMPT,
    ExtractiveSummarizer,
    ModelSummarizer,
    Summarizer,
    SummaryKind,
    build_prompt,
)
from ..core.context.tokens import CompactionSettings
from ..errors import NothingToCompactError, SummaryCutError
from ..llm.limits import limit_margin

__all__ = [
    "MAX_PASSES",
    "FittedSummarizer",
    "compact_to_fit",
    "fit_summarizer",
    "mask_or_compact",
]

log = logging.getLogger("pinb.agent")

#: Most summary requests one summary may take before the extractive summarizer writes it.
MAX_PASSES = 6
#: Text tokens are counted as chars/4 of the text, but a request carries it JSON-escaped
#: (newlines, quotes): a pass is filled to this share of the room only.
_FILL = 0.85


def _tokens(text: str) -> int:
    return -(-len(text) // 4)


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
    """Compact on the one plan (:func:`pinb.core.compaction.operations.plan_to_fit`), with summary
    requests that fit the window.

    The plan is the one ``%pi whatif`` shows as its "current settings" column and ``%pi
    compact`` carries out: Pi's cut, pinb's keep fitted to a small window, and, when Pi's
    plan keeps everything but the compaction was asked for or the context is over the
    threshold, a smaller ``keepRecentTokens``. The compaction entry is Pi's, with the
    ``firstKeptEntryId`` Pi's planner chose; the report says the keep it used.

    Raises
    ------
    NothingToCompactError
        Even a plan keeping only the last message summarizes nothing.
    """
    plan = plan_to_fit(
        session,
        settings,
        context_window=context_window,
        margin=limit_margin(context_window) if context_window else 0,
        reason=reason,
    )
    if plan.report is None:
        raise NothingToCompactError(plan.nothing or "Nothing to compact")
    fitted = fit_summarizer(summarizer, context_window)
    if plan.summary_tokens and isinstance(fitted, FittedSummarizer):
        fitted.max_summary_tokens = plan.summary_tokens
    if plan.used.keep_recent_tokens != plan.settings.keep_recent_tokens:
        log.info(
            "compacting keeping %d recent tokens (settings: %d): %s",
            plan.used.keep_recent_tokens,
            plan.settings.keep_recent_tokens,
            plan.keep_note,
        )
    report = compact(session, fitted, instructions, plan.used, reason=reason)
    return dataclasses.replace(report, keep_note=plan.keep_note)


def mask_or_compact(
    session: Session,
    summarizer: Summarizer | None,
    instructions: str | None = None,
    settings: CompactionSettings | None = None,
    *,
    reason: str = "manual",
    context_window: int | None = None,
    mask: bool | None = None,
) -> MaskReport | CompactionReport:
    """Compact by the settings' strategy: mask old tool results first, or summarize.

    ``mask`` overrides the strategy (``True``: ``--mask``). Masking that gets the context
    under the threshold is the whole compaction (a :class:`MaskReport`, no model call);
    when it cannot (or finds nothing to mask), no mask is written and the compaction is
    :func:`compact_to_fit`'s, with ``summarizer`` (``None``: masking only, and a
    :class:`NothingToCompactError` saying why a summary is needed).

    Raises
    ------
    NothingToCompactError
        Nothing to mask or summarize, or masking falls short and there is no summarizer.
    """
    settings = settings or CompactionSettings()
    masking = settings.strategy == "mask-first" if mask is None else mask
    short = ""
    if masking:
        margin = limit_margin(context_window) if context_window and reason != "manual" else 0
        try:
            plan = plan_masking(
                session, settings, context_window=context_window, reason=reason, margin=margin
            )
        except NothingToCompactError as exc:
            short = str(exc)
        else:
            if plan.reaches:
                return write_masks(session, plan)
            short = f"masking is not enough: it {plan.describe()[len('would ') :]}"
        if summarizer is None:
            raise NothingToCompactError(f"{short}; nothing was written")
        log.info("mask-first compaction needs a summary: %s", short)
    if summarizer is None:
        raise NothingToCompactError("a summary needs a summarizer")
    report = compact_to_fit(
        session, summarizer, instructions, settings, reason=reason, context_window=context_window
    )
    if short:
        report = dataclasses.replace(report, masking_note=short)
    return report
