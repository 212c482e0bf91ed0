"""A chat's link is data: the persona, in a real chat with Jupyter AI's persona manager, on
links that name no session (a system file, a folder, a FIFO, a missing or non-JSONL file)
answers each message with one line, never a traceback and never a hang; a relative link is
the chat's folder's, and a link through a symbolic link continues the session it names."""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import os
import re
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import mistune
import pytest

from pinb.chat.link import METADATA_KEY
from pinb.chat.turns import chat_turns
from pinb.core import Session
from pinb.core.file.paths import sessions_root
from tests.chat.room import PERSONA_ID, ChatRoom
from tests.core.helpers import user

DEADLINE = 120.0
#: A hang guard only: a link to a FIFO is answered in milliseconds.
HANG_GUARD = 60.0
LINKED_AT = "2026-01-01T00:00:00.000000+00:00"
AGAIN = (
    "`%pi chat` in analysis.ipynb links it again (or `/session open PATH` or `/session new` here)"
)


def _release(fifo: Path) -> None:
    """Let a reader waiting in ``open()`` of ``fifo`` go: a writer opens it, and leaves."""
    with contextlib.suppress(OSError):  # ENXIO: nobody waits
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def run(scenario: Callable[[], Coroutine[Any, Any, Any]], fifo: Path | None = None) -> Any:
    """Run a chat scenario on a thread of its own that must end within the guard.

    ``asyncio.run`` ends only once the loop's worker threads are idle, so a persona whose
    worker thread stays blocked (in ``open()`` of a FIFO) fails here instead of hanging.
    """
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            done["value"] = asyncio.run(asyncio.wait_for(scenario(), DEADLINE))
        except BaseException as exc:  # handed to the test below
            done["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    if worker.is_alive():
        if fifo is not None:
            _release(fifo)
        worker.join(HANG_GUARD)
        pytest.fail(
            f"the chat had not answered, or a worker was still blocked, after {HANG_GUARD:g}s"
        )
    if "error" in done:
        raise done["error"]
    return done["value"]


def shown(body: str) -> str:
    """What the chat shows of a message: its Markdown rendered (as marked does), as text."""
    rendered = str(mistune.create_markdown(escape=False)(body))
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


def _session_file(folder: Path, text: str = "from a cell") -> Path:
    session = Session.create(folder, folder)
    session.append_message(user(text))
    return session.require_path()


def _link(room: ChatRoom, named: str) -> dict[str, Any]:
    """Link the live chat as a notebook's ``%pi chat`` would, naming ``named``."""
    link = {
        "session": named, "notebook": "analysis.ipynb", "linked_at": LINKED_AT,
        "linked_by": "notebook",
    }  # fmt: skip
    room.chat.set_metadata(METADATA_KEY, link)
    return link


async def _answers(room: ChatRoom, *messages: str) -> list[Any]:
    """Each message's replies (every message the persona wrote for it)."""
    replies = []
    for body in messages:
        before = len(room.chat.get_messages())
        await room.say(body)
        replies.append([m for m in room.chat.get_messages()[before:] if m.sender == PERSONA_ID])
    return replies


def _no_new_session() -> None:
    """No session file was started (a link that fails never falls back to a new session)."""
    assert list(sessions_root().rglob("*.jsonl")) == []


#: What each link names, and why the chat cannot continue it.
BROKEN = {
    "system-file": ("/etc/hostname", "not a Pi session file (no session header on line 1)"),
    "folder": ("{project}", "is a folder, not a session file"),
    "fifo": (  # relative: beside the chat
        "pipe.jsonl",
        "is a FIFO (named pipe), not a regular file (reading it could wait forever)",
    ),
    "missing": ("{project}/gone.jsonl", "no such file"),
    "not-jsonl": ("notes.jsonl", "not a Pi session file (no session header on line 1)"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_link_to_no_session_is_answered_in_one_line_each_time(project: Path, case: str) -> None:
    fifo = project / "pipe.jsonl"
    named, reason = BROKEN[case]
    named = named.format(project=project)
    os.mkfifo(fifo)
    (project / "notes.jsonl").write_text('{\n  "a": "pretty-printed JSON"\n}\nand prose\n')

    async def scenario() -> list[Any]:
        room = ChatRoom(project)
        link = _link(room, named)
        answers = await _answers(room, "hello", "/tree", "/session", "and again?")
        assert room.chat.get_metadata()[METADATA_KEY] == link  # the link is left as it was
        await room.close()
        return answers

    try:
        answers = run(scenario, fifo)
    finally:
        _release(fifo)
    line = f"error: this chat's link names {named}: {reason}; {AGAIN}"
    for replies in answers:
        assert len(replies) == 1  # one answer, no second message with a traceback
        body = replies[0].body
        assert "Traceback" not in body and "\n" not in body
        assert shown(body) == line
    _no_new_session()


def test_a_relative_link_is_the_chats_folders_not_the_servers(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = _session_file(project / "sessions")
    named = os.path.relpath(ours, project)
    server_cwd = tmp_path / "server"
    decoy = server_cwd / named  # the same name, from the server's working folder
    decoy.parent.mkdir(parents=True)
    decoy.write_bytes(_session_file(tmp_path / "other", "the decoy").read_bytes())
    before = decoy.read_bytes()
    monkeypatch.chdir(server_cwd)

    async def scenario() -> list[Any]:
        room = ChatRoom(project)
        _link(room, named)
        answers = await _answers(room, "hello")
        assert room.chat.get_metadata()[METADATA_KEY]["session"] == named  # still relative
        await room.close()
        return answers

    [[reply]] = run(scenario)
    assert "offline demo model" in reply.body and "error" not in shown(reply.body)
    session = Session.open(ours)
    assert len(chat_turns(session)) == 1
    texts = [e.message["content"] for e in session.path_to() if e.role == "user"]
    assert texts[0][0]["text"] == "from a cell" and texts[-1][0]["text"] == "hello"
    assert decoy.read_bytes() == before


def test_a_link_through_a_symbolic_link_continues_the_session_it_names(
    project: Path, tmp_path: Path
) -> None:
    """As ``%pi open`` (and ``pi --session``) follow a link, so does a chat's."""
    real = _session_file(tmp_path / "store")
    (project / "current.jsonl").symlink_to(real)

    async def scenario() -> list[Any]:
        room = ChatRoom(project)
        _link(room, "current.jsonl")
        answers = await _answers(room, "hello")
        await room.close()
        return answers

    [[reply]] = run(scenario)
    assert "offline demo model" in reply.body
    assert (project / "current.jsonl").is_symlink()  # written through, not replaced
    assert len(chat_turns(Session.open(real))) == 1


def test_a_chat_with_a_broken_link_can_be_linked_again_from_the_chat(project: Path) -> None:
    async def scenario() -> list[Any]:
        room = ChatRoom(project)
        _link(room, "gone.jsonl")
        answers = await _answers(room, "hello", "/help", "/session new", "and now?")
        await room.close()
        return answers

    [[broken], [helped], [new], [answered]] = run(scenario)
    assert shown(broken.body) == f"error: this chat's link names gone.jsonl: no such file; {AGAIN}"
    assert "/compact" in helped.body  # /help works without a session
    assert "Started a new session." in new.body.replace("\\", "")
    assert "offline demo model" in answered.body
    [made] = list(sessions_root().rglob("*.jsonl"))
    assert len(chat_turns(Session.open(made))) == 1


UNEXPECTED = (
    "error: pinb's persona could not answer this message (FileExistsError: File exists, an "
    "unexpected error); the Jupyter server's log has the details"
)


def test_an_unexpected_error_is_one_line_in_the_chat_and_a_traceback_in_the_log(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What pinb does not expect (here: a file where the chat's link records go, so no link
    can be written) is logged with its traceback; the chat gets one line, and no path."""
    (project / ".pinb-chat").write_text("a file, not the folder of link records")

    async def scenario() -> list[Any]:
        room = ChatRoom(project)
        answers = await _answers(room, "hello", "/session new")
        # What the persona manager calls for an error process_message let out.
        before = len(room.chat.get_messages())
        await room.persona.handle_uncaught_exception(RuntimeError(f"{project}: a bug"))
        answers.append(room.chat.get_messages()[before:])
        await room.close()
        return answers

    with caplog.at_level(logging.ERROR):
        turn, command, uncaught = run(scenario)
    for replies in (command, uncaught):
        assert len(replies) == 1 and "\n" not in replies[0].body
    assert shown(command[0].body) == UNEXPECTED
    assert shown(uncaught[0].body) == (
        "error: pinb's persona could not answer this message (RuntimeError, an unexpected "
        "error); the Jupyter server's log has the details"
    )
    [reply] = turn  # the turn could not start its session: its reply is that line
    assert "\n" not in reply.body and shown(reply.body) == UNEXPECTED
    for message in (reply, command[0], uncaught[0]):
        assert str(project) not in message.body and "Traceback" not in message.body
    logged = [r.exc_info[1] for r in caplog.records if r.exc_info is not None]
    assert [type(e) for e in logged] == [FileExistsError, FileExistsError]
