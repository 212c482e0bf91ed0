"""``%pi chat`` in a real ``InteractiveShell``: link the notebook's session to a chat, follow the
chat's session, and see the chat's turns in ``%pi tree``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.chat.link import LINK_MIMETYPE, METADATA_KEY, link_chat, notebook_link, read_link
from pinb.core import Session
from pinb.errors import UsageError
from pinb.notebook.magics import PiMagics
from pinb.notebook.magics.chat import ChatCommands
from tests.chat.room import PERSONA_ID, ChatRoom


class PiMagicsWithChat(PiMagics, ChatCommands):
    """``PiMagics`` with the ``chat`` group among its command groups, as ``magic.py`` composes
    it (the same class once it does: ``%pi``/``%%pi`` and their registration are inherited)."""


@pytest.fixture()
def shell(project: Path) -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "pinb")
    original = ip.magics_manager.registry["PiMagics"]
    magics = PiMagicsWithChat(ip)
    magics.model = "offline"
    ip.register_magics(magics)
    ip.user_ns["__session__"] = str(project / "analysis.ipynb")  # as ipykernel sets it
    yield ip
    magics.pi_engine.close()
    magics.session = None
    ip.user_ns.pop("__session__", None)
    ip.register_magics(original)  # %pi is the extension's own again


def _magics(shell: InteractiveShell) -> Any:
    return shell.magics_manager.registry["PiMagicsWithChat"]


def _run(shell: InteractiveShell, source: str) -> tuple[Any, str, list[dict[str, Any]]]:
    with capture_output() as captured:
        result = shell.run_cell(source)
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return result.result, captured.stdout, [o.data for o in captured.outputs]


def test_a_notebook_without_a_session_file_gets_its_chat_and_waits(
    shell: InteractiveShell, project: Path
) -> None:
    value, printed, _ = _run(shell, "%pi chat")
    assert value is None
    assert "created the chat analysis.chat, not linked yet" in printed
    chat = json.loads((project / "analysis.chat").read_text())
    assert chat["messages"] == [] and chat["metadata"]["id"]
    assert METADATA_KEY not in chat["metadata"]
    with pytest.raises(UsageError, match="not linked to a session file yet"):
        _run(shell, "%pi chat --follow")
    with pytest.raises(UsageError, match=r"is not a \.chat file"):
        _run(shell, "%pi chat notes.txt")


def test_pi_chat_links_the_session_and_the_chat_turn_shows_in_the_tree(
    shell: InteractiveShell, project: Path
) -> None:
    _run(shell, "%%pi\nWhat is in app.py?")
    session = _magics(shell).session
    path = session.path
    value, _, _ = _run(shell, "%pi chat")
    # Beside the notebook, named after the session as %pi tree heads it.
    name = f"session-{session.id[:8]}.chat"
    bundle, _ = value._repr_mimebundle_()
    assert f"linked the chat {name} to this notebook's session" in bundle["text/plain"]
    saved = bundle[LINK_MIMETYPE]
    assert saved["session"] == str(path) and saved["chat"] == str(project / name)
    # The chat carries the link in its metadata (it was created with it) and beside it.
    chat = json.loads((project / name).read_text())
    assert chat["metadata"][METADATA_KEY]["notebook"] == "analysis.ipynb"
    link = read_link(project / name)
    assert link is not None and link.session == path and link.linked_by == "notebook"
    # Again: the same chat, no second file.
    _run(shell, "%pi chat")
    assert sorted(p.name for p in project.glob("*.chat")) == [name]

    async def chat_turn() -> Any:
        room = ChatRoom(project, name)
        reply = await room.say("and what about tests?")
        await room.close()
        return reply

    reply = asyncio.run(asyncio.wait_for(chat_turn(), 120))
    assert "offline demo model" in reply.body
    tree, _, _ = _run(shell, "%pi tree")
    text = tree.to_text()
    assert "pinb.chat" in text and "and what about tests?" in text
    _, _, outputs = _run(shell, "%%pi\nAnd the README?")
    shown = "\n".join(o.get("text/plain", "") for o in outputs)
    # The cell continued after the chat's turn, and says whose turn it was.
    assert f"read 4 entries the chat panel ({name}) appended to this session" in shown
    session = Session.open(path)
    users = [e for e in session.path_to() if e.role == "user"]
    assert [u.message["content"][0]["text"] for u in users] == [
        "What is in app.py?",
        "and what about tests?",
        "And the README?",
    ]


def test_a_new_kernel_follows_the_chat_and_finds_its_chat_again(
    shell: InteractiveShell, project: Path
) -> None:
    chosen = Session.create(project)
    chosen.append_message({"role": "user", "content": "picked in the chat", "timestamp": 1})
    chat = project / "team.chat"
    link_chat(chat, chosen.require_path(), linked_by="chat")  # `/session open` in the chat
    # The notebook saved a `%pi chat team.chat` output (its side of the link).
    value, _, _ = _run(shell, f"%pi chat {chat}")
    bundle, _ = value._repr_mimebundle_()
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": "%pi chat team.chat",
                "outputs": [{"output_type": "execute_result", "data": bundle, "metadata": {}}],
                "execution_count": 1,
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (project / "analysis.ipynb").write_text(json.dumps(notebook))
    assert notebook_link(project / "analysis.ipynb")["chat"] == str(chat)
    _magics(shell).session = None  # a new kernel for the notebook
    value, _, _ = _run(shell, "%pi chat")  # no name: the chat this notebook linked before
    assert "continues the session of the chat team.chat" in value.to_text()
    assert _magics(shell).session.path == chosen.require_path()
    # The chat moves on to another session; the notebook follows when asked.
    other = Session.create(project)
    other.append_message({"role": "user", "content": "another", "timestamp": 2})
    link_chat(chat, other.require_path(), linked_by="chat")
    _run(shell, "%pi chat --follow")
    assert _magics(shell).session.path == other.require_path()


def test_a_kernel_that_knows_no_notebook_puts_the_chat_in_its_folder_not_the_sessions(
    shell: InteractiveShell, project: Path, tmp_path: Path
) -> None:
    """nbclient (CI, Run All from a script) names no notebook: the chat goes in the kernel's
    working folder, the notebook's, even when the sessions live in a temporary folder."""
    shell.user_ns.pop("__session__")
    sessions = tmp_path / "elsewhere" / "sessions"
    _run(shell, f"%config PiMagics.sessions_dir = {str(sessions)!r}")
    _run(shell, "%%pi\nWhat is in app.py?")
    session = _magics(shell).session
    assert session.require_path().parent == sessions
    value, _, _ = _run(shell, "%pi chat")
    chat = project / f"session-{session.id[:8]}.chat"
    assert value.link.chat == chat and chat.is_file()
    assert list(sessions.parent.rglob("*.chat")) == []
    # A chat the user made under the name, linked to nothing, is never taken over.
    _run(shell, "%pi name Parser fix")
    mine = project / "parser-fix.chat"
    mine.write_text('{"messages": [], "users": {}, "metadata": {"mine": true}}')
    before = mine.read_bytes()
    value, _, _ = _run(shell, "%pi chat")
    assert value.link.chat == project / "parser-fix-2.chat"
    assert mine.read_bytes() == before and read_link(mine) is None


