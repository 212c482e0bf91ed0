"""Stopping a chat turn from the chat, and what a turn that did not run says instead."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

from ..agent import AgentEnd
from ..agent.events import AgentEvent
from ..core.file.writers import SessionBusyError
from ..errors import PinbError
from ..llm import CancelToken

__all__ = ["RunControl", "RunOutcome", "busy_line"]


@dataclass
class RunOutcome:
    """How a chat turn ended: its end (``None`` when it never started) and the lines to add."""

    end: AgentEnd | None = None
    busy: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)


class RunControl:
    """Stops a running chat turn from another thread (the chat's stop button).

    The built-in agent watches :attr:`token` (its partial reply is saved as aborted); the
    user's Pi is sent ``abort`` at once and, at its next event, the engine's own Ctrl-C path
    runs (it sends ``abort`` and reads on until Pi has settled with its partial reply saved).
    """

    def __init__(self) -> None:
        self.token = CancelToken()
        self.stopped = False
        self._interrupted = False
        self._ended = False
        self._process: Any = None
        self._lock = threading.Lock()

    def stop(self) -> None:
        """Stop the turn (idempotent; safe from any thread)."""
        with self._lock:
            self.stopped = True
            process = self._process
        self.token.cancel("stopped in the chat")
        if process is not None and getattr(process, "alive", False):
            with contextlib.suppress(PinbError):  # Pi is gone: the run ends on its own
                process.command("abort")

    def _watch(self, process: Any) -> None:
        with self._lock:
            self._process = process
            stopped = self.stopped
        if stopped:
            self.stop()

    def _checkpoint(self, event: AgentEvent) -> None:
        """Raise the engine's Ctrl-C once, at the first event after a stop (Pi engine)."""
        if isinstance(event, AgentEnd):
            self._ended = True
            return
        if self.stopped and not self._interrupted and not self._ended:
            self._interrupted = True
            raise KeyboardInterrupt


def busy_line(exc: SessionBusyError) -> str:
    """The chat's answer when another writer holds the session's turn: who (a notebook
    cell, another chat, a pinb command), since when, and that the message was not answered."""
    return exc.line("chat")
