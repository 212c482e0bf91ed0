"""``%%pi --engine pi`` and the routed ``%pi`` commands (``pinb.notebook.magics.pi``) in a real
IPython shell: the real Pi 1.6.0 beside pinb's agent, on one file."""

from __future__ import annotations

import _thread
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.agent.pi.rpc import PiCommandError, PiExitedError, PiNotFoundError
from pinb.core import Session
from pinb.notebook import PiMagics
from pinb.notebook.live import AssistantReply
from tests.pi.loop import MODEL, PiLoop, confirm_extension
from tests.pi.reference import PiReference
from tests.shells import pi_shell

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    with pi_shell() as ip:
        yield ip


def _magics(shell: InteractiveShell) -> PiMagics:
    magics: PiMagics = shell.magics_manager.registry["PiMagics"]
    return magics


def _cell(shell: InteractiveShell, line: str, prompt: str) -> Any:
    result = shell.run_cell(f"%%pi {line}\n{prompt}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return result.result


def _texts(session: Session) -> list[str]:
    out = []
    for message in session.build_context().messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif message.get("role") in ("user", "assistant"):
            out.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out


def test_a_pi_cell_streams_and_pis_write_tool_creates_the_file(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    pi_loop.server.reply(tool_calls=[("write", {"path": "hello.txt", "content": "from Pi\n"})])
    pi_loop.server.reply(text="I wrote hello.txt " + "and explained it " * 40, chunk_delay=0.01)
    with capture_output() as captured:
        reply = _cell(shell, f"--engine pi --model {MODEL}", "write hello.txt")
    assert isinstance(reply, AssistantReply) and reply.stop_reason == "stop"
    assert reply.text.startswith("I wrote hello.txt")
    assert (Path.cwd() / "hello.txt").read_text() == "from Pi\n"
    shown = [o.data.get("text/plain", "") for o in captured.outputs]
    assert len(shown) >= 3  # the live display updated while Pi streamed
    assert any('→ write({"path": "hello.txt"' in s for s in shown)
    assert any("← Successfully wrote" in s for s in shown)
    partial = [s for s in shown if "and explained it" in s]
    assert partial and partial[0].count("and explained it") < 40  # seen before it was whole
    session = _magics(shell).session
    assert session is not None and session.path is not None
    assert _texts(session)[-1] == reply.text  # pinb read back the file Pi wrote
    assert "context now:" in reply._repr_mimebundle_()["text/plain"]


def test_a_pi_cell_in_a_terminal_prints_like_a_built_in_one(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    magics = _magics(shell)
    magics.renderer = "terminal"
    printed = {}
    for engine in ("pi", "pinb"):
        pi_loop.server.reply(
            tool_calls=[("ls", {"path": "."})]
            if engine == "pinb"
            else [("bash", {"command": "ls"})]
        )
        pi_loop.server.reply(text=f"Listed by {engine}.")
        with capture_output() as captured:
            reply = _cell(shell, f"--engine {engine} --model {MODEL}", "list the folder")
        assert reply.printed and reply.text == f"Listed by {engine}."
        # Notices (Pi's settings against the 32k test window) precede the run itself.
        printed[engine] = "".join(
            line for line in captured.stdout.splitlines(keepends=True) if not line.startswith("· ")
        )
    assert printed["pi"].startswith('→ bash({"command": "ls"})\n← ')
    assert printed["pinb"].startswith('→ ls({"path": "."})\n← ')
    for engine, out in printed.items():
        assert f"Listed by {engine}.\n" in out and "this run (2 requests)" in out
    # The footer measures the context against the window of the model Pi ran.
    assert "of a 32,000 window (Pi's model)" in printed["pi"]


def test_engines_mix_both_ways_on_one_file(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference
) -> None:
    magics = _magics(shell)
    engines = ["pi", "pinb", "pi", "pinb", "pi", "pi", "pinb"]
    files = set()
    for turn, engine in enumerate(engines):
        pi_loop.server.reply(text=f"answer {turn} by {engine}")
        reply = _cell(shell, f"--engine {engine} --model {MODEL}", f"question {turn}")
        assert reply.text == f"answer {turn} by {engine}"
        sent = json.dumps(pi_loop.server.requests[-1].body)
        for earlier in range(turn):  # each engine sees everything either engine wrote
            assert (
                f"question {earlier}" in sent and f"answer {earlier} by {engines[earlier]}" in sent
            )
        assert magics.session is not None and magics.session.path is not None
        files.add(magics.session.path)
    assert len(files) == 1
    path = files.pop()
    session = Session.open(path)
    assert not session.problems
    assert _texts(session)[-2:] == [
        f"question {len(engines) - 1}",
        f"answer {len(engines) - 1} by pinb",
    ]
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(path)["context"] == ours  # Pi's own SessionManager sees the same context
    with capture_output() as captured:
        shell.run_cell("%pi tree")
    tree = captured.stdout  # the cell's value, as the shell printed it
    assert "Session tree" in tree and "answer 0 by pi" in tree and "answer 6 by pinb" in tree


def test_pi_missing_is_one_clear_line(
    shell: InteractiveShell, pi_loop: PiLoop, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PINB_PI_COMMAND")
    monkeypatch.setenv("PATH", str(tmp_path))
    with capture_output() as captured:
        result = shell.run_cell("%%pi --engine pi\nhello")
    assert isinstance(result.error_in_exec, PiNotFoundError)
    said = (captured.stdout + captured.stderr).strip()
    assert "Traceback" not in said and len(said.splitlines()) == 1
    assert "npm install -g @earendil-works/pi-coding-agent" in said and "--engine pinb" in said
    pi_loop.server.reply(text="the built-in agent needs nothing")
    assert _cell(shell, f"--model {MODEL}", "hello").text == "the built-in agent needs nothing"


def _when(condition: Any, then: Any, timeout: float = 30) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                then()
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_ctrl_c_aborts_and_the_cell_ends_with_the_partial_reply(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    pi_loop.server.reply(text="first")
    _cell(shell, f"--engine pi --model {MODEL}", "first")
    pi_loop.server.reply(text="a long answer " * 300, chunk_delay=0.02)
    watcher = _when(
        lambda: len(pi_loop.server.requests) >= 2,
        lambda: (time.sleep(0.5), _thread.interrupt_main()),
    )
    with capture_output() as captured:
        reply = _cell(shell, "--engine pi", "go on")
    watcher.join(5)
    assert isinstance(reply, AssistantReply) and reply.stop_reason == "aborted"
    assert reply.text.startswith("a long answer") and len(reply.text) < len("a long answer " * 300)
    assert "[aborted]" in reply._repr_mimebundle_()["text/plain"]
    assert any("told to abort" in o.data.get("text/plain", "") for o in captured.outputs)
    session = _magics(shell).session
    assert session is not None
    saved = session.build_context().messages[-1]
    assert saved["stopReason"] == "aborted" and saved["content"][0]["text"] == reply.text
    pi_loop.server.reply(text="ready again")
    assert _cell(shell, "--engine pi", "next").text == "ready again"


def test_pi_killed_mid_run_fails_the_cell_and_restarts_with_a_note(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference
) -> None:
    magics = _magics(shell)
    pi_loop.server.reply(text="first")
    _cell(shell, f"--engine pi --model {MODEL}", "first")
    process = magics.pi_engine.process
    assert process is not None and process.pid is not None
    pid = process.pid
    pi_loop.server.reply(text="never finished " * 300, chunk_delay=0.02)
    _when(
        lambda: len(pi_loop.server.requests) >= 2,
        lambda: (time.sleep(0.3), os.kill(pid, signal.SIGKILL)),
    )
    with capture_output() as captured:
        result = shell.run_cell("%%pi --engine pi\nsecond")
    assert isinstance(result.error_in_exec, PiExitedError)
    assert "exit status -9" in str(result.error_in_exec)
    assert "Traceback" not in captured.stdout + captured.stderr
    assert magics.session is not None and magics.session.path is not None
    path = magics.session.path
    assert not Session.open(path).problems
    assert pi16.open(path)["context"] == json.loads(
        json.dumps(Session.open(path).build_context().to_wire())
    )
    pi_loop.server.reply(text="back again")
    with capture_output() as captured:
        reply = _cell(shell, "--engine pi", "third")
    assert reply.text == "back again"
    notes = "\n".join(o.data.get("text/plain", "") for o in captured.outputs)
    assert "Pi had stopped (exit status -9); started it again" in notes
    assert magics.pi_engine.process is not None and magics.pi_engine.process.pid != pid


def test_session_commands_go_to_pi_when_it_is_the_engine(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    magics = _magics(shell)
    (pi_loop.agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 50}})
    )
    shell.run_line_magic("config", 'PiMagics.engine = "pi"')
    shell.run_line_magic("pi", f"model {MODEL}")
    for i in range(3):
        pi_loop.server.reply(text=f"answer {i} " + "words " * 60)
        _cell(shell, "", f"question {i} " + "detail " * 60)
    # An unknown model: Pi's own error, once, in one line.
    with capture_output() as captured:
        result = shell.run_cell("%pi model nope/x")
    assert isinstance(result.error_in_exec, PiCommandError)
    said = (captured.stdout + captured.stderr).strip()
    assert said == "PiCommandError: Model not found: nope/x"
    with capture_output() as captured:
        shell.run_line_magic("pi", "thinking low")
    # Pi's own answer: the loopback model has no thinking, so Pi keeps "off".
    assert captured.stdout.strip() == "thinking: low (Pi uses off with this model)"
    pi_loop.server.reply(text="## Goal\nThree answers.")
    pi_loop.server.reply(text="## Turn\nThe last question.")
    with capture_output() as captured:
        shell.run_line_magic("pi", "compact keep it short")
    assert "Pi compacted the context:" in captured.stdout
    session = magics.session
    assert session is not None
    kinds = [e.type for e in session.entries]
    assert kinds.count("compaction") == 1
    assert session.entries[-1].type == "compaction"  # pinb re-read what Pi appended
    # %pi fork: Pi forks before the second question into a new file, and pinb follows it.
    second = [
        e for e in session.entries if e.type == "message" and e.raw["message"]["role"] == "user"
    ][1]
    with capture_output() as captured:
        shell.run_line_magic("pi", f"fork {second.id[:6]}")
    assert "the message to send again:\nquestion 1" in captured.stdout
    forked = magics.session
    assert forked is not None and forked.path != session.path
    assert magics.pi_engine.session_file == forked.require_path().resolve()
    pi_loop.server.reply(text="in the fork")
    assert _cell(shell, "", "a new question").text == "in the fork"
    sent = json.dumps(pi_loop.server.requests[-1].body)
    assert "question 0" in sent and "question 1" not in sent


def test_a_new_session_closes_pi(shell: InteractiveShell, pi_loop: PiLoop) -> None:
    magics = _magics(shell)
    pi_loop.server.reply(text="hi")
    _cell(shell, f"--engine pi --model {MODEL}", "hi")
    process = magics.pi_engine.process
    assert process is not None and process.pid is not None
    pid = process.pid
    shell.run_line_magic("pi", "new")
    assert magics.pi_engine.process is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # closed and reaped
    pi_loop.server.reply(text="a new file")
    _cell(shell, "--engine pi", "hello again")
    assert magics.session is not None and len(magics.session.build_context().messages) == 3


def test_a_dialog_without_a_front_end_is_cancelled_with_a_note(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    confirm_extension(pi_loop.agent_dir)
    pi_loop.server.reply(tool_calls=[("write", {"path": "blocked.txt", "content": "x"})])
    pi_loop.server.reply(text="The write was blocked.")
    with capture_output() as captured:
        reply = _cell(shell, f"--engine pi --model {MODEL}", "write blocked.txt")
    assert reply.text == "The write was blocked."
    assert not (Path.cwd() / "blocked.txt").exists()
    shown = captured.outputs[-1].data["text/plain"]
    assert (
        "extension asked (confirm) 'Write a file?': cancelled: no live notebook front end" in shown
    )
    assert "✗ Blocked by user" in shown


def test_a_notebook_run_by_nbclient_mixes_the_engines(
    pi_loop: PiLoop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pi16: PiReference
) -> None:
    """A real kernel with no one at the front end: Pi's dialog is cancelled with a note."""
    import nbformat
    from nbclient import NotebookClient

    project = tmp_path / "nb"
    project.mkdir()
    confirm_extension(pi_loop.agent_dir)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    root = str(Path(__file__).resolve().parents[3])
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    )
    pi_loop.server.reply(tool_calls=[("write", {"path": "asked.txt", "content": "x"})])
    pi_loop.server.reply(text="The extension blocked the write.")
    pi_loop.server.reply(text="The built-in agent continues.")
    pi_loop.server.reply(tool_calls=[("read", {"path": "seen.txt"})])
    pi_loop.server.reply(text="Pi read the file.")
    (project / "seen.txt").write_text("a file Pi reads\n")
    cells = [
        "%load_ext pinb",
        f"%%pi --engine pi --model {MODEL}\nwrite asked.txt",
        f"%%pi --model {MODEL}\nnow pinb",
        "%%pi --engine pi\nread seen.txt",
        "current = %pi session\nprint(current.path)",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(project)}}
    ).execute()
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text") or output.get("data", {}).get("text/plain", ""))
    joined = "\n".join(texts)
    assert (
        "extension asked (confirm) 'Write a file?': cancelled: no live notebook front end" in joined
    )
    assert not (project / "asked.txt").exists()
    assert "The built-in agent continues." in joined and "Pi read the file." in joined
    assert "a file Pi reads" in joined  # Pi's own read tool ran in the session's folder
    path = Path(notebook.cells[-1]["outputs"][0]["text"].strip().splitlines()[-1])
    session = Session.open(path)
    assert _texts(session)[-1] == "Pi read the file." and "now pinb" in _texts(session)
    assert pi16.open(path)["context"] == json.loads(json.dumps(session.build_context().to_wire()))


def test_a_dialog_in_a_live_kernel_is_asked_and_answered(pi_loop: PiLoop, tmp_path: Path) -> None:
    """A kernel whose front end answers stdin requests: Pi's confirm is asked in the cell.

    The test is the front end: it waits for the kernel's ``input_request`` while the cell
    runs and answers it as JupyterLab's input box would.
    """
    from jupyter_client.manager import start_new_kernel

    project = tmp_path / "live"
    project.mkdir()
    confirm_extension(pi_loop.agent_dir)
    root = str(Path(__file__).resolve().parents[3])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    pi_loop.server.reply(tool_calls=[("write", {"path": "allowed.txt", "content": "yes\n"})])
    pi_loop.server.reply(text="Written, as you allowed.")
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(project), env=env)
    try:
        client.execute("%load_ext pinb", reply=True, timeout=60)
        client.execute(f"%%pi --engine pi --model {MODEL}\nwrite allowed.txt", allow_stdin=True)
        request = client.get_stdin_msg(timeout=120)
        assert request["msg_type"] == "input_request"
        assert request["content"]["prompt"] == (
            "Pi's extension asks: Write a file? (allowed.txt) [y/n, Enter to cancel]: "
        )
        client.input("y")
        reply = client.get_shell_msg(timeout=120)
        while reply["msg_type"] != "execute_reply":
            reply = client.get_shell_msg(timeout=120)
        assert reply["content"]["status"] == "ok"
        outputs = []
        while True:
            try:
                message = client.get_iopub_msg(timeout=2)
            except Exception:
                break
            if message["msg_type"] in ("display_data", "update_display_data", "execute_result"):
                outputs.append(message["content"]["data"].get("text/plain", ""))
        joined = "\n".join(outputs)
        assert (project / "allowed.txt").read_text() == "yes\n"
        assert "extension asked (confirm) 'Write a file?': yes" in joined
        assert "Written, as you allowed." in joined
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_the_built_in_agents_options_are_refused_for_pi(shell: InteractiveShell) -> None:
    from pinb.errors import UsageError

    with capture_output() as captured:
        result = shell.run_cell("%%pi --engine pi --no-tools --tool-choice auto\nhi")
    assert isinstance(result.error_in_exec, UsageError)
    assert (
        "--no-tools, --tool-choice belong to the built-in agent"
        in captured.stderr + captured.stdout
    )


