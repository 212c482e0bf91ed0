"""Masking before summarizing: old tool results replaced by a one-line placeholder, through Pi's own edits.

Pi always pays a model call to compact. Most of a long, tool-heavy context is old tool
output (files read, command output), and JetBrains found ("The Complexity Trap", arXiv
2508.21433) that hiding old observations matches an LLM summary at about half the cost.
So pinb can mask first: every old tool result, oldest first, gets a ``context_edit``
replacement (Pi 1.6.0's own entry, which Pi builds the same context from) whose content
is one line naming the tool, its arguments, the size, and how to get the original back
(the file keeps it: the ``recall`` tool, ``%pi goto``, the entry id). Masking stops as soon
as the context is under the threshold; only when masking every old result cannot get
there is a summary written instead (a normal compaction, and then no mask is written).

**Which results are old.** Never those of the current turn (from the last user message
on), and never those in the most recent ``keepRecentTokens`` of the context (chars/4,
counted from the end as Pi's cut counts): what a compaction would keep verbatim, masking
keeps verbatim too. A result an edit already changes (a mask, a user's edit, a hidden
failed attempt) is left as it is.

**The figure after masking.** Pi 1.6's projected estimate (§6.4) ignores usage older
than the latest edit, so after masking the threshold check and the footer both read
chars/4 of the context as sent (:func:`pinb.core.context.tokens.estimate_projected_tokens`);
the plan's ``tokens_after`` is that figure, computed before anything is written. That
figure alone would let one small mask "fix" a context whose server counts more than
chars/4 (the reported usage is dropped, not the tokens), so masking stops only when the
figure that triggered it, less what the masks take off (``expected_after``), is under
the threshold too: the next reply's usage, which the trigger reads again, lands there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ...display import mimebundle_of
from ...errors import NothingToCompactError
from ..context.build import SessionContext, current_system_message
from ..context.tokens import (
    STRATEGIES,
    CompactionSettings,
    estimate_projected_tokens,
    estimate_tokens,
)
from ..format.entries import Entry
from ..format.target import Pi

if TYPE_CHECKING:
    from ..session import Session

__all__ = [
    "MASK_PREFIX",
    "STRATEGIES",
    "MaskReport",
    "MaskedResult",
    "MaskingEvent",
    "is_mask_text",
    "mask_placeholder",
    "masked_results",
    "masking_events",
    "plan_masking",
    "write_masks",
]

#: How every placeholder pinb writes begins (how views and ``recall`` know a mask).
MASK_PREFIX: Final = "[masked by pinb: "
#: Longest rendering of a call's arguments in a placeholder.
_ARGUMENTS_CHARS: Final = 80


def _short_arguments(arguments: Any) -> str:
    if arguments is None:
        return ""
    try:
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    except (TypeError, ValueError):
        text = str(arguments)
    text = " ".join(text.split())  # one line, whatever the arguments hold
    if len(text) > _ARGUMENTS_CHARS:
        text = text[: _ARGUMENTS_CHARS - 1] + "…"
    return text


def _text_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return 0
    return sum(
        len(b["text"]) for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def mask_placeholder(
    tool: str, arguments: Any, chars: int, tokens: int, entry_id: str, *, error: bool = False
) -> str:
    """The one line that stands for a masked tool result.

    Examples
    --------
    >>> mask_placeholder("bash", {"command": "pytest -q"}, 12345, 3087, "1a2b3c4d")[:60]
    '[masked by pinb: bash {"command":"pytest -q"} returned 12,345 '
    """
    args = _short_arguments(arguments)
    call = f"{tool} {args}" if args else tool
    what = "an error of" if error else ""
    size = f"{what + ' ' if what else ''}{chars:,} characters (≈{tokens:,} tokens)"
    return (
        f"{MASK_PREFIX}{call} returned {size}. The session file keeps the original as entry "
        f'{entry_id}: recall("{entry_id}") reads it back, or %pi goto {entry_id}.]'
    )


def is_mask_text(content: Any) -> bool:
    """Whether a message content is a placeholder pinb wrote (one text block, or a string)."""
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        content = content[0].get("text")
    return isinstance(content, str) and content.startswith(MASK_PREFIX)


@dataclass(frozen=True)
class MaskedResult:
    """One tool result a mask replaces (planned, or read back from its edit).

    Attributes
    ----------
    entry_id / line:
        The tool result's entry and its 1-based line in the file.
    tool / arguments:
        The call it answers (the arguments as the placeholder shows them, shortened).
    chars:
        Characters of its text.
    tokens_before / tokens_after:
        chars/4 of the message as it was and as masked.
    edit_id:
        The ``context_edit`` entry (``None`` for a plan).
    """

    entry_id: str
    line: int | None
    tool: str
    arguments: str
    chars: int
    tokens_before: int
    tokens_after: int
    edit_id: str | None = None

    @property
    def saved(self) -> int:
        """Tokens the mask takes off the context (chars/4)."""
        return self.tokens_before - self.tokens_after


@dataclass
class MaskReport:
    """What masking did (or would do) at a leaf.

    Attributes
    ----------
    masked:
        The results masked, oldest first.
    tokens_before / tokens_after:
        The context by the figure the threshold check and the footer read (Pi 1.6's
        projected estimate): before, and after the masks (chars/4 of what is sent).
    threshold / window:
        The threshold and window masked for (``None``: no window known).
    expected_after:
        ``tokens_before`` less what the masks take off (chars/4): the figure the next
        reply's usage is expected near, by the measure that triggered masking.
    reaches:
        Whether both figures end at or under the threshold (always ``True`` without one).
    candidates:
        Old results that could be masked (``len(masked)`` of them were).
    protected_from:
        The first entry masking never touches (the current turn and the kept budget).
    written:
        Whether the edits were appended (``False``: a plan).
    reason:
        ``"manual"`` or what triggered it (``"threshold"``, ``"overflow"``).
    summary_calls_avoided:
        1 when the masks took the place of a summary (written, and under the threshold).
    note:
        How the stop was decided, in words.
    """

    masked: list[MaskedResult] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    expected_after: int = 0
    threshold: int | None = None
    window: int | None = None
    reaches: bool = True
    candidates: int = 0
    protected_from: str | None = None
    written: bool = False
    reason: str = "manual"
    note: str = ""

    @property
    def tokens_saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def summary_calls_avoided(self) -> int:
        return 1 if self.written and self.masked and self.reaches else 0

    @property
    def edit_ids(self) -> list[str]:
        return [m.edit_id for m in self.masked if m.edit_id]

    def describe(self) -> str:
        """One line: ``masked 12 old tool results (≈45,120 → 9,870 tokens); no summary``."""
        count = len(self.masked)
        noun = "tool result" if count == 1 else "tool results"
        done = "masked" if self.written else "would mask"
        text = (
            f"{done} {count:,} old {noun} (≈{self.tokens_before:,} → {self.tokens_after:,} tokens"
        )
        if self.expected_after > self.tokens_after:
            text += f"; {self.expected_after:,} by the reported usage less what was masked"
        if self.threshold is not None:
            text += f", threshold {self.threshold:,}"
        text += ")"
        if self.reaches:
            text += "; no summary needed"
        else:
            text += "; not enough: a summary is needed"
        return text

    def to_dict(self) -> dict[str, Any]:
        """``pinb compact --mask --json``'s shape."""
        return {
            "strategy": "mask-first",
            "written": self.written,
            "reason": self.reason,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "expectedAfter": self.expected_after,
            "threshold": self.threshold,
            "window": self.window,
            "reaches": self.reaches,
            "candidates": self.candidates,
            "protectedFrom": self.protected_from,
            "summaryCallsAvoided": self.summary_calls_avoided,
            "note": self.note,
            "masked": [
                {
                    "entryId": m.entry_id,
                    "line": m.line,
                    "tool": m.tool,
                    "arguments": m.arguments,
                    "chars": m.chars,
                    "tokensBefore": m.tokens_before,
                    "tokensAfter": m.tokens_after,
                    "editId": m.edit_id,
                }
                for m in self.masked
            ],
        }

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return mimebundle_of(self, include, exclude)


