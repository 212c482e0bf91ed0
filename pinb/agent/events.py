"""What an agent run reports as it goes: saved entries, tool calls, compactions, the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.compaction.masking import MaskReport
from ..core.compaction.reports import CompactionReport
from ..core.format.entries import Entry
from .tool import ToolResult

if TYPE_CHECKING:
    from ..core.context.accounting import ContextUsage

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "CompactionDone",
    "EntrySaved",
    "MaskingDone",
    "ModelEvent",
    "Notice",
    "RetryScheduled",
    "ToolEnd",
    "ToolStart",
    "ToolUpdate",
    "TurnStart",
    "UsageEstimated",
    "retry_line",
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
    """A tool call finished; its ``toolResult`` entry is saved.

    ``entry`` is ``None`` when another process saved it (the user's Pi, through RPC).
    """

    call_id: str
    name: str
    result: ToolResult
    entry: Entry | None = None


@dataclass(frozen=True)
class ToolUpdate:
    """A running tool reported a partial result (the user's Pi: ``tool_execution_update``)."""

    call_id: str
    name: str
    partial: ToolResult


@dataclass(frozen=True)
class CompactionDone:
    """The session was compacted (``report.reason``: threshold, overflow, or no room for
    the reply)."""

    report: CompactionReport


@dataclass(frozen=True)
class RetryScheduled:
    """A turn failed with a transient error; it is sent again after ``delay`` seconds.

    The failed reply is saved (and hidden from the model's context); ``attempt`` counts
    retries from 1 up to ``max_retries``.
    """

    attempt: int
    max_retries: int
    delay: float
    error: str


@dataclass(frozen=True)
class UsageEstimated:
    """The server reported no token counts for a reply; ``usage`` is pinb's chars/4 estimate.

    The saved message keeps Pi's zero usage (Pi skips zero usage when it estimates, so it
    comes to the same numbers); the estimate is for reports and the footer only.
    """

    entry: Entry
    usage: dict[str, Any]


@dataclass(frozen=True)
class Notice:
    """Something the user should know that is not an error of the run (one line)."""

    text: str


@dataclass(frozen=True)
class MaskingDone(Notice):
    """Old tool results were masked instead of a compaction (the mask-first strategy).

    A :class:`Notice` whose ``text`` is the report's one line, so every front end that
    shows notices shows it; ``report`` says what was masked."""

    report: MaskReport | None = None


@dataclass(frozen=True)
class AgentEnd:
    """The run is over.

    ``stop_reason`` is the last assistant message's (``stop``, ``length``, ``error``,
    ``aborted``, or ``max_turns``); ``messages`` are the assistant messages of the run.
    ``error`` is the reason a failed run gave up, in one line; ``estimated`` maps the
    index of a message without reported usage to its estimated usage. ``output_limit``
    says the output limit the last request carried, when the window made it smaller
    than the model's (``"968 tokens (the 4,096-token window − ...)"``).
    """

    stop_reason: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    estimated: dict[int, dict[str, Any]] = field(default_factory=dict)
    output_limit: str | None = None

    @property
    def usage_estimated(self) -> bool:
        """Whether any count in `usage` is pinb's estimate rather than the server's."""
        return bool(self.estimated)

    @property
    def usage(self) -> dict[str, float]:
        """Tokens and cost summed over the run's assistant messages (estimates filled in)."""
        total = {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "cost": 0.0}
        for index, message in enumerate(self.messages):
            usage = self.estimated.get(index) or message.get("usage") or {}
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                total[key] += float(usage.get(key) or 0)
            total["cost"] += float((usage.get("cost") or {}).get("total") or 0)
        return total

    @property
    def final_message(self) -> dict[str, Any] | None:
        return self.messages[-1] if self.messages else None

    def footer_lines(self, context: ContextUsage | None = None) -> list[str]:
        """What a run's footer says, in a cell, a terminal and a chat alike.

        ``this run (N requests): input · output · cache · cost`` (``~`` marks pinb's
        estimate where the server reported no usage), the output limit when the window cut
        it, and ``context now:`` :meth:`ContextUsage.describe
        <pinb.core.context.accounting.ContextUsage.describe>` after the run.
        """
        usage = self.usage
        mark = "~" if self.usage_estimated else ""
        requests = len(self.messages)
        billed = [f"input {mark}{int(usage['input']):,}", f"output {mark}{int(usage['output']):,}"]
        if usage["cacheRead"] or usage["cacheWrite"]:
            billed.append(
                f"cache read {int(usage['cacheRead']):,} / write {int(usage['cacheWrite']):,}"
            )
        billed.append(f"${usage['cost']:.4f}")
        plural = "request" if requests == 1 else "requests"
        head = f"this run ({requests} {plural}): " + " · ".join(billed)
        if self.usage_estimated:
            head += " (estimated: the server reported no usage)"
        lines = [head]
        if self.output_limit:
            lines.append(f"output limit: {self.output_limit}")
        if context is not None:
            lines.append(f"context now: {context.describe()}")
        return lines


def retry_line(delay: float, attempt: int, max_retries: int, error: str) -> str:
    """The one line a retry shows: in a cell, a terminal and a chat alike."""
    first = error.strip().splitlines()[0] if error.strip() else "failed"
    return f"retrying in {delay:g} s (retry {attempt} of {max_retries}): {first}"


AgentEvent = (
    EntrySaved
    | TurnStart
    | ModelEvent
    | ToolStart
    | ToolEnd
    | ToolUpdate
    | CompactionDone
    | RetryScheduled
    | UsageEstimated
    | Notice
    | AgentEnd
)
