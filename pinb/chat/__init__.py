"""Pi in JupyterLab's chat panel, on the session a notebook's ``%%pi`` cells use.

- :mod:`pinb.chat.link`: which session file a ``.chat`` continues (``%pi chat`` links one).
- :mod:`pinb.chat.turns`: a chat's side of the shared session, a turn with either engine;
  :mod:`pinb.chat.control` stops one from the chat.
- :mod:`pinb.chat.transcript`: a turn's events as one chat message, with a cell's footer.
- :mod:`pinb.chat.commands`: ``/tree``, ``/context``, ``/tokens``, ``/compact``, ``/kept``,
  ``/session`` as Markdown or a view's HTML the chat shows.
- :mod:`pinb.chat.markdown`: the escapes every message goes through (untrusted text stays
  text); :mod:`pinb.chat.linkview`: what ``%pi chat`` shows.
- :mod:`pinb.chat.persona`: the Jupyter AI persona (the ``chat`` extra); the only module
  here that imports Jupyter AI or jupyterlab-chat, so the rest works without them.
"""

from __future__ import annotations

from .link import ChatLink, default_chat_path, link_chat, read_link

__all__ = ["ChatLink", "default_chat_path", "link_chat", "read_link"]
