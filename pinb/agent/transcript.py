"""A run as a transcript: its turns, streamed text and thinking, tool calls and notes, as a value.

Either engine's events (the built-in agent's, or the user's Pi's mapped onto them by
:mod:`pinb.agent.pi.events`) go into a :class:`Transcript`, which keeps what a run has
shown so far and shows nothing itself. Each front end formats it: the cell's live HTML
(:mod:`pinb.notebook.live`), a terminal's lines (:mod:`pinb.notebook.terminal`) and the
chat's Markdown (:mod:`pinb.chat.transcript`). What an event means is decided here, once:
which turn a text belongs to, which call a tool event names (a server without ids sends
``call_0`` in every reply), a tool's result as text (:func:`result_text`), the line a retry
and a compaction show.

Examples
--------
>>> from pinb.agent.events import ModelEvent, TurnStart, ToolEnd
>>> from pinb.agent.tool import ToolResult
>>> from pinb.llm.types import TextDelta
>>> run = Transcript()
>>> _ = run.add(TurnStart(1)), run.add(ModelEvent(TextDelta(0, "Looking.")))
>>> change = run.add(ToolEnd("c1", "ls", ToolResult.text("a.py\\nb.py")))
>>> change.kind, change.tool.state, change.tool.result
('tool-end', 'done', 'a.py\\nb.py')
>>> run.turns[0].text.value()
'Looking.'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from ..core.compaction.reports import CompactionReport
from ..llm.types import Retry, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from .events import (
    AgentEnd,
    AgentEvent,
    CompactionDone,
    ModelEvent,
    Notice,
    RetryScheduled,
    ToolEnd,
    ToolStart,
    ToolUpdate,
    TurnStart,
    retry_line,
)

__all__ = [
    "CHANGES",
    "Change",
    "Step",
    "StreamedText",
    "ToolCall",
    "Transcript",
    "Turn",
    "compaction_line",
    "result_text",
]

#: What :meth:`Transcript.add` reports an event changed (:attr:`Change.kind`).
CHANGES = (
    "turn",  # a new turn (a model request) began
    "text",  # the reply's text grew by ``piece``
    "thinking",  # its thinking grew by ``piece``
    "call",  # the model began a tool call
    "arguments",  # the call's arguments grew by ``piece`` as they stream
    "call-end",  # the call's arguments are complete
    "tool-start",  # the tool runs
    "tool-update",  # it reported a partial result
    "tool-end",  # its result came
    "retry",  # a turn is sent again: a note of the turn
    "notice",  # a note of the run
    "compaction",  # a compaction ran: a note of the run
    "end",  # the run is over
)

_CHUNK = 1024  # characters of streamed pieces joined into one chunk of a StreamedText


class StreamedText:
    """Text that arrives in pieces (a reply, its thinking, a call's arguments).

    ``str +=`` on an attribute copies the whole reply on every delta, and joining all of
    it to show its end did the same on every update: both made a long reply quadratic.
    Here a piece is appended, every 1,024 characters are joined once, and :meth:`tail`
    reads only the chunks it returns.
    """

    __slots__ = ("_chunks", "_pending", "_pending_chars", "chars")

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._pending: list[str] = []
        self._pending_chars = 0
        #: Characters so far.
        self.chars = 0

    def add(self, piece: str) -> None:
        if not piece:
            return
        self._pending.append(piece)
        self._pending_chars += len(piece)
        self.chars += len(piece)
        if self._pending_chars >= _CHUNK:
            self._chunks.append("".join(self._pending))
            self._pending.clear()
            self._pending_chars = 0

    def value(self) -> str:
        """The whole text."""
        if len(self._chunks) > 1 or self._pending:
            self._chunks = ["".join([*self._chunks, *self._pending])]
            self._pending.clear()
            self._pending_chars = 0
        return self._chunks[0] if self._chunks else ""

    def tail(self, size: int) -> str:
        """The last ``size`` characters."""
        if self.chars <= size:
            return self.value()
        parts: list[str] = []
        for part in chain(reversed(self._pending), reversed(self._chunks)):
            if len(part) >= size:
                parts.append(part[len(part) - size :])
                break
            parts.append(part)
            size -= len(part)
        return "".join(reversed(parts))

    def __bool__(self) -> bool:
        return self.chars > 0


def result_text(content: Iterable[dict[str, Any]]) -> str:
    """A tool result's content as text: its text blocks, an image as ``[image MIME]``.

    The one reading of a result every front end shows (a cell, a terminal, the chat).
    """
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts)


def compaction_line(report: CompactionReport) -> str:
    """The one line a compaction during a run shows."""
    return (
        f"compacted ({report.reason}): {len(report.summarized_ids)} entries summarized, "
        f"≈{report.estimated_before:,} → {report.tokens_after:,} tokens"
    )


@dataclass(eq=False)
class ToolCall:
    """One tool call: what the model asked, whether it ran, what it returned.

    Attributes
    ----------
    call_id, name:
        As the model sent them.
    turn:
        The index of its turn in :attr:`Transcript.turns`.
    arguments_text:
        The arguments' JSON as it streamed.
    arguments:
        The arguments once complete (those the tool ran with, once it started).
    result:
        The result's text (:func:`result_text`), the partial one while it runs; ``None``
        until one came.
    running:
        It started and has not ended.
    began:
        It ran or reported a result: the reply that asked for it is over.
    done:
        Its end came; it stays as it is from now on.
    version:
        Counts its changes, so a front end redraws it only when it changed.
    """

    call_id: str
    name: str
    turn: int
    arguments_text: StreamedText = field(default_factory=StreamedText)
    arguments: dict[str, Any] | None = None
    result: str | None = None
    is_error: bool = False
    running: bool = False
    began: bool = False
    done: bool = False
    version: int = 0

    @property
    def state(self) -> str:
        """``asked``, ``running``, ``done`` or ``failed``."""
        if self.done:
            return "failed" if self.is_error else "done"
        return "running" if self.running else "asked"


@dataclass(eq=False)
class Turn:
    """One model request of the run: its thinking, text, tool calls and notes (retries).

    ``text_starts`` holds where each stretch of the text begins that followed something
    else of the turn (a call, a note): see :class:`Step`.
    """

    index: int
    thinking: StreamedText = field(default_factory=StreamedText)
    text: StreamedText = field(default_factory=StreamedText)
    tools: list[ToolCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Tool calls that began (see :attr:`ToolCall.began`).
    began: int = 0
    text_starts: list[int] = field(default_factory=list)

    def text_part(self, number: int) -> str:
        """Stretch ``number`` of the text (see :attr:`text_starts`)."""
        starts = self.text_starts
        end = starts[number + 1] if number + 1 < len(starts) else self.text.chars
        return self.text.value()[starts[number] : end]


@dataclass(frozen=True, slots=True)
class Step:
    """Where something came in the run, in the order things came.

    ``kind`` is ``text`` (stretch ``index`` of turn ``turn``'s text), ``tool`` (call
    ``index`` of the turn), ``note`` (note ``index`` of the turn) or ``run-note`` (note
    ``index`` of the run, ``turn`` -1). Thinking is left out: it belongs to its turn.
    """

    kind: str
    turn: int
    index: int


@dataclass(frozen=True, slots=True)
class Change:
    """What one event changed: its :data:`CHANGES` kind, the turn and call it concerns,
    and ``piece``, the text it added (a delta, a note's line)."""

    kind: str
    turn: Turn | None = None
    tool: ToolCall | None = None
    piece: str = ""


class Transcript:
    """A run so far, fed its events (:meth:`add`).

    Attributes
    ----------
    turns:
        The run's turns, a turn begun by each :class:`~pinb.agent.events.TurnStart` (and
        one for what comes before any).
    notes:
        The run's own lines: notices and compactions, and what the owner adds (:meth:`note`).
    steps:
        Text stretches, calls and notes in the order they came.
    end:
        The run's end, once it came.
    running_tools:
        Calls started and not yet ended.
    thinking:
        The model's last streamed piece was thinking.
    """

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.notes: list[str] = []
        self.steps: list[Step] = []
        self.end: AgentEnd | None = None
        self.running_tools = 0
        self.thinking = False
        self._calls: dict[str, ToolCall] = {}  # the latest call with each id

    def _turn(self) -> Turn:
        if not self.turns:
            self.turns.append(Turn(0))
        return self.turns[-1]

    def _tool(self, call_id: str, name: str = "", *, new: bool = False) -> ToolCall:
        """The call ``call_id``, or a new one in the current turn.

        An earlier turn's call is not the one meant by a new call (``new``) or after it
        ended: servers that send no ids get ``call_0`` in every reply.
        """
        turn = self._turn()
        tool = self._calls.get(call_id)
        if tool is not None and (tool.turn == turn.index or not (new or tool.done)):
            if name and not tool.name:
                tool.name = name
            return tool
        tool = ToolCall(call_id, name, turn.index)
        self.steps.append(Step("tool", turn.index, len(turn.tools)))
        turn.tools.append(tool)
        self._calls[call_id] = tool
        return tool

    def _began(self, tool: ToolCall) -> ToolCall:
        """``tool``, counted as begun in its turn (once), its change noted."""
        if not tool.began:
            tool.began = True
            self.turns[tool.turn].began += 1
        tool.version += 1
        return tool

    def _text(self, piece: str) -> Turn:
        turn = self._turn()
        if piece:
            last = self.steps[-1] if self.steps else None
            if last is None or last.kind != "text" or last.turn != turn.index:
                self.steps.append(Step("text", turn.index, len(turn.text_starts)))
                turn.text_starts.append(turn.text.chars)
            turn.text.add(piece)
        return turn

    def _retry(self, line: str) -> Change:
        turn = self._turn()
        self.steps.append(Step("note", turn.index, len(turn.notes)))
        turn.notes.append(line)
        return Change("retry", turn, piece=line)

    def note(self, line: str, kind: str = "notice") -> Change:
        """Add a line of the run's own (a notice; what the owner says after the run)."""
        self.steps.append(Step("run-note", -1, len(self.notes)))
        self.notes.append(line)
        return Change(kind, piece=line)

    def add(self, event: AgentEvent) -> Change | None:
        """Take one event in; what it changed, or ``None`` (an entry saved, an estimate)."""
        if isinstance(event, TurnStart):
            self.thinking = False
            turn = Turn(len(self.turns))
            self.turns.append(turn)
            return Change("turn", turn)
        if isinstance(event, ModelEvent):
            return self._model(event.event)
        if isinstance(event, RetryScheduled):
            return self._retry(
                retry_line(event.delay, event.attempt, event.max_retries, event.error)
            )
        if isinstance(event, Notice):
            return self.note(event.text)
        if isinstance(event, ToolStart):
            tool = self._began(self._tool(event.call_id, event.name))
            tool.arguments = event.arguments
            if not tool.running:
                tool.running = True
                self.running_tools += 1
            return Change("tool-start", self.turns[tool.turn], tool)
        if isinstance(event, ToolUpdate):  # the user's Pi streams a tool's partial result
            tool = self._began(self._tool(event.call_id, event.name))
            tool.result = result_text(event.partial.content)
            return Change("tool-update", self.turns[tool.turn], tool)
        if isinstance(event, ToolEnd):
            tool = self._began(self._tool(event.call_id, event.name))
            if tool.running:
                tool.running = False
                self.running_tools -= 1
            tool.result = result_text(event.result.content)
            tool.is_error = event.result.is_error
            tool.done = True
            return Change("tool-end", self.turns[tool.turn], tool)
        if isinstance(event, CompactionDone):
            return self.note(compaction_line(event.report), "compaction")
        if isinstance(event, AgentEnd):
            self.end = event
            self.thinking = False
            return Change("end")
        return None

    def _model(self, inner: Any) -> Change | None:
        """A streaming event of the model's (``pinb.llm`` deltas, a retry)."""
        self.thinking = isinstance(inner, ThinkingDelta)
        if isinstance(inner, TextDelta):
            return Change("text", self._text(inner.text), piece=inner.text)
        if isinstance(inner, ThinkingDelta):
            turn = self._turn()
            turn.thinking.add(inner.thinking)
            return Change("thinking", turn, piece=inner.thinking)
        if isinstance(inner, ToolCallStart):
            tool = self._tool(inner.id, inner.name, new=True)
            return Change("call", self.turns[tool.turn], tool)
        if isinstance(inner, ToolCallDelta):
            tool = self._tool(inner.id)
            tool.arguments_text.add(inner.delta)
            tool.version += 1
            return Change("arguments", self.turns[tool.turn], tool, inner.delta)
        if isinstance(inner, ToolCallEnd):
            tool = self._tool(inner.id, inner.name)
            tool.arguments = inner.arguments
            tool.version += 1
            return Change("call-end", self.turns[tool.turn], tool)
        if isinstance(inner, Retry):
            return self._retry(
                retry_line(inner.delay, inner.attempt, inner.max_retries, inner.error)
            )
        return None
