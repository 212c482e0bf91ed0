"""A run in a notebook cell as it streams (its transcript drawn as HTML), and the reply a cell returns.

What the run showed is :class:`pinb.agent.transcript.Transcript`; here it is drawn:
:class:`RunTranscript` turns it into text and sanitizer-safe HTML, :class:`LiveRun` keeps
a cell's display handles up to date as the events come, and :class:`AssistantReply` is
the cell's value, the answer with its footer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

from ..agent.events import AgentEnd, AgentEvent
from ..agent.transcript import Change, StreamedText, ToolCall, Transcript, Turn
from ..core.context.accounting import ContextUsage
from ..errors import PinbError
from ..render.html import div, escape, mimebundle, pre, style, wrap
from ..render.markdown import markdown_to_html

__all__ = [
    "SEGMENT_CHARS",
    "AssistantReply",
    "LiveRun",
    "RunFailedError",
    "RunTranscript",
]

_RESULT_PREVIEW = 3000
#: Unfinished tool calls a live display shows; the others are counted in one line.
LIVE_PENDING = 8
#: The run's own notes (notices, compactions) a live display shows: the last ones.
LIVE_NOTES = 8
#: Tool names the line counting the calls a live display leaves out lists.
LIVE_NAMES = 8
#: Turns one live display spans before its finished start is published for good (turns
#: that draw nothing would otherwise be walked on every update).
LIVE_TURNS = 64
#: A live display whose HTML passes this many characters publishes its finished part
#: for good and continues in a new display (see `LiveRun`).
SEGMENT_CHARS = 12_000
#: While a reply streams, a longer text shows only its end (the whole of it afterwards):
#: rendering a 10 MB reply on every update would make the display fall behind.
STREAM_PREVIEW = 20_000
#: Changes shown at once, not at the next throttled update.
_URGENT = frozenset({"retry", "notice", "compaction", "tool-start", "tool-end"})


class _Names:
    """The names of one turn's tool calls from ``start`` on, counted, and kept up to date
    as calls come and ``start`` moves, so counting the calls a live display leaves out
    costs no walk over them."""

    __slots__ = ("counted", "counts", "start")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.counted: list[str] = []  # the name each call had when it was counted
        self.start = 0

    def since(self, tools: list[ToolCall], start: int) -> dict[str, int]:
        counts, counted = self.counts, self.counted
        while len(counted) < len(tools):
            counted.append(tools[len(counted)].name)
            if len(counted) > self.start:
                counts[counted[-1]] = counts.get(counted[-1], 0) + 1
        while self.start < start:
            name = counted[self.start]
            counts[name] -= 1
            if not counts[name]:
                del counts[name]
            self.start += 1
        while self.start > start:
            self.start -= 1
            name = counted[self.start]
            counts[name] = counts.get(name, 0) + 1
        return counts


def _result_preview(text: str) -> str:
    return (
        text
        if len(text) <= _RESULT_PREVIEW
        else text[:_RESULT_PREVIEW] + f"\n… ({len(text) - _RESULT_PREVIEW} more characters)"
    )


_Key = tuple[str, int, int]
_Piece = tuple[_Key, Any]


@dataclass
class _Cursor:
    """Where the part of a run not yet published for good begins: turn ``turn`` (its
    thinking and text unless marked, its tool calls from ``tools``, its notes from
    ``notes``) and the turns after it, then the run's notes from ``run_notes``."""

    turn: int = 0
    thinking: bool = False
    text: bool = False
    tools: int = 0
    notes: int = 0
    run_notes: int = 0

    def move_to(self, turn: int) -> None:
        """Go on at the start of a later turn (the ones between have nothing left)."""
        if turn > self.turn:
            self.turn, self.thinking, self.text, self.tools, self.notes = turn, False, False, 0, 0

    def past(self, key: _Key) -> None:
        """Go on after a piece published for good."""
        kind, i, j = key
        if kind == "run-note":
            self.run_notes = j + 1
            return
        self.move_to(i)
        if kind == "thinking":
            self.thinking = True
        elif kind == "text":
            self.text = True
        elif kind == "tool":
            self.tools = j + 1
        else:
            self.notes = j + 1


