"""What an agent run reports as it goes: saved entries, tool calls, compactions, the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.entries import Entry
from ..core.reports import CompactionReport
from .tool import ToolResult

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "CompactionDone",
    "EntrySaved",
    "ModelEvent",
    "ToolEnd",
    "ToolStart",
    "TurnStart",
]


@dataclass(frozen=True)
class EntrySaved:
    """An entry was appended to the session (user, assistant, tool result, model change …)."""

    entry: Entry


@dataclass(frozen=True)
class TurnStart:
    """A model call begins (turn ``number`` of this run, from 1)."""

    number: int


@dataclass(frozen=True)
class ModelEvent:
    """A streaming event from the model (``pinb.llm`` TextDelta, ThinkingDelta, Retry, …)."""

    event: Any


@dataclass(frozen=True)
class ToolStart:
    """A tool call is about to run."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolEnd:
    """A tool call finished; its ``toolResult`` entry is saved."""

    call_id: str
    name: str
    result: ToolResult
    entry: Entry


@dataclass(frozen=True)
class CompactionDone:
    """The session was compacted (``report.reason``: threshold or overflow)."""

    report: CompactionReport


@dataclass(frozen=True)
class AgentEnd:
    """The run is over.

    ``stop_reason`` is the last assistant message's (``stop``, ``length``, ``error``,
    ``aborted``, or ``max_turns``); ``messages`` are the assistant messages of the run.
    """

    stop_reason: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def usage(self) -> dict[str, float]:
        """Tokens and cost summed over the run's assistant messages."""
        total = {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "cost": 0.0}
        for message in self.messages:
            usage = message.get("usage") or {}
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                total[key] += float(usage.get(key) or 0)
            total["cost"] += float((usage.get("cost") or {}).get("total") or 0)
        return total

    @property
    def final_message(self) -> dict[str, Any] | None:
        return self.messages[-1] if self.messages else None


AgentEvent = EntrySaved | TurnStart | ModelEvent | ToolStart | ToolEnd | CompactionDone | AgentEnd
