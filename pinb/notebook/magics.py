"""``%%pi`` and ``%pi``: Pi conversations and session commands in notebook cells.

Thin: argument parsing here, everything else in plain pinb functions. Settings are
traitlets, so ``%config PiMagics.model = "anthropic/claude-sonnet-4-5"`` works.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import os
import shlex
from pathlib import Path
from typing import Any, NoReturn

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display
from traitlets import Bool, Int, List, Unicode

from ..agent import Agent, AgentConfig, AgentEnd
from ..agent.recovery import load_retry_policy
from ..agent.tools import all_tools
from ..core import (
    UNSET,
    CompactionSettings,
    ExtractiveSummarizer,
    ModelSummarizer,
    Session,
    compact,
    load_compaction_settings,
    navigate,
)
from ..core.accounting import ContextUsage, context_usage
from ..core.forks import clone_session, fork_session
from ..core.listing import list_all_sessions, list_sessions
from ..errors import EntryNotFoundError, PinbError, UsageError
from ..llm import THINKING_LEVELS, ChatModel
from ..testing.demo import OfflineDemoModel
from .interpolate import interpolate
from .live import AssistantReply, LiveRun, RunFailedError
from .models import choose_model
from .python_tool import PythonTool
from .terminal import TerminalRun

__all__ = ["PiMagics"]

COMMANDS_HELP = """\
%%pi [--model M] [--session PATH] [--no-tools] [--no-interpolate] [--tool-choice C]   the cell is the prompt
%pi new [--cwd DIR]              start a new session (written at its first reply)
%pi open PATH                    continue a session file
%pi resume                       the most recent session of this folder (as `pi --resume`)
%pi session                      the current session (its file is .path)
%pi sessions [--all] [--search TEXT]   list (or search) sessions
%pi tree                         the session tree
%pi context [--leaf ID]          the context path the model sees
%pi tokens                       context tokens by role and tool
%pi totals [BY] [SOURCE]         tokens and cost by session, branch, model, project or day (forks counted once)
%pi compact [--offline] [INSTRUCTIONS]   compact now
%pi compare A [B] [--other PATH]  compare the branches to leaves A and B (B in a fork's file)
%pi ledger [PATH|GLOB]           every compaction: recorded, before/after, what it summarized
%pi whatif [--keep N ...] [--reserve N ...] [--summarize]   replay the cut at the leaf
%pi goto ID [--summarize [INSTRUCTIONS]] [--offline] [--label TEXT]   move the leaf
%pi fork [ID]                    fork before user message ID (or clone the branch) into a new file
%pi label ID TEXT                label an entry ("" clears)
%pi name TEXT                    name the session
%pi model [provider/model] [--base-url URL]   show or choose the model ("offline": scripted demo)
%pi thinking LEVEL               off, minimal, low, medium, high, xhigh
%pi tools [+name|-name ...]      show or change tools (+python: run code in this kernel)
%pi export html|md|ipynb PATH    export the current branch
%pi memory [list|save|recall|forget|inject|promote] ...   long-term memory
%pi memory observe on|off        propose memory notes before compactions and after runs
%pi rm FILE                      move a session to the trash (forks are relinked)
%pi help                         this list"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _parser(prog: str) -> _Parser:
    return _Parser(prog=prog, add_help=False)


@magics_class
class PiMagics(Magics):
    """Run Pi conversations in cells and inspect the session they write."""

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
    renderer = Unicode(
        "auto",
        help="how a run is shown: jupyter (one updating display), terminal (printed "
        "increments, the answer included), or auto (jupyter inside a kernel)",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session: Session | None = None
        self._model: ChatModel | None = None
        self._model_spec: str | None = None
        self._observe = False
        #: Server URLs chosen with ``%pi model --base-url``, by provider.
        self.base_urls: dict[str, str] = {}

    # -- state ----------------------------------------------------------------------------

    def _cwd(self) -> Path:
        return Path(os.getcwd())

    def _session_cwd(self, session: Session) -> Path:
        """Tools run in the session's folder (``%pi new --cwd``), else the kernel's cwd."""
        folder = Path(session.cwd) if session.cwd else None
        return folder if folder is not None and folder.is_dir() else self._cwd()

    def current_session(self) -> Session:
        """The session %%pi appends to; a new one for the cwd until one is opened."""
        if self.session is None:
            folder = self.sessions_dir or None
            self.session = Session.create(self._cwd(), folder)
        return self.session

    def current_model(self, spec: str | None = None) -> ChatModel:
        """The model for a run: ``spec``, else ``PiMagics.model``, else the last one used."""
        wanted = spec or self.model or self._model_spec
        if self._model is None or wanted != self._model_spec:
            self._model = choose_model(wanted, base_urls=self.base_urls)
            self._model_spec = wanted
        info = self._model.info
        if self.context_window and info.context_window != self.context_window:
            with contextlib.suppress(AttributeError):  # a model with read-only info
                self._model.info = dataclasses.replace(
                    info, context_window=self.context_window, window_source="setting"
                )
        return self._model

    def _settings(self) -> CompactionSettings:
        settings = load_compaction_settings(self._cwd())
        if not self.auto_compact:
            from dataclasses import replace

            settings = replace(settings, enabled=False)
        return settings

    def _window(self, session: Session, model: ChatModel | None = None) -> tuple[int | None, str]:
        """The context window every view and run uses, and where it came from.

        ``%config PiMagics.context_window``, else the model in use (the registry's entry
        or what its server reported), else the registry's entry for the model the session
        recorded; unknown otherwise (no view assumes one).
        """
        if self.context_window:
            return self.context_window, "setting"
        model = model or self._model
        if model is not None:
            return model.info.context_window, model.info.window_origin
        from ..llm.registry import window_of

        return window_of(session.current_context().model)

    def _account_settings(self, model: ChatModel | None = None) -> CompactionSettings:
        """Compaction settings for the account (the views fit them to the window)."""
        settings = self._settings()
        model = model or self._model
        if model is not None:
            settings = settings.for_model(model.info.provider, model.info.id)
        return settings

    def _context_usage(self, session: Session, model: ChatModel | None = None) -> ContextUsage:
        """The context's size by Pi's measure, with the window and threshold in force."""
        window, source = self._window(session, model)
        return context_usage(
            session.current_context(),  # read only: no copy of a long path per cell
            window=window,
            window_source=source,
            settings=self._account_settings(model),
        )

    def _fitted(self, model: ChatModel | None) -> CompactionSettings:
        """The settings a model's runs and compactions use: its override, fitted to its
        window, so a 4,096-token local model never sees Pi's 16k reserve. (The views fit
        :meth:`_account_settings` to the window they show themselves.)"""
        if model is None:
            return self._settings()
        return self._account_settings(model).fit_window(model.info.context_window)

    def _summarizer(
        self, model: ChatModel, settings: CompactionSettings, offline: bool = False
    ) -> Any:
        if offline or isinstance(model, OfflineDemoModel):
            return ExtractiveSummarizer()
        if settings.summary_model:
            return ModelSummarizer(choose_model(settings.summary_model))
        return ModelSummarizer(model)

    def _observer(self, model: ChatModel, settings: CompactionSettings) -> Any:
        from ..memory import MemoryObserver

        return MemoryObserver(self._summarizer(model, settings), cwd=self._cwd())

    def _tool_objects(self) -> list[Any]:
        by_name = {tool.name: tool for tool in all_tools()}  # they run in the session's cwd
        chosen: list[Any] = []
        for name in self.tools:
            if name == "python":
                chosen.append(PythonTool(self.shell))
            elif name.startswith("memory"):
                from ..memory import memory_tools

                chosen.extend(t for t in memory_tools() if t.name == name or name == "memory")
            elif name in by_name:
                chosen.append(by_name[name])
        return chosen

    def _entry_id(self, session: Session, entry_id: str) -> str:
        """``entry_id``, or the one id it is a prefix of (as git takes a short hash)."""
        if entry_id in session:
            return entry_id
        ids = [str(e.id) for e in session.entries]
        starting = {i for i in ids if i.startswith(entry_id)}
        if len(starting) == 1 and len(entry_id) >= 4:
            return starting.pop()
        close = (
            difflib.get_close_matches(entry_id, ids, n=3, cutoff=0.5)
            or [i for i in ids if i.startswith(entry_id[:3])][:3]
        )
        raise EntryNotFoundError(entry_id, suggestions=close)

    # -- %%pi -----------------------------------------------------------------------------

    @cell_magic
    def pi(self, line: str, cell: str) -> Any:
        """Send the cell to the agent; see ``%pi help``."""
        parser = _parser("%%pi")
        parser.add_argument("--model")
        parser.add_argument("--session")
        parser.add_argument("--no-tools", action="store_true")
        parser.add_argument("--no-interpolate", action="store_true")
        parser.add_argument("--tool-choice")
        args = parser.parse_args(shlex.split(line))
        if args.session:
            self.session = Session.open(Path(args.session).expanduser())
        prompt = cell.strip("\n")
        if not prompt.strip():
            raise UsageError("%%pi: the cell is empty; write the prompt below the magic line")
        if self.interpolate and not args.no_interpolate:
            prompt = interpolate(
                prompt, self.shell.user_ns if self.shell else {}, max_chars=self.interpolate_limit
            )
        model = self.current_model(args.model)
        return self.run_prompt(
            prompt,
            model,
            tools=[] if args.no_tools else self._tool_objects(),
            tool_choice=args.tool_choice,
        )

    def _terminal(self) -> bool:
        if self.renderer in ("terminal", "jupyter"):
            return self.renderer == "terminal"
        # Inside a Jupyter kernel the shell has a kernel; IPython in a terminal and
        # `ipython script.ipy` have none and cannot update what they printed.
        return getattr(self.shell, "kernel", None) is None and type(self.shell).__name__ != (
            "InteractiveShell"
        )

    def run_prompt(
        self, prompt: str, model: ChatModel, *, tools: list[Any], tool_choice: str | None = None
    ) -> AssistantReply | None:
        """Run the agent and stream it into the cell; the reply is the cell's value.

        Raises
        ------
        RunFailedError
            The run ended in an error (after its retries): said once, in one line, and
            raised so that a script stops with a non-zero exit status.
        """
        session = self.current_session()
        settings = self._settings()
        append = None
        from ..memory import default_db_path, memory_prompt_section

        if default_db_path().exists():  # injection is switched on per project in the store
            append = memory_prompt_section(project=None, query=prompt)
        cwd = self._session_cwd(session)
        agent = Agent(
            session,
            model,
            tools,
            config=AgentConfig(
                thinking_level=self.thinking,
                compaction=settings,
                append_system_prompt=append,
                retry=load_retry_policy(cwd),
                tool_choice=tool_choice or self.tool_choice or None,
            ),
            summarizer=self._summarizer(model, self._fitted(model)),
            cwd=cwd,
            observer=self._observer(model, settings) if self._observe else None,
        )
        terminal = self._terminal()
        live: LiveRun | TerminalRun = TerminalRun() if terminal else LiveRun(display)
        end: AgentEnd | None = None
        try:
            with contextlib.closing(agent.run(prompt)) as events:
                for event in events:
                    live.add(event)
                    if isinstance(event, AgentEnd):
                        end = event
        except KeyboardInterrupt:
            live.finish()
            print(
                "interrupted: the partial reply was saved as aborted; the session is ready for the next cell"
            )
            return None
        live.finish()
        assert end is not None
        if end.stop_reason == "error":
            raise RunFailedError(end, session.path)
        return AssistantReply(
            end, session.path, printed=terminal, context=self._context_usage(session, model)
        )

    # -- %pi ------------------------------------------------------------------------------

    @line_magic("pi")  # type: ignore[arg-type]
    def pi_line(self, line: str) -> Any:
        """Session commands; ``%pi help`` lists them."""
        words = shlex.split(line)
        if not words:
            raise UsageError("%pi needs a command; try %pi help")
        command, rest = words[0], words[1:]
        handler = getattr(self, f"_cmd_{command}", None)
        if handler is None:
            close = difflib.get_close_matches(
                command, [n[5:] for n in dir(self) if n.startswith("_cmd_")], n=1
            )
            raise UsageError(
                f"%pi: unknown command {command!r}"
                + (f"; did you mean {close[0]!r}?" if close else "; try %pi help")
            )
        return handler(rest)

    pi_line.__doc__ = "Session commands (the cell form sends a prompt):\n\n" + COMMANDS_HELP  # type: ignore[assignment]

    def _cmd_help(self, args: list[str]) -> None:
        print(COMMANDS_HELP)

    def _cmd_session(self, args: list[str]) -> Session:
        """The current session object (it renders itself; ``.path`` is its file)."""
        return self.current_session()

    def _cmd_new(self, args: list[str]) -> None:
        parser = _parser("%pi new")
        parser.add_argument("--cwd")
        opts = parser.parse_args(args)
        cwd = Path(opts.cwd).expanduser() if opts.cwd else self._cwd()
        self.session = Session.create(cwd, self.sessions_dir or None)
        path = self.session.require_path()
        # The file's name, not its folder: `%pi session` gives the path, and a saved
        # notebook output should not carry the author's (or a temporary) folder.
        print(f"new session {self.session.id}: {path.name}, written at its first reply")

    def _cmd_open(self, args: list[str]) -> None:
        if len(args) != 1:
            raise UsageError("usage: %pi open PATH")
        self.session = Session.open(Path(args[0]).expanduser())
        print(
            f"opened {self.session.path} ({len(self.session.entries)} entries, leaf {self.session.leaf_id})"
        )

    def _cmd_resume(self, args: list[str]) -> None:
        self.session = Session.continue_recent(self._cwd(), self.sessions_dir or None)
        state = (
            f"{len(self.session.entries)} entries"
            if self.session.entries
            else "none found: new session"
        )
        print(f"resumed {self.session.path} ({state})")

    def _cmd_sessions(self, args: list[str]) -> Any:
        from ..views import SessionListView

        parser = _parser("%pi sessions")
        parser.add_argument("--all", action="store_true")
        parser.add_argument("--search")
        opts = parser.parse_args(args)
        from ..core.paths import sessions_dir_for
        from ..render.progress import progress_for

        if opts.search:
            from ..analysis.index import search

            folder = None if opts.all else sessions_dir_for(self._cwd())
            return search(opts.search, folder, progress=progress_for())
        infos = (
            list_all_sessions(text=False, progress=progress_for())
            if opts.all
            else list_sessions(
                Path(self.sessions_dir) if self.sessions_dir else sessions_dir_for(self._cwd()),
                text=False,
            )
        )
        return SessionListView(infos)

    def _cmd_tree(self, args: list[str]) -> Any:
        from ..views import TreeView

        return TreeView(self.current_session())

    def _cmd_context(self, args: list[str]) -> Any:
        from ..views import ContextPathView

        parser = _parser("%pi context")
        parser.add_argument("--leaf")
        opts = parser.parse_args(args)
        session = self.current_session()
        leaf = self._entry_id(session, opts.leaf) if opts.leaf else UNSET
        window, source = self._window(session)
        return ContextPathView(
            session,
            leaf,
            context_window=window,
            window_source=source,
            settings=self._account_settings(),
        )

    def _cmd_tokens(self, args: list[str]) -> Any:
        from ..views import ContextBreakdown

        session = self.current_session()
        return ContextBreakdown(session, usage=self._context_usage(session))

    def _cmd_totals(self, args: list[str]) -> Any:
        from ..analysis.totals import UsageTotalsView, usage_totals

        parser = _parser("%pi totals")
        parser.add_argument("by", nargs="?", default="session")
        parser.add_argument("source", nargs="?", help="a folder, file or glob; default all")
        parser.add_argument("--no-dedupe", action="store_true")
        opts = parser.parse_args(args)
        totals = usage_totals(opts.source, opts.by, dedupe=not opts.no_dedupe, progress=False)
        return UsageTotalsView(totals)

    def _cmd_compact(self, args: list[str]) -> Any:
        from ..views import CompactionView

        offline = "--offline" in args
        instructions = " ".join(a for a in args if a != "--offline") or None
        model = self.current_model() if not offline else None
        # Offline compaction writes no request, but plans for the window of the model in
        # use all the same (else a small window keeps everything: "nothing to compact").
        settings = self._fitted(model if model is not None else self._model)
        summarizer = ExtractiveSummarizer() if model is None else self._summarizer(model, settings)
        session = self.current_session()
        report = compact(session, summarizer, instructions, settings)
        window, source = self._window(session, model)
        return CompactionView(report, session, context_window=window, window_source=source)

    def _cmd_compare(self, args: list[str]) -> Any:
        from ..analysis.compare import compare_branches

        parser = _parser("%pi compare")
        parser.add_argument("a")
        parser.add_argument("b", nargs="?")
        parser.add_argument("--other", help="the session file B belongs to (a fork)")
        opts = parser.parse_args(args)
        session = self.current_session()
        other = Session.open(opts.other) if opts.other else None
        a = self._entry_id(session, opts.a)
        b = self._entry_id(other or session, opts.b) if opts.b else None
        return compare_branches(session, a, b, other=other)

    def _cmd_ledger(self, args: list[str]) -> Any:
        from ..analysis.ledger import compaction_ledger

        return compaction_ledger(" ".join(args) if args else self.current_session())

    def _cmd_whatif(self, args: list[str]) -> Any:
        from ..analysis.ledger import what_if

        parser = _parser("%pi whatif")
        parser.add_argument("--keep", type=int, nargs="+", default=[], metavar="N")
        parser.add_argument("--reserve", type=int, nargs="+", default=[], metavar="N")
        parser.add_argument("--summarize", action="store_true", help="offline summaries too")
        opts = parser.parse_args(args)
        session = self.current_session()
        window, _ = self._window(session)
        return what_if(
            session,
            keep_recent_tokens=opts.keep,
            reserve_tokens=opts.reserve,
            summarizer=ExtractiveSummarizer() if opts.summarize else None,
            context_window=window,
        )

    def _cmd_goto(self, args: list[str]) -> Any:
        parser = _parser("%pi goto")
        parser.add_argument("id")
        parser.add_argument("--summarize", nargs="*", default=None, metavar="INSTRUCTIONS")
        parser.add_argument("--offline", action="store_true")
        parser.add_argument("--label")
        opts = parser.parse_args(args)
        session = self.current_session()
        target = self._entry_id(session, opts.id)
        summarizer = None
        if opts.summarize is not None:
            model = None if opts.offline else self.current_model()
            summarizer = (
                ExtractiveSummarizer()
                if model is None
                else self._summarizer(model, self._settings())
            )
        report = navigate(
            session,
            target,
            summarize=opts.summarize is not None,
            summarizer=summarizer,
            instructions=" ".join(opts.summarize or []) or None,
            label=opts.label,
            context_window=self._model.info.context_window if self._model is not None else None,
        )
        print(f"leaf {report.old_leaf_id} → {report.new_leaf_id}")
        if report.summary_entry is not None:
            print(
                f"branch summary {report.summary_entry.id} covers {len(report.summarized_ids)} entries"
            )
        if report.editor_text is not None:
            print("text of the selected message, to send again:\n" + report.editor_text)
        return None

    def _cmd_fork(self, args: list[str]) -> None:
        session = self.current_session()
        if args:
            new, text = fork_session(session, self._entry_id(session, args[0]))
            print(f"forked into {new.path}; the message to send again:\n{text}")
        else:
            new = clone_session(session)
            print(f"cloned the branch into {new.path}")
        self.session = new

    def _cmd_label(self, args: list[str]) -> None:
        if not args:
            raise UsageError("usage: %pi label ID TEXT")
        session = self.current_session()
        session.set_label(self._entry_id(session, args[0]), " ".join(args[1:]) or None)

    def _cmd_name(self, args: list[str]) -> None:
        if not args:
            raise UsageError("usage: %pi name TEXT")
        self.current_session().set_name(" ".join(args))

    def _cmd_model(self, args: list[str]) -> None:
        parser = _parser("%pi model")
        parser.add_argument("spec", nargs="?")
        parser.add_argument("--base-url")
        opts = parser.parse_args(args)
        spec = opts.spec or self._model_spec or self.model or None
        if opts.base_url:
            provider = (spec or "").partition("/")[0]
            if not spec or not provider:
                raise UsageError("usage: %pi model provider/model --base-url URL")
            self.base_urls[provider] = opts.base_url
        if opts.spec or opts.base_url:
            self._model = choose_model(spec, base_urls=self.base_urls)
            self.model = self._model_spec = spec or ""
        model = self.current_model()
        info = model.info
        where = getattr(model, "base_url", None)
        print(
            f"{info.provider}/{info.id} · window {info.context_window:,} · max out "
            f"{info.max_tokens:,}" + (f" · {where}" if where else "")
        )

    def _cmd_thinking(self, args: list[str]) -> None:
        if len(args) != 1 or args[0] not in THINKING_LEVELS:
            raise UsageError(f"usage: %pi thinking {'|'.join(THINKING_LEVELS)}")
        self.thinking = args[0]

    def _cmd_tools(self, args: list[str]) -> None:
        enabled = list(self.tools)
        known = {t.name for t in all_tools()} | {
            "python",
            "memory_save",
            "memory_recall",
            "memory_forget",
        }
        for arg in args:
            name = arg[1:]
            if arg[:1] not in "+-" or name not in known:
                raise UsageError(
                    f"%pi tools: use +name or -name with one of {', '.join(sorted(known))}"
                )
            if arg[0] == "+" and name not in enabled:
                enabled.append(name)
            elif arg[0] == "-" and name in enabled:
                enabled.remove(name)
        self.tools = enabled
        print("tools: " + (", ".join(enabled) or "(none)"))

    def _cmd_export(self, args: list[str]) -> None:
        from ..analysis.export import write_export

        if len(args) != 2 or args[0] not in ("html", "md", "ipynb"):
            raise UsageError("usage: %pi export html|md|ipynb PATH")
        target = Path(args[1]).expanduser()
        write_export(self.current_session(), args[0], target)
        print(f"wrote {target}")

    def _cmd_memory(self, args: list[str]) -> Any:
        from ..memory import MemoryStore, project_id
        from ..memory.cli import memory_command
        from ..views import MemoryView

        if not args or args == ["list"]:
            return MemoryView(MemoryStore(), project_id(self._cwd()))
        if args[0] == "observe":
            if args[1:] not in (["on"], ["off"]):
                raise UsageError("usage: %pi memory observe on|off")
            self._observe = args[1] == "on"
            print(
                "memory observation "
                + (
                    "on: notes are proposed before compactions and after runs"
                    if self._observe
                    else "off"
                )
            )
            return None
        code = memory_command(["--cwd", str(self._cwd()), *args])
        if code:
            raise PinbError(f"%pi memory {' '.join(args)} failed")
        return None

    def _cmd_rm(self, args: list[str]) -> None:
        from ..memory import remove_session

        if len(args) != 1:
            raise UsageError("usage: %pi rm FILE")
        print(remove_session(Path(args[0]).expanduser()).summary())
