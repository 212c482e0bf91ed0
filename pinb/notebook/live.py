"""Rendering an agent run into a notebook cell as it streams, and the reply object a cell returns."""

from __future__ import annotations

import json
import time
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
    TurnStart,
)
from ..core.accounting import ContextUsage
from ..errors import PinbError
from ..llm.types import Retry, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from ..render.html import div, escape, markdown_to_html, mimebundle, pre, style, wrap

__all__ = ["AssistantReply", "LiveRun", "RunFailedError", "RunTranscript", "retry_line"]

_RESULT_PREVIEW = 3000
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

    def text(self) -> str:
        lines: list[str] = []
        for i, turn in enumerate(self.turns):
            if turn.thinking:
                lines.append(f"(thinking: {turn.thinking.chars} chars)")
            if turn.text and i != self._final_turn_index():
                tail = self._preview(turn.text, i)
                if tail is None:
                    lines.append(turn.text.value())
                else:
                    lines.append(f"… ({turn.text.chars:,} characters so far)\n{tail}")
            for tool in turn.tools:
                args = (
                    json.dumps(tool.arguments, ensure_ascii=False)
                    if tool.arguments is not None
                    else tool.arguments_text.tail(_RESULT_PREVIEW)
                )
                lines.append(f"→ {tool.name}({args})")
                if tool.result is not None:
                    mark = "✗" if tool.is_error else "←"
                    lines.append(f"{mark} " + tool.result.replace("\n", "\n  "))
            lines.extend(f"· {note}" for note in turn.notes)
        lines.extend(f"· {note}" for note in self.notes)
        return "\n".join(lines)

    def html(self) -> str:
        """The run as HTML that reads the same untrusted and after nbconvert's sanitizer:
        inline styles and safe tags only (no ``<details>``, ``<style>`` or ``<br>``)."""
        parts: list[str] = []
        for i, turn in enumerate(self.turns):
            body: list[str] = []
            if turn.thinking:
                thought = self._preview(turn.thinking, i) or turn.thinking.value()
                body.append(
                    div(escape(f"thinking ({turn.thinking.chars:,} chars)"), "muted") + pre(thought)
                )
            if turn.text and i != self._final_turn_index():
                tail = self._preview(turn.text, i)
                if tail is None:
                    body.append(turn.text_html())
                else:
                    note = f"… the last {STREAM_PREVIEW:,} of {turn.text.chars:,} characters so far"
                    body.append(div(escape(note), "muted") + pre(tail))
            for tool in turn.tools:
                args = (
                    json.dumps(tool.arguments, ensure_ascii=False, indent=1)
                    if tool.arguments is not None
                    else tool.arguments_text.tail(_RESULT_PREVIEW)
                )
                state = " (running…)" if tool.running else (" — error" if tool.is_error else "")
                head = f"<code>{escape(tool.name)}</code>" + (
                    f"<span{style('error' if tool.is_error else 'muted')}>{escape(state)}</span>"
                )
                result = pre(tool.result) if tool.result is not None else ""
                edge = "#cf222e" if tool.is_error else "#6a9fd4"
                body.append(
                    f'<div class="pinb-tool" style="border-left:3px solid {edge};'
                    f'padding-left:8px;margin:4px 0">{head}{pre(args)}{result}</div>'
                )
            body.extend(div(escape(note), "muted") for note in turn.notes)
            if body:
                parts.append(f'<div class="pinb-turn" style="margin:4px 0">{"".join(body)}</div>')
        parts.extend(div(escape(note), "muted") for note in self.notes)
        return wrap("".join(parts), "pinb-run")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.text(), html=self.html(), include=include, exclude=exclude)


class LiveRun:
    """Feeds agent events into a :class:`RunTranscript` shown through a display handle.

    ``display`` is IPython's ``display`` function (injected so tests need no frontend).
    Updates are throttled to ``interval`` seconds; :meth:`finish` shows the final state.
    """

    def __init__(self, display: Any, *, interval: float = 0.1) -> None:
        self.transcript = RunTranscript()
        self._display = display
        self._handle: Any = None
        self._interval = interval
        self._next = 0.0
        #: Updates shown, and the seconds spent showing them (for measurements).
        self.updates = 0
        self.render_seconds = 0.0

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

    def _show(self) -> None:
        started = time.monotonic()
        if self._handle is None:
            self._handle = self._display(self.transcript, display_id=True)
        else:
            self._handle.update(self.transcript)
        self.updates += 1
        self.render_seconds += time.monotonic() - started

    def finish(self) -> None:
        """Show the process (thinking, tools, notices); the final answer is the cell's value."""
        self.transcript.hide_final_text = True
        self.transcript.streaming = False
        if self._handle is not None or self.transcript.text():
            self._show()


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
