"""One session, two front ends: a kernel's ``%%pi`` cells and the chat persona's turns at the
same time, on one file — nothing lost, no id twice, one conversation, and Pi 1.6.0 reads it
as pinb does. A kernel in a process of its own holding a turn makes the chat say a cell is
running (and the other way round), at once, never a hang."""

from __future__ import annotations

import asyncio
import json
import os
import re
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
from pinb.core.file.writers import DEFAULT_WAIT, SessionBusyError
from pinb.testing.llm_server import LLMServer, ServerReply
from tests.chat.room import ChatRoom
from tests.pi.loop import KEY, MODEL
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
    # Each names who wrote what it read: the shell's cells, the chat panel.
    assert re.search(r"read \d+ entries a cell of an IPython shell appended", chat_after[0])
    assert re.search(
        r"read \d+ entries the chat panel \(analysis.chat\) appended", _cell(shell, "cell after")
    )
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


class _Kernel:
    """A real Jupyter kernel (ipykernel, started as Jupyter Server starts a notebook's),
    running cells as a front end does; what each cell showed comes back."""

    def __init__(self, cwd: Path, agent_dir: Path) -> None:
        from jupyter_client.manager import start_new_kernel

        env = {
            **os.environ,
            "PI_CODING_AGENT_DIR": str(agent_dir),
            "LOOP_KEY": KEY,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd), env=env)

    def run(self, code: str) -> list[tuple[str, Any]]:
        """Run one cell; its outputs as (kind, text): stream, result, display, error."""
        shown: list[tuple[str, Any]] = []

        def hook(message: dict[str, Any]) -> None:
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                shown.append(("stream", content["text"]))
            elif kind in ("execute_result", "display_data", "update_display_data"):
                shown.append((kind, content["data"].get("text/plain", "")))
            elif kind == "error":
                shown.append(("error", content["traceback"]))

        self.client.execute_interactive(code, timeout=DEADLINE, output_hook=hook)
        return shown

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def _wait_for_requests(server: LLMServer, count: int) -> None:
    deadline = time.monotonic() + DEADLINE
    while len(server.requests) < count:
        assert time.monotonic() < deadline, "the other writer never asked the model"
        time.sleep(0.01)


def test_a_kernels_cell_and_the_chat_name_each_other_when_busy_at_once(
    project: Path, loop_server: LLMServer, isolated_agent_dir: Path
) -> None:
    """A cell in a real kernel holds the turn: the chat says which kernel, at once; the chat
    holds it: the cell, and `pinb compact`, say it is the chat panel, in one line, at once."""
    session = Session.create(project)
    session.append_message({"role": "user", "content": "begin", "timestamp": 1})
    path = session.require_path()
    link_chat(project / "analysis.chat", path, notebook=project / "analysis.ipynb")
    kernel = _Kernel(project, isolated_agent_dir)
    try:
        # As notebooks/08-chat.ipynb does: the persona manager (and the Jupyter server's
        # modules with it) imported in the kernel, which is still a kernel.
        kernel.run(f"import jupyter_ai_persona_manager\n%load_ext pinb\n%pi open {path}")
        (_, pid_text), *_ = kernel.run("import os; print(os.getpid())")
        pid = int(pid_text)

        async def chat_during_cell() -> tuple[Any, float]:
            room = ChatRoom(project, "analysis.chat")
            room.persona.model = MODEL
            gate = threading.Event()
            loop_server.add(ServerReply(text="the cell's answer", gate=gate))
            cell = asyncio.ensure_future(
                asyncio.to_thread(kernel.run, f"%%pi --model {MODEL}\nthe slow cell")
            )
            await asyncio.to_thread(_wait_for_requests, loop_server, 1)  # the cell's turn
            started = time.monotonic()
            reply = await room.say("am I blocked?")
            took = time.monotonic() - started
            gate.set()
            shown = await cell
            assert not [o for o in shown if o[0] == "error"], shown
            await room.close()
            return reply, took

        reply, took = asyncio.run(asyncio.wait_for(chat_during_cell(), DEADLINE))
        busy = reply.body.replace("\\", "")
        assert re.fullmatch(
            r"\*busy: a notebook cell is running a turn on this session \(pinb's agent, a "
            rf"Jupyter kernel, pid {pid}, since [^)]+\); this message was not answered — send "
            r"it again when the cell has finished\*",
            busy.split("\n\n")[-1],
        ), busy
        assert took < DEFAULT_WAIT  # at once: a cell's turn waits on a model

        async def cell_during_chat() -> tuple[list[tuple[str, Any]], float, Any, Any]:
            room = ChatRoom(project, "analysis.chat")
            room.persona.model = MODEL
            gate = threading.Event()
            loop_server.add(ServerReply(text="the chat's answer", gate=gate))
            talking = asyncio.ensure_future(room.say("now me"))
            await asyncio.to_thread(_wait_for_requests, loop_server, 2)  # the chat's turn
            started = time.monotonic()
            shown = await asyncio.to_thread(kernel.run, f"%%pi --model {MODEL}\na cell meanwhile")
            took = time.monotonic() - started
            command = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "pinb.cli", "compact", str(path), "--offline"],
                capture_output=True,
                text=True,
                timeout=DEADLINE,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
            gate.set()
            reply = await talking
            await room.close()
            return shown, took, command, reply

        shown, took, command, reply = asyncio.run(asyncio.wait_for(cell_during_chat(), DEADLINE))
        holder = (
            r"busy: the chat panel \(analysis\.chat\) is running a turn on this session "
            rf"\(pinb's agent, .*pid {os.getpid()}, since [^)]+\); "
        )
        ((kind, traceback),) = shown
        assert kind == "error" and len(traceback) == 1  # one line, no traceback
        assert re.fullmatch(
            holder + "the cell was not run — run it again when the chat's turn ends", traceback[0]
        ), traceback
        assert took < DEFAULT_WAIT
        assert command.returncode == 2 and command.stdout == ""
        assert re.fullmatch(
            f"pinb: {re.escape(str(path))}: {holder}nothing was written — run the command "
            "again when the chat's turn ends\n",
            command.stderr,
        ), command.stderr
        assert "the chat's answer" in reply.body

        # The next cell continues after the chat's turn, and says whose it was.
        loop_server.reply(text="after")
        shown = kernel.run(f"%%pi --model {MODEL}\nafter the chat")
        notes = "\n".join(str(text) for kind, text in shown if kind != "error")
        assert "entries the chat panel (analysis.chat) appended to this session" in notes
    finally:
        kernel.close()
    texts = _user_texts(Session.open(path))
    assert texts == ["begin", "the slow cell", "now me", "after the chat"]


