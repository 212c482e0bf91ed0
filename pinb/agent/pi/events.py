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
it, so a run ends at ``agent_settled`` only. Ctrl-C sends ``abort``; a Pi that has not
settled a few seconds later (or at a second Ctrl-C) is killed, and the run ends as
aborted with a note. Every text from Pi that a run shows (notices, an error, a dialog's
question) goes through the process's ``redact`` function.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import queue
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ...llm.types import TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from ..events import (
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
from ..tool import ToolResult
from .rpc import PiEngineError, PiProcess

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
    """Turns Pi's records, one at a time, into the agent's events (see the module table).

    Parameters
    ----------
    redact:
        Applied to the texts from Pi the events show (notices, a retry's error, the
        run's error); ``None``: shown as they are.
    """

    def __init__(self, redact: Callable[[str], str] | None = None) -> None:
        self.redact = redact
        self.turns = 0
        #: The assistant messages of the run, as Pi saved them (``message_end``).
        self.messages: list[dict[str, Any]] = []
        self.settled = False
        self.aborted = False
        self._calls: dict[int, tuple[str, str]] = {}

    def map(self, record: dict[str, Any]) -> list[AgentEvent]:
        """The agent events one Pi record stands for (often none)."""
        return [self._redacted(event) for event in self._map(record)]

    def _redacted(self, event: AgentEvent) -> AgentEvent:
        if self.redact is None:
            return event
        if isinstance(event, Notice):
            return Notice(self.redact(event.text))
        if isinstance(event, RetryScheduled):
            return dataclasses.replace(event, error=self.redact(event.error))
        if isinstance(event, AgentEnd) and event.error:
            return dataclasses.replace(event, error=self.redact(event.error))
        return event

    def _map(self, record: dict[str, Any]) -> list[AgentEvent]:
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
            return [self._end()]
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
        end = self._redacted(self._end())
        assert isinstance(end, AgentEnd)
        return end

    def _end(self) -> AgentEnd:
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
        A started :class:`~pinb.agent.pi.rpc.PiProcess`; its ``redact`` function is
        applied to every text from Pi the run shows.
    message:
        The prompt.
    ui:
        Answers extension dialogs (select, confirm, input, editor); default
        :func:`cancel_dialog`. Each dialog and notification shows as a :class:`Notice`.
    poll:
        How often (seconds) the run looks at its deadline and Pi's notes while no record comes.
    abort_timeout:
        How long Pi has to settle after ``abort`` before pinb kills it.

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
        abort_timeout: float = 5.0,
    ) -> None:
        self.process = process
        self.message = message
        self.ui = ui
        self.poll = poll
        self.abort_timeout = abort_timeout
        self.mapper = PiEventMapper(redact=process.redact)
        self._prompt_id: str | None = None
        self._abort_id: str | None = None
        self._aborting = False
        self._noise_seen = process.bad_record_count

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
        """Send ``abort`` and yield the rest of the run (Pi saves the partial reply).

        A Pi that has not settled within ``abort_timeout`` seconds, or by a second Ctrl-C
        while this waits, is killed (its process group), and the run ends as aborted
        with a note saying so; the process is then not alive, so it is not used again.
        Dialogs asked meanwhile are cancelled without asking.
        """
        if self.mapper.settled:
            return
        self._aborting = True
        deadline = time.monotonic() + self.abort_timeout
        over = False
        try:
            try:
                self._abort_id = self.process.command("abort")
                yield from self._drain(deadline)
                why = f"within {self.abort_timeout:g} s of the abort"
            except KeyboardInterrupt:
                why = "before a second Ctrl-C"
            if not self.mapper.settled:
                yield from self.stop(why)
            over = True
        finally:
            if not over and not self.mapper.settled:
                # Left mid-abort (the reader stopped, or Pi failed): its state is unknown,
                # and a dead Pi is started anew rather than used again.
                self.process.kill()

    def stop(self, why: str = "before a second Ctrl-C") -> Iterator[AgentEvent]:
        """Kill Pi (its process group) and yield the run's end: a note, then ``aborted``.

        For a Pi that does not settle after ``abort``; :meth:`abort` calls it itself, and a
        caller whose second Ctrl-C lands outside :meth:`abort`'s wait can call it too.
        ``why`` completes "Pi did not stop …". A run that has settled is left alone: its
        end is all that is yielded.
        """
        if self.mapper.settled:
            yield self.mapper.end()
            return
        self.process.kill()
        self.mapper.settled = self.mapper.aborted = True
        self._prompt_id = self._abort_id = None
        yield Notice(
            f"Pi did not stop {why}, so pinb stopped it (killed its process group); "
            "its partial reply may be missing, and the next run starts a new Pi"
        )
        yield from self._end_notes()
        yield self.mapper.end()

    def _drain(self, deadline: float | None = None) -> Iterator[AgentEvent]:
        while not self.mapper.settled:
            if deadline is not None and time.monotonic() >= deadline:
                return
            for note in self.process.take_notes():
                yield Notice(note)
            if self._prompt_id is not None and self.process.answered(self._prompt_id):
                ident, self._prompt_id = self._prompt_id, None
                data = self.process.wait(ident, timeout=0)  # raises PiCommandError if refused
                if isinstance(data, dict) and data.get("disposition") == "handled":
                    # An extension command took the prompt: no run starts, none settles.
                    self.mapper.settled = True
                    yield from self._end_notes()
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
                yield from self._end_notes()
            yield from events
        self._forget_answers()

    def _forget_answers(self) -> None:
        for ident in (self._prompt_id, self._abort_id):
            if ident is not None:
                with contextlib.suppress(PiEngineError, TimeoutError):
                    self.process.wait(ident, timeout=5)
        self._prompt_id = self._abort_id = None

    def _end_notes(self) -> Iterator[AgentEvent]:
        """What the run has to say about Pi's output besides its events (all redacted)."""
        for note in self.process.take_notes():
            yield Notice(note)
        text = self.process.new_stderr().strip()
        if text:
            lines = text.splitlines()
            shown = lines[-10:]
            more = f" (last {len(shown)} of {len(lines)} lines)" if len(lines) > len(shown) else ""
            yield Notice(f"Pi's stderr{more}:\n" + "\n".join(shown))
        stray = self.process.bad_record_count - self._noise_seen
        if stray > 0:
            self._noise_seen += stray
            last = self.process.last_bad_record.decode("utf-8", "replace")
            what = f"{stray:,} lines to stdout that are not RPC records"
            if stray == 1:
                what = "a line to stdout that is not an RPC record"
            yield Notice(self.process.redact(f"Pi wrote {what}; skipped (the last: {last!r})"))

    def _ui(self, request: dict[str, Any]) -> Iterator[AgentEvent]:
        method = request.get("method")
        redact = self.process.redact
        if method == "notify":
            kind = request.get("notifyType") or "info"
            yield Notice(redact(f"extension ({kind}): {request.get('message')}"))
            return
        if method not in DIALOG_METHODS:
            return  # status lines, widgets, titles, editor text: a terminal's furniture
        shown, originals = _shown_request(request, redact)
        asked = shown.get("title") or method
        if self._aborting:  # the user asked to stop: not the moment for a question
            self.process.send({"type": "extension_ui_response", "id": request.get("id"),
                               "cancelled": True})  # fmt: skip
            yield Notice(f"extension asked ({method}) {asked!r}: cancelled: the run is aborting")
            return
        try:
            answer = dict(self.ui(shown))
        except KeyboardInterrupt:  # Pi waits on the dialog: release it before the abort
            self.process.send({"type": "extension_ui_response", "id": request.get("id"),
                               "cancelled": True})  # fmt: skip
            raise
        note = answer.pop("note", None)
        if "confirmed" in answer:
            told = "yes" if answer["confirmed"] else "no"
        elif "value" in answer:
            # What the user typed may be a secret the extension asked for.
            told = redact(json.dumps(answer["value"], ensure_ascii=False))[:200]
            if isinstance(answer["value"], str) and answer["value"] in originals:
                answer["value"] = originals[answer["value"]]  # Pi gets its own option back
        else:
            told = "cancelled"
        self.process.send({"type": "extension_ui_response", "id": request.get("id"), **answer})
        yield Notice(f"extension asked ({method}) {asked!r}: {note or told}")


def _shown_request(
    request: dict[str, Any], redact: Callable[[str], str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A dialog request as the user may see it (its texts redacted), and the original of
    each redacted option or prefill, so that choosing one answers Pi with its own text."""
    shown = dict(request)
    originals: dict[str, str] = {}
    for key in ("title", "message", "placeholder", "prefill"):
        if isinstance(request.get(key), str):
            shown[key] = redact(request[key])
    options = request.get("options")
    if isinstance(options, list):
        shown["options"] = [redact(o) if isinstance(o, str) else o for o in options]
        pairs = list(zip(shown["options"], options, strict=True))
    else:
        pairs = []
    pairs.append((shown.get("prefill"), request.get("prefill")))
    for seen, original in pairs:
        if isinstance(seen, str) and isinstance(original, str) and seen != original:
            originals.setdefault(seen, original)
    return shown, originals