@dataclass
class _Budget:
    """The characters of HTML a live update has drawn, against what it may draw."""

    limit: int
    chars: int = 0


class RunTranscript:
    """A run as the cell shows it: its :class:`~pinb.agent.transcript.Transcript` (turns
    with thinking, text and tool calls, and notes) drawn as text and HTML.

    Parameters
    ----------
    run:
        The transcript to draw; a new one by default, fed by :meth:`add`.
    """

    def __init__(self, run: Transcript | None = None) -> None:
        self.run = run if run is not None else Transcript()
        self.hide_final_text = False
        #: True until the run ends: long texts render as a preview of their end.
        self.streaming = True
        # What is drawn again only when it changed: each call's (version, text, html), each
        # turn's Markdown of its text and escaped thinking (and the length drawn at), the
        # names of each turn's calls from a start on.
        self._tools: dict[ToolCall, tuple[int, str, str]] = {}
        self._text_html: dict[int, tuple[int, str]] = {}
        self._thinking_html: dict[int, tuple[int, str]] = {}
        self._names: dict[int, _Names] = {}

    @property
    def turns(self) -> list[Turn]:
        return self.run.turns

    @property
    def notes(self) -> list[str]:
        return self.run.notes

    @property
    def end(self) -> AgentEnd | None:
        return self.run.end

    def add(self, event: AgentEvent) -> Change | None:
        """Take one agent event into the transcript; what it changed."""
        change = self.run.add(event)
        if change is not None and change.kind == "end":
            self.streaming = False
        return change

    # -- rendering ------------------------------------------------------------------------

    def _final_turn_index(self) -> int:
        return len(self.turns) - 1 if self.hide_final_text and self.turns else -1

    def _reply_over(self, index: int) -> bool:
        """Whether turn ``index``'s thinking and text are final: a later turn began, or
        its tool calls run."""
        return index < len(self.turns) - 1 or self.turns[index].began > 0

    def _preview(self, text: StreamedText, index: int) -> str | None:
        """The end of a long text still streaming, or None to show it whole."""
        if self.streaming and text.chars > STREAM_PREVIEW and not self._reply_over(index):
            return text.tail(STREAM_PREVIEW)
        return None

    def pieces(self, at: _Cursor | None = None, budget: _Budget | None = None) -> Iterator[_Piece]:
        """What the run shows, in order, from ``at`` (all by default): thinking, text, tool
        calls and notes of each turn, then the run's own notes. Keys never change.

        With ``budget`` (a live update's), a turn's tool calls after its first
        :data:`LIVE_PENDING` unfinished ones are one ``waiting`` line, and so are those
        from a finished one on once the budget is drawn, if an unfinished one comes before
        (the user's Pi may finish later calls first), and the run's notes before its last
        :data:`LIVE_NOTES`.
        """
        at = at or _Cursor()
        final = self._final_turn_index()
        for i in range(at.turn, len(self.turns)):
            turn, first = self.turns[i], i == at.turn
            if turn.thinking and not (first and at.thinking):
                yield ("thinking", i, 0), turn
            if turn.text and i != final and not (first and at.text):
                yield ("text", i, 0), turn
            tools = turn.tools
            unfinished = 0
            for j in range(at.tools if first else 0, len(tools)):
                if budget is not None:
                    if tools[j].done:  # cannot be published for good while one before runs
                        cut = unfinished > 0 and budget.chars > budget.limit
                    else:
                        unfinished += 1
                        cut = unfinished > LIVE_PENDING
                    if cut:
                        names = self._names.setdefault(i, _Names()).since(tools, j)
                        yield ("waiting", i, j), _more_calls(len(tools) - j, names)
                        break
                yield ("tool", i, j), tools[j]
            for j in range(at.notes if first else 0, len(turn.notes)):
                yield ("note", i, j), turn.notes[j]
        start = at.run_notes
        if budget is not None and len(self.notes) - start > LIVE_NOTES:
            left_out = len(self.notes) - start - LIVE_NOTES
            yield ("waiting", -1, start), f"… {left_out} earlier notes"
            start += left_out
        for j in range(start, len(self.notes)):
            yield ("run-note", -1, j), self.notes[j]

    def complete(self, key: _Key, item: Any) -> bool:
        """Whether a piece will show the same from now on (so it can be published for good)."""
        kind, index, _ = key
        if kind == "tool":
            # a call of an earlier turn that has not ended never will (its reply failed)
            return bool(item.done) or index < len(self.turns) - 1
        if kind in ("thinking", "text"):
            # the last turn's answer is never final here (it becomes the cell's value)
            return self._reply_over(index)
        return kind != "waiting"

    def _render(self, key: _Key, item: Any) -> tuple[str, str]:
        """One piece as (text, html)."""
        kind, i, _ = key
        if kind == "thinking":
            thought = self._preview(item.thinking, i)
            head = div(escape(f"thinking ({item.thinking.chars:,} chars)"), "muted")
            body = self._thinking(item) if thought is None else pre(thought)
            return f"(thinking: {item.thinking.chars} chars)", head + body
        if kind == "text":
            tail = self._preview(item.text, i)
            if tail is None:
                return item.text.value(), self._markdown(item)
            note = f"… the last {STREAM_PREVIEW:,} of {item.text.chars:,} characters so far"
            return (
                f"… ({item.text.chars:,} characters so far)\n{tail}",
                div(escape(note), "muted") + pre(tail),
            )
        if kind == "tool":
            return self._tool(item)
        return f"· {item}", div(escape(item), "muted")

    def _tool(self, tool: ToolCall) -> tuple[str, str]:
        """A tool call's (text, html), drawn again only when it changed."""
        cached = self._tools.get(tool)
        if cached is None or cached[0] != tool.version:
            cached = self._tools[tool] = (tool.version, _tool_text(tool), _tool_html(tool))
        return cached[1], cached[2]

    def _markdown(self, turn: Turn) -> str:
        """The turn's text as HTML (pinb's Markdown policy), drawn again when it grew."""
        cached = self._text_html.get(turn.index)
        if cached is None or cached[0] != turn.text.chars:
            cached = self._text_html[turn.index] = (
                turn.text.chars,
                markdown_to_html(turn.text.value()),
            )
        return cached[1]

    def _thinking(self, turn: Turn) -> str:
        cached = self._thinking_html.get(turn.index)
        if cached is None or cached[0] != turn.thinking.chars:
            cached = self._thinking_html[turn.index] = (
                turn.thinking.chars,
                pre(turn.thinking.value()),
            )
        return cached[1]

    def draw(self, pieces: Iterable[_Piece], budget: _Budget | None = None) -> tuple[str, str]:
        """(text, html) of ``pieces``, each turn's in one block; ``budget`` counts the HTML."""
        lines: list[str] = []
        parts: list[str] = []
        body: list[str] = []
        turn = None

        def close_turn() -> None:
            if body:
                parts.append(f'<div class="pinb-turn" style="margin:4px 0">{"".join(body)}</div>')
                body.clear()

        for key, item in pieces:
            text, html = self._render(key, item)
            lines.append(text)
            if budget is not None:
                budget.chars += len(html)
            if key[1] < 0:  # the run's notes
                close_turn()
                parts.append(html)
                continue
            if key[1] != turn:
                close_turn()
                turn = key[1]
            body.append(html)
        close_turn()
        return "\n".join(lines), wrap("".join(parts), "pinb-run")

    def render(self, at: _Cursor | None = None, limit: int | None = None) -> tuple[str, str]:
        """(text, html) of the pieces from ``at`` (all by default).

        With ``limit``, a live update: what it draws stays near ``limit`` characters of
        HTML, however long the run (see :meth:`pieces`).
        """
        budget = None if limit is None else _Budget(limit)
        return self.draw(self.pieces(at, budget), budget)

    def text(self) -> str:
        return self.render()[0]

    def html(self) -> str:
        """The run as HTML that reads the same untrusted and after nbconvert's sanitizer:
        inline styles and safe tags only (no ``<details>``, ``<style>`` or ``<br>``)."""
        return self.render()[1]

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        text, html = self.render()
        return mimebundle(text, html=html, include=include, exclude=exclude)


