"""One session, two front ends: a kernel's ``%%pi`` cells and the chat persona's turns at the
same time, on one file — nothing lost, no id twice, one conversation, and Pi 1.6.0 reads it
as pinb does. A kernel in a process of its own holding a turn makes the chat say a cell is
running (and the other way round), at once, never a hang."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.chat.link import link_chat
from pinb.chat.turns import chat_turns
from pinb.core import Session
from pinb.core.writers import SessionBusyError
from pinb.testing.llm_server import LLMServer
from tests.chat.conftest import KEY, MODEL, ChatRoom
from tests.pi.reference import PiReference
from tests.shells import pi_shell

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py

DEADLINE = 240.0
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def shell(project: Path) -> Iterator[InteractiveShell]:
    with pi_shell() as ip:
        yield ip


def _cell(shell: InteractiveShell, prompt: str) -> str:
    with capture_output() as captured:
        result = shell.run_cell(f"%%pi --model {MODEL}\n{prompt}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return "\n".join(o.data.get("text/plain", "") for o in captured.outputs) + captured.stdout


def _user_texts(session: Session) -> list[str]:
    texts = []
    for entry in session.path_to():
        if entry.role == "user":
            content = entry.message["content"]
            texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


def test_cells_and_chat_turns_at_the_same_time_make_one_conversation(
    shell: InteractiveShell, project: Path, loop_server: LLMServer, pi16: PiReference
) -> None:
    magics = shell.magics_manager.registry["PiMagics"]
    loop_server.reply(text="the notebook's first answer")
    _cell(shell, "cell start")
    path = magics.session.path
    chat = project / "analysis.chat"
    link_chat(chat, path, notebook=project / "analysis.ipynb")  # what `%pi chat` does
    for i in range(26):
        loop_server.reply(text=f"answer {i}: " + "several words " * 12, chunk_delay=0.005)
    sent: dict[str, bool] = {}  # prompt -> it ran (else the session was busy)
    errors: list[BaseException] = []
    both_ready = threading.Barrier(2, timeout=DEADLINE)

    async def chat_turn(room: ChatRoom, prompt: str) -> str:
        reply = await room.say(prompt)
        sent[prompt] = "busy:" not in reply.body
        return str(reply.body)

    cell_before = threading.Event()
    chat_after: list[str] = []

    def chat_side() -> None:
        async def talk() -> None:
            room = ChatRoom(project, "analysis.chat")
            room.persona.model = MODEL
            both_ready.wait()  # the chat is up: both sides start together
            for i in range(6):
                await chat_turn(room, f"chat {i}")
            # Then one after the other: the chat continues after the next cell, and says so.
            await asyncio.to_thread(cell_before.wait, DEADLINE)
            chat_after.append(await chat_turn(room, "chat after"))
            await room.close()

        try:
            asyncio.run(asyncio.wait_for(talk(), DEADLINE))
        except BaseException as exc:
            errors.append(exc)
            both_ready.abort()

    thread = threading.Thread(target=chat_side)
    thread.start()
    both_ready.wait()
    for i in range(6):
        try:
            _cell(shell, f"cell {i}")
            sent[f"cell {i}"] = True
        except SessionBusyError:
            sent[f"cell {i}"] = False
    while sum(p.startswith("chat") for p in sent) < 6 and thread.is_alive():
        time.sleep(0.01)  # the chat's six turns are over
    _cell(shell, "cell before")
    sent["cell before"] = True
    cell_before.set()
    thread.join(DEADLINE)
    assert not thread.is_alive() and not errors, errors
    assert len(sent) == 14
    assert "another program appended" in chat_after[0]
    assert "another program appended" in _cell(shell, "cell after")
    sent["cell after"] = True

    session = Session.open(path)
    assert session.problems == []
    ids = [e.id for e in session.entries]
    assert len(ids) == len(set(ids))  # no id twice
    texts = _user_texts(session)
    ran = [prompt for prompt, ok in sent.items() if ok]
    # Every turn that ran is in the one conversation, once; none that was refused is.
    assert texts[0] == "cell start" and sorted(texts[1:]) == sorted(ran)
    assert [t for t in texts if t.startswith("chat")] == [p for p in ran if p.startswith("chat")]
    assert [t for t in texts[1:] if t.startswith("cell")] == [
        p for p in ran if p.startswith("cell")
    ]
    # Each chat turn is marked after it, naming its prompt; no cell's turn comes between.
    path_entries = session.path_to()
    position = {e.id: i for i, e in enumerate(path_entries)}
    for mark in chat_turns(session):
        prompt = session.get(mark.raw["data"]["entry"])
        assert prompt.message["content"][0]["text"].startswith("chat ")
        between = path_entries[position[prompt.id] + 1 : position[mark.id]]
        assert all(e.role in ("assistant", "toolResult") for e in between)
    assert len(chat_turns(session)) == sum(1 for p in ran if p.startswith("chat"))
    assert texts[-3:] == ["cell before", "chat after", "cell after"]
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(path)["context"] == ours


_KERNEL = """
import sys
import ipykernel  # noqa: F401 -- it describes itself as a Jupyter kernel does
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "pinb")
ip.run_line_magic("pi", "open " + sys.argv[1])
with capture_output() as captured:
    result = ip.run_cell("%%pi --model loop/loop-model\\n" + sys.argv[2])