def test_the_link_is_said_once_when_the_chat_opens_and_again_only_when_it_changes(
    shell: InteractiveShell, project: Path
) -> None:
    from jupyterlab_chat.ychat import YChat

    _run(shell, "%%pi\nWhat is in app.py?")
    value, _, _ = _run(shell, "%pi chat")
    chat_file = value.link.chat
    session = _magics(shell).session
    # The chat opens with Pi's message naming the session and the notebook: said before
    # anyone writes.
    document = json.loads(chat_file.read_text())
    [opening] = document["messages"]
    assert opening["sender"] == PERSONA_ID
    assert f"continues {session.require_path().name}" in opening["body"]
    assert "the notebook analysis.ipynb" in opening["body"]
    other = Session.create(project)
    other.append_message({"role": "user", "content": "elsewhere", "timestamp": 1})

    async def chat_turns() -> list[str]:
        ychat = YChat()
        ychat.set(chat_file.read_text())  # the chat as the server loads it from the file
        ychat.initial_path = chat_file.name
        room = ChatRoom(project, chat_file.name, chat=ychat)
        bodies = [(await room.say("first")).body, (await room.say("second")).body]
        link_chat(chat_file, other.require_path(), notebook=project / "analysis.ipynb")
        bodies += [(await room.say("third")).body, (await room.say("fourth")).body]
        await room.close()
        return [body.replace("\\", "") for body in bodies]

    first, second, third, fourth = asyncio.run(asyncio.wait_for(chat_turns(), 120))
    assert "offline demo model" in first and "offline demo model" in second
    for body in (first, second, fourth):
        assert "continues" not in body, body
    assert f"this chat now continues {other.require_path().name}" in third
