"""The agent loop: prompt → model turns → tool calls → tool results, all appended to a Pi session.

The loop yields events and prints nothing; the notebook magics and any other front end
render them. It shapes the file as Pi does (spec §10): one user entry, then per turn one
assistant entry followed by one ``toolResult`` entry per call; errors and aborts are saved
as Pi saves them. It compacts before a prompt when the context is over the threshold, and
on a context-overflow error it compacts and retries once (§6.6, §10.5).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import Session, convert_to_llm
from ..core.compaction import prepare_compaction
from ..core.operations import compact, compaction_due
from ..core.reports import CompactionReport
from ..core.summarize import ModelSummarizer, Summarizer
from ..core.tokens import CompactionSettings
from ..errors import NothingToCompactError
from ..llm.types import CancelToken, ChatModel, Done, ToolSpec
from .events import (
    AgentEnd,
    AgentEvent,
    CompactionDone,
    EntrySaved,
    ModelEvent,
    ToolEnd,
    ToolStart,
    TurnStart,
)
from .prompt import build_system_prompt
from .tool import Tool, ToolContext, ToolResult

__all__ = ["Agent", "AgentConfig"]

log = logging.getLogger("pinb.agent")

#: Tools that only look: several of them may run at the same time.
READ_ONLY_TOOLS = frozenset({"read", "ls", "grep", "find", "memory_recall"})


@dataclass
class AgentConfig:
    """Settings of an :class:`Agent`.

    Attributes
    ----------
    thinking_level:
        Pi's thinking level for the model (``off`` … ``xhigh``).
    max_turns:
        Safety stop for one prompt (model calls).
    compaction:
        Compaction settings; ``enabled`` turns automatic compaction on or off.
    system_prompt / append_system_prompt:
        Replace pinb's base prompt / add text after it.
    max_tokens:
        Output limit per response (``None``: the model's default).
    """

    thinking_level: str = "off"
    max_turns: int = 50
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    max_tokens: int | None = None


class Agent:
    """Runs prompts against a model with tools, appending everything to ``session``.

    Parameters
    ----------
    session:
        The Pi session to continue (its current leaf).
    model:
        A ``pinb.llm`` chat model (or ``pinb.testing.ScriptedLLM``).
    tools:
        Tools the model may call.
    config:
        See :class:`AgentConfig`.
    summarizer:
        Writes compaction summaries; default: the same model.
    cwd:
        Where tools run; default: the session's ``cwd``.
    """

    def __init__(
        self,
        session: Session,
        model: ChatModel,
        tools: Sequence[Tool] = (),
        *,
        config: AgentConfig | None = None,
        summarizer: Summarizer | None = None,
        cwd: str | Path | None = None,
        observer: Any = None,
    ) -> None:
        self.session = session
        self.model = model
        self.tools = list(tools)
        self.config = config or AgentConfig()
        self.summarizer = summarizer
        self.cwd = Path(cwd or session.cwd or ".")
        #: Optional memory observer (``pinb.memory.MemoryObserver``): it sees what a
        #: compaction is about to summarize, and each run's messages. Best-effort.
        self.observer = observer

    # -- public ---------------------------------------------------------------------------

    def run(
        self, prompt: str | list[dict[str, Any]], *, cancel: CancelToken | None = None
    ) -> Generator[AgentEvent, None, None]:
        """Run one prompt, yielding events (works inside a running event loop, e.g. Jupyter).

        Ctrl-C (KeyboardInterrupt) cancels the run: the partial reply is saved as
        ``aborted`` and the session stays consistent.
        """
        token = cancel or CancelToken()
        events: queue.Queue[Any] = queue.Queue()
        done = object()

        def worker() -> None:
            async def pump() -> None:
                async for event in self.arun(prompt, cancel=token):
                    events.put(event)

            try:
                asyncio.run(pump())
            except BaseException as exc:  # handed to the caller's thread
                events.put(exc)
            finally:
                events.put(done)

        thread = threading.Thread(target=worker, name="pinb-agent", daemon=True)
        thread.start()
        try:
            while True:
                try:
                    item = events.get(timeout=0.1)
                except queue.Empty:
                    continue
                if item is done:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        except BaseException:
            # Ctrl-C, or the consumer closed us: cancel, and let the run finish saving
            # (the aborted reply, error results) before stopping.
            token.cancel("interrupted")
            while thread.is_alive() or not events.empty():
                try:
                    if events.get(timeout=0.1) is done:
                        break
                except queue.Empty:
                    continue
            raise
        finally:
            thread.join(timeout=30)

    def prompt(
        self, prompt: str | list[dict[str, Any]], *, cancel: CancelToken | None = None
    ) -> AgentEnd:
        """Run one prompt to the end and return its :class:`AgentEnd`."""
        end: AgentEnd | None = None
        for event in self.run(prompt, cancel=cancel):
            if isinstance(event, AgentEnd):
                end = event
        assert end is not None
        return end

    async def arun(
        self, prompt: str | list[dict[str, Any]], *, cancel: CancelToken | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The loop itself, as an async generator of events."""
        token = cancel or CancelToken()
        session = self.session
        info = self.model.info
        settings = self.config.compaction.for_model(info.provider, info.id).fit_window(
            info.context_window
        )

        for entry in self._record_model_and_thinking():
            yield EntrySaved(entry)
        if compaction_due(session, info.context_window, settings):
            report = await self._compact("threshold", settings)
            if report is not None:
                yield CompactionDone(report)

        content = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else list(prompt)
        user_entry = session.append_message(
            {"role": "user", "content": content, "timestamp": _now_ms()}
        )
        yield EntrySaved(user_entry)

        specs = [ToolSpec(t.name, t.description, t.parameters) for t in self.tools]
        system_prompt = build_system_prompt(
            self.cwd,
            self.tools,
            custom=self.config.system_prompt,
            append=self.config.append_system_prompt,
        )
        replies: list[dict[str, Any]] = []
        overflow_retried = False
        turn = 0
        stop_reason = "stop"
        while True:
            turn += 1
            if turn > self.config.max_turns:
                stop_reason = "max_turns"
                break
            yield TurnStart(turn)
            messages = convert_to_llm(session.build_context().messages)
            final: Done | None = None
            async for event in self.model.astream(
                messages,
                system_prompt=system_prompt,
                tools=specs or None,
                max_tokens=self.config.max_tokens,
                thinking_level=self.config.thinking_level,
                cancel=token,
            ):
                if isinstance(event, Done):
                    final = event
                else:
                    yield ModelEvent(event)
            assert final is not None, "a model stream must end with Done"
            message = final.message
            entry = session.append_message(message, validate=False)
            replies.append(message)
            yield EntrySaved(entry)
            stop_reason = str(message.get("stopReason"))

            if (
                stop_reason == "error"
                and final.overflow
                and not overflow_retried
                and not token.cancelled
            ):
                overflow_retried = True
                report = await self._compact("overflow", settings)
                if report is not None:
                    yield CompactionDone(report)
                    continue  # retry once with the compacted context
            if stop_reason in ("error", "aborted"):
                break

            calls = [
                b
                for b in message.get("content") or []
                if isinstance(b, dict) and b.get("type") == "toolCall"
            ]
            if not calls:
                break
            async for tool_event in self._run_tools(calls, token):
                yield tool_event
            if token.cancelled:
                stop_reason = "aborted"
                break

        if stop_reason not in ("error", "aborted") and compaction_due(
            session, info.context_window, settings
        ):
            report = await self._compact("threshold", settings)
            if report is not None:
                yield CompactionDone(report)
        if self.observer is not None and replies:
            path = self.session.path_to()
            start = next((i for i, e in enumerate(path) if e is user_entry), 0)
            run_messages = [e.message for e in path[start:] if e.message]
            await asyncio.to_thread(self._observe, "end_of_run", run_messages)
        last = replies[-1] if replies else {}
        yield AgentEnd(stop_reason, replies, error=last.get("errorMessage"))

    # -- pieces ---------------------------------------------------------------------------

    def _record_model_and_thinking(self) -> list[Any]:
        """``model_change`` / ``thinking_level_change`` entries when they differ (§10.4)."""
        session = self.session
        context = session.build_context()
        info = self.model.info
        saved = []
        current = context.model or {}
        if current.get("provider") != info.provider or current.get("modelId") != info.id:
            saved.append(session.append_model_change(info.provider, info.id))
        recorded = any(e.type == "thinking_level_change" for e in context.path)
        if not recorded or context.thinking_level != self.config.thinking_level:
            saved.append(session.append_thinking_level_change(self.config.thinking_level))
        return saved

    async def _compact(self, reason: str, settings: CompactionSettings) -> CompactionReport | None:
        summarizer = self.summarizer or ModelSummarizer(self.model)
        if self.observer is not None:
            prepared = prepare_compaction(self.session.path_to(), settings)
            if prepared is not None:
                messages = [
                    p.message
                    for p in prepared.messages_to_summarize + prepared.turn_prefix_messages
                ]
                await asyncio.to_thread(self._observe, "before_compaction", messages)
        try:
            return await asyncio.to_thread(
                compact, self.session, summarizer, None, settings, reason=reason
            )
        except NothingToCompactError:
            return None

    def _observe(self, hook: str, messages: list[Any]) -> None:
        try:
            getattr(self.observer, hook)(messages, session=self.session)
        except Exception:  # observation must never break the conversation
            log.exception("memory observation (%s) failed", hook)

    async def _run_tools(
        self, calls: list[dict[str, Any]], token: CancelToken
    ) -> AsyncIterator[AgentEvent]:
        """Run a turn's tool calls (read-only ones concurrently) and save one result each."""
        by_name = {t.name: t for t in self.tools}
        context = ToolContext(cwd=self.cwd, session=self.session, cancel=token)

        async def execute(call: dict[str, Any]) -> ToolResult:
            name = str(call.get("name"))
            tool = by_name.get(name)
            if tool is None:
                return ToolResult.error(f"Tool {name} not found")
            arguments = call.get("arguments")
            if not isinstance(arguments, dict):
                return ToolResult.error(f"Invalid arguments for tool {name}: expected an object")
            missing = [k for k in tool.parameters.get("required", []) if k not in arguments]
            if missing:
                return ToolResult.error(
                    f"Invalid arguments for tool {name}: missing {', '.join(missing)}"
                )
            if token.cancelled:
                return ToolResult.error("Tool execution was aborted")
            try:
                return await asyncio.to_thread(tool.execute, arguments, context)
            except Exception as exc:  # a tool's failure is the model's information
                return ToolResult.error(f"{type(exc).__name__}: {exc}")

        # Consecutive read-only calls run together; anything that changes state runs alone.
        groups: list[list[dict[str, Any]]] = []
        for call in calls:
            if (
                groups
                and call.get("name") in READ_ONLY_TOOLS
                and all(c.get("name") in READ_ONLY_TOOLS for c in groups[-1])
            ):
                groups[-1].append(call)
            else:
                groups.append([call])
        for group in groups:
            for call in group:
                yield ToolStart(
                    str(call.get("id")), str(call.get("name")), dict(call.get("arguments") or {})
                )
            results = await asyncio.gather(*(execute(call) for call in group))
            for call, result in zip(group, results, strict=True):
                entry = self.session.append_message(
                    _tool_result_message(call, result), validate=False
                )
                yield ToolEnd(str(call.get("id")), str(call.get("name")), result, entry)


def _tool_result_message(call: dict[str, Any], result: ToolResult) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call.get("id"),
        "toolName": call.get("name"),
        "content": result.content,
    }
    if result.details is not None:
        message["details"] = result.details
    message["isError"] = result.is_error
    message["timestamp"] = _now_ms()
    return message


def _now_ms() -> int:
    return int(time.time() * 1000)
