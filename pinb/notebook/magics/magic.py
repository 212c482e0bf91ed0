"""``%%pi`` and ``%pi``: Pi conversations and session commands in notebook cells.

Thin: argument parsing here and in the command groups (one module each, as jupysql's
``cmd/``), everything else in plain pinb functions. Settings are traitlets
(:mod:`.settings`), so ``%config PiMagics.model = "anthropic/claude-sonnet-4-5"`` works.
"""

from __future__ import annotations

import contextlib
import difflib
import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.magic import cell_magic, line_magic, magics_class
from IPython.display import display

from ...errors import UsageError
from ..interpolate import interpolate
from .analysis import AnalysisCommands
from .chat import ChatCommands
from .compactions import CompactionsCommands
from .memory import MemoryCommands
from .model import ModelCommands
from .pi import ROUTED_COMMANDS, PiEngineCommands
from .sessions import SessionCommands
from .settings import ENGINES, command_parser, warn
from .views import ViewCommands

# The agent, the engine and the live display load with the first cell (see .settings).
if TYPE_CHECKING:
    from ...llm import ChatModel
    from ..live import AssistantReply

__all__ = ["COMMANDS_HELP", "PiMagics"]

COMMANDS_HELP = """\
%%pi [--model M] [--session PATH] [--no-tools] [--no-interpolate] [--tool-choice C]   the cell is the prompt
%%pi --engine pi|pinb ...        run the cell with your own Pi (`pi --mode rpc`) or pinb's agent
%pi new [--cwd DIR]              start a new session (written at its first reply)
%pi open PATH                    continue a session file
%pi resume                       the most recent session of the current folder (as `pi --resume`)
%pi session                      the current session (its file is .path)
%pi sessions [--all] [--search TEXT]   list (or search) the current session's folder
%pi tree                         the session tree
%pi explore                      the clickable explorer (branch summaries by the model in use)
%pi context [--leaf ID]          the context path the model sees
%pi tokens                       context tokens by role and tool
%pi chart [--leaf ID]            the context request by request: window, threshold, every compaction's drop
%pi totals [BY] [SOURCE]         tokens and cost by session, branch, model, project or day (forks counted once)
%pi compact [--offline] [--mask] [--no-keep-facts] [INSTRUCTIONS]   compact now (the plan %pi whatif shows first; --mask: mask old tool results first; --no-keep-facts: Pi's exact summary, without pinb's kept facts)
%pi uncompact [--id ID] [--kinds KINDS] [--budget TOKENS] [--dry-run] [--json]   give back what a compaction lost, as one cited message the next turn reads
%pi compare A [B] [--other PATH]  compare the branches to leaves A and B (B in a fork's file)
%pi ledger [PATH|GLOB]           every compaction: recorded, before/after, what it summarized and kept
%pi compactions [PATH] [--id ID]  what each compaction's summary kept of the span it replaced (lost first)
%pi whatif [--keep N ...] [--reserve N ...] [--no-score] [--model] [--offline] [--leaf ID]   what %pi compact will do, and under other settings; each strategy's summary scored (what it kept; --model: the model's too, one request)
%pi goto ID [--summarize [INSTRUCTIONS]] [--offline] [--label TEXT]   move the leaf
%pi fork [ID] [--stay]           fork before user message ID (another entry: copy the path up to it; no ID: the branch) into a new file, then continue there (--stay: keep the current session)
%pi label ID TEXT                label an entry ("" clears)
%pi name TEXT                    name the session
%pi model [provider/model] [--base-url URL]   show or choose the model ("offline": scripted demo)
%pi model --discover                          list local servers on the usual ports (picks none)
%pi model P/M --save --base-url URL --window N   add a local model to models.json (both engines)
%pi model --fit-pi               fit Pi's compaction settings to its model's small window
%pi thinking LEVEL               off, minimal, low, medium, high, xhigh
%pi tools [+name|-name ...]      show or change tools (+python: run code in this kernel)
%pi export html|md|ipynb [-o PATH] [--tree]  export the branch (default: exports/ beside the notebook)
%pi memory [list|save|recall|forget|inject|promote] ...   long-term memory
%pi memory observe on|off        propose memory notes before compactions and after runs
%pi chat [CHAT] [--follow]       link this session to a chat beside the notebook; --follow: continue the chat's session
%pi rm FILE                      move a session to the trash (refused while someone holds it)
%pi help                         this list"""


