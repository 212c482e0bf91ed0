"""The user's own Pi (``pi --mode rpc``) as an engine of turns on pinb's session file.

A :class:`PiEngine` keeps one Pi process for the current session file: started at the
first run (in the session's cwd, with ``--session``, ``--model`` and ``--thinking``), told
to read the file again whenever its in-memory session no longer agrees with the file
(another writer appended, or Pi's own write failed), started again with a one-line note
if it died, and closed when its owner moves to another session and when the process
exits. Every run and command is a turn of the session (:meth:`pinb.core.Session.turn`);
afterwards pinb reads the lines Pi wrote, so every view and the next built-in turn see
them.

The engine shows nothing itself: whoever runs it (a notebook cell, the chat panel) passes
``show``, which receives every event of the run (:mod:`pinb.agent.events`, Pi's mapped by
:mod:`pinb.agent.pi.events`), and ``ui``, which answers Pi's extension dialogs (Pi's
cancel by default). The notebook's cell and its routed ``%pi`` commands are
:mod:`pinb.notebook.magics.pi`; the chat's turns are :mod:`pinb.chat.turns`.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import queue
import re
import subprocess
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ...core import Session
from ...core.context.tokens import CompactionSettings, estimate_projected_tokens
from ...core.file.paths import agent_dir
from ...core.file.sharing import Turn
from ...core.file.writers import SessionHold, default_who, describe_process
from ...llm.config.pi_config import models_json_problem, pi_small_window
from ...llm.config.secrets import redact_secrets
from ...llm.providers.overflow import is_context_overflow
from ..events import AgentEnd, AgentEvent, Notice
from ..usage import estimate_usage, reported_nothing
from .events import PiEventMapper, PiRun, UIHandler, cancel_dialog
from .limits import PiCannotFitError, pi_reply_room
from .rpc import (
    PiCommandError,
    PiEngineError,
    PiExitedError,
    PiProcess,
    resolve_pi_command,
)

__all__ = [
    "ENGINES",
    "PI_TASK",
    "PI_THINKING",
    "PiEngine",
    "PiEngineError",
    "PiExitedError",
    "reread",
    "with_estimates",
]

#: Who can answer a turn: pinb's built-in agent, or the user's Pi (the notebook's
#: ``PiMagics.engine`` and the chat's ``engine`` setting take one of these).
ENGINES = ("pinb", "pi")
#: Pi 1.x's thinking levels (``max`` is Pi's, beyond pinb's own list).
PI_THINKING = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
#: What a Pi engine's turn runs, for the "busy" answer other writers get.
PI_TASK = "your Pi (Pi engine)"


class PiEngine:
    """The user's Pi as the engine of ``%%pi`` cells.

    Parameters
    ----------
    command:
        The configured command line (``%config PiMagics.pi_command``); ``$PINB_PI_COMMAND``
        wins, ``pi`` on ``PATH`` is the default (:func:`~pinb.agent.pi.rpc.resolve_pi_command`).
    ui:
        Answers Pi's extension dialogs (select, confirm, input, editor); default Pi's
        cancel. A notebook asks in the cell (:func:`pinb.notebook.dialogs.ask_in_cell`).
    env:
        Pi's environment; default the kernel's, read at each start.
    extra_args:
        More ``pi`` arguments for every start.
    settings:
        The compaction settings Pi reads (its ``settings.json`` files), to say at start-up
        when they do not fit the model's window.
    role, who:
        Who runs Pi's turns, for the "busy" answer other writers get and their notes of
        who appended what (:mod:`pinb.core.file.writers`); default a notebook cell's Pi engine.
        The chat panel names itself.

    Examples
    --------
    >>> engine = PiEngine("pi", role="chat", who="the chat panel (demo.chat)")
    >>> engine.process is None  # started by the first run
    True
    """

    def __init__(
        self,
        command: str | Callable[[], str] = "",
        *,
        ui: UIHandler = cancel_dialog,
        env: dict[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
        settings: Callable[[], CompactionSettings] | None = None,
        role: str = "",
        who: str = "",
    ) -> None:
        self._command = command
        self.role = role or "cell"
        self.who = who or f"the Pi engine of {default_who('cell')}"
        self.ui = ui
        self.env = env
        self.extra_args = extra_args
        self.settings = settings
        self.process: PiProcess | None = None
        #: The session file the process has open.
        self.session_file: Path | None = None
        #: Marks that file as held while Pi runs on it (``pinb rm`` refuses to move it).
        self._hold: SessionHold | None = None
        self._notes: list[str] = []
        #: The first words of the next cell after one that ended on an overflow.
        self._overflowed = ""
        self._exit_hook = _close_at_exit(self)

    # -- the process ----------------------------------------------------------------------

    def command_line(self) -> list[str]:
        configured = self._command() if callable(self._command) else self._command
        return resolve_pi_command(configured, self.env)

    def ensure(
        self, session: Session, cwd: Path, model: str | None, thinking: str | None
    ) -> PiProcess:
        """The running Pi for ``session``'s file, started, restarted or brought up to date.

        Call it within the session's turn (:meth:`pinb.core.Session.turn`), which has read
        what others appended: a running Pi is then made to agree with the file
        (:meth:`sync`), a new one starts on it.

        Raises
        ------
        PiNotFoundError, PiHandshakeError, PiExitedError
            Pi is missing, too old, or stopped at start-up (its own error).
        """
        path = session.require_path().resolve()
        process = self.process
        if process is not None and self.session_file != path:
            self.close()
            process = None
        if process is not None and not process.alive:
            code = process.returncode
            tail = process.new_stderr().strip().splitlines()
            self._notes.append(
                f"Pi had stopped (exit status {code}); started it again"
                + (f" — its last stderr line: {tail[-1]}" if tail else "")
            )
            process.close()
            self.process = process = None
        if process is None:
            if session.entries:
                session.keep_leaf()  # Pi starts at the file's last line: make it our leaf
            process = self._start(path, cwd, model, thinking)
            self.process, self.session_file = process, path
            self._hold = SessionHold(path, self._holder_text(process)).acquire()
            self._check_window(process)
        else:
            self.sync(session)
        self._apply(process, model, thinking)
        return process

    def _start(self, path: Path, cwd: Path, model: str | None, thinking: str | None) -> PiProcess:
        """A new ``pi --mode rpc``; a model Pi cannot find says why, in Pi's words or ours."""
        command = self.command_line()
        env = dict(os.environ) if self.env is None else self.env
        process = PiProcess(
            command,
            session_file=path,
            cwd=cwd,
            model=model or None,
            thinking=thinking or None,
            env=env,
            extra_args=self.extra_args,
            # Every text of Pi's that pinb shows: the keys of the environment Pi runs in.
            redact=lambda text: redact_secrets(text, env=env),
        )
        try:
            return process.start()
        except PiExitedError as exc:
            missing = _NOT_FOUND.search(exc.stderr or "")
            if missing is None:
                raise
            why = models_json_problem(missing.group(1), agent_dir(env)) or _list_models_warning(
                command, env, cwd
            )
            if not why:
                raise
            raise PiExitedError(
                process.redact(f"Pi cannot use the model {missing.group(1)}: {why}"),
                exc.returncode,
                "",
            ) from None

    def _explained(self, process: PiProcess, exc: PiCommandError) -> PiCommandError:
        """Pi's refusal of a prompt in one line, with what is wrong in models.json if that
        is why (Pi 1.6 finds no key for a custom provider that names none)."""
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "Pi refused the prompt"
        info = process.state.get("model") or {}
        env = dict(os.environ) if self.env is None else self.env
        spec = f"{info.get('provider')}/{info.get('id')}"
        why = models_json_problem(spec, agent_dir(env)) if info else None
        return PiCommandError(exc.command, process.redact(f"{first} {why}" if why else first))

    def _check_window(self, process: PiProcess) -> None:
        """Say once, at start-up, when Pi's compaction settings do not fit its model."""
        info = process.state.get("model") or {}
        window = info.get("contextWindow")
        if self.settings is None or not isinstance(window, int):
            return
        spec = f"{info.get('provider')}/{info.get('id')}"
        small = pi_small_window(spec, window, self.settings())
        if small is not None:
            self._notes.append(small.line())

    def sync(self, session: Session) -> None:
        """Make Pi's in-memory session agree with the file before Pi writes to it.

        Pi keeps its leaf in memory and never reads its file again, so a turn written by
        pinb's agent, by ``pi`` in a terminal or by another kernel since Pi last wrote (or a
        line Pi failed to write, on a full disk) would leave Pi's next entry hanging off an
        old leaf. Pi is asked for the entries after the file's last one (``get_entries``):
        unless it knows that entry, has nothing after it and stands on it, it reads the
        file again (``switch_session``) and so continues from the file's leaf.
        """
        process = self.process
        path = self.session_file
        if process is None or path is None or not session.entries:
            return
        session.keep_leaf()  # the file resumes where pinb stands (after a %pi goto, say)
        last = session.entries[-1].id
        try:
            data = process.request("get_entries", since=last) or {}
            in_sync = not data.get("entries") and data.get("leafId") == last
        except PiCommandError:  # Pi does not know that entry: it has not read it
            in_sync = False
        if in_sync:
            return
        answer = process.request("switch_session", sessionPath=str(path)) or {}
        if answer.get("cancelled"):
            self._notes.append(
                "an extension kept Pi from reading the session file again: Pi continues "
                "from where it last was, not from the file's last entry"
            )
        # The file's last model and thinking level are Pi's again: compare with those.
        process.state.update(process.request("get_state"))

    def _holder_text(self, process: PiProcess) -> str:
        return f"{describe_process()} with its Pi engine (Pi's pid {process.pid})"

    def _apply(self, process: PiProcess, model: str | None, thinking: str | None) -> None:
        state_model = process.state.get("model") or {}
        current = f"{state_model.get('provider')}/{state_model.get('id')}" if state_model else None
        if model and model != current:
            provider, _, model_id = model.partition("/")
            process.state["model"] = process.request(
                "set_model", provider=provider, modelId=model_id
            )
        if thinking and thinking != process.state.get("thinkingLevel"):
            process.request("set_thinking_level", level=thinking)
            # Pi clamps the level to what the model supports: keep what it chose.
            process.state.update(process.request("get_state"))

    def close(self) -> None:
        """Stop the process (if any); the next Pi cell starts a new one."""
        process, self.process = self.process, None
        self.session_file = None
        hold, self._hold = self._hold, None
        try:
            if process is not None:
                process.close()
        finally:
            if hold is not None:
                hold.release()

    # -- after Pi wrote --------------------------------------------------------------------

    def _pi_entries(self, since: str | None) -> tuple[Any, set[Any]] | None:
        """Pi's leaf and the ids of the entries it holds after ``since`` (``None``: unknown)."""
        process = self.process
        if process is None or not process.alive:
            return None
        try:
            data = (
                process.request("get_entries", since=since)
                if since is not None
                else process.request("get_entries")
            ) or {}
        except (PiCommandError, PiExitedError, TimeoutError):
            return None
        entries = data.get("entries")
        ids = (
            {e.get("id") for e in entries if isinstance(e, dict)}
            if isinstance(entries, list)
            else set()
        )
        return data.get("leafId"), ids

    def _follow_pi(self, session: Session, turn: Turn, since: str | None) -> None:
        """After Pi wrote: read the file, stand on Pi's leaf, tell Pi's entries from others'.

        Entries Pi did not write (``pi`` in a terminal during the cell) are the turn's
        ``others``, and the turn ends with the file resuming at Pi's leaf.
        """
        new = session.refresh(follow=False)
        found = self._pi_entries(since)
        if found is None:  # Pi is gone: nothing to tell them apart by
            turn.others.clear()
            session.refresh()
            if new and not session.at_file_leaf:
                session.branch(session.entries[-1].id, persist=False)
            return
        leaf, ids = found
        turn.others[:] = [e for e in new if e.id not in ids]
        if leaf in session:
            session.branch(leaf, persist=False)
        elif leaf is not None:
            self._notes.append(
                f"Pi's last entry ({leaf}) is not in the session file (Pi could not write "
                "it: a full disk?); the next Pi cell has Pi read the file again"
            )

    # -- a cell ---------------------------------------------------------------------------

    def run(
        self,
        session: Session,
        prompt: str,
        *,
        cwd: Path,
        model: str | None,
        thinking: str | None,
        show: Callable[[AgentEvent], None],
    ) -> AgentEnd:
        """Run ``prompt`` through Pi, feeding every event to ``show``; return the run's end.

        The run is a turn of the session: other pinb writers wait or hear "busy", Pi first
        agrees with the file (:meth:`sync`), and the session stands on Pi's last entry
        afterwards. Ctrl-C sends ``abort`` and the run ends with the partial reply Pi
        saved. A Pi that dies mid-run raises :class:`~pinb.agent.pi.rpc.PiExitedError`
        with its last stderr lines; what it had saved stays in the file, which stays valid.
        """
        end: AgentEnd | None = None
        with session.turn(PI_TASK, long=True, role=self.role, who=self.who) as turn:
            if turn.start_note():
                show(Notice(str(turn.start_note())))
            process = self.ensure(session, cwd, model, thinking)
            since = session.entries[-1].id if session.entries else None
            self._show_notes(show)
            try:
                self._check_room(session, process, prompt)
                run = PiRun(process, prompt, ui=self.ui)
                try:
                    end = _feed(run.events(), show)
                except PiCommandError as exc:
                    raise self._explained(process, exc) from None
                except KeyboardInterrupt:
                    show(Notice("interrupted: Pi was told to abort; its partial reply is saved"))
                    try:
                        end = _feed(run.abort(), show)
                    except KeyboardInterrupt:  # a second Ctrl-C while the abort was drawn
                        end = _feed(run.stop(), show)
            finally:
                self._after(session, turn, since)
                self._compactions_grown(session, since, show)
        if turn.end_note():
            show(Notice(str(turn.end_note())))
        self._show_notes(show)
        assert end is not None
        self._overflowed = self._overflow_line(process, end)
        return end

    def _check_room(self, session: Session, process: PiProcess, prompt: str) -> None:
        """Stop a cell Pi would send with no room for a reply (Pi 1.6's own clamp of its
        output limit), saying why and what works; after an overflow, say how to recover."""
        info = process.state.get("model") or {}
        window, max_tokens = info.get("contextWindow"), info.get("maxTokens")
        overflowed, self._overflowed = self._overflowed, ""
        if not isinstance(window, int) or window <= 0 or not isinstance(max_tokens, int):
            return
        room = pi_reply_room(
            session.current_context().messages,
            prompt,
            spec=f"{info.get('provider')}/{info.get('id')}",
            window=window,
            max_tokens=max_tokens,
        )
        if room.starved:
            raise PiCannotFitError(f"{overflowed} {room.line()}" if overflowed else room.line())

    @staticmethod
    def _overflow_line(process: PiProcess, end: AgentEnd) -> str:
        """What the next cell says first when this one ended on an overflow Pi could not
        compact its way out of."""
        info = process.state.get("model") or {}
        window = info.get("contextWindow")
        last = end.messages[-1] if end.messages else {}
        if end.stop_reason != "error" or not is_context_overflow(last):
            return ""
        size = f"{window:,}-token " if isinstance(window, int) else ""
        return (
            f"Pi's last request overflowed the {size}window and Pi could not compact its way "
            "out:"
        )

    def _compactions_grown(
        self, session: Session, since: str | None, show: Callable[[AgentEvent], None]
    ) -> None:
        """Report a compaction Pi wrote in this cell that left the context larger than it
        found it (a small model's summary as long as what it summarized)."""
        entries = session.entries
        start = next((i + 1 for i, e in enumerate(entries) if e.id == since), 0)
        for entry in entries[start:]:
            before = entry.raw.get("tokensBefore") if entry.type == "compaction" else None
            if not isinstance(before, int) or before <= 0:
                continue
            after = estimate_projected_tokens(session.build_context(entry.id)).tokens
            if after >= before:
                show(
                    Notice(
                        f"Pi's compaction made the context larger, not smaller: {before:,} → "
                        f"≈{after:,} tokens (its summary is longer than what it replaced); "
                        "a built-in cell (`%%pi --engine pinb`) compacts with a summary "
                        "fitted to the window"
                    )
                )

    def request(
        self,
        session: Session,
        cwd: Path,
        kind: str,
        *,
        show: Callable[[AgentEvent], None] | None = None,
        **fields: Any,
    ) -> Any:
        """Send one command (``compact``, ``fork`` …) to the session's Pi and wait for it.

        The events Pi sent while it carried the command out (``compaction_start`` … ``_end``)
        are shown through ``show`` here, in the cell that ran the command, not at the top of
        the next one.
        """
        with session.turn(PI_TASK, long=True, role=self.role, who=self.who) as turn:
            process = self.ensure(session, cwd, None, None)
            since = session.entries[-1].id if session.entries else None
            try:
                return process.request(kind, timeout=None if kind == "compact" else 60.0, **fields)
            finally:
                self._drain(process, show)
                self._after(session, turn, since)

    @staticmethod
    def _drain(process: PiProcess, show: Callable[[AgentEvent], None] | None) -> None:
        """Show (or drop) the events Pi queued while it carried out a command."""
        mapper = PiEventMapper(redact=process.redact)
        if show is not None:
            for note in process.take_notes():
                show(Notice(note))
        while True:
            try:
                record = process.next_record(timeout=0.05)
            except queue.Empty:
                return
            if record is None:
                return
            for event in mapper.map(record):
                if show is not None and isinstance(event, Notice):
                    show(event)

    def configure(
        self, session: Session, cwd: Path, model: str | None, thinking: str | None
    ) -> PiProcess:
        """Start Pi on the session (if needed) with ``model`` / ``thinking``, as a turn:
        Pi records a model or thinking change in the file."""
        with session.turn(PI_TASK, long=True, role=self.role, who=self.who) as turn:
            since = session.entries[-1].id if session.entries else None
            try:
                return self.ensure(session, cwd, model, thinking)
            finally:
                self._after(session, turn, since)

    def _after(self, session: Session, turn: Turn, since: str | None) -> None:
        path = session.path
        if path is not None and path.exists() and session.entries:
            self._follow_pi(session, turn, since)

    def _show_notes(self, show: Callable[[AgentEvent], None]) -> None:
        for note in self._notes:
            show(Notice(note))
        self._notes.clear()

    def current_file(self) -> Path | None:
        """The session file Pi has open now (``fork`` moves Pi to a new one)."""
        process = self.process
        if process is None:
            return None
        state = process.request("get_state")
        process.state.update(state)
        file = state.get("sessionFile")
        if file:
            self.session_file = Path(file).resolve()
            if self._hold is not None:
                self._hold.release()
            self._hold = SessionHold(self.session_file, self._holder_text(process)).acquire()
        return Path(file) if file else None