def _more_calls(count: int, names: dict[str, int]) -> str:
    listed = [f"{name} ×{n}" for name, n in islice(names.items(), LIVE_NAMES)]
    if len(names) > LIVE_NAMES:
        listed.append("…")
    return f"… {count} more tool calls ({', '.join(listed)})"


def _tool_arguments(tool: ToolCall, indent: int | None) -> str:
    if tool.arguments is not None:
        return json.dumps(tool.arguments, ensure_ascii=False, indent=indent)
    return tool.arguments_text.tail(_RESULT_PREVIEW)


def _tool_text(tool: ToolCall) -> str:
    line = f"→ {tool.name}({_tool_arguments(tool, None)})"
    if tool.result is None:
        return line
    mark = "✗" if tool.is_error else "←"
    return line + f"\n{mark} " + _result_preview(tool.result).replace("\n", "\n  ")


def _tool_html(tool: ToolCall) -> str:
    state = " (running…)" if tool.running else (" — error" if tool.is_error else "")
    head = f"<code>{escape(tool.name)}</code>" + (
        f"<span{style('error' if tool.is_error else 'muted')}>{escape(state)}</span>"
    )
    result = pre(_result_preview(tool.result)) if tool.result is not None else ""
    edge = "#cf222e" if tool.is_error else "#6a9fd4"
    return (
        f'<div class="pinb-tool" style="border-left:3px solid {edge};'
        f'padding-left:8px;margin:4px 0">{head}{pre(_tool_arguments(tool, 1))}{result}</div>'
    )


