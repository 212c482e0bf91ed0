"""Many writers, one file: a notebook's cells, the Pi engine, ``pi -p`` in a terminal and pinb's
commands on one session, with the real Pi 1.6.0 — one conversation, nothing lost."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.core import Session
from pinb.testing.llm_server import ServerReply
from tests.pi.loop import MODEL, PiLoop
from tests.pi.reference import PiReference
from tests.shells import pi_shell
from tests.writers_stress import WritersRun


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    with pi_shell() as ip:
        yield ip


def _cell(shell: InteractiveShell, line: str, prompt: str) -> Any:
    with capture_output() as captured:
        result = shell.run_cell(f"%%pi {line}\n{prompt}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    shown = "\n".join(o.data.get("text/plain", "") for o in captured.outputs) + captured.stdout
    return result.result, shown


def _terminal(loop: PiLoop, session: Path, prompt: str) -> None:
    argv = [
        *loop.argv, "-p", "--session", str(session), "--model", MODEL, "--offline", "--no-tools",
        "--no-extensions", "--no-skills", "--no-context-files", "--no-prompt-templates", prompt,
    ]  # fmt: skip
    done = subprocess.run(
        argv, env=loop.env, cwd=session.parent, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr


def _user_texts(session: Session) -> list[str]:
    texts = []
    for entry in session.path_to():
        if entry.role == "user":
            content = entry.message["content"]
            texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


def test_a_cell_the_terminal_a_cell_the_pi_engine_and_the_terminal_make_one_conversation(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference
) -> None:
    magics = shell.magics_manager.registry["PiMagics"]
    steps = [
        ("cell", "one"),
        ("terminal", "two"),
        ("cell", "three"),
        ("engine", "four"),
        ("terminal", "five"),
        ("engine", "six"),
        ("cell", "seven"),
    ]
    notes = {}
    for who, prompt in steps:
        pi_loop.server.reply(text=f"{prompt} answered by {who}")
        if who == "terminal":
            _terminal(pi_loop, magics.session.path, prompt)
        else:
            engine = "pi" if who == "engine" else "pinb"
            _, notes[prompt] = _cell(shell, f"--engine {engine} --model {MODEL}", prompt)
        # What was sent always holds every turn before it, whoever wrote it.
        sent = json.dumps(pi_loop.server.requests[-1].body)
        done = [p for _, p in steps[: steps.index((who, prompt))]]
        assert all(f'"{p}"' in sent for p in done), (who, prompt)
    # The cell after a terminal turn says it continued after it; `pi -p` has exited, so
    # nothing can say more than that it was not pinb.
    for after_terminal in ("three", "six"):
        assert re.search(
            r"read \d+ entries another program \(not pinb: e\.g\. pi in a terminal\) appended "
            "to this session; this turn continued after them",
            notes[after_terminal],
        )
    assert "another program" not in notes["four"]  # the cell before was pinb's own
    path = magics.session.path
    session = Session.open(path)
    assert session.problems == []
    assert _user_texts(session) == [p for _, p in steps]  # one unbranched conversation
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(path)["context"] == ours


def test_a_terminal_turn_written_during_a_pi_cell_is_named_and_pi_goes_on_from_the_file(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference
) -> None:
    magics = shell.magics_manager.registry["PiMagics"]
    pi_loop.server.reply(text="first answer")
    _cell(shell, f"--engine pi --model {MODEL}", "first")
    path = magics.session.path
    pi_loop.server.reply(text="a slow answer " * 40, chunk_delay=0.02)
    appended: list[str] = []

    def terminal_meanwhile() -> None:
        deadline = time.monotonic() + 60
        while len(pi_loop.server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        # Pi's own SessionManager on the file, as `pi -p` would open it mid-cell.
        built = pi16.build(
            [{"method": "appendMessage", "args": [{"role": "user", "content": "meanwhile",
                                                   "timestamp": 1}]}],
            path.parent, "/proj", create={"mode": "open", "path": str(path)},
        )  # fmt: skip
        appended.extend(built["results"])

    thread = threading.Thread(target=terminal_meanwhile)
    thread.start()
    _, shown = _cell(shell, "--engine pi", "second")
    thread.join(60)
    assert appended and f"`%pi goto {appended[-1]}`" in shown  # named, where it is
    pi_loop.server.reply(text="third answer")
    _cell(shell, "--engine pi", "third")
    # Pi went on from the file as pinb reads it: the cell's answer, not the side turn.
    sent = json.dumps(pi_loop.server.requests[-1].body)
    assert "a slow answer" in sent and "meanwhile" not in sent
    session = Session.open(path)
    assert _user_texts(session) == ["first", "second", "third"]
    assert pi16.open(path)["context"] == json.loads(json.dumps(session.build_context().to_wire()))


@pytest.mark.parametrize("engine", ["pinb", "pi"])
def test_pi_in_a_terminal_that_appends_under_an_old_leaf_is_said_with_the_turns_it_left(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference, engine: str
) -> None:
    """`pi -p --session FILE` loads the file, waits on its model while the notebook runs
    three cells, then appends under the leaf it loaded: the next cell (either engine) says
    how many of the notebook's turns left the path, which, and how to go back."""
    magics = shell.magics_manager.registry["PiMagics"]
    pi_loop.server.reply(text="started")
    _cell(shell, f"--model {MODEL}", "start")
    path = magics.session.path
    gate = threading.Event()
    pi_loop.server.add(ServerReply(text="the terminal's answer", gate=gate))
    argv = [
        *pi_loop.argv, "-p", "--session", str(path), "--model", MODEL, "--offline",
        "--no-tools", "--no-extensions", "--no-skills", "--no-context-files",
        "--no-prompt-templates", "TERMINAL prompt",
    ]  # fmt: skip
    terminal = subprocess.Popen(
        argv, env=pi_loop.env, cwd=path.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while len(pi_loop.server.requests) < 2:  # Pi has read the file and asks its model
            assert time.monotonic() < deadline and terminal.poll() is None, "pi never asked"
            time.sleep(0.01)
        for i in range(3):
            pi_loop.server.reply(text=f"kernel answer {i}")
            _cell(shell, f"--model {MODEL}", f"kernel turn {i}")
        last = str(magics.session.leaf_id)
        gate.set()
        _, stderr = terminal.communicate(timeout=120)
        assert terminal.returncode == 0, stderr
    finally:
        gate.set()
        terminal.kill()
        terminal.wait()
    pi_loop.server.reply(text="the fourth answer")
    _, shown = _cell(shell, f"--engine {engine} --model {MODEL}", "kernel turn 4")
    session = Session.open(path)
    # Pi wrote its prompt as it sent it (the first kernel cell continued after it) and its
    # answer under that prompt: the kernel's three turns are a branch of their own now.
    (prompt,) = [e for e in session.entries if e.role == "user" and "TERMINAL" in str(e.message)]
    (answer,) = [e for e in session.entries if e.parent_id == prompt.id and e.role == "assistant"]
    (fourth,) = [e for e in session.entries if e.role == "user" and "turn 4" in str(e.message)]
    assert answer in session.path_to(fourth.id)  # the fourth cell continued after Pi's answer
    left = session.path_to(last)[[e.id for e in session.path_to(last)].index(prompt.id) + 1 :]
    assert [e.message["content"][0]["text"] for e in left if e.role == "user"] == [
        f"kernel turn {i}" for i in range(3)
    ]
    line = next(line for line in shown.splitlines() if "off the path" in line)
    assert line == (
        f"· another program (not pinb: e.g. pi in a terminal) appended 1 entry under "
        f"{prompt.id}, leaving 3 of your turns ({len(left)} entries) off the path (last: "
        f"{last}); `%pi goto {last}` goes back to them"
    )
    # The fourth cell continued the terminal's turn; the kernel's three were not sent.
    sent = json.dumps(pi_loop.server.requests[-1].body)
    assert "the terminal's answer" in sent and "kernel turn 0" not in sent
    # `%pi goto` the old leaf: the next cell sends the notebook's three turns again.
    with capture_output():
        shell.run_line_magic("pi", f"goto {last}")
    pi_loop.server.reply(text="back")
    reader = Session.open(path)  # another pinb writer on the file (a second kernel, say)
    _cell(shell, f"--engine {engine} --model {MODEL}", "kernel turn 5")
    with reader.turn() as turn:  # it reads the cell's entries, and says whose they are
        writer = (
            "the Pi engine of a cell of an IPython shell"
            if engine == "pi"
            else ("a cell of an IPython shell")
        )
        assert re.fullmatch(
            rf"read \d+ entries {writer} appended to this session; this turn continued after "
            "them",
            str(turn.start_note()),
        ), turn.start_note()
    sent = json.dumps(pi_loop.server.requests[-1].body)
    assert all(f"kernel turn {i}" in sent for i in (0, 1, 2, 5))
    assert "the terminal's answer" not in sent and "kernel turn 4" not in sent
    session = Session.open(path)
    assert _user_texts(session) == ["start", "TERMINAL prompt", "kernel turn 0", "kernel turn 1",
                                    "kernel turn 2", "kernel turn 5"]  # fmt: skip
    assert pi16.open(path)["context"] == json.loads(json.dumps(session.build_context().to_wire()))


def test_every_writer_interleaved_loses_nothing(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference, tmp_path: Path
) -> None:
    """Seeded and bounded; benchmarks/bench_writers.py runs it long."""
    run = WritersRun(shell, pi_loop, pi16, Path.cwd(), seed=30)
    done = run.run(14)
    ran = {kind.split(" ")[0] for kind in done}
    assert ran >= {"cell", "engine", "terminal", "compact", "fork", "rm", "restore"}, done
    assert done["rm refused"] >= 1  # the notebook's session, held by the kernel
