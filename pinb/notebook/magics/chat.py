"""``%pi chat``: link this notebook's session to a chat in JupyterLab's chat panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import UsageError
from .settings import MagicsBase, command_parser

__all__ = ["ChatCommands"]


class ChatCommands(MagicsBase):
    """``%pi chat [CHAT] [--follow]``."""

    def _chat_path(self, given: str | None, notebook: Path | None) -> Path:
        from ...chat.link import default_chat_path, notebook_link

        if given:
            return Path(given).expanduser().resolve()
        if notebook is not None:
            saved = notebook_link(notebook)  # the chat this notebook linked before
            if saved is not None and Path(saved["chat"]).exists():
                return Path(saved["chat"])
            return default_chat_path(notebook).resolve()
        raise UsageError(
            "%pi chat: name the chat file (%pi chat NAME.chat): this kernel does not know "
            "which notebook it runs for"
        )

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
        chat = self._chat_path(opts.chat, notebook)
        if chat.suffix != ".chat":
            raise UsageError(f"%pi chat: {chat.name} is not a .chat file")
        session = self.session
        if session is not None:
            session.refresh()
        before = read_link(chat)
        if opts.follow or session is None or not session.is_persisted:
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
        path = session.require_path().resolve()
        link = link_chat(chat, path, notebook=notebook)
        note = ""
        if before is not None and before.session.resolve() != path:
            note = f"(the chat was on {before.session.name}; its next message continues this one)"
        return ChatLinkView(link, "linked", note)
