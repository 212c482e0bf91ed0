"""The agent loop: prompt → model turns → tool calls → tool results, all appended to a Pi session.

The loop yields events and prints nothing; the notebook magics and any other front end
render them. It shapes the file as Pi 1.6 does (spec §10 and its 1.x addendum): the
prompt and tool set as ``system`` messages (patches when they change), one user entry,
then per turn one assistant entry followed by one ``toolResult`` entry per call.

Failed turns are handled as Pi 1.6 handles them: a transient failure (also one in the
middle of a reply) is saved, hidden from the model with ``context_edit`` null entries and
sent again after a backoff; a context overflow is saved, hidden, and followed by a
compaction and one retry. A prompt that cannot fit even then is hidden too, so the next
prompt works, and the run ends with one error that says what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import Session
from ..core.compaction.masking import MaskReport
from ..core.compaction.operations import compaction_due
from ..core.compaction.plan import prepare_compaction
from ..core.compaction.reports import CompactionReport
from ..core.compaction.summarize import ModelSummarizer, Summarizer
from ..core.context.build import SessionContext
from ..core.context.tokens import CompactionSettings, estimate_tokens
from ..core.file.writers import Holder, SessionBusyError, turn_holder
from ..core.format.entries import Entry
from ..errors import NothingToCompactError
from ..llm.limits import OutputLimit, choose_output_limit
from ..llm.pool import LoopFeed
from ..llm.providers.overflow import is_context_overflow, window_from_error
from ..llm.providers.retry import RetryPolicy
from ..llm.types import CancelToken, ChatModel, Done, RequestOptions, ToolSpec
from .batch import run_tool_calls
from .compact import mask_or_compact
from .events import (
    AgentEnd,
    AgentEvent,
    CompactionDone,
    EntrySaved,
    MaskingDone,
    ModelEvent,
    Notice,
    RetryScheduled,
    TurnStart,
    UsageEstimated,
)
from .prompt import build_system_prompt, prompt_sections
from .recovery import (
    can_hide,
    hide,
    is_retryable,
    pause,
    results_for_unrun_calls,
)
from .system import prompt_text, system_patch, tool_declarations
from .tool import Tool, ToolContext
from .tools.recall import RecallTool, recall_offered
from .usage import estimate_usage

__all__ = ["Agent", "AgentConfig"]

log = logging.getLogger("pinb.agent")


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
    retry:
        Retries of failed turns (Pi's ``retry`` settings: 3 retries, 2/4/8 s). The
        model's own request retries are switched off while the agent runs it, so each
        failure is saved and shown once.
    tool_choice:
        ``"auto"``, ``"required"``, ``"none"`` or a tool's name, sent with the first
        request of each prompt (later requests leave the choice to the model, which
        could otherwise never answer). Small local models call tools only when asked.
    """

    thinking_level: str = "off"
    max_turns: int = 50
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    max_tokens: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    tool_choice: str | None = None