print("ERROR:", result.error_in_exec)
print("OUT:", captured.stdout, *(o.data.get("text/plain", "") for o in captured.outputs))
"""


def _kernel(path: Path, prompt: str, agent_dir: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "LOOP_KEY": KEY,
        "PYTHONPATH": str(REPO),
    }
    return subprocess.Popen(
        [sys.executable, "-c", _KERNEL, str(path), prompt],
        env=env,
        cwd=path.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for_requests(server: LLMServer, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.requests) < count:
        assert time.monotonic() < deadline, "the other writer never asked the model"
        time.sleep(0.01)


def test_a_cell_in_another_process_makes_the_chat_say_busy_and_back(
    project: Path, loop_server: LLMServer, isolated_agent_dir: Path
) -> None:
    session = Session.create(project)
    session.append_message({"role": "user", "content": "begin", "timestamp": 1})
    path = session.require_path()
    chat = project / "analysis.chat"
    link_chat(chat, path, notebook=project / "analysis.ipynb")

    async def ask(room: ChatRoom, prompt: str) -> Any:
        return await room.say(prompt)

    # A cell holds the turn while its slow answer streams: the chat answers "busy" at once.
    loop_server.reply(text="a slow cell answer " * 30, chunk_delay=0.04)
    kernel = _kernel(path, "the slow cell", isolated_agent_dir)
    try:
        _wait_for_requests(loop_server, 1)

        async def during_cell() -> Any:
            room = ChatRoom(project, "analysis.chat")
            room.persona.model = MODEL
            reply = await room.say("am I blocked?")
            await room.close()
            return reply

        busy = asyncio.run(asyncio.wait_for(during_cell(), DEADLINE)).body.replace("\\", "")
        out, _ = kernel.communicate(timeout=DEADLINE)
    finally:
        kernel.kill()
    assert "ERROR: None" in out, out
    assert "busy: a cell is running — a Jupyter kernel running pinb's agent (pid" in busy
    assert "send the message again when it has finished" in busy

    # The chat holds the turn: the cell in the other process is told so, in one line.
    loop_server.reply(text="a slow chat answer " * 30, chunk_delay=0.04)

    async def chat_then_cell() -> tuple[Any, str]:
        room = ChatRoom(project, "analysis.chat")
        room.persona.model = MODEL
        talking = asyncio.ensure_future(room.say("now me, slowly"))
        await asyncio.to_thread(_wait_for_requests, loop_server, 2)
        kernel = _kernel(path, "a cell meanwhile", isolated_agent_dir)
        try:
            out, _ = await asyncio.to_thread(kernel.communicate, None, DEADLINE)
        finally:
            kernel.kill()
        reply = await talking
        await room.close()
        return reply, out

    reply, out = asyncio.run(asyncio.wait_for(chat_then_cell(), DEADLINE))
    assert "a slow chat answer" in reply.body
    assert "SessionBusyError" in out and "busy:" in out
    assert "the chat panel's Pi persona (analysis.chat)" in out
    texts = _user_texts(Session.open(path))
    assert texts == ["begin", "the slow cell", "now me, slowly"]
