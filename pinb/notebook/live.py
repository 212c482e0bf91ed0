"""Rendering an agent run into a notebook cell as it streams, and the reply object a cell returns."""

from __future__ import annotations

import json
import time
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
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
)
from ..core.accounting import ContextUsage
from ..errors import PinbError
from ..llm.types import Retry, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from ..render.html import div, escape, markdown_to_html, mimebundle, pre, style, wrap

__all__ = [
    "SEGMENT_CHARS",
    "AssistantReply",
    "LiveRun",
    "RunFailedError",
    "RunTranscript",
    "retry_line",
]

_RESULT_PREVIEW = 3000
#: Unfinished tool calls a live display shows; the others are counted in one line.
LIVE_PENDING = 8
#: A live display whose HTML passes this many characters publishes its finished part
#: for good and continues in a new display (see `LiveRun`).
SEGMENT_CHARS = 12_000
#: While a reply streams, a longer text shows only its end (the whole of it afterwards):
#: rendering a 10 MB reply on every update would make the display fall behind.
STREAM_PREVIEW = 20_000


class _Text:
    """Streamed text kept as pieces: ``str +=`` on an attribute copies the whole reply on
    every delta, which made a 10 MB reply quadratic."""

    __slots__ = ("_joined", "_parts", "chars")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._joined = ""
        self.chars = 0

    def add(self, piece: str) -> None:
        self._parts.append(piece)
        self.chars += len(piece)

    def value(self) -> str:
        if self._parts:
            self._joined = "".join([self._joined, *self._parts])
            self._parts.clear()
        return self._joined

    def tail(self, size: int) -> str:
        return self.value()[-size:]

    def __bool__(self) -> bool:
        return self.chars > 0


@dataclass
class _Tool:
    call_id: str
    name: str
    arguments_text: _Text = field(default_factory=_Text)
    arguments: dict[str, Any] | None = None
    result: str | None = None
    is_error: bool = False
    running: bool = False
    cache: tuple[Any, str, str] | None = None  # (state, text, html), see _tool_rendered


@dataclass
class _Turn:
    thinking: _Text = field(default_factory=_Text)
    text: _Text = field(default_factory=_Text)
    tools: list[_Tool] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Rendered Markdown of ``text`` and the length it was rendered at.
    html_cache: tuple[int, str] = (-1, "")

    def text_html(self) -> str:
        if self.html_cache[0] != self.text.chars:
            self.html_cache = (self.text.chars, markdown_to_html(self.text.value()))
        return self.html_cache[1]


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