@dataclass
class _Run:
    """What one prompt has seen so far (counters of the recovery rules)."""

    user_entry: Entry
    replies: list[dict[str, Any]] = field(default_factory=list)
    estimated: dict[int, dict[str, Any]] = field(default_factory=dict)
    retries: int = 0
    overflow_retried: bool = False
    made_room: bool = False  # compacted once because a request left no room for a reply
    answered: bool = False  # a reply succeeded: tool_choice is no longer sent
    error: str | None = None
    output_limit: str | None = None  # the last limit the window cut, said in the footer


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
        #: Tools the agent adds itself: ``recall``, once the path holds a compaction or a
        #: mask (to a run with tools, none of them named so).
        self.offered: list[Tool] = []

    def active_tools(self) -> list[Tool]:
        """The tools the model is offered now: the caller's, then the agent's own."""
        return [*self.tools, *self.offered]

    def _offer_tools(self) -> bool:
        """Offer ``recall`` once there is something to recall; ``True`` when the set changed.

        Never to a run without tools (``--no-tools``: the caller asked for none)."""
        if not self.tools or self.offered or any(t.name == RecallTool.name for t in self.tools):
            return False
        if not recall_offered(self.session):
            return False
        self.offered.append(RecallTool())
        return True

    # -- public ---------------------------------------------------------------------------

    def run(
        self, prompt: str | list[dict[str, Any]], *, cancel: CancelToken | None = None
    ) -> Generator[AgentEvent, None, None]:
        """Run one prompt, yielding events (works inside a running event loop, e.g. Jupyter).

        Ctrl-C (KeyboardInterrupt) cancels the run: the partial reply is saved as
        ``aborted`` and the session stays consistent.

        The run itself (:meth:`arun`) goes on pinb's shared event loop
        (:mod:`pinb.llm.pool`), so every request of every run reuses the process's
        connections; a second run on one session file from another thread is told
        "busy" at once, as a run in another process is (a run waits on a model: waiting
        for it would only delay the same answer).

        Raises
        ------
        SessionBusyError
            Another run of this process (the chat panel's, another thread's) holds the
            file's turn.
        """
        token = cancel or CancelToken()
        with _one_run_per_file(self.session):
            # On the process's shared loop, whose kept connections the model's requests
            # reuse; a feed hands the events to this thread (Jupyter's loop may be running).
            feed = LoopFeed(lambda: self.arun(prompt, cancel=token))
            try:
                yield from feed
            except BaseException:
                # Ctrl-C, or the consumer closed us: cancel, and let the run finish saving
                # (the aborted reply, error results) before stopping.
                token.cancel("interrupted")
                feed.wait()
                raise
            finally:
                feed.wait(timeout=30)

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
        """The loop itself, as an async generator of events.

        The run is one turn of the session (:meth:`pinb.core.Session.turn`): it holds the
        session's turn lock, continues from the file's leaf (after what Pi in a terminal or
        another kernel appended), and says so in a :class:`Notice`, as it does for entries
        another program appends while it runs.

        Raises
        ------
        SessionBusyError
            Another pinb writer (a cell in another kernel, a ``pinb`` command) is running a
            turn on this session.
        """
        end: AgentEnd | None = None
        with self.session.turn("pinb's agent", long=True) as turn:
            if turn.start_note():
                yield Notice(str(turn.start_note()))
            async for event in self._arun(prompt, cancel):
                if isinstance(event, AgentEnd):
                    end = event  # after the turn has settled, and its notes
                else:
                    yield event
        if turn.end_note():
            yield Notice(str(turn.end_note()))
        if end is not None:
            yield end

    async def _arun(
        self, prompt: str | list[dict[str, Any]], cancel: CancelToken | None
    ) -> AsyncIterator[AgentEvent]:
        token = cancel or CancelToken()
        session = self.session
        info = self.model.info
        session.run_window = (info.context_window, info.window_origin)  # what views show

        for entry in self._record_model_and_thinking():
            yield EntrySaved(entry)
        if compaction_due(session, info.context_window, self._settings()):
            async for event in self._auto_compact("threshold"):
                yield event

        # Offered from the first run after a compaction or a mask (a compaction inside a
        # run, on an overflow, keeps Pi's file shape: retry first, recall from the next run).
        self._offer_tools()
        specs = self._specs()
        for entry in self._record_system_prompt():
            yield EntrySaved(entry)
        content = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else list(prompt)
        user_entry = session.append_message(
            {"role": "user", "content": content, "timestamp": _now_ms()}
        )
        yield EntrySaved(user_entry)

        run = _Run(user_entry)
        turn = 0
        stop_reason = "stop"
        while True:
            turn += 1
            if turn > self.config.max_turns:
                stop_reason = "max_turns"
                break
            yield TurnStart(turn)
            model = self._request_model()  # per turn: an overflow may have taught a window
            context = session.current_context()
            # The session extends this context when the reply is appended: remember what
            # was sent (for a reply whose usage must be estimated).
            sent = len(context.messages)
            messages, system_prompt = self._request(context)
            request = self._options(system_prompt, specs, run)
            limit = self._output_limit(model, messages, request)
            if limit is not None and limit.starved and not self._alone_too_large(run):
                # A request that leaves no room for the reply would be sent with a limit of
                # a few tokens (and a tool call cut in its arguments): compact first ...
                compacted = False
                if not run.made_room and self._settings().enabled:
                    run.made_room = True
                    async for event in self._auto_compact("no room for the reply"):
                        compacted = compacted or isinstance(event, CompactionDone | MaskingDone)
                        yield event
                if compacted:
                    context = session.current_context()
                    sent = len(context.messages)
                    messages, system_prompt = self._request(context)
                    request = self._options(system_prompt, specs, run)
                    limit = self._output_limit(model, messages, request)
                if limit is not None and limit.starved:
                    # ... and never send one: a reply of a few tokens is no answer.
                    for edit in self._leave_out(run):
                        yield EntrySaved(edit)
                    run.error = self._no_room_reason(limit, compacted, self._settings().enabled)
                    stop_reason = "error"
                    break
            final: Done | None = None
            async for model_event in model.astream(messages, request, cancel=token):
                if isinstance(model_event, Done):
                    final = model_event
                else:
                    yield ModelEvent(model_event)
            assert final is not None, "a model stream must end with Done"
            limit = getattr(final, "output_limit", None)
            if limit is not None and limit.capped:
                run.output_limit = str(limit)
            message = final.message
            entry = session.append_message(message, validate=False)
            run.replies.append(message)
            yield EntrySaved(entry)
            stop_reason = str(message.get("stopReason"))
            if stop_reason not in ("error", "aborted"):
                run.answered = True
                run.retries = 0
                if not final.usage_reported:
                    estimate = self._estimate_usage(context, context.messages[:sent], message)
                    run.estimated[len(run.replies) - 1] = estimate
                    yield UsageEstimated(entry, estimate)
            else:
                closed = [
                    session.append_message(result, validate=False)
                    for result in (results_for_unrun_calls(message) if can_hide(session) else [])
                ]
                for result_entry in closed:
                    yield EntrySaved(result_entry)
                if stop_reason == "error" and not token.cancelled:
                    retry: bool | None = None
                    async for step in self._recover(run, final, entry, closed, token):
                        if isinstance(step, bool):
                            retry = step
                        else:
                            yield step
                    if retry:
                        continue
                elif closed:
                    for edit in hide(session, closed):  # the reply stays; its results go
                        yield EntrySaved(edit)
                if token.cancelled:
                    stop_reason = "aborted"
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
            session, self.model.info.context_window, self._settings()
        ):
            async for event in self._auto_compact("threshold"):
                yield event
        if self.observer is not None and run.replies:
            path = self.session.path_to()
            start = next((i for i, e in enumerate(path) if e is user_entry), 0)
            run_messages = [e.message for e in path[start:] if e.message]
            await asyncio.to_thread(self._observe, "end_of_run", run_messages)
        last = run.replies[-1] if run.replies else {}
        error = run.error or (last.get("errorMessage") if stop_reason == "error" else None)
        yield AgentEnd(
            stop_reason,
            run.replies,
            error=error,
            estimated=run.estimated,
            output_limit=run.output_limit,
        )

    # -- requests -------------------------------------------------------------------------

    def _specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.parameters) for t in self.active_tools()]

    def _settings(self) -> CompactionSettings:
        """Compaction settings for this model, fitted to its (possibly learned) window."""
        info = self.model.info
        return self.config.compaction.for_model(info.provider, info.id).fit_window(
            info.context_window
        )

    def _alone_too_large(self, run: _Run) -> bool:
        """Whether the prompt alone is larger than the window (no compaction can help)."""
        window = self.model.info.context_window
        prompt_tokens = estimate_tokens(run.user_entry.message, pi=self.session.pi)
        return bool(window) and prompt_tokens >= window

    def _options(self, system_prompt: str, specs: list[ToolSpec], run: _Run) -> RequestOptions:
        """The rest of the next request: the prompt, the tools, the configured limit and
        thinking, and the configured ``tool_choice`` until a reply has succeeded."""
        return RequestOptions(
            system_prompt=system_prompt,
            tools=specs,
            max_tokens=self.config.max_tokens,
            thinking_level=self.config.thinking_level,
            tool_choice=(self.config.tool_choice or None) if specs and not run.answered else None,
        )

    def _output_limit(
        self, model: ChatModel, messages: list[dict[str, Any]], request: RequestOptions
    ) -> OutputLimit | None:
        """The output limit the next request would carry (``None``: the model cannot say).

        `pinb.llm.limits.OutputLimit.starved` says when the window leaves the reply too
        little."""
        measure = getattr(model, "request_tokens", None)
        info = self.model.info
        if not callable(measure) or not info.context_window:
            return None
        prompt_tokens = measure(messages, request)
        return choose_output_limit(info, int(prompt_tokens), request.max_tokens)

    def _leave_out(self, run: _Run) -> list[Entry]:
        """Leave the run out of later context, so the next prompt meets the one that worked."""
        session = self.session
        if can_hide(session):
            return hide(session, self._run_entries(run))
        parent = run.user_entry.parent_id  # v0.58.3 has no context edits: step back instead
        if isinstance(parent, str) and parent:
            session.branch(parent)
        else:
            session.reset_leaf()
        return []

    @staticmethod
    def _no_room_reason(limit: OutputLimit, compacted: bool, auto: bool) -> str:
        after = "even after compacting, " if compacted else ""
        then = (
            "shorten or split it, or use a model with a larger window (%pi model provider/model)"
            if auto
            else "automatic compaction is off: %pi compact, then run the cell again"
        )
        return (
            f"No room for a reply: {after}the request takes about {limit.prompt_tokens:,} of "
            f"the model's {limit.window:,}-token window and would leave the reply "
            f"{limit.tokens:,} token{'s' if limit.tokens != 1 else ''}, so it was not sent. "
            f"This prompt was left out of the context, so the next cell works; {then}"
        )

    def _request_model(self) -> ChatModel:
        """The model with its own request retries off: the agent retries turns itself."""
        with_retry = getattr(self.model, "with_retry", None)
        if callable(with_retry):
            return with_retry(RetryPolicy(max_retries=0))  # type: ignore[no-any-return]
        return self.model

    def _request(self, context: SessionContext) -> tuple[list[dict[str, Any]], str]:
        """Messages and system prompt for the next request.

        The system messages of the branch are replayed into one prompt sent in front
        (what providers without mid-conversation system messages need, and what every
        provider pinb speaks accepts).
        """
        # The session keeps this list and extends it on append: the request gets its own.
        messages = list(context.to_llm(system=False))
        if can_hide(self.session):
            return messages, prompt_text(context.system_message())
        return messages, self._system_prompt()

    def _system_prompt(self) -> str:
        return build_system_prompt(
            self.cwd,
            self.active_tools(),
            custom=self.config.system_prompt,
            append=self.config.append_system_prompt,
        )

    def system_prompt_patch(self) -> dict[str, Any] | None:
        """The ``system`` message this agent's next run appends (its prompt or tools differ
        from the branch's replay: after a Pi cell, say), or ``None``. Nothing is written."""
        if not can_hide(self.session):  # v0.58.3 knows no system messages
            return None
        tools = self.active_tools()
        sections = prompt_sections(
            self.cwd,
            tools,
            custom=self.config.system_prompt,
            append=self.config.append_system_prompt,
        )
        return system_patch(
            self.session.current_context().system_message(), sections, tool_declarations(tools)
        )

    def _record_system_prompt(self) -> list[Entry]:
        """A ``system`` message when the prompt or tools differ from the branch's replay."""
        patch = self.system_prompt_patch()
        if patch is None:
            return []
        return [self.session.append_message(patch, validate=False)]

    def _estimate_usage(
        self, context: SessionContext, sent_messages: Sequence[Any], message: dict[str, Any]
    ) -> dict[str, Any]:
        """chars/4 of what was sent and what came back, for a reply without usage."""
        return estimate_usage(
            context,
            sent_messages,
            message,
            system_prompt=self._system_prompt() if context.system_message() is None else "",
            cost=self.model.info.cost,
        )

    # -- failed turns ---------------------------------------------------------------------

    async def _recover(
        self, run: _Run, final: Done, entry: Entry, results: list[Entry], token: CancelToken
    ) -> AsyncIterator[AgentEvent | bool]:
        """Decide what follows a failed reply; the last item is True to send it again."""
        message = final.message
        error = str(message.get("errorMessage") or "the request failed")
        window = self.model.info.context_window
        if final.overflow or is_context_overflow(message, window):
            async for event in self._recover_overflow(run, error, [entry, *results]):
                yield event
            return
        policy = self.config.retry
        too_long = final.retry_after is not None and final.retry_after > policy.max_retry_after
        if not is_retryable(final) or too_long or not policy.should_retry(run.retries + 1):
            if run.retries:
                run.error = f"{error} (gave up after {run.retries} retries)"
            for edit in hide(self.session, results):
                yield EntrySaved(edit)
            yield False
            return
        run.retries += 1
        for edit in hide(self.session, [entry, *results]):
            yield EntrySaved(edit)
        delay = policy.delay(run.retries, final.retry_after)
        yield RetryScheduled(run.retries, policy.max_retries, delay, error)
        yield await pause(delay, token, policy)

    async def _recover_overflow(
        self, run: _Run, error: str, failed: list[Entry]
    ) -> AsyncIterator[AgentEvent | bool]:
        """Overflow: hide the attempt, compact, retry once; a prompt that cannot fit is hidden."""
        session = self.session
        learned = window_from_error(error)
        info = self.model.info
        if learned and learned < info.context_window:
            # The server said how large its window is: plan for that from now on.
            with contextlib.suppress(AttributeError):  # a model with read-only info
                self.model.info = dataclasses.replace(
                    info, context_window=learned, window_source="server", note=""
                )
            session.run_window = (learned, "server")
            yield Notice(f"the server's context window is {learned:,} tokens; using that")
        window = self.model.info.context_window
        for edit in hide(session, failed):
            yield EntrySaved(edit)
        prompt_tokens = estimate_tokens(run.user_entry.message, pi=session.pi)
        if self._alone_too_large(run):
            reason = (
                f"your message alone is about {prompt_tokens:,} tokens, more than the "
                f"model's whole context window ({window:,} tokens)"
            )
        elif run.overflow_retried:
            reason = "it still does not fit the context window after compacting"
        else:
            run.overflow_retried = True
            report: CompactionReport | MaskReport | None = None
            async for event in self._auto_compact("overflow"):
                if isinstance(event, CompactionDone | MaskingDone):
                    report = event.report
                yield event
            if report is not None:
                yield True
                return
            reason = "compacting the conversation could not make room for it"
        # Hide the whole run, so the next prompt meets the context that worked before.
        for edit in self._leave_out(run):
            yield EntrySaved(edit)
        run.error = (
            f"Context overflow: {reason}. This prompt and its replies were left out of the "
            "context, so the next cell works; shorten or split the prompt, or use a model "
            f"with a larger window (%pi model provider/model). Server: {error}"
        )
        yield False

    def _run_entries(self, run: _Run) -> list[Entry]:
        path = self.session.path_to()
        start = next((i for i, e in enumerate(path) if e is run.user_entry), len(path))
        return path[start:]

    def _record_model_and_thinking(self) -> list[Any]:
        """``model_change`` / ``thinking_level_change`` entries when they differ (§10.4)."""
        session = self.session
        context = session.current_context()
        info = self.model.info
        saved = []
        current = context.model or {}
        if current.get("provider") != info.provider or current.get("modelId") != info.id:
            saved.append(session.append_model_change(info.provider, info.id))
        recorded = any(e.type == "thinking_level_change" for e in context.path)
        if not recorded or context.thinking_level != self.config.thinking_level:
            saved.append(session.append_thinking_level_change(self.config.thinking_level))
        return saved

    async def _auto_compact(self, reason: str) -> AsyncIterator[AgentEvent]:
        """An automatic compaction; a failure is a notice, never the end of the run."""
        try:
            report = await self._compact(reason, self._settings())
        except Exception as exc:  # a summary request that failed leaves the session as it was
            log.info("automatic compaction (%s) failed: %s", reason, exc)
            yield Notice(f"automatic compaction failed: {exc}")
            return
        if isinstance(report, MaskReport):
            for edit in report.edit_ids:
                yield EntrySaved(self.session[edit])
            yield MaskingDone(f"{report.describe()} ({report.reason})", report)
        elif report is not None:
            yield CompactionDone(report)

    async def _compact(
        self, reason: str, settings: CompactionSettings
    ) -> CompactionReport | MaskReport | None:
        summarizer = self.summarizer or ModelSummarizer(self.model)
        if self.observer is not None and settings.strategy != "mask-first":
            prepared = prepare_compaction(self.session.path_to(), settings)
            if prepared is not None:
                messages = [
                    p.message
                    for p in prepared.messages_to_summarize + prepared.turn_prefix_messages
                ]
                await asyncio.to_thread(self._observe, "before_compaction", messages)
        try:
            return await asyncio.to_thread(
                mask_or_compact,
                self.session,
                summarizer,
                None,
                settings,
                reason=reason,
                context_window=self.model.info.context_window,
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
        context = ToolContext(cwd=self.cwd, session=self.session, cancel=token)
        tools = self.active_tools()
        async for event in run_tool_calls(tools, calls, self.session, context, token):
            yield event


#: Session files (normalised paths) with a run on the shared loop, and their guard.
_RUNNING: set[str] = set()
_RUNNING_CHANGED = threading.Condition()


@contextlib.contextmanager
def _one_run_per_file(session: Session) -> Iterator[None]:
    """One run per session file at a time, among this process's threads.

    The turn lock is re-entrant per thread, and every run now shares the loop's thread:
    without this, a second thread's run on the same file would enter the first's turn
    instead of waiting for it (and waiting on the loop's thread would stall every run).
    A run waits on a model, so the second is told "busy" at once, naming the first's turn
    when it holds the lock (the chat panel, a cell), as a run in another process is.
    """
    path = session.path
    if path is None:
        yield
        return
    key = os.path.normcase(os.path.abspath(path))
    with _RUNNING_CHANGED:
        if key in _RUNNING:
            holder = turn_holder(path) or Holder(
                "another thread of this process", os.getpid(), who="another run of this process"
            )
            raise SessionBusyError(path, holder)
        _RUNNING.add(key)
    try:
        yield
    finally:
        with _RUNNING_CHANGED:
            _RUNNING.discard(key)
            _RUNNING_CHANGED.notify_all()


def _now_ms() -> int:
    return int(time.time() * 1000)
