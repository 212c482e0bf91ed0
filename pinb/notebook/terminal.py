"""Rendering an agent run in a terminal or a script (``ipython``, ``ipython script.ipy``): increments only.

A terminal cannot update what it printed, so re-displaying the transcript printed the
whole reply again on every update. Here each event prints only what is new: text as it
streams (the final answer included, since a script shows no cell value), one line per
tool call, result, retry and compaction.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

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
    retry_line,
)
from ..llm.types import Retry, TextDelta, ThinkingDelta

__all__ = ["TerminalRun"]

_LINE = 200  # characters of a tool call or result shown on its line


def _short(text: str, limit: int = _LINE) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with ``…``.

    Reads only the words it shows: splitting a 10 MB tool result whole to print 200
    characters of it would make that one event cost as much as the result is long.
    """
    if len(text) <= 8 * limit:  # short: splitting it all is quicker than matching words
        flat = " ".join(text.split())
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"
    words: list[str] = []
    size = -1  # the length of the words joined by spaces
    # Runs of at most `limit` characters: a longer word is cut where the line ends anyway.
    for match in re.finditer(rf"\S{{1,{limit}}}", text):
        words.append(match.group())
        size += len(words[-1]) + 1
        if size > limit:
            break
    flat = " ".join(words)
    return flat if size <= limit else flat[: limit - 1] + "…"


class TerminalRun:
    """Prints a run's events to ``out`` as they arrive.

    Attributes
    ----------
    printed_text:
        Whether reply text was printed (the final answer is then already on screen).
    """

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out
        self._mid_line = False
        self._thinking = False
        self.printed_text = False
        self.end: AgentEnd | None = None

    @property
    def out(self) -> TextIO:
        # Looked up late: IPython's capture swaps sys.stdout while a cell runs.
        return self._out or sys.stdout

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _line(self, text: str) -> None:
        if self._mid_line:
            self._write("\n")
            self._mid_line = False
        self._write(text + "\n")

    def add(self, event: AgentEvent) -> None:
        """Print what ``event`` adds."""
        if isinstance(event, TurnStart):
            self._thinking = False
        elif isinstance(event, ModelEvent):
            inner: Any = event.event
            if isinstance(inner, TextDelta) and inner.text:
                self._write(inner.text)
                self._mid_line = not inner.text.endswith("\n")
                self.printed_text = True
            elif isinstance(inner, ThinkingDelta) and not self._thinking:
                self._thinking = True
                self._line("· thinking…")
            elif isinstance(inner, Retry):
                self._line(
                    "· " + retry_line(inner.delay, inner.attempt, inner.max_retries, inner.error)
                )
        elif isinstance(event, ToolStart):
            args = json.dumps(event.arguments, ensure_ascii=False)
            self._line(f"→ {event.name}({_short(args)})")
        elif isinstance(event, ToolEnd):
            text = "\n".join(
                str(b.get("text", "")) for b in event.result.content if b.get("type") == "text"
            )
            self._line(("✗ " if event.result.is_error else "← ") + _short(text))
        elif isinstance(event, RetryScheduled):
            self._line(
                "· " + retry_line(event.delay, event.attempt, event.max_retries, event.error)
            )
        elif isinstance(event, CompactionDone):
            report = event.report
            self._line(
                f"· compacted ({report.reason}): {len(report.summarized_ids)} entries summarized, "
                f"≈{report.estimated_before:,} → {report.tokens_after:,} tokens"
            )
        elif isinstance(event, Notice):
            self._line(f"· {event.text}")
        elif isinstance(event, AgentEnd):
            self.end = event

    def finish(self) -> None:
        """End the last line."""
        if self._mid_line:
            self._write("\n")
            self._mid_line = False