def test_pi_keeps_its_own_thinking_level_until_one_is_chosen(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    from tests.pi.loop import configure

    configure(pi_loop.agent_dir, pi_loop.server, reasoning=True)
    (pi_loop.agent_dir / "settings.json").write_text(json.dumps({"defaultThinkingLevel": "high"}))
    magics = _magics(shell)
    pi_loop.server.reply(text="thinking as Pi would")
    _cell(shell, f"--engine pi --model {MODEL}", "hi")
    process = magics.pi_engine.process
    assert process is not None and process.request("get_state")["thinkingLevel"] == "high"
    shell.run_line_magic("config", 'PiMagics.thinking = "low"')
    pi_loop.server.reply(text="thinking less")
    _cell(shell, "--engine pi", "again")
    assert process.request("get_state")["thinkingLevel"] == "low"


def test_compact_mask_with_pi_as_the_engine_is_pinbs_and_pi_continues(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: PiReference, tmp_path: Path
) -> None:
    from pinb.core.compaction.masking import MASK_PREFIX
    from pinb.testing.generate import tool_heavy_session

    # Pi's settings as they are (the Pi engine fits nothing): keep 4,000.
    (pi_loop.agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 4_000}})
    )
    path = tool_heavy_session(tmp_path / "sessions", turns=20, result_chars=3_000)
    shell.run_line_magic("config", 'PiMagics.engine = "pi"')
    with capture_output():
        shell.run_line_magic("pi", f"open {path}")
        shell.run_line_magic("pi", f"model {MODEL}")
    before = path.read_bytes()
    view = shell.run_line_magic("pi", "compact --mask")
    added = [json.loads(x)["type"] for x in path.read_bytes()[len(before) :].splitlines()]
    assert added and set(added) == {"context_edit"} and len(view.report.masked) == len(added)
    pi_loop.server.reply(text="Pi goes on")
    assert _cell(shell, "", "what now?").text == "Pi goes on"
    sent = json.dumps(pi_loop.server.requests[-1].body, ensure_ascii=False)
    assert sent.count(MASK_PREFIX) == len(added)
    ours = json.loads(json.dumps(Session.open(path).build_context().to_wire()))
    assert pi16.open(path)["context"] == ours