def _calls(context: SessionContext) -> dict[str, tuple[str, Any]]:
    """Each tool call id on the context's path: (tool name, arguments), from the originals."""
    found: dict[str, tuple[str, Any]] = {}
    for entry in context.path:
        message = entry.message if entry.type == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():  # odd files: any JSON
            if isinstance(block, dict) and block.get("type") == "toolCall":
                found[str(block.get("id"))] = (
                    str(block.get("name") or "tool"),
                    block.get("arguments"),
                )
    return found


def _protected_start(context: SessionContext, keep: int) -> int:
    """Index into ``context.entries`` of the first entry masking leaves alone."""
    entries = context.entries
    last_user = next(
        (
            i
            for i in range(len(entries) - 1, -1, -1)
            if any(isinstance(m, dict) and m.get("role") == "user" for m in entries[i].messages)
        ),
        len(entries),
    )
    held = 0
    start = len(entries)
    for i in range(len(entries) - 1, -1, -1):
        if held >= keep:
            break
        held += sum(estimate_tokens(m, pi=context.pi) for m in entries[i].messages)
        start = i
    return min(start, last_user)


def _pure_estimate(context: SessionContext) -> int:
    """chars/4 of what is sent: the system prompt once, every other message (§6.4's fallback)."""
    system = current_system_message(context.messages)
    tokens = estimate_tokens(system, pi=context.pi) if system is not None else 0
    for message in context.messages:
        if not (isinstance(message, dict) and message.get("role") == "system"):
            tokens += estimate_tokens(message, pi=context.pi)
    return tokens


