"""A run as one chat message: the reply as it streams, tool calls on a line each, the footer.

Either engine's events (the built-in agent's, or the user's Pi's mapped onto them by
:mod:`pinb.agent.pi.events`) go into the run's :class:`~pinb.agent.transcript.Transcript`;
:class:`ChatTranscript` gives its Markdown at any moment, in the order things came. The
model's text keeps its Markdown through pinb's one policy (:mod:`pinb.render.markdown`,
parsed as it streams by :class:`~pinb.render.markdown.MarkdownStream`); tool names,
arguments, results, notices and errors are literal text. The footer carries the facts a
cell's footer carries: what the run was billed, and how full the context is now
(:meth:`ContextUsage.describe <pinb.core.context.accounting.ContextUsage.describe>`, with
the window and where it came from).
"""

from __future__ import annotations

import json
from typing import Any

from ..agent.events import AgentEnd, AgentEvent
from ..agent.transcript import Step, ToolCall, Transcript
from ..core.context.accounting import ContextUsage
from ..core.describe import KEY_ARGUMENTS, one_line, output_lines
from ..render.markdown import MarkdownStream
from .markdown import code, literal

__all__ = ["ChatTranscript", "run_footer", "tool_summary"]

_ARGUMENT_CHARS = 120
_RESULT_CHARS = 160
#: Changes the message shows (thinking, streamed arguments and partial results it does not).
_SHOWN = frozenset(
    {"text", "call", "call-end", "retry", "notice", "compaction", "tool-start", "tool-end", "end"}
)


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


def _outcome(tool: ToolCall) -> str:
    """What a finished call's line says of its result: its line count, or its error."""
    text = (tool.result or "").strip()
    if tool.is_error:
        return one_line(text.split("\n")[0] if text else "", _RESULT_CHARS)
    lines = len(output_lines(text))
    return f"{lines:,} line{'s' if lines != 1 else ''}" if lines else "no output"


class _Text:
    """One text part of the message: its Markdown as it streams (complete blocks are not
    parsed again), and what it was rendered from, so a text that stopped growing is not
    rendered again at all."""

    __slots__ = ("rendered", "stream")

    def __init__(self) -> None:
        self.stream = MarkdownStream()
        self.rendered: tuple[int, bool, str] = (-1, False, "")

    def markdown(self, text: str, final: bool) -> str:
        """The text's Markdown; ``final``: the text is whole (parsed once more, in one)."""
        if self.rendered[:2] != (len(text), final):
            body = self.stream.render(text, final=final) if text.strip() else ""
            self.rendered = (len(text), final, body)
        return self.rendered[2]


class ChatTranscript:
    """Agent events in, the chat message's Markdown out.

    Parameters
    ----------
    notes:
        Lines shown first (the run's own notes: what was read before it, …).
    run:
        The transcript the events go into (a new one by default).
    """

    def __init__(self, notes: list[str] | None = None, *, run: Transcript | None = None) -> None:
        self.run = run if run is not None else Transcript()
        for line in notes or []:
            self.run.note(line)
        #: The footer's lines (:func:`run_footer`), set when the run has ended.
        self.footer: list[str] = []
        self._texts: dict[int, _Text] = {}  # by part: parts only ever grow at the end
        self._outcomes: dict[ToolCall, tuple[int, str]] = {}

    @property
    def end(self) -> AgentEnd | None:
        return self.run.end

    def note(self, text: str) -> None:
        """A line of the run's own (a notice, a retry, a compaction)."""
        self.run.note(text)

    def add(self, event: AgentEvent) -> bool:
        """Take one event; whether the message changed."""
        change = self.run.add(event)
        if change is None or change.kind not in _SHOWN:
            return False
        return change.kind != "text" or bool(change.piece)

    # -- the message ------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """The chat's writing indicator for the moment."""
        if self.run.running_tools:
            return "is running tools..."
        if self.run.thinking:
            return "is thinking..."
        return "is typing..."

    def _parts(self) -> list[tuple[str, list[Step]]]:
        """The run's steps as the message's parts: a text (stretches that follow each
        other, across turns too), a list of tool calls, or a note."""
        parts: list[tuple[str, list[Step]]] = []
        for step in self.run.steps:
            kind = {"text": "text", "tool": "tools"}.get(step.kind, "note")
            if kind != "note" and parts and parts[-1][0] == kind:
                parts[-1][1].append(step)
            else:
                parts.append((kind, [step]))
        return parts

    def _note(self, step: Step) -> str:
        if step.kind == "run-note":
            return self.run.notes[step.index]
        return self.run.turns[step.turn].notes[step.index]

    def _tool(self, tool: ToolCall) -> str:
        args = tool_summary(tool.name, tool.arguments)
        line = f"- {code(tool.name or 'tool')}" + (f" {code(args)}" if args else "")
        state = tool.state
        if state == "running":
            return line + " — running…"
        if state in ("done", "failed"):
            cached = self._outcomes.get(tool)
            if cached is None or cached[0] != tool.version:
                cached = self._outcomes[tool] = (tool.version, _outcome(tool))
            outcome = cached[1]
            if state == "done":
                return line + " — ✓" + (f" {literal(outcome)}" if outcome else "")
            return line + " — ✗ " + literal(outcome or "failed")
        return line

    def markdown(self) -> str:
        """The message so far (the whole of it once the run has ended)."""
        run = self.run
        blocks: list[str] = []
        parts = self._parts()
        for i, (kind, steps) in enumerate(parts):
            if kind == "text":
                text = "".join(run.turns[s.turn].text_part(s.index) for s in steps)
                # Whole once something followed it, or the run ended.
                final = run.end is not None or i < len(parts) - 1
                body = self._texts.setdefault(i, _Text()).markdown(text, final)
                if body:
                    blocks.append(body)
            elif kind == "tools":
                blocks.append(
                    "\n".join(self._tool(run.turns[s.turn].tools[s.index]) for s in steps)
                )
            else:
                blocks.append(f"*{literal(self._note(steps[0]))}*")
        end = run.end
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
