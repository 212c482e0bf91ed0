"""The magics' settings (traitlets, so ``%config PiMagics.model = ...`` works) and state:
the session and model in use, the window and compaction settings every command shares."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from IPython.core.magic import Magics
from traitlets import Bool, Enum, Int, List, Unicode, observe

from ...errors import PinbError, UsageError

# What the commands use is imported where they use it: `%load_ext pinb` loads the magics
# alone, and the session, the agent and the views come with the first command needing them.
if TYPE_CHECKING:
    from ...agent.pi.engine import PiEngine
    from ...core import CompactionSettings, Session
    from ...core.context.accounting import ContextUsage
    from ...core.file.writers import SessionHold
    from ...llm import ChatModel

__all__ = ["ENGINES", "MagicsBase", "command_parser", "warn"]

#: Who runs ``%%pi`` cells (``pinb.agent.pi.engine.ENGINES`` names the same two; the
#: setting needs them before the engine's module is loaded).
ENGINES = ("pinb", "pi")


def warn(text: str) -> None:
    """One line on stderr, which a notebook shows apart from the cell's output."""
    print(f"warning: {text}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def command_parser(prog: str) -> _Parser:
    return _Parser(prog=prog, add_help=False)


class MagicsBase(Magics):
    """Settings and state shared by every command group (see :class:`PiMagics`)."""

    model = Unicode("", help="provider/model-id; empty: the first configured provider").tag(
        config=True
    )
    thinking = Unicode("off", help="Pi thinking level for new runs").tag(config=True)
    tools = List(
        Unicode(),
        default_value=["read", "write", "edit", "bash", "ls", "grep", "find"],
        help="enabled tools",
    ).tag(config=True)
    interpolate = Bool(True, help="replace {var} in %%pi cells with kernel variables").tag(
        config=True
    )
    sessions_dir = Unicode("", help="folder for new sessions; empty: Pi's folder for the cwd").tag(
        config=True
    )
    auto_compact = Bool(True, help="compact automatically near the context window").tag(config=True)
    keep_facts = Bool(
        True,
        help="add pinb's cited kept-facts section to every summary pinb writes (the "
        "must-keep facts it lost); False: Pi's exact summary text",
    ).tag(config=True)
    context_window = Int(
        0,
        help="the model's context window in tokens, for runs, views and compaction; "
        "0: the model's own (the registry's, or what a local server reports)",
    ).tag(config=True)
    tool_choice = Unicode(
        "",
        help="auto, required, none or a tool name, sent with each prompt's first request "
        "(small local models call tools only when asked); empty: the server decides",
    ).tag(config=True)
    interpolate_limit = Int(
        4000, help="characters of one {var} value pasted into a prompt (longer ones are cut)"
    ).tag(config=True)
    engine = Enum(
        ENGINES,
        default_value="pinb",
        help="who runs %%pi cells: pinb (the built-in agent) or pi (your own Pi, through "
        "`pi --mode rpc`, on the same session file)",
    ).tag(config=True)
    pi_command = Unicode(
        "",
        help="the command line of your Pi for engine 'pi' ($PINB_PI_COMMAND wins); "
        "empty: `pi` on PATH",
    ).tag(config=True)
    renderer = Unicode(
        "auto",
        help="how a run is shown: jupyter (one updating display), terminal (printed "
        "increments, the answer included), or auto (jupyter inside a kernel)",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        #: Whether a thinking level was chosen (``%config``, ``%pi thinking``): only then is
        #: it passed to the user's Pi, which otherwise keeps its own default.
        self.thinking_chosen = False
        super().__init__(shell=shell, **kwargs)
        self._session: Session | None = None
        self._hold: SessionHold | None = None
        self._model: ChatModel | None = None
        self._model_spec: str | None = None
        self._observe = False
        #: Server URLs chosen with ``%pi model --base-url``, by provider.
        self.base_urls: dict[str, str] = {}
        self._pi_engine: PiEngine | None = None

    @observe("thinking")
    def _thinking_changed(self, change: Any) -> None:
        self.thinking_chosen = True

    @property
    def pi_engine(self) -> PiEngine:
        """The user's Pi for ``--engine pi`` cells (made at first use, started at the first
        Pi cell)."""
        if self._pi_engine is None:
            from ...agent.pi.engine import PiEngine
            from ..dialogs import ask_in_cell

            self._pi_engine = PiEngine(
                lambda: self.pi_command, ui=ask_in_cell(), settings=self._settings, role="cell"
            )
        return self._pi_engine

    def _terminal(self) -> bool:
        """Whether a run is shown as printed lines (a terminal, a script), not a display."""
        if self.renderer in ("terminal", "jupyter"):
            return self.renderer == "terminal"
        # Inside a Jupyter kernel the shell has a kernel; IPython in a terminal and
        # `ipython script.ipy` have none and cannot update what they printed.
        return getattr(self.shell, "kernel", None) is None and type(self.shell).__name__ != (
            "InteractiveShell"
        )

    # -- state ----------------------------------------------------------------------------

    @property
    def session(self) -> Session | None:
        """The current session (``None`` until a cell or command needs one)."""
        return self._session

    @session.setter
    def session(self, session: Session | None) -> None:
        self._session = session
        self._hold_current()

    def _hold_current(self) -> None:
        """Mark the current session's file as held by this kernel (``pinb rm`` refuses to
        move it), once the file exists; the mark of the previous one is dropped."""
        from ...core.file.writers import describe_process, hold_current

        path = self._session.path if self._session is not None else None
        self._hold = hold_current(self._hold, path, f"{describe_process()} (its current session)")

    def _cwd(self) -> Path:
        return Path(os.getcwd())

    def _session_cwd(self, session: Session) -> Path:
        """Tools run in the session's folder (``%pi new --cwd``), else the kernel's cwd."""
        folder = Path(session.cwd) if session.cwd else None
        return folder if folder is not None and folder.is_dir() else self._cwd()

    def _open(self, path: str | os.PathLike[str]) -> Session:
        """Open a session file; what is none (missing, a folder, a FIFO) is one clear line."""
        from ...core.opening import open_session_file

        return open_session_file(path, hint="%pi sessions lists the current folder's sessions")

    def _sessions_folder(self) -> tuple[Path, Path]:
        """``(folder, cwd)``: where the current session's siblings are, and for what folder.

        The current session's folder (after ``%pi new --cwd proj``, proj's), else
        ``PiMagics.sessions_dir``, else Pi's folder for the kernel's cwd.
        """
        from ...core.file.paths import sessions_dir_for

        session = self.session
        if session is not None:
            cwd = Path(session.cwd) if session.cwd else self._cwd()
            if session.path is not None:
                return session.path.parent, cwd
        else:
            cwd = self._cwd()
        folder = Path(self.sessions_dir) if self.sessions_dir else sessions_dir_for(cwd)
        return folder, cwd

    def current_session(self) -> Session:
        """The session %%pi appends to; a new one for the cwd until one is opened."""
        session = self.session
        if session is None:
            folder = self.sessions_dir or None
            from ...core import Session

            self.session = session = Session.create(self._cwd(), folder)
        else:
            # Another program may have appended (pi in a terminal): every command sees it.
            session.refresh()
            self._hold_current()
        return session

    def current_model(self, spec: str | None = None) -> ChatModel:
        """The model for a run: ``spec``, else ``PiMagics.model``, else the last one used,
        else the one the session recorded (after ``%pi open``: its ``provider/model``,
        resolved through ``models.json`` with its window), else the first configured."""
        wanted = spec or self.model or self._model_spec or self._recorded_model()
        if self._model is None or wanted != self._model_spec:
            from ..models import choose_model

            self._model = choose_model(wanted, base_urls=self.base_urls)
            self._model_spec = wanted
        info = self._model.info
        if self.context_window and info.context_window != self.context_window:
            with contextlib.suppress(AttributeError):  # a model with read-only info
                self._model.info = dataclasses.replace(
                    info, context_window=self.context_window, window_source="setting"
                )
        return self._model

    def _recorded_model(self) -> str | None:
        """The session's own model, when pinb can run it (a provider it knows, a key)."""
        from ...llm import get_model

        session = self.session
        recorded = session.current_context().model if session is not None else None
        if not recorded or not recorded.get("provider") or not recorded.get("modelId"):
            return None
        spec = f"{recorded['provider']}/{recorded['modelId']}"
        if spec.startswith("pinb/offline"):
            return "offline"
        url = self.base_urls.get(str(recorded["provider"]))
        try:  # resolved only (no request): the run resolves it again, asking its server
            get_model(spec, discover=False, **({"base_url": url} if url else {}))
        except PinbError:  # unknown here, or its key is missing: choose as for a new session
            return None
        return spec

    def _settings(self) -> CompactionSettings:
        # Pi reads the project's .pi/settings.json where the session runs (as `pinb` does).
        folder = self._session_cwd(self.session) if self.session is not None else self._cwd()
        from ...core import load_compaction_settings

        settings = load_compaction_settings(folder)
        from dataclasses import replace

        if not self.auto_compact:
            settings = replace(settings, enabled=False)
        if not self.keep_facts:  # off here or in the settings files: off
            settings = replace(settings, keep_facts=False)
        return settings

    def _window(self, session: Session, model: ChatModel | None = None) -> tuple[int | None, str]:
        """The context window every view and run uses, and where it came from.

        The one rule (:func:`pinb.llm.window.resolve_window`): ``%config
        PiMagics.context_window``, else the model in use, else the window the session ran
        with, else the registry's entry for the model it recorded; unknown otherwise. A
        window from the setting or the model in use is the one the session runs with here,
        so the session carries it (views handed the session show it too).
        """
        from ...llm.window import resolve_window

        model = model or self._model
        found = resolve_window(setting=self.context_window, model=model, session=session)
        if found.tokens and (self.context_window or model is not None):
            session.run_window = (found.tokens, found.source)
        return found.tokens, found.source

    def _account_settings(self, model: ChatModel | None = None) -> CompactionSettings:
        """Compaction settings for the account (the views fit them to the window)."""
        settings = self._settings()
        model = model or self._model
        if model is not None:
            settings = settings.for_model(model.info.provider, model.info.id)
        return settings

    def _view_settings(self) -> tuple[CompactionSettings, bool]:
        """The settings the views account with, and whether to fit them to the window.

        With Pi as the engine (``%config PiMagics.engine = "pi"``) Pi compacts, with its
        settings as they are (its model's override applied): the views show Pi's
        threshold, as a Pi cell's footer does. Otherwise pinb's agent's, fitted.
        """
        if self.engine != "pi":
            return self._account_settings(), True
        settings = self._settings()
        process = self.pi_engine.process
        info = (process.state.get("model") if process is not None else None) or {}
        if info.get("provider"):
            settings = settings.for_model(str(info.get("provider")), str(info.get("id")))
        return settings, False

    def _context_usage(
        self, session: Session, model: ChatModel | None = None, *, fit: bool = True
    ) -> ContextUsage:
        """The context's size by Pi's measure, with the window and threshold in force
        (``fit=False``: Pi's settings as they are, the Pi engine's threshold)."""
        window, source = self._window(session, model)
        from ...core.context.accounting import context_usage

        return context_usage(
            session.current_context(),  # read only: no copy of a long path per cell
            window=window,
            window_source=source,
            settings=self._account_settings(model),
            fit=fit,
        )

    def _fitted(self, model: ChatModel | None) -> CompactionSettings:
        """The settings a model's runs and compactions use: its override, fitted to its
        window, so a 4,096-token local model never sees Pi's 16k reserve. (The views fit
        :meth:`_account_settings` to the window they show themselves.)"""
        if model is None:
            return self._settings()
        return self._account_settings(model).fit_window(model.info.context_window)

    def _compaction_inputs(
        self, session: Session, offline: bool
    ) -> tuple[ChatModel | None, CompactionSettings, int | None, str]:
        """What ``%pi compact`` plans with, and ``%pi whatif`` replays as "current settings".

        ``(model, settings, window, source)``: the model whose summarizer writes (``None``:
        offline), the settings in force for the model in use fitted to the window, and the
        window every view shows (:meth:`_window`), so a compaction and its what-if are one
        plan.
        """
        model = None if offline else self.current_model()
        planned = model if model is not None else self._model
        window, source = self._window(session, planned)
        settings = self._account_settings(planned).fit_window(window)
        return model, settings, window, source

    def _summarizer(
        self, model: ChatModel, settings: CompactionSettings, offline: bool = False
    ) -> Any:
        from ...core import ExtractiveSummarizer, ModelSummarizer
        from ...llm.providers.offline import OfflineDemoModel
        from ..models import choose_model

        if offline or isinstance(model, OfflineDemoModel):
            return ExtractiveSummarizer()
        if settings.summary_model:
            return ModelSummarizer(choose_model(settings.summary_model))
        return ModelSummarizer(model)

    def _observer(self, model: ChatModel, settings: CompactionSettings) -> Any:
        from ...memory import MemoryObserver

        return MemoryObserver(self._summarizer(model, settings), cwd=self._cwd())

    def _tool_objects(self) -> list[Any]:
        from ...agent.tools import all_tools
        from ..python_tool import PythonTool

        by_name = {tool.name: tool for tool in all_tools()}  # they run in the session's cwd
        chosen: list[Any] = []
        for name in self.tools:
            if name == "python":
                chosen.append(PythonTool(self.shell))
            elif name.startswith("memory"):
                from ...agent.tools.memory import memory_tools

                chosen.extend(t for t in memory_tools() if t.name == name or name == "memory")
            elif name in by_name:
                chosen.append(by_name[name])
        return chosen

    def _entry_id(self, session: Session, entry_id: str) -> str:
        """``entry_id``, or the one id it is a prefix of (as git takes a short hash)."""
        from ...core.compaction.operations import entry_id as resolve

        return resolve(session, entry_id)