def plan_masking(
    session: Session,
    settings: CompactionSettings | None = None,
    *,
    context_window: int | None = None,
    reason: str = "manual",
    margin: int = 0,
) -> MaskReport:
    """Which old tool results masking replaces at the session's leaf, and the context after.

    Oldest first, until the context (Pi 1.6's projected estimate) is at or under the
    threshold less ``margin``. A manual mask (``reason="manual"``) of a context already
    under the threshold masks every old result, as a manual compaction summarizes all it
    may. Nothing is written (:func:`write_masks` writes a plan).

    Raises
    ------
    NothingToCompactError
        A Pi v0.58.3 session (it has no context edits), or no old tool result to mask.
    """
    if session.pi < Pi.V1_6:
        raise NothingToCompactError(
            "Masking needs Pi 1.x's context edits; this session is read as Pi v0.58.3"
        )
    settings = settings or CompactionSettings()
    context = session.build_context()
    before = estimate_projected_tokens(context).tokens
    threshold = int(settings.threshold(context_window)) if context_window else None
    calls = _calls(context)
    entries = context.entries
    protected = _protected_start(context, settings.keep_recent_tokens)
    report = MaskReport(
        tokens_before=before,
        tokens_after=before,
        expected_after=before,
        threshold=threshold,
        window=context_window or None,
        reaches=threshold is None or before <= threshold,
        protected_from=str(entries[protected].entry.id) if protected < len(entries) else None,
        reason=reason,
    )
    candidates: list[tuple[Entry, dict[str, Any]]] = []
    for projected in entries[:protected]:
        entry = projected.entry
        if entry.type != "message" or entry.role != "toolResult" or projected.edit is not None:
            continue
        message = projected.messages[0] if projected.messages else None
        if isinstance(message, dict) and not is_mask_text(message.get("content")):
            candidates.append((entry, message))
    report.candidates = len(candidates)
    if not candidates:
        raise NothingToCompactError(
            "Nothing to mask: no tool result older than the current turn and the "
            f"{settings.keep_recent_tokens:,} most recent tokens (keepRecentTokens)"
        )
    target = None if threshold is None else threshold - margin
    every = target is None or (reason == "manual" and before <= target)
    if not every and target is not None and before <= target:
        raise NothingToCompactError(
            f"Nothing to mask: the context (≈{before:,} tokens) is under the threshold ({target:,})"
        )
    # After the first edit the figure is chars/4 of what is sent, whatever usage said.
    after = _pure_estimate(context)
    saved = 0
    for entry, message in candidates:
        if not every and target is not None and max(after, before - saved) <= target:
            break
        tool, arguments = calls.get(str(message.get("toolCallId")), (None, None))
        name = tool or str(message.get("toolName") or "tool")
        old = estimate_tokens(message, pi=session.pi)
        chars = _text_chars(message.get("content"))
        text = mask_placeholder(
            name, arguments, chars, old, str(entry.id), error=message.get("isError") is True
        )
        new = estimate_tokens(
            {**message, "content": [{"type": "text", "text": text}]}, pi=session.pi
        )
        if new >= old:
            continue  # a short result: its placeholder would be no smaller
        after -= old - new
        saved += old - new
        report.masked.append(
            MaskedResult(
                str(entry.id), entry.line, name, _short_arguments(arguments), chars, old, new
            )
        )
    if not report.masked:
        raise NothingToCompactError(
            "Nothing to mask: every old tool result is already shorter than its placeholder"
        )
    report.tokens_after = after
    report.expected_after = before - saved
    report.reaches = target is None or max(after, before - saved) <= target
    if every:
        report.note = "every old tool result" + (
            " (the context was already under the threshold)" if target is not None else ""
        )
    elif report.reaches:
        report.note = "oldest first, until the context is under the threshold"
    else:
        report.note = "every old tool result, and the context is still over the threshold"
    return report