class RunTranscript:
    """What a run showed so far: turns with thinking, text and tool calls, and notices."""

    def __init__(self) -> None:
        self.turns: list[_Turn] = []
        self.notes: list[str] = []
        self.end: AgentEnd | None = None
        self.hide_final_text = False
        #: True until the run ends: long texts render as a preview of their end.
        self.streaming = True

    def _turn(self) -> _Turn:
        if not self.turns:
            self.turns.append(_Turn())
        return self.turns[-1]

    def _tool(self, call_id: str, name: str = "") -> _Tool:
        for turn in reversed(self.turns):
            for tool in turn.tools:
                if tool.call_id == call_id:
                    return tool
        tool = _Tool(call_id, name)
        self._turn().tools.append(tool)
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
                self._tool(inner.id, inner.name)
            elif isinstance(inner, ToolCallDelta):
                self._tool(inner.id).arguments_text.add(inner.delta)
            elif isinstance(inner, ToolCallEnd):
                self._tool(inner.id, inner.name).arguments = inner.arguments
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
            tool = self._tool(event.call_id, event.name)
            tool.arguments = event.arguments
            tool.running = True
        elif isinstance(event, ToolUpdate):  # the user's Pi streams a tool's partial result
            self._tool(event.call_id, event.name).result = _result_text(event.partial.content)
        elif isinstance(event, ToolEnd):
            tool = self._tool(event.call_id, event.name)
            tool.running = False
            tool.result = _result_text(event.result.content)
            tool.is_error = event.result.is_error
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

    def _preview(self, text: _Text, index: int) -> str | None:
        """The end of a long text of the turn still streaming, or None to show it whole."""
        if self.streaming and index == len(self.turns) - 1 and text.chars > STREAM_PREVIEW:
            return text.tail(STREAM_PREVIEW)
        return None

    def pieces(
        self, start_turn: int = 0, first_tool: int = 0, pending_limit: int | None = None
    ) -> Iterator[_Piece]:
        """What the run shows, in order, from turn ``start_turn`` (its tool calls from
        ``first_tool``): thinking, text, tool calls and notes of each turn, then the run's
        own notes. Keys never change. With ``pending_limit``, the tool calls of a turn
        after that many unfinished ones are one ``waiting`` piece (their names counted)."""
        final = self._final_turn_index()
        for i in range(start_turn, len(self.turns)):
            turn = self.turns[i]
            if turn.thinking:
                yield ("thinking", i, 0), turn
            if turn.text and i != final:
                yield ("text", i, 0), turn
            first = first_tool if i == start_turn else 0
            waiting = 0
            for j in range(first, len(turn.tools)):
                tool = turn.tools[j]
                if pending_limit is not None and tool.result is None:
                    waiting += 1
                    if waiting > pending_limit:
                        names: dict[str, int] = {}
                        for later in turn.tools[j:]:
                            names[later.name] = names.get(later.name, 0) + 1
                        yield ("waiting", i, j), names
                        break
                yield ("tool", i, j), tool
            for j, note in enumerate(turn.notes):
                yield ("note", i, j), note
        for j, note in enumerate(self.notes):
            yield ("run-note", -1, j), note

    def complete(self, key: _Key, item: Any) -> bool:
        """Whether a piece will show the same from now on (so it can be published for good)."""
        kind, index, _ = key
        if kind == "tool":
            return bool(item.result is not None)
        if kind == "waiting":
            return False
        if kind in ("thinking", "text"):
            # the reply is over once a later turn began or its tool calls run; the last
            # turn's answer is never final here (it becomes the cell's value instead)
            return index < len(self.turns) - 1 or any(
                t.running or t.result is not None for t in item.tools
            )
        return True

    def _render(self, key: _Key, item: Any) -> tuple[str, str]:
        """One piece as (text, html)."""
        kind, i, _ = key
        if kind == "thinking":
            thought = self._preview(item.thinking, i) or item.thinking.value()
            head = f"thinking ({item.thinking.chars:,} chars)"
            return f"(thinking: {item.thinking.chars} chars)", div(escape(head), "muted") + pre(
                thought
            )
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
        if kind == "waiting":
            counts = ", ".join(f"{name} ×{n}" for name, n in item.items())
            note = f"… {sum(item.values())} more tool calls ({counts})"
            return f"· {note}", div(escape(note), "muted")
        return f"· {item}", div(escape(item), "muted")

    def render(
        self,
        start_turn: int = 0,
        skip: Container[_Key] = (),
        only: Container[_Key] | None = None,
        first_tool: int = 0,
    ) -> tuple[str, str]:
        """(text, html) of the pieces from ``start_turn`` (and its ``first_tool``) not in
        ``skip`` (and in ``only``)."""
        lines: list[str] = []
        parts: list[str] = []
        body: list[str] = []
        turn = None
        # While the run goes on, a display shows the first LIVE_PENDING unfinished tool
        # calls and counts the others, so an update costs the same with 4 calls or 400.
        pending = LIVE_PENDING if only is None and self.streaming else None

        def close_turn() -> None:
            if body:
                parts.append(f'<div class="pinb-turn" style="margin:4px 0">{"".join(body)}</div>')
                body.clear()

        for key, item in self.pieces(start_turn, first_tool, pending):
            if key in skip or (only is not None and key not in only):
                continue
            text, html = self._render(key, item)
            lines.append(text)
            if key[0] == "run-note":
                close_turn()
                parts.append(html)
                continue
            if key[1] != turn:
                close_turn()
                turn = key[1]
            body.append(html)
        close_turn()
        return "\n".join(lines), wrap("".join(parts), "pinb-run")

    def text(self) -> str:
        return self.render()[0]

    def html(self) -> str:
        """The run as HTML that reads the same untrusted and after nbconvert's sanitizer:
        inline styles and safe tags only (no ``<details>``, ``<style>`` or ``<br>``)."""
        return self.render()[1]

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        text, html = self.render()
        return mimebundle(text, html=html, include=include, exclude=exclude)


_Key = tuple[str, int, int]
_Piece = tuple[_Key, Any]


def _tool_arguments(tool: _Tool, indent: int | None) -> str:
    if tool.arguments is not None:
        return json.dumps(tool.arguments, ensure_ascii=False, indent=indent)
    return tool.arguments_text.tail(_RESULT_PREVIEW)


def _tool_rendered(tool: _Tool) -> tuple[str, str]:
    """A tool call's (text, html), rendered again only when what it shows changed."""
    state = (tool.running, tool.result is None, tool.arguments is None, tool.arguments_text.chars)
    if tool.cache is None or tool.cache[0] != state:
        tool.cache = (state, _tool_text(tool), _tool_html(tool))
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
    """The part of a run one display shows: pieces from a turn on, less those shown for good."""

    def __init__(
        self,
        transcript: RunTranscript,
        start_turn: int,
        skip: Container[_Key],
        only: Container[_Key] | None = None,
        first_tool: int = 0,
    ) -> None:
        self.transcript = transcript
        self.start_turn = start_turn
        self.first_tool = first_tool
        self.skip = skip  # rendered at publication, before it may change
        self.only = only
        self._rendered: tuple[str, str] | None = None

    def render(self) -> tuple[str, str]:
        """What it shows, rendered once: the state of the run when it was published."""
        if self._rendered is None:
            self._rendered = self.transcript.render(
                self.start_turn, self.skip, self.only, self.first_tool
            )
        return self._rendered

    def text(self) -> str:
        return self.render()[0]

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        text, html = self.render()
        return mimebundle(text, html=html, include=include, exclude=exclude)


