"""A run in a terminal or a script (``ipython``, ``ipython script.ipy``): its transcript printed as increments.

A terminal cannot update what it printed, so re-displaying the transcript printed the
whole reply again on every update. Here each change of the run's
:class:`~pinb.agent.transcript.Transcript` prints only what is new: text as it streams
(the final answer included, since a script shows no cell value), one line per tool call,
result, retry and compaction.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TextIO

from ..agent.events import AgentEnd, AgentEvent
from ..agent.transcript import Transcript

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

    Parameters
    ----------
    out:
        Where to print; ``sys.stdout`` at each write by default.
    run:
        The transcript the events go into (a new one by default).

    Attributes
    ----------
    printed_text:
        Whether reply text was printed (the final answer is then already on screen).
    """

    def __init__(self, out: TextIO | None = None, *, run: Transcript | None = None) -> None:
        self._out = out
        self.run = run if run is not None else Transcript()
        self._mid_line = False
        self._thinking = False
        self.printed_text = False

    @property
    def end(self) -> AgentEnd | None:
        return self.run.end

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
        change = self.run.add(event)
        if change is None:
            return
        kind, tool = change.kind, change.tool
        if kind == "turn":
            self._thinking = False
        elif kind == "text" and change.piece:
            self._write(change.piece)
            self._mid_line = not change.piece.endswith("\n")
            self.printed_text = True
        elif kind == "thinking" and not self._thinking:
            self._thinking = True
            self._line("· thinking…")
        elif kind == "tool-start" and tool is not None:
            args = json.dumps(tool.arguments, ensure_ascii=False)
            self._line(f"→ {tool.name}({_short(args)})")
        elif kind == "tool-end" and tool is not None:
            self._line(("✗ " if tool.is_error else "← ") + _short(tool.result or ""))
        elif kind in ("retry", "notice", "compaction"):
            self._line(f"· {change.piece}")

    def finish(self) -> None:
        """End the last line."""
        if self._mid_line:
            self._write("\n")
            self._mid_line = False
