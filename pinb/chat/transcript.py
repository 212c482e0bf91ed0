"""A run as one chat message: the reply as it streams, tool calls on a line each, the footer.

Either engine's events (the built-in agent's, or the user's Pi's mapped onto them by
:mod:`pinb.agent.pi.events`) go into :class:`ChatTranscript`, which gives the message's
Markdown at any moment. The model's text keeps its Markdown through pinb's one policy
(:mod:`pinb.render.markdown`, parsed as it streams by
:class:`~pinb.render.markdown.MarkdownStream`); tool names, arguments, results, notices and
errors are literal text. The footer carries the facts a cell's footer carries: what the
run was billed, and how full the context is now (:meth:`ContextUsage.describe
<pinb.core.context.accounting.ContextUsage.describe>`, with the window and where it came from).
"""

from __future__ import annotations

import json
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
    retry_line,
)
from ..core.context.accounting import ContextUsage
from ..core.describe import KEY_ARGUMENTS, one_line
from ..llm.types import Retry, TextDelta, ThinkingDelta, ToolCallEnd, ToolCallStart
from ..render.markdown import MarkdownStream
from .markdown import code, literal

__all__ = ["ChatTranscript", "run_footer", "tool_summary"]

_ARGUMENT_CHARS = 120
_RESULT_CHARS = 160


def tool_summary(name: str, arguments: Any) -> str:
    """One line of a call's arguments: the main one for a known tool, else compact JSON."""
    if not isinstance(arguments, dict):
        return ""
    key = KEY_ARGUMENTS.get(name)
    if key is not None and isinstance(arguments.get(key), str):
        return one_line(arguments[key], _ARGUMENT_CHARS)
    try:
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    except ValueError:  # a value nested too deep to encode
        text = "{…}"
    return one_line(text, _ARGUMENT_CHARS)


def _result_text(content: list[dict[str, Any]]) -> str:
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


@dataclass
class _Tool:
    call_id: str
    name: str
    arguments: Any = None
    state: str = "asked"  # asked, running, done, failed
    outcome: str = ""

    def markdown(self) -> str:
        args = tool_summary(self.name, self.arguments)
        line = f"- {code(self.name or 'tool')}" + (f" {code(args)}" if args else "")
        if self.state == "running":
            return line + " — running…"
        if self.state == "done":
            return line + " — ✓" + (f" {literal(self.outcome)}" if self.outcome else "")
        if self.state == "failed":
            return line + " — ✗ " + literal(self.outcome or "failed")
        return line


@dataclass
class _Part:
    kind: str  # "text", "tools" or "note"
    text: list[str] = field(default_factory=list)
    tools: list[_Tool] = field(default_factory=list)
    # The text's Markdown as it streams (complete blocks are not parsed again), and what
    # it was rendered from: a text that stopped growing is not rendered again at all.
    stream: MarkdownStream = field(default_factory=MarkdownStream)
    rendered: tuple[int, bool, str] = (0, False, "")

    def model_markdown(self, final: bool) -> str:
        """The text's Markdown; ``final``: the text is whole (parsed once more, in one)."""
        if self.rendered[:2] != (len(self.text), final):
            text = "".join(self.text)
            body = self.stream.render(text, final=final) if text.strip() else ""
            self.rendered = (len(self.text), final, body)
        return self.rendered[2]