class _Segment:
    """What one display of a run shows, drawn when it was published."""

    __slots__ = ("_html", "_text")

    def __init__(self, text: str, html: str) -> None:
        self._text = text
        self._html = html

    def text(self) -> str:
        return self._text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self._text, html=self._html, include=include, exclude=exclude)


class LiveRun:
    """Feeds agent events into a :class:`RunTranscript` shown through display handles.

    ``display`` is IPython's ``display`` function (injected so tests need no frontend).
    Updates are throttled to ``interval`` seconds of ``clock`` (injected so a test can
    have every event shown); :meth:`finish` shows the final state. ``run`` is the
    transcript the events go into (a new one by default).

    A display shows one segment of the run. Once a segment's HTML passes
    ``segment_chars``, the pieces at its start that will not change any more (finished tool
    calls, a reply followed by its tool calls, notes) are published in it for good and the
    next update opens a new display below. So each update publishes at most about one
    segment, and the HTML published for a run grows linearly with it (a reply with 400
    tool calls published 126 MB when every update carried the whole run).

    An update costs the same after 10 tool calls or 20,000: it walks only the segment it
    draws (from where the published part ends, never through it), at most
    :data:`LIVE_PENDING` unfinished calls a turn and about ``segment_chars`` of the rest,
    and finds a call by its id in a dict. An update that would show nothing new is not
    sent (a call starting among the ones counted on the "more tool calls" line).
    """

    def __init__(
        self,
        display: Any,
        *,
        interval: float = 0.1,
        segment_chars: int = SEGMENT_CHARS,
        clock: Callable[[], float] = time.monotonic,
        run: Transcript | None = None,
    ) -> None:
        self.transcript = RunTranscript(run)
        self._display = display
        self._handle: Any = None
        self._interval = interval
        self._segment_chars = segment_chars
        self._clock = clock
        self._next = 0.0
        self._at = _Cursor()  # the start of what is not published for good
        self._shown: str | None = None  # the HTML the current display shows
        #: Updates shown, the seconds spent drawing and showing them, and the characters
        #: of HTML published (for measurements).
        self.updates = 0
        self.render_seconds = 0.0
        self.published_chars = 0

    def add(self, event: AgentEvent) -> None:
        change = self.transcript.add(event)
        now = self._clock()
        # A retry's wait or a tool's run may last seconds with no event after it: such
        # news is shown at once, not at the next (throttled) update.
        urgent = change is not None and change.kind in _URGENT
        if now >= self._next or urgent:
            started = time.perf_counter()
            self._show()
            spent = time.perf_counter() - started
            self.render_seconds += spent
            # An update that took long waits proportionally longer for the next one, so
            # showing the run never takes more than a fifth of its time, however large.
            self._next = now + max(self._interval, 4 * spent)

    def _publish(self, text: str, html: str) -> None:
        segment = _Segment(text, html)
        if self._handle is None:
            self._handle = self._display(segment, display_id=True)
        else:
            self._handle.update(segment)
        self._shown = html
        self.updates += 1
        self.published_chars += len(html)

    def _show(self) -> None:
        text, html = self.transcript.render(self._at, self._segment_chars)
        if html != self._shown:
            self._publish(text, html)
        if len(html) > self._segment_chars or (
            len(self.transcript.turns) - self._at.turn > LIVE_TURNS
        ):
            self._freeze()

    def _freeze(self) -> None:
        """Publish the segment's finished start for good; the rest goes to a new display."""
        transcript = self.transcript
        at = replace(self._at)
        done: list[_Piece] = []
        for key, item in transcript.pieces(self._at):
            if not transcript.complete(key, item):
                if key[1] >= 0:  # turns before it show nothing: later updates skip them
                    at.move_to(key[1])
                break
            done.append((key, item))
            at.past(key)
        else:  # all of it: go on after it, in the last turn
            at.move_to(len(transcript.turns) - 1)
        self._at = at
        if done:
            self._publish(*transcript.draw(done))
            self._handle = None
            self._shown = None

    def finish(self) -> None:
        """Show the process (thinking, tools, notices); the final answer is the cell's value."""
        self.transcript.hide_final_text = True
        self.transcript.streaming = False
        started = time.perf_counter()
        text, html = self.transcript.render(self._at)
        if self._handle is not None or text:
            self._publish(text, html)
        self.render_seconds += time.perf_counter() - started


