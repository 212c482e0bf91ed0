"""The user's Pi's RPC events as the agent's events, and one prompt run through a Pi process.

Pi's events (``docs/json.md``) map onto the built-in agent's (:mod:`pinb.agent.events`),
so a cell run by Pi shows exactly like one run by pinb's agent:

=======================================  ===========================================
Pi (RPC)                                 pinb
=======================================  ===========================================
``turn_start``                           :class:`TurnStart`
``message_update`` text/thinking delta   :class:`ModelEvent` (``TextDelta`` / ``ThinkingDelta``)
``message_update`` toolcall start/       :class:`ModelEvent` (``ToolCallStart`` /
delta/end                                ``ToolCallDelta`` / ``ToolCallEnd``)
``tool_execution_start/update/end``      :class:`ToolStart` / :class:`ToolUpdate` / :class:`ToolEnd`
``auto_retry_start`` / failed ``_end``   :class:`RetryScheduled` / :class:`Notice`
``compaction_start`` / ``_end``          :class:`Notice` (Pi's figures)
``extension_error``, ``notify``          :class:`Notice`
``message_end`` (assistant)              kept for :class:`AgentEnd` (usage, stop reason)
``agent_settled``                        :class:`AgentEnd`: the run is over
=======================================  ===========================================

``agent_end`` is not the end: retries, overflow recovery and queued messages can follow
it, so a run ends at ``agent_settled`` only.
"""

from __future__ import annotations

import contextlib
import json
import queue
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..llm.types import TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from .events import (
    AgentEnd,
    AgentEvent,
    ModelEvent,
    Notice,
    RetryScheduled,
    ToolEnd,
    ToolStart,
    ToolUpdate,
    TurnStart,
)
from .pi_rpc import PiCommandError, PiProcess
from .tool import ToolResult

__all__ = ["DIALOG_METHODS", "PiEventMapper", "PiRun", "UIHandler", "cancel_dialog"]

#: Extension UI requests Pi waits on; the others (notify, setStatus …) expect no answer.
DIALOG_METHODS = frozenset({"select", "confirm", "input", "editor"})
#: Answers one dialog request: the fields of the ``extension_ui_response`` (``value``,
#: ``confirmed`` or ``cancelled``), plus an optional ``"note"`` shown in the cell.
UIHandler = Callable[[dict[str, Any]], dict[str, Any]]


def cancel_dialog(request: dict[str, Any]) -> dict[str, Any]:
    """Pi's cancel answer, for a run without a front end to ask in (nbclient, a script)."""
    return {"cancelled": True, "note": "cancelled: no live notebook front end to answer it in"}


def _tool_result(raw: Any, is_error: bool = False) -> ToolResult:
    data = raw if isinstance(raw, dict) else {}
    content = data.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    return ToolResult(blocks, data.get("details"), is_error)


def _tokens(value: Any) -> str:
    return f"{int(value):,}" if isinstance(value, int | float) else "?"