@magics_class
class PiMagics(
    SessionCommands,
    ViewCommands,
    AnalysisCommands,
    CompactionsCommands,
    MemoryCommands,
    ModelCommands,
    ChatCommands,
    PiEngineCommands,
):
    """Run Pi conversations in cells and inspect the session they write."""

    # -- %%pi -----------------------------------------------------------------------------

    @cell_magic
    def pi(self, line: str, cell: str) -> Any:
        """Send the cell to the agent; see ``%pi help``."""
        parser = command_parser("%%pi")
        parser.add_argument("--model")
        parser.add_argument("--session")
        parser.add_argument("--no-tools", action="store_true")
        parser.add_argument("--no-interpolate", action="store_true")
        parser.add_argument("--tool-choice")
        parser.add_argument("--engine", choices=ENGINES)
        args = parser.parse_args(shlex.split(line))
        if args.session:
            self.session = self._open(args.session)
            self._follow_session()
        self._refuse_while_busy()
        prompt = cell.strip("\n")
        if not prompt.strip():
            raise UsageError("%%pi: the cell is empty; write the prompt below the magic line")
        if self.interpolate and not args.no_interpolate:
            missing: list[str] = []
            prompt = interpolate(
                prompt,
                self.shell.user_ns if self.shell else {},
                max_chars=self.interpolate_limit,
                missing=missing,
            )
            if missing:
                warn(
                    f"{', '.join(missing)}: no such variable in this kernel, sent as written "
                    "({{ and }} write a brace; --no-interpolate sends the cell as it is)"
                )
        if (args.engine or self.engine) == "pi":
            options = ["--no-tools"] * args.no_tools + ["--tool-choice"] * bool(args.tool_choice)
            return self._pi_cell(prompt, args.model, built_in_options=options)
        model = self.current_model(args.model)
        return self.run_prompt(
            prompt,
            model,
            tools=[] if args.no_tools else self._tool_objects(),
            tool_choice=args.tool_choice,
        )

    def _refuse_while_busy(self) -> None:
        """Say "busy" at once, before the cell prepares its run (a model to resolve, Pi to
        start), when a turn that waits on a model holds the session (the chat's, another
        kernel's cell): the cell's turn would be refused all the same."""
        path = self.session.path if self.session is not None else None
        if path is None or not path.exists():
            return
        from ...core.file.writers import SessionBusyError, turn_holder

        holder = turn_holder(path)
        if holder is not None and holder.long:
            raise SessionBusyError(path, holder)

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
        from ...agent import Agent, AgentConfig, AgentEnd
        from ...agent.recovery import load_retry_policy
        from ...core.context.accounting import thousands
        from ...memory import default_db_path, memory_prompt_section
        from ..live import AssistantReply, LiveRun, RunFailedError
        from ..terminal import TerminalRun

        session = self.current_session()
        settings = self._settings()
        append = None

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
        # The footer says when the next cell compacts: the engine that runs it decides.
        context = (
            self._pi_context(session)
            if self.engine == "pi"
            else self._context_usage(session, model)
        )
        threshold = context.threshold
        if threshold is not None and context.tokens > threshold and context.share is not None:
            leaf = session.leaf
            if leaf is not None and leaf.type == "compaction":
                # Just compacted (Pi compacts no compaction again): what stays is the system
                # prompt, the tools, the summary and the last reply.
                then = (
                    "a compaction just ran, and what it keeps (system prompt, tools, summary, "
                    "the last reply) is that large; the next prompt compacts again first"
                    if context.settings.enabled
                    else "a compaction just ran; %pi compact runs again after the next prompt"
                )
            elif context.settings.enabled:
                then = "the next prompt compacts first, or run %pi compact now"
            else:
                then = "automatic compaction is off (PiMagics.auto_compact): run %pi compact"
            warn(
                f"the context is left at {context.share:.0%} of the "
                f"{thousands(context.window)}-token window, above the compaction threshold "
                f"({thousands(threshold)}): {then}"
            )
        return AssistantReply(end, session.path, printed=terminal, context=context)

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
        # pinb's own, whatever the engine (masking is edits in the file, which Pi reads).
        pinb_options = {"--save", "--fit-pi", "--discover", "--mask"}
        if self.engine == "pi" and command in ROUTED_COMMANDS and not pinb_options & set(rest):
            return self._pi_command(command, rest)
        try:
            return handler(rest)
        finally:
            self._follow_session()

    def _follow_session(self) -> None:
        """Close the user's Pi when the current session is no longer the file it has open."""
        engine = self._pi_engine
        if engine is None:  # no Pi cell ran: nothing to close
            return
        path = self.session.path if self.session is not None else None
        if engine.session_file is not None and (
            path is None or path.resolve() != engine.session_file
        ):
            engine.close()

    pi_line.__doc__ = "Session commands (the cell form sends a prompt):\n\n" + COMMANDS_HELP  # type: ignore[assignment]

    def _cmd_help(self, args: list[str]) -> None:
        print(COMMANDS_HELP)