class RunFailedError(PinbError):
    """A ``%%pi`` run that ended in an error, raised so the cell (and a script) fails.

    The failed reply is saved in the session, and the next cell continues from there.

    Attributes
    ----------
    end:
        The run's :class:`~pinb.agent.events.AgentEnd`.
    session_path:
        The session file the run was appended to.
    """

    def __init__(self, end: AgentEnd, session_path: Any = None) -> None:
        self.end = end
        self.session_path = session_path
        super().__init__(end.error or "the model request failed")


class AssistantReply:
    """The value of a ``%%pi`` cell: the final assistant message, rendering itself.

    Attributes
    ----------
    message:
        The Pi-shaped assistant message (``None`` if the run produced none).
    end:
        The run's :class:`~pinb.agent.events.AgentEnd` (usage, stop reason, all replies).
    session_path:
        The session file the run was appended to.
    printed:
        The answer was already printed as it streamed (terminal and script mode): the
        plain-text form is then the footer alone, not the answer a second time.
    """

    def __init__(
        self,
        end: AgentEnd,
        session_path: Any = None,
        *,
        printed: bool = False,
        context: ContextUsage | None = None,
    ) -> None:
        self.end = end
        self.message = end.final_message
        self.session_path = session_path
        self.printed = printed
        #: How full the context is after the run (the same account as ``%pi context``).
        self.context = context

    @property
    def text(self) -> str:
        content = (self.message or {}).get("content") or []
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )

    @property
    def stop_reason(self) -> str:
        return self.end.stop_reason

    def _footer(self) -> str:
        """Two labelled figures: what this run was billed, and how full the context is.

        They measure different things: a run of several requests sends the context each
        time, so its billed input can be many times the context's size.
        """
        footer = "\n".join(self.end.footer_lines(self.context))
        if self.end.stop_reason not in ("stop", "toolUse"):
            footer = (
                f"[{self.end.stop_reason}{': ' + self.end.error if self.end.error else ''}] "
                + footer
            )
        return footer

    def __repr__(self) -> str:
        return f"AssistantReply(stop_reason={self.stop_reason!r}, text={self.text[:60]!r})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        plain = self._footer() if self.printed else f"{self.text}\n\n{self._footer()}".strip()
        html = wrap(
            markdown_to_html(self.text)
            + "".join(div(escape(line), "muted") for line in self._footer().splitlines()),
            "pinb-reply",
        )
        return mimebundle(plain, html=html, include=include, exclude=exclude)