class PiEventMapper:
    """Turns Pi's records, one at a time, into the agent's events (see the module table)."""

    def __init__(self) -> None:
        self.turns = 0
        #: The assistant messages of the run, as Pi saved them (``message_end``).
        self.messages: list[dict[str, Any]] = []
        self.settled = False
        self.aborted = False
        self._calls: dict[int, tuple[str, str]] = {}

    def map(self, record: dict[str, Any]) -> list[AgentEvent]:
        """The agent events one Pi record stands for (often none)."""
        kind = record.get("type")
        if kind == "turn_start":
            self.turns += 1
            return [TurnStart(self.turns)]
        if kind == "message_start":
            self._calls.clear()
            return []
        if kind == "message_update":
            return self._update(record.get("assistantMessageEvent") or {})
        if kind == "message_end":
            message = record.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                self.messages.append(message)
            return []
        if kind == "tool_execution_start":
            args = record.get("args")
            return [ToolStart(str(record.get("toolCallId")), str(record.get("toolName")),
                              args if isinstance(args, dict) else {})]  # fmt: skip
        if kind == "tool_execution_update":
            return [ToolUpdate(str(record.get("toolCallId")), str(record.get("toolName")),
                               _tool_result(record.get("partialResult")))]  # fmt: skip
        if kind == "tool_execution_end":
            result = _tool_result(record.get("result"), bool(record.get("isError")))
            return [ToolEnd(str(record.get("toolCallId")), str(record.get("toolName")), result)]
        if kind == "auto_retry_start":
            return [RetryScheduled(int(record.get("attempt") or 1),
                                   int(record.get("maxAttempts") or 1),
                                   float(record.get("delayMs") or 0) / 1000,
                                   str(record.get("errorMessage") or ""))]  # fmt: skip
        if kind == "auto_retry_end" and not record.get("success"):
            return [Notice(f"Pi gave up retrying: {record.get('finalError') or 'failed'}")]
        if kind == "compaction_start":
            return [Notice(f"Pi is compacting the context ({record.get('reason')})…")]
        if kind == "compaction_end":
            return [Notice(self._compaction_line(record))]
        if kind == "summarization_retry_scheduled":
            return [Notice(f"Pi retries the summary in {float(record.get('delayMs') or 0) / 1000:g} s: "
                           f"{record.get('errorMessage')}")]  # fmt: skip
        if kind == "extension_error":
            where = Path(str(record.get("extensionPath") or "extension")).name
            return [
                Notice(f"extension error in {where} ({record.get('event')}): {record.get('error')}")
            ]
        if kind == "agent_settled":
            self.settled = True
            self.aborted = bool(record.get("aborted"))
            return [self.end()]
        return []

    def _update(self, event: dict[str, Any]) -> list[AgentEvent]:
        kind = event.get("type")
        index = int(event.get("contentIndex") or 0)
        if kind == "text_delta":
            return [ModelEvent(TextDelta(index, str(event.get("delta") or "")))]
        if kind == "thinking_delta":
            return [ModelEvent(ThinkingDelta(index, str(event.get("delta") or "")))]
        if kind == "toolcall_start":
            call = (str(event.get("id")), str(event.get("toolName")))
            self._calls[index] = call
            return [ModelEvent(ToolCallStart(index, *call))]
        if kind == "toolcall_delta":
            call_id = self._calls.get(index, ("", ""))[0]
            return [ModelEvent(ToolCallDelta(index, call_id, str(event.get("delta") or "")))]
        if kind == "toolcall_end":
            done = event.get("toolCall") or {}
            arguments = done.get("arguments")
            return [ModelEvent(ToolCallEnd(index, str(done.get("id")), str(done.get("name")),
                                           arguments if isinstance(arguments, dict) else {}))]  # fmt: skip
        return []

    @staticmethod
    def _compaction_line(record: dict[str, Any]) -> str:
        reason = record.get("reason")
        result = record.get("result")
        if isinstance(result, dict):
            return (f"Pi compacted the context ({reason}): {_tokens(result.get('tokensBefore'))} → "
                    f"≈{_tokens(result.get('estimatedTokensAfter'))} tokens")  # fmt: skip
        if record.get("aborted"):
            return f"Pi's compaction ({reason}) was aborted"
        return f"Pi's compaction ({reason}) failed: {record.get('errorMessage')}"

    def end(self) -> AgentEnd:
        """The run's end, from the assistant messages Pi saved."""
        last = self.messages[-1] if self.messages else {}
        stop = str(last.get("stopReason") or ("aborted" if self.aborted else "stop"))
        if self.aborted:
            stop = "aborted"
        error = (str(last.get("errorMessage") or "") or None) if stop == "error" else None
        return AgentEnd(stop, list(self.messages), error=error)


