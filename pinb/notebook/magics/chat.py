"""``%pi chat``: link this notebook's session to a chat in JupyterLab's chat panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import UsageError
from .settings import MagicsBase, command_parser

__all__ = ["ChatCommands"]


class ChatCommands(MagicsBase):
    """``%pi chat [CHAT] [--follow]``."""

    def _folder(self, notebook: Path | None) -> Path:
        """Where a new chat goes: beside the notebook (the kernel's working folder)."""
        if notebook is not None and notebook.is_absolute() and notebook.is_file():
            return notebook.parent
        return Path.cwd()

    def _saved_chat(self, notebook: Path | None) -> Path | None:
        """The chat this notebook linked before (its saved ``%pi chat`` output), if it exists."""
        from ...chat.link import notebook_link

        saved = notebook_link(notebook) if notebook is not None else None
        if saved is not None and Path(saved["chat"]).exists():
            return Path(saved["chat"])
        return None

    def _chat_path(self, given: str | None, notebook: Path | None, session: Any) -> Path:
        """The chat to link or follow: the one named, else the notebook's own.

        Linking a written session: the chat the notebook linked to it before, else a chat
        named after it beside the notebook (:func:`~pinb.chat.link.default_chat_path`).
        Without one: the chat the notebook linked before, else ``NOTEBOOK.chat`` (or
        ``pi.chat`` when the kernel does not know its notebook) beside it, which its first
        message links to a new session.
        """
        from ...chat.link import default_chat_path, read_link

        if given:
            return Path(given).expanduser().resolve()
        saved = self._saved_chat(notebook)
        if session is None:
            if saved is not None:
                return saved
            name = notebook.with_suffix(".chat").name if notebook is not None else "pi.chat"
            return self._folder(notebook) / name
        path = session.require_path().resolve()
        if saved is not None:
            link = read_link(saved)
            if link is not None and link.session.resolve() == path:
                return saved
        return default_chat_path(self._folder(notebook), path, session.id, session.name)

    def _cmd_chat(self, args: list[str]) -> Any:
        """Link the current session to a chat (the ``.chat`` beside the notebook by default).

        The chat's turns and this notebook's ``%%pi`` cells then continue one session. With
        ``--follow``, or while this notebook has no session file yet, the notebook continues
        the session the chat is linked to instead.
        """
        from ...chat.link import ensure_chat_file, kernel_notebook, link_chat, read_link
        from ...chat.linkview import ChatLinkView

        parser = command_parser("%pi chat")
        parser.add_argument("chat", nargs="?")
        parser.add_argument("--follow", action="store_true")
        opts = parser.parse_args(args)
        notebook = kernel_notebook(self.shell.user_ns if self.shell is not None else None)
        session = self.session
        if session is not None:
            session.refresh()
        linking = session is not None and session.is_persisted and not opts.follow
        chat = self._chat_path(opts.chat, notebook, session if linking else None)
        if chat.suffix != ".chat":
            raise UsageError(f"%pi chat: {chat.name} is not a .chat file")
        before = read_link(chat)
        if not linking:
            if before is not None and before.session.is_file():
                self.session = self._open(before.session)
                return ChatLinkView(before, "follows")
            if opts.follow:
                raise UsageError(
                    f"%pi chat --follow: {chat.name} is not linked to a session file yet "
                    "(its first message starts one)"
                )
            created = ensure_chat_file(chat)
            print(
                f"{'created' if created else 'found'} the chat {chat.name}, not linked yet: "
                "this notebook's session is written at its first message. Run a %%pi cell "
                "and then %pi chat again, or send the chat a message first and %pi chat "
                "follows the session it starts"
            )
            return None
        assert session is not None  # linking: a written session
        path = session.require_path().resolve()
        link = link_chat(chat, path, notebook=notebook)
        note = ""
        if before is not None and before.session.resolve() != path:
            note = f"(the chat was on {before.session.name}; its next message continues this one)"
        return ChatLinkView(link, "linked", note)
