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
    ToolEnd,
    ToolStart,
    TurnStart,
)
from ..llm.types import Retry, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from ..render.html import escape, markdown_to_html, mimebundle, wrap

__all__ = ["AssistantReply", "LiveRun", "RunTranscript"]

_RESULT_PREVIEW = 3000

_CSS = """
.pinb-run .pinb-turn{margin:.2em 0}
.pinb-run details{margin:.25em 0;border-left:3px solid #ccc;padding-left:.5em}
.pinb-run details.pinb-tool{border-color:#6a9fd4}
.pinb-run details.pinb-tool.pinb-error{border-color:#d46a6a}
.pinb-run summary{cursor:pointer;color:#555}
.pinb-run .pinb-note{color:#777;font-size:90%}
.pinb-run pre{white-space:pre-wrap;max-height:24em;overflow:auto;margin:.2em 0}
"""


@dataclass
class _Tool:
    call_id: str
    name: str
    arguments_text: str = ""
    arguments: dict[str, Any] | None = None
    result: str | None = None
    is_error: bool = False
    running: bool = False


@dataclass
class _Turn:
    thinking: str = ""
    text: str = ""
    tools: list[_Tool] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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
                self._turn().text += inner.text
            elif isinstance(inner, ThinkingDelta):
                self._turn().thinking += inner.thinking
            elif isinstance(inner, ToolCallStart):
                self._tool(inner.id, inner.name)
            elif isinstance(inner, ToolCallDelta):
                self._tool(inner.id).arguments_text += inner.delta
            elif isinstance(inner, ToolCallEnd):
                self._tool(inner.id, inner.name).arguments = inner.arguments
            elif isinstance(inner, Retry):
                self._turn().notes.append(
                    f"retrying in {inner.delay:g} s (attempt {inner.attempt} of {inner.max_retries}): {inner.error}"
                )
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
                f"≈{report.estimated_before} → {report.tokens_after} tokens"
            )
        elif isinstance(event, AgentEnd):
            self.end = event

    # -- rendering ------------------------------------------------------------------------

    def _final_turn_index(self) -> int:
        return len(self.turns) - 1 if self.hide_final_text and self.turns else -1

    def text(self) -> str:
        lines: list[str] = []
        for i, turn in enumerate(self.turns):
            if turn.thinking:
                lines.append(f"(thinking: {len(turn.thinking)} chars)")
            if turn.text and i != self._final_turn_index():
                lines.append(turn.text)
            for tool in turn.tools:
                args = (
                    json.dumps(tool.arguments, ensure_ascii=False)
                    if tool.arguments is not None
                    else tool.arguments_text
                )
                lines.append(f"→ {tool.name}({args})")
                if tool.result is not None:
                    mark = "✗" if tool.is_error else "←"
                    lines.append(f"{mark} " + tool.result.replace("\n", "\n  "))
            lines.extend(f"· {note}" for note in turn.notes)
        lines.extend(f"· {note}" for note in self.notes)
        return "\n".join(lines)

    def html(self) -> str:
        parts: list[str] = []
        for i, turn in enumerate(self.turns):
            body: list[str] = []
            if turn.thinking:
                body.append(
                    f"<details class='pinb-thinking'><summary>thinking ({len(turn.thinking)} chars)</summary>"
                    f"<pre>{escape(turn.thinking)}</pre></details>"
                )
            if turn.text and i != self._final_turn_index():
                body.append(markdown_to_html(turn.text))
            for tool in turn.tools:
                args = (
                    json.dumps(tool.arguments, ensure_ascii=False, indent=1)
                    if tool.arguments is not None
                    else tool.arguments_text
                )
                state = " (running…)" if tool.running else (" — error" if tool.is_error else "")
                css = "pinb-tool pinb-error" if tool.is_error else "pinb-tool"
                result = f"<pre>{escape(tool.result)}</pre>" if tool.result is not None else ""
                body.append(
                    f"<details class='{css}'><summary><code>{escape(tool.name)}</code>{escape(state)}</summary>"
                    f"<pre>{escape(args)}</pre>{result}</details>"
                )
            body.extend(f"<div class='pinb-note'>{escape(note)}</div>" for note in turn.notes)
            if body:
                parts.append(f"<div class='pinb-turn'>{''.join(body)}</div>")
        parts.extend(f"<div class='pinb-note'>{escape(note)}</div>" for note in self.notes)
        return wrap(f"<style>{_CSS}</style>" + "".join(parts), "pinb-run")

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
        self._last = 0.0

    def add(self, event: AgentEvent) -> None:
        self.transcript.add(event)
        now = time.monotonic()
        if now - self._last >= self._interval:
            self._show()
            self._last = now

    def _show(self) -> None:
        if self._handle is None:
            self._handle = self._display(self.transcript, display_id=True)
        else:
            self._handle.update(self.transcript)

    def finish(self) -> None:
        """Show the process (thinking, tools, notices); the final answer is the cell's value."""
        self.transcript.hide_final_text = True
        if self._handle is not None or self.transcript.text():
            self._show()


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
    """

    def __init__(self, end: AgentEnd, session_path: Any = None) -> None:
        self.end = end
        self.message = end.final_message
        self.session_path = session_path

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
        usage = self.end.usage
        parts = [f"in {int(usage['input']):,}", f"out {int(usage['output']):,}"]
        if usage["cacheRead"] or usage["cacheWrite"]:
            parts.append(f"cache {int(usage['cacheRead']):,}/{int(usage['cacheWrite']):,}")
        parts.append(f"${usage['cost']:.4f}")
        footer = "tokens " + " · ".join(parts)
        if self.end.stop_reason not in ("stop", "toolUse"):
            footer = (
                f"[{self.end.stop_reason}{': ' + self.end.error if self.end.error else ''}] "
                + footer
            )
        return footer

    def __repr__(self) -> str:
        return f"AssistantReply(stop_reason={self.stop_reason!r}, text={self.text[:60]!r})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        plain = f"{self.text}\n\n{self._footer()}".strip()
        html = wrap(
            markdown_to_html(self.text)
            + f"<div class='pinb-note' style='color:#777;font-size:90%'>{escape(self._footer())}</div>",
            "pinb-reply",
        )
        return mimebundle(plain, html=html, include=include, exclude=exclude)