class ChatTranscript:
    """Agent events in, the chat message's Markdown out.

    Parameters
    ----------
    notes:
        Lines shown first (the run's own notes: what was read before it, …).
    """

    def __init__(self, notes: list[str] | None = None) -> None:
        self.parts: list[_Part] = [_Part("note", text=[n]) for n in notes or []]
        self.end: AgentEnd | None = None
        self.footer: list[str] = []
        self._tools: dict[str, _Tool] = {}
        self.thinking = False
        self.running_tools = 0

    # -- taking events ----------------------------------------------------------------------

    def _text_part(self) -> _Part:
        if not self.parts or self.parts[-1].kind != "text":
            self.parts.append(_Part("text"))
        return self.parts[-1]

    def _tool(self, call_id: str, name: str) -> _Tool:
        tool = self._tools.get(call_id)
        if tool is None:
            tool = self._tools[call_id] = _Tool(call_id, name)
            if not self.parts or self.parts[-1].kind != "tools":
                self.parts.append(_Part("tools"))
            self.parts[-1].tools.append(tool)
        elif name and not tool.name:
            tool.name = name
        return tool

    def note(self, text: str) -> None:
        """A line of the run's own (a notice, a retry, a compaction)."""
        self.parts.append(_Part("note", text=[text]))

    def add(self, event: AgentEvent) -> bool:
        """Take one event; whether the message changed."""
        if isinstance(event, TurnStart):
            self.thinking = False
            return False
        if isinstance(event, ModelEvent):
            inner = event.event
            if isinstance(inner, TextDelta):
                self.thinking = False
                self._text_part().text.append(inner.text)
                return bool(inner.text)
            if isinstance(inner, ToolCallStart):
                self._tool(inner.id, inner.name)
                return True
            if isinstance(inner, ToolCallEnd):
                self._tool(inner.id, inner.name).arguments = inner.arguments
                return True
            if isinstance(inner, Retry):
                self.note(retry_line(inner.delay, inner.attempt, inner.max_retries, inner.error))
                return True
            self.thinking = isinstance(inner, ThinkingDelta)
            return False
        if isinstance(event, RetryScheduled):
            self.note(retry_line(event.delay, event.attempt, event.max_retries, event.error))
            return True
        if isinstance(event, Notice):
            self.note(event.text)
            return True
        if isinstance(event, ToolStart):
            tool = self._tool(event.call_id, event.name)
            tool.arguments = event.arguments if tool.arguments is None else tool.arguments
            tool.state = "running"
            self.running_tools += 1
            return True
        if isinstance(event, ToolUpdate):
            return False
        if isinstance(event, ToolEnd):
            tool = self._tool(event.call_id, event.name)
            if tool.state == "running":
                self.running_tools -= 1
            text = _result_text(event.result.content)
            if event.result.is_error:
                tool.state = "failed"
                tool.outcome = one_line(text.strip().split("\n")[0] if text.strip() else "", 160)
            else:
                tool.state = "done"
                lines = len(text.strip().splitlines())
                tool.outcome = f"{lines:,} line{'s' if lines != 1 else ''}" if lines else ""
            return True
        if isinstance(event, CompactionDone):
            report = event.report
            self.note(
                f"compacted ({report.reason}): {len(report.summarized_ids)} entries summarized, "
                f"≈{report.estimated_before:,} → {report.tokens_after:,} tokens"
            )
            return True
        if isinstance(event, AgentEnd):
            self.end = event
            self.thinking = False
            return True
        return False

    # -- the message ------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """The chat's writing indicator for the moment."""
        if self.running_tools:
            return "is running tools..."
        if self.thinking:
            return "is thinking..."
        return "is typing..."

    @property
    def has_content(self) -> bool:
        return any(part.kind != "note" or part.text for part in self.parts) or self.end is not None

    def markdown(self) -> str:
        """The message so far (the whole of it once the run has ended)."""
        blocks: list[str] = []
        for i, part in enumerate(self.parts):
            if part.kind == "text":
                # Whole once something followed it, or the run ended.
                text = part.model_markdown(self.end is not None or i < len(self.parts) - 1)
                if text:
                    blocks.append(text)
            elif part.kind == "tools":
                blocks.append("\n".join(tool.markdown() for tool in part.tools))
            else:
                blocks.append(f"*{literal(part.text[0])}*")
        end = self.end
        if end is not None and end.stop_reason == "error":
            blocks.append(f"**error:** {literal(end.error or 'the model request failed')}")
        elif end is not None and end.stop_reason == "aborted":
            blocks.append("*" + literal("stopped: the partial reply is saved as aborted") + "*")
        if self.footer:
            blocks.append("---\n" + "\\\n".join(literal(line) for line in self.footer))
        return "\n\n".join(blocks) if blocks else "…"


def run_footer(end: AgentEnd, context: ContextUsage | None, model: str | None = None) -> list[str]:
    """The footer of a chat turn: a cell's footer (:meth:`AgentEnd.footer_lines
    <pinb.agent.events.AgentEnd.footer_lines>`), the model named first."""
    lines = end.footer_lines(context)
    if model:
        lines[0] = f"{model} · {lines[0]}"
    return lines