def reread(session: Session) -> Session:
    """The session as Pi left its file after a run or a command.

    The bytes Pi appended are read into ``session``; a session with no entries before
    (pinb's new one, whose header and first entries Pi wrote) is opened anew, so the result
    may be another :class:`~pinb.core.Session` than the one given.
    """
    path = session.require_path()
    if not path.exists():
        return session  # Pi stopped before it wrote anything
    if session.entries:
        session.refresh()  # only the bytes Pi appended
        return session
    return Session.open(path)


def with_estimates(session: Session, end: AgentEnd) -> AgentEnd:
    """The run's end with an estimate for each reply Pi saved without usage (as the built-in
    agent estimates a server that reports none), so a footer marks it as one.

    ``session`` is the session as Pi left it (:func:`reread`): the estimate is of what each
    reply's request was sent.
    """
    estimated = {}
    for index, message in enumerate(end.messages):
        if message.get("stopReason") in ("error", "aborted") or not reported_nothing(message):
            continue
        entry = next(
            (
                e
                for e in reversed(session.entries)
                if e.role == "assistant"
                and (e.message or {}).get("timestamp") == message.get("timestamp")
            ),
            None,
        )
        if entry is None or not isinstance(entry.parent_id, str):
            continue
        before = session.build_context(entry.parent_id)  # what this request was sent
        estimated[index] = estimate_usage(before, before.messages, message)
    return dataclasses.replace(end, estimated=estimated) if estimated else end


_NOT_FOUND = re.compile(r'Model "([^"]+)" not found')


def _list_models_warning(command: list[str], env: dict[str, str], cwd: Path) -> str | None:
    """What ``pi --list-models`` says about models.json (``no "api" specified`` ...)."""
    try:
        done = subprocess.run(
            [*command, "--list-models"],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stderr + done.stdout).splitlines()
    for number, line in enumerate(lines):
        if "errors loading models.json" in line:
            details = [rest.strip() for rest in lines[number + 1 : number + 4] if rest.strip()]
            return "Pi says models.json has errors: " + " ".join(details) if details else None
    return None


def _feed(events: Iterator[AgentEvent], show: Callable[[AgentEvent], None]) -> AgentEnd | None:
    end = None
    for event in events:
        show(event)
        if isinstance(event, AgentEnd):
            end = event
    return end


def _close_at_exit(engine: PiEngine) -> Callable[[], None]:
    # A weak reference: the hook must not keep a dropped engine (and its Pi) alive.
    ref = weakref.ref(engine)

    def close() -> None:
        alive = ref()
        if alive is not None:
            with contextlib.suppress(Exception):
                alive.close()

    atexit.register(close)
    return close
