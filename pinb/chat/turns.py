"""A chat's side of a shared session: which session it continues, and a turn with either engine.

:class:`ChatSession` is what a chat persona holds for its chat: the linked session (and a
hold on its file, as a kernel holds its current session), the built-in agent's model, the
user's Pi (:class:`~pinb.agent.pi.engine.PiEngine`) when that is the engine, and the settings.
Everything here blocks (file locks, model requests, Pi's process), so the persona calls it
on a worker thread; nothing here touches the chat.

A chat turn is a turn of the session like a cell's (docs/design.md, "Who writes a
session"): :meth:`Session.turn <pinb.core.Session.turn>` takes the session's turn lock
(another writer gets "busy", and a chat finding a cell running says so at once, never
hangs), reads what the notebook's cells appended and continues from the file's leaf. The
engine runs inside that turn (:meth:`Agent.run <pinb.agent.Agent.run>`, or
``PiEngine.run``, whose own turns nest), and the turn ends with a ``custom`` entry
(``customType: "pinb.chat"``: the chat, the message it answers and the turn's prompt) that
Pi leaves out of the context, so ``%pi tree`` shows which turns came from the chat. A turn
that never began (another writer held the session) leaves no mark.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent import Agent, AgentConfig, AgentEnd, Notice
from ..agent.events import AgentEvent
from ..agent.pi.engine import ENGINES, PiEngine, reread, with_estimates
from ..agent.recovery import load_retry_policy
from ..agent.tools import all_tools
from ..core import (
    CompactionSettings,
    ExtractiveSummarizer,
    ModelSummarizer,
    Session,
    load_compaction_settings,
)
from ..core.context.accounting import ContextUsage, context_usage
from ..core.file.writers import SessionBusyError, SessionHold, describe_process, hold_current
from ..core.format.entries import Entry
from ..core.js.jsontext import visible
from ..core.opening import open_session_file, session_path
from ..errors import PinbError, SessionFileError
from ..llm import ChatModel, get_model
from ..llm.providers.offline import OFFLINE_MODEL, OfflineDemoModel
from ..llm.window import ContextWindow, resolve_window
from .control import RunControl, RunOutcome, busy_line
from .link import ChatLink, ChatLinkError, link_chat, open_link, read_link

__all__ = [
    "CHAT_TYPE",
    "DEFAULT_TOOLS",
    "ENGINES",
    "GOTO",
    "ChatSession",
    "ChatSettings",
    "chat_turns",
]

#: ``customType`` of the entry that marks a turn as the chat's (Pi leaves it out of context).
CHAT_TYPE = "pinb.chat"
#: The chat's command that moves the session's leaf (``/goto ID``), named in its notes.
GOTO = "/goto"
#: The built-in agent's tools in the chat (``python`` needs a kernel: not here).
DEFAULT_TOOLS = ("read", "write", "edit", "bash", "ls", "grep", "find")
_OFFLINE_SPECS = ("offline", "demo", "pinb/offline-demo")


@dataclass
class ChatSettings:
    """How a chat answers (the persona's settings, see :class:`~pinb.chat.persona.PinbPersona`).

    Attributes
    ----------
    engine:
        ``"pinb"`` (the built-in agent) or ``"pi"`` (the user's Pi over RPC).
    model:
        The built-in agent's model (``provider/model-id`` or ``offline``); empty: the model
        the session recorded when pinb can run it, else the offline demo model.
    pi_model:
        The model the user's Pi runs; empty: Pi's own choice (or what the session recorded).
    pi_command:
        The command line of the user's Pi (``$PINB_PI_COMMAND`` wins; empty: ``pi``).
    thinking:
        The thinking level (``off`` … ``xhigh``); the user's Pi keeps its own when empty.
    tools:
        The built-in agent's tools.
    context_window:
        A window to use and show instead of the model's (0: the model's own).
    auto_compact:
        Compact automatically near the window (the built-in agent).
    keep_facts:
        Add pinb's cited kept-facts section to every summary pinb writes; ``False``: Pi's
        exact summary text (a settings file's ``keepFacts: false`` turns it off too).
    """

    engine: str = "pinb"
    model: str = ""
    pi_model: str = ""
    pi_command: str = ""
    thinking: str = ""
    tools: tuple[str, ...] = DEFAULT_TOOLS
    context_window: int = 0
    auto_compact: bool = True
    keep_facts: bool = True


def chat_turns(session: Session) -> list[Entry]:
    """The entries that mark chat turns (``custom`` ``pinb.chat``), in file order."""
    return [
        e for e in session.entries if e.type == "custom" and e.raw.get("customType") == CHAT_TYPE
    ]


def _dialog_in_chat(request: dict[str, Any]) -> dict[str, Any]:
    """Pi's cancel answer to an extension's question: nobody can answer it in the chat."""
    return {
        "cancelled": True,
        "note": "cancelled: an extension asked something the chat cannot answer "
        "(a %%pi --engine pi cell can)",
    }


@dataclass(frozen=True)
class _PiWindow:
    """The window of the model the user's Pi runs, for :func:`resolve_window`."""

    context_window: int
    window_origin: str = "Pi's model"


class ChatSession:
    """The session a chat continues, and how it runs a turn on it.

    Parameters
    ----------
    chat:
        The ``.chat`` file (absolute).
    settings:
        How to answer; read at every turn, so a changed setting applies at the next one.
    who:
        What the chat is, for the "busy" answer others get and the hold's note.
    """

    def __init__(self, chat: Path, settings: ChatSettings, who: str = "") -> None:
        self.chat = chat
        self.settings = settings
        self.who = who or f"the chat panel ({chat.name})"
        self.link: ChatLink | None = None
        self.session: Session | None = None
        self._hold: SessionHold | None = None
        self._model: ChatModel | None = None
        self._model_spec: str | None = None
        self._pi: PiEngine | None = None

    # -- which session ----------------------------------------------------------------------

    @property
    def cwd(self) -> Path:
        """Where tools run: the session's folder when it exists, else the chat's."""
        session = self.session
        folder = Path(session.cwd) if session is not None and session.cwd else None
        return folder if folder is not None and folder.is_dir() else self.chat.parent

    def follow_link(self, metadata: Any = None, said: Collection[str] = ()) -> str | None:
        """Continue the session the chat is linked to now (the notebook may have relinked).

        ``metadata`` is the chat's ``metadata["pinb"]`` as the live chat holds it; ``said``
        the links (``linked_at``) the chat's messages announced already
        (:func:`~pinb.chat.link.announced`). Returns a line to show when the session
        changed and the chat has not said so yet, else ``None``: the link is said once.

        Raises
        ------
        ChatLinkError
            The link names no session file that can be opened (gone, a folder, a FIFO, a
            file that is no session): one line saying so. The chat keeps no session then,
            so nothing is answered on another one until the chat is linked again.
        """
        link = read_link(self.chat, metadata)
        if link is None:
            return None
        current = self.session.path if self.session is not None else None
        if current is not None and os.path.abspath(current) == os.path.abspath(link.session):
            self.link = link
            return None
        if link.linked_by == "chat" and not os.path.lexists(link.session):
            # The chat's own new session, never written (a restart before its first turn):
            # the next turn starts one again.
            return None
        try:
            session = open_link(link)
        except ChatLinkError:
            self._drop()
            raise
        self._use(session, link)
        if link.linked_at and link.linked_at in said:
            return None  # the chat's first message said it (the notebook created the chat)
        return "this chat now " + link.describe().split(" ", 1)[1]

    def _drop(self) -> None:
        """Continue no session (the link names none that opens): nothing held, no Pi."""
        self._close_pi()
        self.session, self.link = None, None
        if self._hold is not None:
            self._hold.release()
            self._hold = None

    def _use(self, session: Session, link: ChatLink) -> None:
        if self.session is not None and self.session.path != session.path:
            self._close_pi()
        self.session, self.link = session, link
        self._hold_current()

    def _hold_current(self) -> None:
        """Hold the linked file (``pinb rm`` refuses to move it), once it exists."""
        path = self.session.path if self.session is not None else None
        self._hold = hold_current(self._hold, path, f"{describe_process()}: {self.who}")

    def require_session(self) -> tuple[Session, str | None]:
        """The linked session; a new one (linked) when the chat has none yet.

        Returns the session and, when one was started, the line that says so.
        """
        if self.session is not None:
            return self.session, None
        session = self.new_session()
        return session, (
            f"started a new session for this chat ({session.require_path().name}); "
            "`/session open PATH` continues another, `%pi chat` in a notebook links its own"
        )

    def new_session(self) -> Session:
        """Start a new session (in Pi's folder for the chat's folder) and link the chat to it."""
        session = Session.create(self.chat.parent)
        link = link_chat(self.chat, session.require_path(), linked_by="chat")
        self._use(session, link)
        return session

    def open_session(self, path: str | os.PathLike[str]) -> Session:
        """Continue the session file ``path`` (relative to the chat's folder) and link it.

        Raises
        ------
        SessionFileError
            ``path`` is no session file that opens (the checks of ``%pi open``).
        """
        target = session_path(path, self.chat.parent)
        try:
            session = open_session_file(target)
        except SessionFileError as exc:  # named as typed: the server's folders stay its own
            raise SessionFileError(
                f"{visible(os.fspath(path))}: {exc.reason}; `/session new` starts a new session",
                reason=exc.reason,
            ) from exc
        link = link_chat(self.chat, target, linked_by="chat")
        self._use(session, link)
        return session

    # -- models and accounts ----------------------------------------------------------------

    def compaction_settings(self) -> CompactionSettings:
        settings = load_compaction_settings(self.cwd)
        if not self.settings.auto_compact:
            settings = dataclasses.replace(settings, enabled=False)
        if not self.settings.keep_facts:
            settings = dataclasses.replace(settings, keep_facts=False)
        return settings

    def model_spec(self) -> tuple[str, str]:
        """The built-in agent's model spec and why it is that one."""
        if self.settings.model:
            return self.settings.model, "the persona's model setting"
        session = self.session
        recorded = session.current_context().model if session is not None else None
        if recorded and recorded.get("provider") and recorded.get("modelId"):
            if (recorded.get("provider"), recorded.get("modelId")) == OFFLINE_MODEL:
                return "offline", "the session's model"
            spec = f"{recorded['provider']}/{recorded['modelId']}"
            try:  # resolved only (no request): the run asks its server
                get_model(spec, discover=False)
            except PinbError:
                pass
            else:
                return spec, "the session's model"
        return "offline", "no model set (PinbPersona.model), so the offline demo model"

    def model(self) -> ChatModel:
        """The built-in agent's model (made once per spec)."""
        spec, _ = self.model_spec()
        if self._model is None or spec != self._model_spec:
            model: ChatModel = OfflineDemoModel() if spec in _OFFLINE_SPECS else get_model(spec)
            self._model, self._model_spec = model, spec
        model = self._model
        window = self.settings.context_window
        if window and model.info.context_window != window:
            with contextlib.suppress(AttributeError):  # a model whose info cannot change
                model.info = dataclasses.replace(
                    model.info, context_window=window, window_source="setting"
                )
        return model

    def window(self) -> ContextWindow:
        """The window the chat's figures use: :func:`pinb.llm.window.resolve_window`."""
        pi_window = self._pi_window() if self.settings.engine == "pi" else None
        model: Any = _PiWindow(pi_window) if pi_window else self._model
        return resolve_window(
            setting=self.settings.context_window or None, model=model, session=self.session
        )

    def _pi_model(self) -> dict[str, Any]:
        process = self._pi.process if self._pi is not None else None
        info = process.state.get("model") if process is not None else None
        return info if isinstance(info, dict) else {}

    def _pi_window(self) -> int | None:
        window = self._pi_model().get("contextWindow")
        return window if isinstance(window, int) and window > 0 else None

    def account_settings(self) -> CompactionSettings:
        """The compaction settings of the model in use (views fit them to the window)."""
        settings = self.compaction_settings()
        if self.settings.engine == "pi":
            info = self._pi_model()
            if info:
                return settings.for_model(str(info.get("provider")), str(info.get("id")))
            return settings
        if self._model is not None:
            return settings.for_model(self._model.info.provider, self._model.info.id)
        return settings

    def usage(self) -> ContextUsage | None:
        """How full the context is, by Pi's measure, against the window in force."""
        session = self.session
        if session is None:
            return None
        window = self.window()
        if window.tokens and (self.settings.context_window or self._model is not None):
            session.run_window = (window.tokens, window.source)
        # The user's Pi compacts above window − reserve with its settings as they are:
        # pinb's fit to a small window is the built-in agent's.
        pi = self.settings.engine == "pi" and self._pi_window() is not None
        return context_usage(
            session.current_context(),
            window=window.tokens,
            window_source=window.source,
            settings=self.account_settings(),
            fit=not pi,
        )

    # -- a turn -------------------------------------------------------------------------------

    def run(
        self,
        prompt: str,
        *,
        message_id: str = "",
        sender: str = "",
        show: Callable[[AgentEvent], None],
        control: RunControl | None = None,
    ) -> RunOutcome:
        """Run one chat message as a turn of the session, feeding every event to ``show``.

        Never raises for the session being busy (:attr:`RunOutcome.busy`) or for a pinb
        error (:attr:`RunOutcome.error`: one line); other errors propagate.
        """
        control = control or RunControl()
        outcome = RunOutcome()
        try:
            session, started = self.require_session()
        except PinbError as exc:
            outcome.error = str(exc)
            return outcome
        if started:
            show(Notice(started))
        engine = self.settings.engine if self.settings.engine in ENGINES else "pinb"
        marker: dict[str, Any] = {"chat": self.chat.name, "message": message_id, "engine": engine}
        if sender:
            marker["sender"] = sender
        model_label = ""
        start = 0
        try:
            runner = "your Pi" if engine == "pi" else "pinb's agent"
            with session.turn(runner, role="chat", who=self.who, long=True) as turn:
                turn.goto = GOTO  # the notes of this turn say how to go back from the chat
                start = len(session.entries)  # after what others had appended
                if engine == "pi":
                    outcome.end, model_label = self._run_pi(session, prompt, show, control)
                    current = self._after_pi(session)
                    if outcome.end is not None:  # a footer's estimates, as a cell's
                        outcome.end = with_estimates(current, outcome.end)
                else:
                    outcome.end, model_label = self._run_pinb(session, prompt, show, control)
                    current = session
                if current is session:  # within the turn: nothing comes between
                    self._mark(session, start, marker)
            note = turn.end_note()
            if note:
                outcome.notes.append(note)
            if current is not session:  # Pi wrote this new session's file itself
                self._mark(current, 0, marker)
        except SessionBusyError as exc:
            outcome.busy = busy_line(exc)
            return outcome
        except PinbError as exc:
            outcome.error = str(exc)
            if engine == "pi":
                self._after_pi(session)
            return outcome
        finally:
            self._hold_current()
        if outcome.end is not None:
            from .transcript import run_footer

            outcome.footer = run_footer(outcome.end, self.usage(), model_label)
        return outcome

    @staticmethod
    def _mark(session: Session, start: int, marker: dict[str, Any]) -> None:
        """Mark the turn whose entries begin at ``start`` as the chat's.

        The ``custom`` entry follows the turn (it names the turn's prompt, ``entry``), so a
        turn that never began (another writer held the session) leaves no mark. Pi leaves it
        out of the context; the next turn continues after it.
        """
        on_path = {e.id for e in session.path_to()}  # not what others wrote meanwhile
        prompt = next(
            (e for e in session.entries[start:] if e.role == "user" and e.id in on_path), None
        )
        if prompt is not None:
            session.append_custom(CHAT_TYPE, {**marker, "entry": prompt.id})

    def _run_pinb(
        self,
        session: Session,
        prompt: str,
        show: Callable[[AgentEvent], None],
        control: RunControl,
    ) -> tuple[AgentEnd | None, str]:
        model = self.model()
        settings = self.compaction_settings()
        cwd = self.cwd
        offline = isinstance(model, OfflineDemoModel)
        summarizer: Any
        if offline:
            summarizer = ExtractiveSummarizer()
        elif settings.summary_model:
            summarizer = ModelSummarizer(get_model(settings.summary_model))
        else:
            summarizer = ModelSummarizer(model)
        tools = [tool for tool in all_tools() if tool.name in self.settings.tools]
        agent = Agent(
            session,
            model,
            tools,
            config=AgentConfig(
                thinking_level=self.settings.thinking or "off",
                compaction=settings,
                retry=load_retry_policy(cwd),
            ),
            summarizer=summarizer,
            cwd=cwd,
        )
        end: AgentEnd | None = None
        for event in agent.run(prompt, cancel=control.token):
            show(event)
            if isinstance(event, AgentEnd):
                end = event
        info = model.info
        return end, f"{info.provider}/{info.id}"

    def pi_engine(self) -> PiEngine:
        """The user's Pi for this chat, made on first use."""
        if self._pi is None:
            self._pi = PiEngine(
                lambda: self.settings.pi_command,
                ui=_dialog_in_chat,
                settings=self.compaction_settings,
                role="chat",
                who=self.who,
            )
        return self._pi

    def _run_pi(
        self,
        session: Session,
        prompt: str,
        show: Callable[[AgentEvent], None],
        control: RunControl,
    ) -> tuple[AgentEnd | None, str]:
        engine = self.pi_engine()

        def watched(event: AgentEvent) -> None:
            if engine.process is not None and control._process is not engine.process:
                control._watch(engine.process)
            control._checkpoint(event)
            show(event)

        try:
            end = engine.run(
                session,
                prompt,
                cwd=self.cwd,
                model=self.settings.pi_model or None,
                thinking=self.settings.thinking or None,
                show=watched,
            )
        except KeyboardInterrupt:  # stopped before Pi began: nothing was sent
            show(Notice("stopped before Pi started the turn"))
            return None, "your Pi"
        info = engine.process.state.get("model") if engine.process is not None else None
        label = f"{info.get('provider')}/{info.get('id')}" if isinstance(info, dict) else "your Pi"
        return end, f"your Pi · {label}"

    def _after_pi(self, session: Session) -> Session:
        """The session as Pi left the file (:func:`~pinb.agent.pi.engine.reread`), the
        chat's from now on when Pi wrote a new session's file itself."""
        fresh = reread(session)
        if fresh is session:
            return session
        if self.link is not None:
            self._use(fresh, self.link)
        else:
            self.session = fresh
        return fresh

    # -- moving the leaf ----------------------------------------------------------------------

    def goto(self, given: str) -> Any:
        """Move the session to entry ``given`` (an id or its prefix), as ``%pi goto`` does:
        back to turns another writer's entries left off the path, say. Returns the
        :class:`~pinb.core.compaction.reports.BranchReport`; raises :class:`SessionBusyError` while
        another writer holds the session."""
        from ..core.compaction.operations import entry_id, navigate

        session, _ = self.require_session()
        with session.turn("moving the leaf", role="chat", who=self.who) as turn:
            turn.goto = GOTO
            return navigate(session, entry_id(session, given))

    # -- compaction -------------------------------------------------------------------------

    def compact(self, instructions: str | None) -> Any:
        """Compact now, as ``%pi compact`` does, with the chat's engine.

        Returns the compaction entry written (the user's Pi) or the report (the built-in
        agent: a :class:`~pinb.core.compaction.masking.MaskReport` when the settings' strategy,
        or ``--mask`` first in ``instructions``, masked instead). Raises
        :class:`SessionBusyError` while another writer holds the session.
        """
        session, _ = self.require_session()
        from ..agent.compact import mask_or_compact

        mask = None
        if instructions is not None and instructions.split()[:1] == ["--mask"]:
            mask, instructions = True, " ".join(instructions.split()[1:]) or None
        if self.settings.engine == "pi" and mask:
            # Masking is pinb's, and edits in the file the user's Pi reads: Pi never sees
            # "--mask" as instructions, and summarizes only on a plain /compact.
            window = self.window().tokens
            with session.turn("masking", role="chat", who=self.who, long=True):
                return mask_or_compact(
                    session, None, settings=self.account_settings(), context_window=window,
                    mask=True,
                )  # fmt: skip
        if self.settings.engine == "pi":
            fields: dict[str, Any] = {"customInstructions": instructions} if instructions else {}
            engine = self.pi_engine()
            engine.request(session, self.cwd, "compact", **fields)
            session = self._after_pi(session)
            return session.current_context().compaction
        model = self.model()
        settings = self.compaction_settings().for_model(model.info.provider, model.info.id)
        settings = settings.fit_window(model.info.context_window)
        summarizer: Any = (
            ExtractiveSummarizer()
            if isinstance(model, OfflineDemoModel)
            else ModelSummarizer(model)
        )
        with session.turn("compacting", role="chat", who=self.who, long=True):
            return mask_or_compact(
                session,
                summarizer,
                instructions,
                settings,
                context_window=model.info.context_window,
                mask=mask,
            )

    # -- the end ------------------------------------------------------------------------------

    def _close_pi(self) -> None:
        if self._pi is not None:
            self._pi.close()

    def close(self) -> None:
        """Stop the user's Pi (if it runs) and drop the hold on the session file."""
        try:
            self._close_pi()
        finally:
            if self._hold is not None:
                self._hold.release()
                self._hold = None
