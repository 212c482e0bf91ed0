"""A chat in-process: jupyterlab-chat's ``YChat`` with Jupyter AI's ``PersonaManager`` (``ChatRoom``)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from tests.pi.loop import KEY, MODEL

PERSONA_ID = "jupyter-ai-personas::pinb::PinbPersona"


class ChatRoom:
    """A real chat document, Jupyter AI's router and the chat's persona manager, in-process.

    Ada's messages reach the persona the way they do in the server: a collaborative client
    puts the message (with the persona picker's ``metadata["to_persona"]`` and its
    mentions) into the ``YChat``, the router (``jupyter_ai_router.MessageRouter``) sees it
    and hands it to the manager. A WebSocket chat model (``chat=``) gets the message from
    its handler, which the router's callback then routes the same way.
    """

    def __init__(self, root: Path, name: str = "demo.chat", chat: Any = None) -> None:
        from jupyter_ai_persona_manager import PersonaManager
        from jupyter_ai_router.router import MessageRouter
        from jupyterlab_chat.models import User
        from jupyterlab_chat.ychat import YChat

        self.root = root
        self.path = root / name
        self.collaborative = chat is None
        if chat is None:
            chat = YChat()
            chat.initial_path = name
            chat.dirty = False  # loaded, as a collaboration room leaves it
        self.chat = chat
        self.manager = PersonaManager(
            chat=chat, root_dir=str(root), event_loop=asyncio.get_running_loop()
        )
        self.router = MessageRouter()
        self.router.connect_chat(chat.get_id(), chat)
        self.router.observe_chat_msg(chat.get_id(), self.manager.on_chat_message)
        self.persona = self.manager.personas[PERSONA_ID]
        self.user = User(username="ada", name="Ada", display_name="Ada")
        chat.set_user(self.user)

    async def say(
        self, body: str, *, to_persona: bool = True, mentions: list[str] | None = None
    ) -> Any:
        """Send ``body`` as Ada and wait until every reply it started has ended; the reply."""
        before = len(self.chat.get_messages())
        waiting = asyncio.all_tasks()  # the test's own tasks: not the persona's
        metadata = {"to_persona": PERSONA_ID} if to_persona else {}
        if mentions is None:
            mentions = [PERSONA_ID] if f"@{self.persona.as_user().mention_name}" in body else []
        if self.collaborative:
            from pycrdt import Map

            message = {
                "type": "msg", "id": str(uuid.uuid4()), "body": body, "time": time.time(),
                "sender": self.user.username, "raw_time": True, "metadata": metadata,
                "mentions": mentions,
            }  # fmt: skip
            self.chat.ymessages.append(Map(message))
        else:
            from jupyterlab_chat.models import NewMessage

            message_id = self.chat.add_message(NewMessage(body=body, sender=self.user.username))
            message = self.chat.get_message(message_id)
            message.metadata, message.mentions = metadata, mentions
            self.router._route_message(self.chat.get_id(), message)
        await self.settle(waiting)
        replies = [m for m in self.chat.get_messages()[before:] if m.sender == PERSONA_ID]
        return replies[-1] if replies else None

    async def settle(self, waiting: set[asyncio.Task[Any]] | None = None) -> None:
        """Wait for every task the persona started (replies, mention routing)."""
        waiting = waiting if waiting is not None else asyncio.all_tasks()
        while True:
            await asyncio.sleep(0)  # scheduled callbacks first (the chat's timestamps)
            started = asyncio.all_tasks() - waiting - {asyncio.current_task()}
            if not started:
                return
            await asyncio.gather(*started)

    async def close(self) -> None:
        self.router.disconnect_chat(self.chat.get_id())
        await self.manager.shutdown_personas()


__all__ = ["KEY", "MODEL", "PERSONA_ID", "ChatRoom"]
