"""Pi in JupyterLab's chat panel: a Jupyter AI persona on the session a notebook's ``%%pi`` cells use.

:class:`PinbPersona` is registered through the ``jupyter_ai.personas`` entry point (the
``chat`` extra: ``pip install 'pinb[chat]'``). Jupyter AI's persona manager makes one per
chat, in the Jupyter server's process. It answers a message with pinb's built-in agent (the
default; ``offline``, the scripted demo model, needs no key) or with the user's own Pi
(``c.PinbPersona.engine = "pi"``, or the engine setting in the chat's persona menu),
streaming the reply into one chat message with each tool call on a line and the footer a
cell shows (what the run was billed; how full the context is, against which window).

The chat is linked to a session file (:mod:`pinb.chat.link`): ``%pi chat`` in a notebook
links the notebook's session, ``/session open PATH`` or ``/session new`` in the chat picks
one, and a chat's first message starts one when it has none. Chat turns and cell turns are
turns of that one session (:mod:`pinb.chat.turns`). The slash commands
(:mod:`pinb.chat.commands`) show pinb's views of it. Stop in the chat stops the turn; its
partial reply is saved.

Everything that blocks (file locks, models, Pi) runs on worker threads; only the chat is
touched on the server's event loop. Every message the persona writes passes
:func:`pinb.llm.redact_secrets`, so no configured key reaches the chat file.

Without its requirements (the ``chat`` extra) importing this module raises the persona
manager's ``PersonaRequirementsUnmet``, which hides the persona instead of failing the chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import re
import time
from pathlib import Path
from typing import Any

from jupyter_ai_persona_manager import (
    BasePersona,
    CommandOption,
    PersonaDefaults,
    PersonaRequirementsUnmet,
    SettingConfiguration,
    SettingOption,
)
from jupyterlab_chat.models import ChatMessageAction, Message, MimeModel, NewMessage
from traitlets import Bool, Enum, Int, List, Unicode

from ..core.file.writers import SessionBusyError
from ..errors import PinbError
from ..llm.config.secrets import redact_secrets
from ..render.html import escape
from .avatar import avatar_file
from .commands import COMMANDS, parse_command, run_command
from .control import RunControl, RunOutcome, busy_line
from .link import METADATA_KEY, ChatLinkError, announced
from .markdown import clean, literal
from .transcript import ChatTranscript
from .turns import DEFAULT_TOOLS, ENGINES, ChatSession, ChatSettings

__all__ = ["PinbPersona"]

#: Modules of the ``chat`` extra the persona needs beyond the persona manager: pictures
#: (Pillow), the user's Pi engine (IPython, through ``pinb.notebook``).
REQUIREMENTS = {"PIL": "Pillow", "IPython": "IPython"}


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a module blocked or half-installed
        return True


def _check_requirements() -> None:
    missing = [package for module, package in REQUIREMENTS.items() if _missing(module)]
    if missing:
        raise PersonaRequirementsUnmet(
            f"pinb's Pi persona needs {', '.join(missing)}: pip install 'pinb[chat]'"
        )


_check_requirements()

_PICTURES = re.compile(r"(\(data:image/png;base64,[A-Za-z0-9+/=]+\))")
#: How often a streaming reply is written to the chat at most (each write saves the chat).
FLUSH_SECONDS = 0.15


class PinbPersona(BasePersona):  # type: ignore[misc]  # the manager ships no types
    """Pi on the chat's linked session, answering with pinb's agent or the user's own Pi.

    Settings are traitlets of the Jupyter server's configuration
    (``c.PinbPersona.engine = "pi"`` in ``jupyter_server_config.py``, or
    ``--PinbPersona.engine=pi`` on the command line); the engine can also be changed per
    chat in the persona's menu of the chat input.
    """

    engine = Enum(
        list(ENGINES),
        default_value="pinb",
        help="who answers: pinb (the built-in agent) or pi (your own Pi, `pi --mode rpc`)",
    ).tag(config=True)
    model = Unicode(
        "",
        help="the built-in agent's model (provider/model-id, or offline); empty: the model "
        "the session recorded when pinb can run it, else the offline demo model",
    ).tag(config=True)
    pi_model = Unicode("", help="the model your Pi runs (empty: Pi's own choice)").tag(config=True)
    pi_command = Unicode(
        "", help="the command line of your Pi ($PINB_PI_COMMAND wins; empty: pi on PATH)"
    ).tag(config=True)
    thinking = Unicode("", help="thinking level (off … xhigh); empty: the default").tag(config=True)
    tools = List(
        Unicode(), default_value=list(DEFAULT_TOOLS), help="the built-in agent's tools"
    ).tag(config=True)
    context_window = Int(0, help="the window to use and show, in tokens (0: the model's own)").tag(
        config=True
    )
    auto_compact = Bool(True, help="compact automatically near the context window").tag(config=True)
    keep_facts = Bool(
        True,
        help="add pinb's cited kept-facts section to every summary pinb writes; False: "
        "Pi's exact summary text",
    ).tag(config=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._chat_session: ChatSession | None = None
        self._control: RunControl | None = None
        self._observer = self.chat.observe_messages(self._on_chat_event)
        self.report_slash_commands(
            [CommandOption(name=name, description=text) for name, text in COMMANDS.items()]
        )
        self._report_settings()

    # -- the persona manager's API ----------------------------------------------------------

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="Pi",
            description=(
                "Pi on the session your notebook's %%pi cells use: pinb's agent or your own "
                "Pi, with the session's memory one slash command away (/tree, /context, "
                "/tokens, /compact, /kept)."
            ),
            avatar_path=str(avatar_file()),
            system_prompt="Pi's system prompt, as pinb's agent (or your Pi) builds it.",
            slash_commands=set(COMMANDS),
        )

    async def process_message(self, message: Message) -> None:
        """Answer one message: a slash command with a view, anything else with a turn."""
        chat = self._session()
        prompt = self._prompt(message)
        command = parse_command(prompt)
        followed, note = await self._follow_link(chat, command)
        if not followed:
            return
        self._adopt_link(chat)
        if command is not None:
            await self._command(chat, *command, note=note)
            return
        if not prompt.strip():
            self._send(literal("(an empty message: nothing to send to the model)"))
            return
        attached = self.process_attachments(message)
        if attached:
            prompt = f"{prompt}\n\n{attached}"
        await self._turn(chat, prompt, message, note)

    async def handle_uncaught_exception(self, exc: Exception) -> None:
        """One line in the chat for an error nothing else caught (a bug): never a traceback.

        The persona manager has logged it with its traceback already; the chat gets what
        happened and where to look, and no server path.
        """
        self._answer_error(_unexpected_line(exc))

    async def cancel_response(self) -> None:
        """Stop the running turn: the built-in agent's token, or ``abort`` to the user's Pi."""
        control = self._control
        if control is not None:
            await asyncio.to_thread(control.stop)

    async def shutdown(self) -> None:
        await super().shutdown()
        with contextlib.suppress(Exception):
            self.chat.unobserve_messages(self._observer)
        chat, self._chat_session = self._chat_session, None
        if chat is not None:
            await asyncio.to_thread(chat.close)

    async def update_settings(self, settings: dict[str, str | None]) -> None:
        """The engine chosen in the chat's persona menu."""
        engine = settings.get("engine")
        if engine in ENGINES and engine != self.engine:
            self.engine = engine
            chat = self._chat_session
            if chat is not None and engine != "pi":
                await asyncio.to_thread(chat._close_pi)

    # -- the chat's session -----------------------------------------------------------------

    def _settings(self) -> ChatSettings:
        return ChatSettings(
            engine=self.engine,
            model=self.model,
            pi_model=self.pi_model,
            pi_command=self.pi_command,
            thinking=self.thinking,
            tools=tuple(self.tools),
            context_window=self.context_window,
            auto_compact=self.auto_compact,
            keep_facts=self.keep_facts,
        )

    def _session(self) -> ChatSession:
        chat = self._chat_session
        if chat is None:
            path = Path(self.get_chat_path()).resolve()
            chat = self._chat_session = ChatSession(path, self._settings())
        chat.settings = self._settings()
        return chat

    def _report_settings(self) -> None:
        self.report_settings_configuration(
            [
                SettingConfiguration(
                    id="engine",
                    name="Engine",
                    description="who answers in this chat, on the linked session",
                    current=self.engine,
                    options=[
                        SettingOption(id="pinb", name="pinb's agent", description="built in"),
                        SettingOption(id="pi", name="your Pi", description="pi --mode rpc"),
                    ],
                )
            ]
        )

    def _link_metadata(self) -> Any:
        return self.chat.get_metadata().get(METADATA_KEY)

    async def _follow_link(
        self, chat: ChatSession, command: tuple[str, str] | None
    ) -> tuple[bool, str | None]:
        """Follow the chat's link: ``(go on, note)``; a link that fails is answered here.

        A link is data (whoever wrote the chat's metadata): one that names no session file
        that opens is one line in the chat (:class:`~pinb.chat.link.ChatLinkError`), and
        only what relinks the chat (``/session open PATH``, ``/session new``) or ``/help``
        goes on.
        """
        try:
            said = announced(self.chat.get_messages())
            note = await asyncio.to_thread(chat.follow_link, self._link_metadata(), said)
        except ChatLinkError as exc:
            self.log.warning("%s: %s", chat.chat.name, exc)
            if _relinks(command):
                return True, None
            self._answer_error(str(exc))
            return False, None
        except PinbError as exc:  # already one line (what, why, what to do)
            self._answer_error(str(exc))
            return False, None
        except Exception as exc:  # a bug: the log has its traceback, the chat one line
            self._answer_error(self._unexpected(exc))
            return False, None
        return True, note

    def _unexpected(self, exc: BaseException) -> str:
        """Log an error nothing expected (with its traceback); the chat's line for it."""
        self.log.error("pinb's persona failed in %s", self.get_chat_path(), exc_info=exc)
        return _unexpected_line(exc)

    def _answer_error(self, line: str) -> None:
        """Answer with one error line (escaped: it may quote what a link names)."""
        self._send("**error:** " + literal(line))

    def _adopt_link(self, chat: ChatSession) -> None:
        """Copy the link into the chat's metadata when the notebook made a newer one."""
        link = chat.link
        if link is not None and self._link_metadata() != link.to_metadata():
            self.chat.set_metadata(METADATA_KEY, link.to_metadata())

    def _prompt(self, message: Message) -> str:
        """The message's text without the persona's own mention."""
        mention = re.escape(self.as_user().mention_name)
        return re.sub(rf"(?<![\w-])@{mention}:?(?![\w-])\s*", "", message.body).strip()

    def _on_chat_event(self, event: Any) -> None:
        """A message that mentions the persona is answered even when the chat input's persona
        picker is set to someone else (or no one): the manager routes only by the picker."""
        message = event.message
        if event.action != ChatMessageAction.CLIENT_MSG_RECEIVED or message.deleted:
            return
        mentioned = self.id in (message.mentions or []) or re.search(
            rf"(?<![\w-])@{re.escape(self.as_user().mention_name)}(?![\w-])", message.body
        )
        if not mentioned:
            return
        if (message.metadata or {}).get("to_persona") == self.id:
            return  # the manager routes it here already
        self.parent.event_loop.create_task(self.on_message(message))

    # -- writing to the chat ------------------------------------------------------------------

    def _send(self, body: str) -> str:
        return str(self.chat.add_message(NewMessage(body=_safe(body), sender=self.id)))

    def _replace(self, message_id: str, body: str) -> None:
        update = Message(
            id=message_id, body=_safe(body), time=time.time(), sender=self.id, raw_time=False
        )
        self.chat.update_message(update, trigger_actions=[])

    async def _command(self, chat: ChatSession, name: str, args: str, note: str | None) -> None:
        self.set_status("is reading the session...")
        html = None
        try:
            answer = await asyncio.to_thread(run_command, chat, name, args)
            body, html = answer.body, answer.html
        except SessionBusyError as exc:
            body = literal(busy_line(exc))
        except PinbError as exc:
            body = "**error:** " + literal(str(exc))
        except Exception as exc:  # a bug: logged with its traceback, one line here
            body = "**error:** " + literal(self._unexpected(exc))
        finally:
            self.clear_status()
        self._adopt_link(chat)
        if note:
            body = f"*{literal(note)}*\n\n{body}"
        if html is None:
            self._send(body)
            return
        # A view: its own HTML, shown as an untrusted output is (the chat sanitizes it).
        if note:
            html = f"<div><em>{escape(note)}</em></div>{html}"
        bundle = {"text/html": _safe(html), "text/plain": _safe(body)}
        self.chat.add_message(
            NewMessage(body=_safe(body), sender=self.id, mime_model=MimeModel(data=bundle))
        )

    async def _turn(
        self, chat: ChatSession, prompt: str, message: Message, note: str | None
    ) -> None:
        loop = asyncio.get_running_loop()
        transcript = ChatTranscript([note] if note else None)
        control = self._control = RunControl()
        state: dict[str, Any] = {"id": None, "pending": False, "status": None}

        def flush() -> None:
            state["pending"] = False
            body = transcript.markdown()
            if state["id"] is None:
                state["id"] = self._send(body)
            else:
                self._replace(state["id"], body)

        def on_event(event: Any) -> None:
            if transcript.add(event) and not state["pending"]:
                state["pending"] = True
                loop.call_later(FLUSH_SECONDS, flush)
            if transcript.status != state["status"]:
                state["status"] = transcript.status
                self.set_status(transcript.status)

        def show(event: Any) -> None:  # on the worker thread: hand the event to the loop
            loop.call_soon_threadsafe(on_event, event)

        sender = self.chat.get_users().get(message.sender)
        self.set_status()
        try:
            outcome = await asyncio.to_thread(
                chat.run,
                prompt,
                message_id=message.id,
                sender=(sender.display_name or sender.name) if sender is not None else "",
                show=show,
                control=control,
            )
        except Exception as exc:  # a bug: logged with its traceback, one line in the reply
            outcome = RunOutcome(error=self._unexpected(exc))
        finally:
            self._control = None
            self.clear_status()
        self._adopt_link(chat)
        for line in outcome.notes:
            transcript.note(line)
        if outcome.busy:
            transcript.note(outcome.busy)
        if outcome.error:
            transcript.note(f"error: {outcome.error}")
        transcript.footer = outcome.footer
        flush()


def _relinks(command: tuple[str, str] | None) -> bool:
    """Whether a command works without the chat's link: it relinks the chat, or is /help."""
    if command is None:
        return False
    name, args = command
    return name == "/help" or (name == "/session" and args.split()[:1] in (["open"], ["new"]))


def _unexpected_line(exc: BaseException) -> str:
    """One line for an error pinb did not expect: its kind, never its text (a path, a repr)."""
    why = type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        why += f": {exc.strerror}"
    return (
        f"pinb's persona could not answer this message ({why}, an unexpected error); "
        "the Jupyter server's log has the details"
    )


def _safe(body: str) -> str:
    """A body for the chat: no configured secret in its text, valid UTF-8.

    Pictures (``data:`` URIs pinb made) are left out of the scan, which reads text only.
    """
    parts = _PICTURES.split(body)
    return "".join(part if i % 2 else redact_secrets(clean(part)) for i, part in enumerate(parts))