def write_masks(session: Session, report: MaskReport) -> MaskReport:
    """Append the ``context_edit`` of each planned mask (Pi's writer checks apply).

    The placeholder text is made again from the entry, so a plan's figures are the file's.
    """
    context = session.build_context()
    calls = _calls(context)
    done: list[MaskedResult] = []
    for planned in report.masked:
        entry = session[planned.entry_id]
        message = entry.message or {}
        tool, arguments = calls.get(str(message.get("toolCallId")), (planned.tool, None))
        text = mask_placeholder(
            tool,
            arguments,
            planned.chars,
            planned.tokens_before,
            planned.entry_id,
            error=message.get("isError") is True,
        )
        edit = session.append_context_edit(planned.entry_id, [{"type": "text", "text": text}])
        done.append(
            MaskedResult(
                planned.entry_id,
                planned.line,
                planned.tool,
                planned.arguments,
                planned.chars,
                planned.tokens_before,
                planned.tokens_after,
                str(edit.id),
            )
        )
    report.masked = done
    report.written = True
    report.tokens_after = estimate_projected_tokens(session.build_context()).tokens
    report.expected_after = report.tokens_before - sum(m.saved for m in done)
    if report.threshold is not None:
        report.reaches = max(report.tokens_after, report.expected_after) <= report.threshold
    return report


def masked_results(
    context: SessionContext, entries: Iterable[Entry] | None = None
) -> list[MaskedResult]:
    """The masks in effect on a context (read back from the edits), in path order.

    ``entries``: only these tool results (default: every one the context holds).
    """
    wanted = None if entries is None else {id(e) for e in entries}
    calls = _calls(context)
    found: list[MaskedResult] = []
    for projected in context.entries:
        edit = projected.edit
        entry = projected.entry
        if edit is None or (wanted is not None and id(entry) not in wanted):
            continue
        if not projected.messages or not is_mask_text(projected.messages[0].get("content")):
            continue
        original = entry.message or {}
        tool, arguments = calls.get(str(original.get("toolCallId")), (None, None))
        found.append(
            MaskedResult(
                str(entry.id),
                entry.line,
                tool or str(original.get("toolName") or "tool"),
                _short_arguments(arguments),
                _text_chars(original.get("content")),
                estimate_tokens(original, pi=context.pi),
                estimate_tokens(projected.messages[0], pi=context.pi),
                str(edit.id),
            )
        )
    return found


@dataclass(frozen=True)
class MaskingEvent:
    """One masking read back from a file: a run of consecutive mask edits (one ``--mask``,
    or one automatic masking in place of a compaction).

    Attributes
    ----------
    first_edit_id / last_edit_id:
        The run's first and last ``context_edit`` entries.
    results:
        Tool results it masked.
    tokens_saved:
        chars/4 of those results less their placeholders.
    """

    first_edit_id: str
    last_edit_id: str
    results: int
    tokens_saved: int

    @property
    def summary_calls_avoided(self) -> int:
        """Each masking stands where a compaction's summary request would have been."""
        return 1


def masking_events(session: Session) -> list[MaskingEvent]:
    """Every masking in ``session``'s file (every branch), in file order.

    A run is mask edits each the child of the one before; a mask's saving is measured
    against the result it names (chars/4, one measure for every view).
    """
    events: list[MaskingEvent] = []
    run: list[tuple[Entry, int]] = []

    def close() -> None:
        if run:
            events.append(
                MaskingEvent(
                    str(run[0][0].id), str(run[-1][0].id), len(run), sum(t for _, t in run)
                )
            )
            run.clear()

    for entry in session.entries:
        replacement = entry.raw.get("replacement") if entry.type == "context_edit" else None
        content = replacement.get("content") if isinstance(replacement, dict) else None
        if not is_mask_text(content):
            close()
            continue
        target = session.get(str(entry.raw.get("targetId")))
        original = target.message if target is not None else None
        saved = 0
        if isinstance(original, dict):
            masked = {**original, "content": content}
            saved = estimate_tokens(original, pi=session.pi) - estimate_tokens(
                masked, pi=session.pi
            )
        if run and entry.parent_id != run[-1][0].id:
            close()
        run.append((entry, max(0, saved)))
    close()
    return events
