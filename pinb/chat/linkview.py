"""What ``%pi chat`` shows: the link in a line, and the link itself saved with the notebook."""

from __future__ import annotations

import json
from typing import Any

from ..render.html import div, escape, wrap
from .link import LINK_MIMETYPE, ChatLink, server_path

#: jupyterlab-chat's command that opens a chat (``inSidePanel``: in the side panel).
OPEN_CHAT = "jupyterlab-chat:open"

__all__ = ["ChatLinkView"]


class ChatLinkView:
    """A chat linked to a session, as a cell shows it.

    The display carries the link under :data:`~pinb.chat.link.LINK_MIMETYPE` too, which
    JupyterLab does not draw and the notebook saves: the notebook's side of the link
    (:func:`pinb.chat.link.notebook_link` reads it back).

    Parameters
    ----------
    link:
        The link made or followed.
    action:
        What happened, in a few words (``"linked"``, ``"follows"``).
    note:
        One more line (what the chat was on before, …).
    """

    def __init__(self, link: ChatLink, action: str = "linked", note: str = "") -> None:
        self.link = link
        self.action = action
        self.note = note
        #: The chat as the Jupyter server names it (``None``: no server started the kernel).
        self.server_path = server_path(link.chat)

    def _open_html(self) -> str:
        """A link that opens the chat in JupyterLab's chat side panel, beside the notebook.

        JupyterLab's command linker runs it (``data-commandlinker-*``, a click, nothing
        fetched); a sanitizer drops those attributes and leaves the words, inert.
        """
        if self.server_path is None:
            return ""
        args = json.dumps({"filepath": self.server_path, "inSidePanel": True})
        return (
            f'<div><a data-commandlinker-command="{OPEN_CHAT}" '
            f'data-commandlinker-args="{escape(args)}" '
            'style="cursor:pointer;color:#0969da;text-decoration:underline">'
            f"Open {escape(self.link.chat.name)} beside this notebook</a> (the chat side panel) "
            "and ask Pi there; %pi tree shows the chat's turns as pinb.chat rows</div>"
        )

    def to_text(self) -> str:
        link = self.link
        if self.action == "follows":
            head = (
                f"this notebook continues the session of the chat {link.chat.name}: "
                f"{link.session.name}"
            )
        else:
            head = (
                f"linked the chat {link.chat.name} to this notebook's session "
                f"{link.session.name}: chat turns and %%pi cells continue one session"
            )
        lines = [head]
        if self.note:
            lines.append(self.note)
        lines.append(
            f"open {link.chat.name} in JupyterLab's chat panel (the file browser, or the chat "
            "sidebar) and ask Pi there; %pi tree shows the chat's turns as pinb.chat rows"
        )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ChatLinkView {self.link.describe()}>"

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        text = self.to_text()
        lines = text.splitlines()
        opener = self._open_html()
        if opener:  # the link stands where the words say how to open the chat
            lines = lines[:-1]
        html = wrap("".join(div(escape(line)) for line in lines) + opener, "pinb-chat-link")
        link = self.link
        data: dict[str, Any] = {
            "text/plain": text,
            "text/html": html,
            LINK_MIMETYPE: {
                "chat": str(link.chat),
                "session": str(link.session),
                "notebook": str(link.notebook) if link.notebook is not None else None,
                "linked_at": link.linked_at,
            },
        }
        if include:
            data = {k: v for k, v in data.items() if k in include}
        if exclude:
            data = {k: v for k, v in data.items() if k not in exclude}
        return data, {}
