"""``%%pi --engine pi`` and the ``%pi`` commands the user's Pi carries out: the notebook's
side of :class:`~pinb.agent.pi.engine.PiEngine`.

The engine runs Pi and reports events; here a cell shows them (the live display or the
terminal's lines), asks Pi's dialogs in the cell (:mod:`pinb.notebook.dialogs`, passed to
the engine by :attr:`MagicsBase.pi_engine <pinb.notebook.magics.settings.MagicsBase.pi_engine>`),
returns the reply with its footer, and routes ``compact``, ``model``, ``thinking`` and
``fork`` to Pi when it is the engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from .settings import MagicsBase

# The engine, the session and the live display load with the first Pi cell (see .settings).
if TYPE_CHECKING:
    from ...agent.events import AgentEvent
    from ...core import Session
    from ...core.context.accounting import ContextUsage
    from ..live import AssistantReply

__all__ = ["ROUTED_COMMANDS", "PiEngineCommands"]

#: ``%pi`` commands that the user's Pi carries out itself when the engine is ``pi``.
ROUTED_COMMANDS = ("compact", "model", "thinking", "fork")


def _print_notice(event: AgentEvent) -> None:
    from ...agent.events import Notice

    if isinstance(event, Notice):
        print(event.text)


class PiEngineCommands(MagicsBase):
    """A ``%%pi --engine pi`` cell and the routed ``%pi`` commands."""

    def _pi_cell(
        self, prompt: str, model: str | None, *, built_in_options: Sequence[str] = ()
    ) -> AssistantReply:
        """A ``%%pi --engine pi`` cell: Pi runs the prompt, pinb shows it and reads the file.

        ``built_in_options`` are cell options given that only the built-in agent has.

        Raises
        ------
        UsageError
            An option of the built-in agent's was given (Pi's tools are Pi's settings), or
            pinb's offline demo model (Pi has no such model).
        RunFailedError
            The run ended in an error (Pi's message).
        PiEngineError
            Pi is missing, too old, refused the prompt, or died (its last stderr lines).
        """
        from IPython.display import display

        from ...agent.pi.engine import reread, with_estimates
        from ..live import AssistantReply, LiveRun, RunFailedError
        from ..models import OFFLINE_SPECS
        from ..terminal import TerminalRun

        if built_in_options:
            raise UsageError(
                f"%%pi --engine pi: {', '.join(built_in_options)} belong to the built-in agent; "
                "choose Pi's tools in Pi (e.g. `--tools read,bash` in $PINB_PI_COMMAND)"
            )
        spec = model or self.model or self._model_spec or None
        if spec in OFFLINE_SPECS:
            if model or self.model:
                raise UsageError(
                    f"%%pi --engine pi: `{spec}` is pinb's own scripted demo model, which Pi "
                    "does not have: run the cell with `--engine pinb`, or give Pi a model it "
                    "knows (`--model provider/model-id`, from Pi's models.json or its login)"
                )
            spec = None  # the built-in engine's demo, used last: Pi keeps its own model
        session = self.current_session()
        terminal = self._terminal()
        live: LiveRun | TerminalRun = TerminalRun() if terminal else LiveRun(display)
        try:
            end = self.pi_engine.run(
                session,
                prompt,
                cwd=self._session_cwd(session),
                model=spec,
                thinking=self.thinking if self.thinking_chosen else None,
                show=live.add,
            )
        finally:
            live.finish()
            self.session = session = reread(session)
        if spec:
            self._model_spec = spec
        end = with_estimates(session, end)  # from the file Pi wrote (a new session's included)
        if end.stop_reason == "error":
            raise RunFailedError(end, session.path)
        return AssistantReply(
            end, session.path, printed=terminal, context=self._pi_context(session)
        )

    def _pi_context(self, session: Session) -> ContextUsage:
        """How full the context is, against the window of the model Pi ran (not pinb's last),
        and what the next cell adds when pinb's agent runs it."""
        from ...core.context.accounting import context_usage

        process = self.pi_engine.process
        info = (process.state.get("model") if process is not None else None) or {}
        window = info.get("contextWindow")
        if self.context_window or not isinstance(window, int) or window <= 0:
            usage = self._context_usage(session)  # the setting, or pinb's registry
        else:
            settings = self._settings().for_model(str(info.get("provider")), str(info.get("id")))
            session.run_window = (window, "Pi's model")  # views handed the session show it too
            # Pi compacts above window - reserveTokens with its settings as they are: pinb's
            # fit to a small window is the built-in agent's, not Pi's.
            usage = context_usage(
                session.current_context(),
                window=window,
                window_source="Pi's model",
                settings=settings,
                fit=False,
            )
        note = self._next_built_in_cell(session, usage)
        return dataclasses.replace(usage, next_note=note) if note else usage

    def _next_built_in_cell(self, session: Session, usage: ContextUsage) -> str:
        """What the next cell sends on top, when it is pinb's agent's (the engine's default):
        its own system prompt and tools, which Pi's replay does not hold. Each engine's prompt
        stays in the replay, so the figure the next request (and its compaction check) sees
        is this one plus that, not the one above."""
        if self.engine != "pinb":
            return ""
        from ...agent import Agent, AgentConfig
        from ...core.context.accounting import thousands
        from ...core.context.tokens import estimate_tokens
        from ...llm.providers.offline import OfflineDemoModel

        # The prompt and tools depend on the folder and the tools, not on the model: no model
        # is chosen (or asked for its window) to say this.
        agent = Agent(
            session,
            OfflineDemoModel(),
            self._tool_objects(),
            config=AgentConfig(thinking_level=self.thinking),
            cwd=self._session_cwd(session),
        )
        patch = agent.system_prompt_patch()
        if patch is None:
            return ""
        context = session.current_context()
        # The patch is one more system message on the path, and the trigger counts each.
        added = estimate_tokens(patch, pi=context.pi)
        if added <= 0:
            return ""
        total = usage.tokens + added
        then = ""
        if usage.threshold is not None and usage.settings.enabled:
            fitted = usage.settings.fit_window(usage.window)
            limit = int(fitted.threshold(usage.window or 0))
            then = (
                f", above the {thousands(limit)} pinb's agent compacts at: that cell compacts"
                if total > limit
                else f", below the {thousands(limit)} pinb's agent compacts at"
            )
        return (
            f"the next built-in %%pi cell also sends pinb's system prompt and tools "
            f"(+{thousands(added)}): ≈{thousands(total)}{then}"
        )

    def _pi_command(self, command: str, args: list[str]) -> Any:
        """``%pi compact / model / thinking / fork`` carried out by the user's Pi."""
        from ...agent.pi.engine import PI_THINKING, PiEngineError, reread
        from ...core import Session

        engine = self.pi_engine
        session = self.current_session()
        cwd = self._session_cwd(session)
        if command == "thinking":
            if len(args) != 1 or args[0] not in PI_THINKING:
                raise UsageError(f"usage: %pi thinking {'|'.join(PI_THINKING)}")
            self.thinking = args[0]
            process = engine.configure(session, cwd, None, args[0])
            used = process.state.get("thinkingLevel")
            print(
                f"thinking: {args[0]}"
                + (f" (Pi uses {used} with this model)" if used != args[0] else "")
            )
            return None
        if command == "model":
            if len(args) > 1 or (args and "/" not in args[0]):
                raise UsageError("usage: %pi model [provider/model-id]  (the engine is pi)")
            process = engine.configure(session, cwd, args[0] if args else None, None)
            if args:  # Pi took it (an unknown model raised Pi's own error above)
                self.model = self._model_spec = args[0]
            info = process.state.get("model") or {}
            print(
                f"Pi: {info.get('provider')}/{info.get('id')} · window "
                f"{info.get('contextWindow', 0):,} · max out {info.get('maxTokens', 0):,}"
            )
            return None
        if command == "compact":
            instructions = " ".join(args) or None
            fields = {"customInstructions": instructions} if instructions else {}
            data = engine.request(session, cwd, "compact", show=_print_notice, **fields) or {}
            self.session = reread(session)
            print(
                f"Pi compacted the context: {int(data.get('tokensBefore') or 0):,} → "
                f"≈{int(data.get('estimatedTokensAfter') or 0):,} tokens; "
                f"kept from {data.get('firstKeptEntryId')}"
            )
            return None
        # fork: before a user message (Pi's `fork`), or the whole branch (`clone`)
        if args:
            data = engine.request(session, cwd, "fork", entryId=self._entry_id(session, args[0]))
        else:
            data = engine.request(session, cwd, "clone")
        if (data or {}).get("cancelled"):
            print("an extension cancelled the fork")
            return None
        new_file = engine.current_file()
        if new_file is None:
            raise PiEngineError("Pi did not say which file it forked into")
        if new_file.exists():
            self.session = Session.open(new_file)
        else:  # nothing before that message: Pi writes the file at the first reply
            self.session = Session.create(cwd, new_file.parent, parent_session=session.path)
        if args:
            print(
                f"forked into {new_file}; the message to send again:\n"
                f"{(data or {}).get('text', '')}"
            )
        else:
            print(f"cloned the branch into {new_file}")
        return None
