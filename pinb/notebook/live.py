"""Rendering an agent run into a notebook cell as it streams, and the reply object a cell returns."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import chain, islice
from typing import Any

from ..agent.events import (
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
from ..core.context.accounting import ContextUsage
from ..errors import PinbError
from ..llm.types import Retry, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
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
_CHUNK = 1024  # characters of streamed pieces joined into one chunk of a _Text


class _Text:
    """Streamed text kept as chunks of pieces.

    ``str +=`` on an attribute copies the whole reply on every delta, and joining all of
    it to show its end did the same on every update: both made a long reply quadratic.
    Here a delta is appended, every :data:`_CHUNK` characters are joined once, and
    :meth:`tail` reads only the chunks it shows.
    """

    __slots__ = ("_chunks", "_pending", "_pending_chars", "chars")

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._pending: list[str] = []
        self._pending_chars = 0
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
        if len(self._chunks) > 1 or self._pending:
            self._chunks = ["".join([*self._chunks, *self._pending])]
            self._pending.clear()
            self._pending_chars = 0
        return self._chunks[0] if self._chunks else ""

    def tail(self, size: int) -> str:
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


@dataclass
class _Tool:
    call_id: str
    name: str
    turn: int
    arguments_text: _Text = field(default_factory=_Text)
    arguments: dict[str, Any] | None = None
    result: str | None = None
    is_error: bool = False
    running: bool = False
    began: bool = False  # it ran or reported a result: the reply that asked for it is over
    done: bool = False  # its ToolEnd came: it shows the same from now on
    version: int = 0  # bumped on every change: the rendering below is kept until then
    cache: tuple[int, str, str] | None = None  # (version, text, html), see _tool_rendered


@dataclass
class _Turn:
    thinking: _Text = field(default_factory=_Text)
    text: _Text = field(default_factory=_Text)
    tools: list[_Tool] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    began: int = 0  # tool calls that began (see _Tool.began)
    # The names of tools[rest_from:], counted; kept up to date as the start moves (see
    # names_from), so counting the calls a live display leaves out costs no walk over them.
    rest_from: int = 0
    rest: dict[str, int] = field(default_factory=dict)
    # Rendered Markdown of ``text`` and escaped ``thinking``, and the lengths rendered at.
    text_cache: tuple[int, str] = (-1, "")
    thinking_cache: tuple[int, str] = (-1, "")

    def text_html(self) -> str:
        if self.text_cache[0] != self.text.chars:
            self.text_cache = (self.text.chars, markdown_to_html(self.text.value()))
        return self.text_cache[1]

    def thinking_html(self) -> str:
        if self.thinking_cache[0] != self.thinking.chars:
            self.thinking_cache = (self.thinking.chars, pre(self.thinking.value()))
        return self.thinking_cache[1]

    def names_from(self, start: int) -> dict[str, int]:
        """The names of the tool calls from ``start`` on, with how many calls each."""
        counts, tools = self.rest, self.tools
        while self.rest_from < start:
            name = tools[self.rest_from].name
            counts[name] -= 1
            if not counts[name]:
                del counts[name]
            self.rest_from += 1
        while self.rest_from > start:
            self.rest_from -= 1
            name = tools[self.rest_from].name
            counts[name] = counts.get(name, 0) + 1
        return counts


def _result_text(content: list[dict[str, Any]]) -> str:
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    text = "\n".join(parts)
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
    """What a run showed so far: turns with thinking, text and tool calls, and notices."""

    def __init__(self) -> None:
        self.turns: list[_Turn] = []
        self.notes: list[str] = []
        self.end: AgentEnd | None = None
        self.hide_final_text = False
        #: True until the run ends: long texts render as a preview of their end.
        self.streaming = True
        self._calls: dict[str, _Tool] = {}  # the latest call with each id

    def _turn(self) -> _Turn:
        if not self.turns:
            self.turns.append(_Turn())
        return self.turns[-1]

    def _tool(self, call_id: str, name: str = "", *, new: bool = False) -> _Tool:
        """The call ``call_id``, or a new one in the current turn.

        An earlier turn's call is not the one meant by a new call (``new``) or after it
        ended: servers that send no ids get ``call_0`` in every reply.
        """
        turn = self._turn()
        index = len(self.turns) - 1
        tool = self._calls.get(call_id)
        if tool is not None and (tool.turn == index or not (new or tool.done)):
            return tool
        tool = _Tool(call_id, name, index)
        turn.tools.append(tool)
        turn.rest[name] = turn.rest.get(name, 0) + 1
        self._calls[call_id] = tool
        return tool

    def _began(self, tool: _Tool) -> _Tool:
        """``tool``, counted as begun in its turn (once), its change noted."""
        if not tool.began:
            tool.began = True
            self.turns[tool.turn].began += 1
        tool.version += 1
        return tool

    def add(self, event: AgentEvent) -> None:
        """Take one agent event into the transcript."""
        if isinstance(event, TurnStart):
            self.turns.append(_Turn())
        elif isinstance(event, ModelEvent):
            inner = event.event
            if isinstance(inner, TextDelta):
                self._turn().text.add(inner.text)
            elif isinstance(inner, ThinkingDelta):
                self._turn().thinking.add(inner.thinking)
            elif isinstance(inner, ToolCallStart):
                self._tool(inner.id, inner.name, new=True)
            elif isinstance(inner, ToolCallDelta):
                tool = self._tool(inner.id)
                tool.arguments_text.add(inner.delta)
                tool.version += 1
            elif isinstance(inner, ToolCallEnd):
                tool = self._tool(inner.id, inner.name)
                tool.arguments = inner.arguments
                tool.version += 1
            elif isinstance(inner, Retry):
                self._turn().notes.append(
                    retry_line(inner.delay, inner.attempt, inner.max_retries, inner.error)
                )
        elif isinstance(event, RetryScheduled):
            self._turn().notes.append(
                retry_line(event.delay, event.attempt, event.max_retries, event.error)
            )
        elif isinstance(event, Notice):
            self.notes.append(event.text)
        elif isinstance(event, ToolStart):
            tool = self._began(self._tool(event.call_id, event.name))
            tool.arguments = event.arguments
            tool.running = True
        elif isinstance(event, ToolUpdate):  # the user's Pi streams a tool's partial result
            tool = self._began(self._tool(event.call_id, event.name))
            tool.result = _result_text(event.partial.content)
        elif isinstance(event, ToolEnd):
            tool = self._began(self._tool(event.call_id, event.name))
            tool.running = False
            tool.result = _result_text(event.result.content)
            tool.is_error = event.result.is_error
            tool.done = True
        elif isinstance(event, CompactionDone):
            report = event.report
            self.notes.append(
                f"compacted ({report.reason}): {len(report.summarized_ids)} entries summarized, "
                f"≈{report.estimated_before:,} → {report.tokens_after:,} tokens"
            )
        elif isinstance(event, AgentEnd):
            self.end = event
            self.streaming = False

    # -- rendering ------------------------------------------------------------------------

    def _final_turn_index(self) -> int:
        return len(self.turns) - 1 if self.hide_final_text and self.turns else -1

    def _reply_over(self, index: int) -> bool:
        """Whether turn ``index``'s thinking and text are final: a later turn began, or
        its tool calls run."""
        return index < len(self.turns) - 1 or self.turns[index].began > 0

    def _preview(self, text: _Text, index: int) -> str | None:
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
                        yield ("waiting", i, j), _more_calls(len(tools) - j, turn.names_from(j))
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
            body = item.thinking_html() if thought is None else pre(thought)
            return f"(thinking: {item.thinking.chars} chars)", head + body
        if kind == "text":
            tail = self._preview(item.text, i)
            if tail is None:
                return item.text.value(), item.text_html()
            note = f"… the last {STREAM_PREVIEW:,} of {item.text.chars:,} characters so far"
            return (
                f"… ({item.text.chars:,} characters so far)\n{tail}",
                div(escape(note), "muted") + pre(tail),
            )
        if kind == "tool":
            return _tool_rendered(item)
        return f"· {item}", div(escape(item), "muted")

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


def _tool_arguments(tool: _Tool, indent: int | None) -> str:
    if tool.arguments is not None:
        return json.dumps(tool.arguments, ensure_ascii=False, indent=indent)
    return tool.arguments_text.tail(_RESULT_PREVIEW)


def _tool_rendered(tool: _Tool) -> tuple[str, str]:
    """A tool call's (text, html), rendered again only when it changed."""
    if tool.cache is None or tool.cache[0] != tool.version:
        tool.cache = (tool.version, _tool_text(tool), _tool_html(tool))
    return tool.cache[1], tool.cache[2]


def _tool_text(tool: _Tool) -> str:
    line = f"→ {tool.name}({_tool_arguments(tool, None)})"
    if tool.result is None:
        return line
    mark = "✗" if tool.is_error else "←"
    return line + f"\n{mark} " + tool.result.replace("\n", "\n  ")


def _tool_html(tool: _Tool) -> str:
    state = " (running…)" if tool.running else (" — error" if tool.is_error else "")
    head = f"<code>{escape(tool.name)}</code>" + (
        f"<span{style('error' if tool.is_error else 'muted')}>{escape(state)}</span>"
    )
    result = pre(tool.result) if tool.result is not None else ""
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
    have every event shown); :meth:`finish` shows the final state.

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
    ) -> None:
        self.transcript = RunTranscript()
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
        self.transcript.add(event)
        now = self._clock()
        # A retry's wait or a tool's run may last seconds with no event after it: such
        # news is shown at once, not at the next (throttled) update.
        urgent = isinstance(event, RetryScheduled | Notice | CompactionDone | ToolStart | ToolEnd)
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
