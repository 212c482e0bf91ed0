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
    # The cell after a terminal turn says it continued after it.
    for after_terminal in ("three", "six"):
        assert re.search(r"read \d+ entries another program appended", notes[after_terminal])
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


def test_every_writer_interleaved_loses_nothing(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference, tmp_path: Path
) -> None:
    """Seeded and bounded; benchmarks/bench_writers.py runs it long."""
    run = WritersRun(shell, pi_loop, pi16, Path.cwd(), seed=30)
    done = run.run(14)
    ran = {kind.split(" ")[0] for kind in done}
    assert ran >= {"cell", "engine", "terminal", "compact", "fork", "rm", "restore"}, done
    assert done["rm refused"] >= 1  # the notebook's session, held by the kernel