class PiRun:
    """One prompt sent to a running Pi, its records read until Pi has settled.

    Parameters
    ----------
    process:
        A started :class:`~pinb.agent.pi_rpc.PiProcess`.
    message:
        The prompt.
    ui:
        Answers extension dialogs (select, confirm, input, editor); default
        :func:`cancel_dialog`. Each dialog and notification shows as a :class:`Notice`.

    Iterate :meth:`events`; on Ctrl-C iterate :meth:`abort` for the rest, which ends with
    the partial reply Pi saved (``stop_reason == "aborted"``).
    """

    def __init__(
        self,
        process: PiProcess,
        message: str,
        *,
        ui: UIHandler = cancel_dialog,
        poll: float = 0.05,
    ) -> None:
        self.process = process
        self.message = message
        self.ui = ui
        self.poll = poll
        self.mapper = PiEventMapper()
        self._prompt_id: str | None = None
        self._abort_id: str | None = None

    def events(self) -> Iterator[AgentEvent]:
        """Send the prompt and yield its events; the last one is an :class:`AgentEnd`.

        Raises
        ------
        PiCommandError
            Pi refused the prompt (its own error).
        PiExitedError
            Pi died before it settled (with its last stderr lines).
        """
        self._prompt_id = self.process.command("prompt", message=self.message)
        yield from self._drain()

    def abort(self) -> Iterator[AgentEvent]:
        """Send ``abort`` and yield the rest of the run (Pi saves the partial reply)."""
        if self.mapper.settled:
            return
        self._abort_id = self.process.command("abort")
        yield from self._drain()

    def _drain(self) -> Iterator[AgentEvent]:
        while not self.mapper.settled:
            if self._prompt_id is not None and self.process.answered(self._prompt_id):
                ident, self._prompt_id = self._prompt_id, None
                data = self.process.wait(ident, timeout=0)  # raises PiCommandError if refused
                if isinstance(data, dict) and data.get("disposition") == "handled":
                    # An extension command took the prompt: no run starts, none settles.
                    self.mapper.settled = True
                    yield from self._stderr_notes()
                    yield self.mapper.end()
                    return
            try:
                record = self.process.next_record(timeout=self.poll)
            except queue.Empty:
                continue
            if record is None:
                raise self.process._exited("Pi exited during the run")
            if record.get("type") == "extension_ui_request":
                yield from self._ui(record)
                continue
            events = self.mapper.map(record)
            if self.mapper.settled:
                yield from self._stderr_notes()
            yield from events
        self._forget_answers()

    def _forget_answers(self) -> None:
        for ident in (self._prompt_id, self._abort_id):
            if ident is not None:
                with contextlib.suppress(PiCommandError, TimeoutError):
                    self.process.wait(ident, timeout=5)
        self._prompt_id = self._abort_id = None

    def _stderr_notes(self) -> Iterator[AgentEvent]:
        text = self.process.new_stderr().strip()
        if text:
            lines = text.splitlines()
            shown = lines[-10:]
            more = f" (last {len(shown)} of {len(lines)} lines)" if len(lines) > len(shown) else ""
            yield Notice(f"Pi's stderr{more}:\n" + "\n".join(shown))

    def _ui(self, request: dict[str, Any]) -> Iterator[AgentEvent]:
        method = request.get("method")
        if method == "notify":
            kind = request.get("notifyType") or "info"
            yield Notice(f"extension ({kind}): {request.get('message')}")
            return
        if method not in DIALOG_METHODS:
            return  # status lines, widgets, titles, editor text: a terminal's furniture
        try:
            answer = dict(self.ui(request))
        except KeyboardInterrupt:  # Pi waits on the dialog: release it before the abort
            self.process.send({"type": "extension_ui_response", "id": request.get("id"),
                               "cancelled": True})  # fmt: skip
            raise
        note = answer.pop("note", None)
        self.process.send({"type": "extension_ui_response", "id": request.get("id"), **answer})
        asked = request.get("title") or method
        if "confirmed" in answer:
            told = "yes" if answer["confirmed"] else "no"
        elif "value" in answer:
            told = json.dumps(answer["value"], ensure_ascii=False)[:200]
        else:
            told = "cancelled"
        yield Notice(f"extension asked ({method}) {asked!r}: {note or told}")