_PI_LIKE = """
import json, sys
path, parent = sys.argv[2], sys.argv[3]
sys.stdin.readline()  # it loaded the file at `parent` and waits on its model
with open(path, "a") as handle:
    for i, (role, text) in enumerate([("user", "from the terminal"), ("assistant", "ok")]):
        message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 9}
        if role == "assistant":
            message.update(api="openai-completions", provider="x", model="y", stopReason="stop",
                           usage={"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                  "totalTokens": 2, "cost": {"input": 0, "output": 0,
                                  "cacheRead": 0, "cacheWrite": 0, "total": 0}})
        entry = {"type": "message", "id": f"pi{i:06d}", "parentId": parent,
                 "timestamp": "2026-01-01T00:00:00.000Z", "message": message}
        handle.write(json.dumps(entry) + "\\n")
        parent = entry["id"]
print("appended", flush=True)
sys.stdin.readline()  # still open, as `pi --session FILE` in a terminal stays
"""


def test_the_chat_says_which_turns_pi_in_a_terminal_left_off_the_path_and_goes_back(
    project: Path, loop_server: LLMServer, tmp_path: Path
) -> None:
    """A Pi-like program named ``pi`` (``pi --session FILE``: /proc shows it) appends
    under the leaf it loaded while the chat ran three turns: the chat's next turn says so,
    with ``/goto``, which brings the three turns back."""
    session = Session.create(project)
    session.append_message({"role": "user", "content": "begin", "timestamp": 1})
    path = session.require_path()
    link_chat(project / "analysis.chat", path, notebook=project / "analysis.ipynb")
    program = tmp_path / "bin" / "pi"
    program.parent.mkdir()
    program.write_text(_PI_LIKE)

    async def scenario() -> tuple[str, str, int]:
        room = ChatRoom(project, "analysis.chat")
        room.persona.model = MODEL
        loop_server.reply(text="first")
        await room.say("chat 0")
        stale = str(Session.open(path).leaf_id)
        terminal = subprocess.Popen(
            [sys.executable, str(program), "--session", str(path), stale],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            for i in range(1, 4):
                loop_server.reply(text=f"answer {i}")
                await room.say(f"chat {i}")
            assert terminal.stdin is not None and terminal.stdout is not None
            terminal.stdin.write("\n")
            terminal.stdin.flush()
            assert await asyncio.to_thread(terminal.stdout.readline) == "appended\n"
            loop_server.reply(text="fourth")
            reply = (await room.say("chat 4")).body.replace("\\", "")
        finally:
            terminal.kill()
            terminal.wait()
        await room.close()
        return reply, stale, terminal.pid

    reply, stale, pid = asyncio.run(asyncio.wait_for(scenario(), DEADLINE))
    session = Session.open(path)
    chat_marks = chat_turns(session)
    mine = str(chat_marks[3].id)  # where the chat stood after its fourth turn (chat 3)
    assert re.search(
        rf"pi in a terminal \(pid {pid}\) appended 2 entries under {stale}, leaving 3 of your "
        rf"turns \(\d+ entries\) off the path \(last: {mine}\); `/goto {mine}` goes back to them",
        reply,
    ), reply

    async def back() -> tuple[str, str]:
        room = ChatRoom(project, "analysis.chat")
        room.persona.model = MODEL
        moved = (await room.say(f"/goto {mine[:6]}")).body.replace("\\", "")
        loop_server.reply(text="fifth")
        fifth = (await room.say("chat 5")).body
        await room.close()
        return moved, fifth

    moved, _ = asyncio.run(asyncio.wait_for(back(), DEADLINE))
    assert f"→ `{mine}`" in moved
    sent = json.dumps(loop_server.requests[-1].body)
    assert all(f"chat {i}" in sent for i in (0, 1, 2, 3, 5)) and "from the terminal" not in sent
    assert _user_texts(Session.open(path)) == ["begin", *(f"chat {i}" for i in (0, 1, 2, 3, 5))]