class LiveRun:
    """Feeds agent events into a :class:`RunTranscript` shown through display handles.

    ``display`` is IPython's ``display`` function (injected so tests need no frontend).
    Updates are throttled to ``interval`` seconds; :meth:`finish` shows the final state.

    A display shows one segment of the run. Once a segment's HTML passes
    ``segment_chars``, the pieces at its start that will not change any more (finished tool
    calls, a reply followed by its tool calls, notes) are published in it for good and the
    next update opens a new display below. So each update publishes at most about one
    segment, and the HTML published for a run grows linearly with it (a reply with 400
    tool calls published 126 MB when every update carried the whole run).
    """

    def __init__(
        self, display: Any, *, interval: float = 0.1, segment_chars: int = SEGMENT_CHARS
    ) -> None:
        self.transcript = RunTranscript()
        self._display = display
        self._handle: Any = None
        self._interval = interval
        self._segment_chars = segment_chars
        self._next = 0.0
        self._frozen: set[_Key] = set()
        self._start_turn = 0
        self._first_tool = 0  # tool calls of the start turn before it are shown for good
        #: Updates shown, the seconds spent showing them, and the characters of HTML
        #: published (for measurements).
        self.updates = 0
        self.render_seconds = 0.0
        self.published_chars = 0

    def add(self, event: AgentEvent) -> None:
        self.transcript.add(event)
        now = time.monotonic()
        # A retry's wait or a tool's run may last seconds with no event after it: such
        # news is shown at once, not at the next (throttled) update.
        urgent = isinstance(event, RetryScheduled | Notice | CompactionDone | ToolStart | ToolEnd)
        if now >= self._next or urgent:
            self._show()
            spent = time.monotonic() - now
            # An update that took long waits proportionally longer for the next one, so
            # showing the run never takes more than a fifth of its time, however large.
            self._next = now + max(self._interval, 4 * spent)

    def _publish(self, segment: _Segment) -> int:
        started = time.monotonic()
        html = segment._repr_mimebundle_().get("text/html", "")
        if self._handle is None:
            self._handle = self._display(segment, display_id=True)
        else:
            self._handle.update(segment)
        self.updates += 1
        self.render_seconds += time.monotonic() - started
        self.published_chars += len(html)
        return len(html)

    def _show(self) -> None:
        if self._publish(self._segment()) > self._segment_chars:
            self._freeze()

    def _segment(self, only: Container[_Key] | None = None) -> _Segment:
        return _Segment(self.transcript, self._start_turn, self._frozen, only, self._first_tool)

    def _freeze(self) -> None:
        """Publish the segment's finished start for good; the rest goes to a new display."""
        transcript = self.transcript
        done: list[_Key] = []
        rest: _Key | None = None
        for key, item in transcript.pieces(self._start_turn, self._first_tool):
            if key in self._frozen:
                continue
            if not transcript.complete(key, item):
                rest = key
                break
            done.append(key)
        if not done:
            return
        self._publish(self._segment(only=set(done)))
        self._frozen.update(done)
        self._handle = None
        if rest is not None and rest[1] >= 0:
            self._start_turn = rest[1]
            self._first_tool = rest[2] if rest[0] == "tool" else 0
        else:  # all shown: go on from the last turn's next tool call
            self._start_turn = max(len(transcript.turns) - 1, 0)
            tools = transcript.turns[-1].tools if transcript.turns else []
            self._first_tool = len(tools)

    def finish(self) -> None:
        """Show the process (thinking, tools, notices); the final answer is the cell's value."""
        self.transcript.hide_final_text = True
        self.transcript.streaming = False
        segment = self._segment()
        if self._handle is not None or segment.text():
            self._publish(segment)


def retry_line(delay: float, attempt: int, max_retries: int, error: str) -> str:
    """The one line a retry shows, in the live display and in a terminal alike."""
    first = error.strip().splitlines()[0] if error.strip() else "failed"
    return f"retrying in {delay:g} s (retry {attempt} of {max_retries}): {first}"


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
        usage = self.end.usage
        mark = "~" if self.end.usage_estimated else ""
        requests = len(self.end.messages)
        billed = [f"input {mark}{int(usage['input']):,}", f"output {mark}{int(usage['output']):,}"]
        if usage["cacheRead"] or usage["cacheWrite"]:
            billed.append(
                f"cache read {int(usage['cacheRead']):,} / write {int(usage['cacheWrite']):,}"
            )
        billed.append(f"${usage['cost']:.4f}")
        plural = "request" if requests == 1 else "requests"
        footer = f"this run ({requests} {plural}): " + " · ".join(billed)
        if self.end.usage_estimated:
            footer += " (estimated: the server reported no usage)"
        if self.end.output_limit:
            footer += f"\noutput limit: {self.end.output_limit}"
        if self.context is not None:
            footer += f"\ncontext now: {self.context.describe()}"
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
