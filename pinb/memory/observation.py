"""Opt-in auto-observation: a summarizer proposes notes from a conversation, kept as observations."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..core.compaction.plan import serialize_conversation
from ..core.context.build import convert_to_llm
from .records import SAVE_KINDS, MemoryRecord, normal_text
from .store import MemoryStore

__all__ = [
    "OBSERVE_INSTRUCTIONS",
    "MemoryObserver",
    "ObservationResult",
    "ProposedNote",
    "Summarizer",
    "observe",
    "parse_notes",
]

log = logging.getLogger("pinb.memory")

#: What the summarizer is asked for; ``{max_notes}`` is filled in.
OBSERVE_INSTRUCTIONS = """\
Extract durable knowledge from this conversation that will still help in future sessions of \
the same project: facts about the project, the user's preferences and constraints, decisions \
with their reasons, and architecture. Skip transient progress, next steps, greetings, and \
anything secret (keys, passwords, personal data).
Answer with at most {max_notes} bullets, one note each, in the form
- [kind] note text
where kind is one of fact, preference, decision, architecture, note. Answer "- none" if \
nothing qualifies."""

#: Longest note kept from a summary (characters); longer ones are cut with an ellipsis.
MAX_NOTE_CHARS = 500

Status = Literal["stored", "nothing", "skipped", "failed"]


@runtime_checkable
class Summarizer(Protocol):
    """The summarizer seam shared with compaction (an LLM or the offline extractive one)."""

    def summarize(
        self,
        serialized_conversation: str,
        *,
        previous_summary: str | None,
        instructions: str | None,
        max_tokens: int,
    ) -> str: ...


@dataclass(frozen=True)
class ProposedNote:
    """A note read from a summary: the kind it would be promoted to, and its text."""

    kind: str
    text: str


@dataclass
class ObservationResult:
    """What one observation pass did; ``status`` says it without raising.

    ``stored`` (new observation records), ``nothing`` (no new note: none proposed, or
    all already known), ``skipped`` (disabled or empty conversation) or ``failed``
    (``error`` says why; the conversation goes on).
    """

    status: Status
    trigger: str
    records: list[MemoryRecord] = field(default_factory=list)
    proposed: list[ProposedNote] = field(default_factory=list)
    duplicates: int = 0
    error: str | None = None


# Pi's structured summary headings (§7.5) and the kind their bullets suggest;
# ``None`` marks sections about this session only, which are not remembered.
_SECTIONS: tuple[tuple[str, str | None], ...] = (
    ("constraint", "preference"),
    ("preference", "preference"),
    ("decision", "decision"),
    ("architecture", "architecture"),
    ("critical context", "fact"),
    ("fact", "fact"),
    ("goal", None),
    ("progress", None),
    ("done", None),
    ("in progress", None),
    ("blocked", None),
    ("next step", None),
    ("file", None),
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+(.*)$")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s")
_KIND_TAG = re.compile(r"^\[(\w+)\]\s*(.*)$")
_KIND_COLON = re.compile(r"^(\w+)\s*:\s+(.*)$")
_NOTHING = {"none", "(none)", "nothing", "n/a", "no notes", "none."}


def _section_kind(heading: str) -> str | None:
    lowered = heading.lower()
    for key, kind in _SECTIONS:
        if key in lowered:
            return kind
    return "note"


def parse_notes(summary: str, *, max_notes: int = 8) -> list[ProposedNote]:
    """Read proposed notes from a summarizer's answer.

    Bullets (``-``, ``*``, ``1.``) are notes; a ``[kind]`` or ``kind:`` prefix names the
    kind. Under Pi's summary headings the section gives the kind (``Key Decisions`` →
    decision, ``Constraints & Preferences`` → preference, ``Critical Context`` → fact)
    and session-only sections (goal, progress, next steps) are skipped, so the offline
    extractive summary works too. Checkbox items, ``(none)`` and repeats are dropped.

    Examples
    --------
    >>> parse_notes("- [decision] Use SQLite for memory\\n- none")
    [ProposedNote(kind='decision', text='Use SQLite for memory')]
    """
    notes: list[ProposedNote] = []
    seen: set[str] = set()
    section: str | None = "note"
    for line in summary.splitlines():
        heading = _HEADING.match(line)
        if heading:
            section = _section_kind(heading.group(1))
            continue
        bullet = _BULLET.match(line)
        if not bullet or section is None:
            continue
        text = bullet.group(1).strip()
        if _CHECKBOX.match(text):
            continue
        kind = section
        for pattern in (_KIND_TAG, _KIND_COLON):
            named = pattern.match(text)
            if named and named.group(1).lower() in SAVE_KINDS:
                kind, text = named.group(1).lower(), named.group(2).strip()
                break
        text = " ".join(text.replace("**", "").split())
        if len(text) < 3 or text.lower() in _NOTHING:
            continue
        if len(text) > MAX_NOTE_CHARS:
            text = text[: MAX_NOTE_CHARS - 1].rstrip() + "…"
        key = text.casefold()
        if key in seen:
            continue
        seen.add(key)
        notes.append(ProposedNote(kind, text))
        if len(notes) >= max_notes:
            break
    return notes


def _summarize(summarizer: Any, text: str, instructions: str, max_tokens: int) -> str:
    method = getattr(summarizer, "summarize", None)
    call = method if callable(method) else summarizer
    if not callable(call):
        raise TypeError("the summarizer has no summarize() method and is not callable")
    answer = call(text, previous_summary=None, instructions=instructions, max_tokens=max_tokens)
    if not isinstance(answer, str):
        raise TypeError(f"the summarizer returned {type(answer).__name__}, not text")
    return answer


def observe(
    messages: Sequence[dict[str, Any]] | str,
    summarizer: Summarizer | Any,
    *,
    store: MemoryStore | None = None,
    project: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    session_path: str | os.PathLike[str] | None = None,
    entry_id: str | None = None,
    trigger: str = "end-of-run",
    max_notes: int = 8,
    max_tokens: int = 1024,
) -> ObservationResult:
    """Ask ``summarizer`` for durable notes and store the new ones as ``observation`` records.

    Best-effort: any failure (summarizer error, bad answer, memory database problem) is
    logged and returned as ``status="failed"``; nothing is raised into the conversation.

    Parameters
    ----------
    messages:
        Pi agent messages (any roles; converted as for the model) or already serialized
        conversation text.
    summarizer:
        An object with ``summarize(text, *, previous_summary, instructions, max_tokens)``
        or a callable with that signature.
    store:
        Where observations go; default the standard database.
    project, cwd:
        The project id, or the working directory it is derived from (default: current).
    session_path, entry_id:
        Recorded as the observations' source.
    trigger:
        ``"end-of-run"`` or ``"pre-compaction"``; kept as a tag.
    max_notes, max_tokens:
        Caps passed on to the summarizer and applied to its answer.

    Returns
    -------
    ObservationResult
    """
    result = ObservationResult("skipped", trigger)
    try:
        if isinstance(messages, str):
            text = messages
        else:
            text = serialize_conversation(convert_to_llm(list(messages)))
        if not text.strip():
            return result
        instructions = OBSERVE_INSTRUCTIONS.format(max_notes=max_notes)
        answer = _summarize(summarizer, text, instructions, max_tokens)
        result.proposed = parse_notes(answer, max_notes=max_notes)
        result.status = "nothing"
        if not result.proposed:
            return result
        store = store if store is not None else MemoryStore()
        pid = project if project is not None else store.ensure_project(cwd)
        known = {normal_text(r.text) for r in store.records(pid)}
        for note in result.proposed:
            if normal_text(note.text) in known:
                result.duplicates += 1
                continue
            known.add(normal_text(note.text))
            record = store.save(
                note.text,
                project=pid,
                kind="observation",
                proposed_kind=note.kind,
                tags=[trigger],
                source_session=session_path,
                source_entry=entry_id if session_path else None,
            )
            result.records.append(record)
        if result.records:
            result.status = "stored"
    except Exception as exc:  # best-effort by design: never break the conversation
        log.warning("memory auto-observation (%s) failed: %s", trigger, exc)
        log.debug("auto-observation traceback", exc_info=True)
        result.status = "failed"
        result.error = f"{type(exc).__name__}: {exc}"
    return result


class MemoryObserver:
    """The agent's hook for auto-observation; off unless the user turned it on.

    Call :meth:`before_compaction` with the messages a compaction is about to summarize
    (so what it drops is looked at first) and :meth:`end_of_run` with a run's messages.
    Both return an :class:`ObservationResult` and never raise.

    Parameters
    ----------
    summarizer:
        See :func:`observe`.
    store:
        Default the standard database.
    cwd:
        The project's working directory (default: the current directory).
    enabled:
        Whether the hooks do anything.
    """

    def __init__(
        self,
        summarizer: Summarizer | Any,
        *,
        store: MemoryStore | None = None,
        cwd: str | os.PathLike[str] | None = None,
        enabled: bool = True,
        max_notes: int = 8,
        max_tokens: int = 1024,
    ) -> None:
        self.summarizer = summarizer
        self.store = store
        self.cwd = cwd
        self.enabled = enabled
        self.max_notes = max_notes
        self.max_tokens = max_tokens
        self.last: ObservationResult | None = None

    def _run(self, messages: Any, session: Any, trigger: str) -> ObservationResult:
        if not self.enabled:
            self.last = ObservationResult("skipped", trigger)
            return self.last
        path = getattr(session, "path", None)
        leaf = getattr(session, "leaf_id", None)
        cwd = self.cwd if self.cwd is not None else (getattr(session, "cwd", None) or None)
        self.last = observe(
            messages,
            self.summarizer,
            store=self.store,
            cwd=cwd,
            session_path=path,
            entry_id=leaf if isinstance(leaf, str) else None,
            trigger=trigger,
            max_notes=self.max_notes,
            max_tokens=self.max_tokens,
        )
        return self.last

    def before_compaction(self, messages: Any, *, session: Any = None) -> ObservationResult:
        """Observe the messages a compaction is about to summarize away."""
        return self._run(messages, session, "pre-compaction")

    def end_of_run(self, messages: Any, *, session: Any = None) -> ObservationResult:
        """Observe the messages of a run that just ended."""
        return self._run(messages, session, "end-of-run")
