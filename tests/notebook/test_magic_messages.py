"""What the %pi commands say: one clear line per failure, what each did, and the folder
they work on following the current session. A real IPython shell and real files."""

from __future__ import annotations

import os
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.core import Session
from pinb.core.file.paths import sessions_dir_for
from pinb.testing.story import MAIN_TASKS, write_story_session
from tests.notebook import test_magics

shell = test_magics.shell  # the fixture: a real InteractiveShell with pinb loaded
_magics = test_magics._magics


def _cell(ip: InteractiveShell, source: str) -> tuple[str, str]:
    """Run a cell as the notebook does (errors rendered, not raised): (stdout, stderr)."""
    with capture_output() as out:
        ip.run_cell(source)
    return out.stdout, out.stderr


def test_opening_a_missing_file_is_one_clear_line(shell: InteractiveShell, tmp_path: Path) -> None:
    stdout, stderr = _cell(shell, f"%pi open {tmp_path / 'missing.jsonl'}")
    text = (stdout + stderr).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1
    assert text == (
        f"SessionFileError: {tmp_path / 'missing.jsonl'}: no such file; "
        "%pi sessions lists the current folder's sessions"
    )
    assert _magics(shell).session is None  # nothing changed
    text = "".join(_cell(shell, f"%pi open {tmp_path}")).strip()
    assert text.endswith(
        "is a folder, not a session file; %pi sessions lists the current folder's sessions"
    )
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # refused at once by the open itself: no thread waits for a writer
    text = "".join(_cell(shell, f"%pi open {fifo}")).strip()
    assert text == (
        f"SessionFileError: {fifo}: is a FIFO (named pipe), not a regular file (reading it "
        "could wait forever); %pi sessions lists the current folder's sessions"
    )
    assert _magics(shell).session is None


def test_sessions_search_and_resume_follow_the_current_session(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    earlier = write_story_session(sessions_dir_for(project), cwd=str(project), tasks=MAIN_TASKS[:2])
    assert earlier.path is not None
    _cell(shell, f"%pi new --cwd {project}")
    listing = shell.run_line_magic("pi", "sessions")
    assert [row.path for row in listing.rows] == [str(earlier.path)]
    assert repr(listing).startswith("<SessionListView 1 session, ")
    hits = shell.run_line_magic("pi", 'sessions --search "median"')
    assert len(hits) > 0 and {Path(h.info.path) for h in hits} == {earlier.path}
    stdout, _ = _cell(shell, "%pi resume")
    assert stdout.strip() == (
        f"resumed {earlier.path.name} ({len(earlier.entries)} entries, leaf {earlier.leaf_id})"
    )
    assert _magics(shell).session is not None and _magics(shell).session.id == earlier.id


def test_resume_with_nothing_to_resume_says_so_and_keeps_the_session(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    stdout, _ = _cell(shell, "%pi resume")
    assert stdout.strip().startswith(f"no session to resume for {tmp_path} (in ")
    assert stdout.strip().endswith("the next %%pi cell starts a new one")
    assert _magics(shell).session is None
    current = _magics(shell).current_session()
    stdout, _ = _cell(shell, "%pi resume")
    assert stdout.strip().endswith(f"still in session {current.id}")
    assert _magics(shell).session is current


def test_fork_says_what_became_current(shell: InteractiveShell, tmp_path: Path) -> None:
    story = write_story_session(tmp_path / "s", tasks=MAIN_TASKS[:2])
    assert story.path is not None
    _cell(shell, f"%pi open {story.path}")
    second_prompt = [e for e in story.entries if e.role == "user"][1]
    kept = story.path_to(second_prompt.parent_id)[-1]
    stdout, _ = _cell(shell, f"%pi fork {second_prompt.id} --stay")
    assert f"forked the path before {second_prompt.id} into " in stdout
    assert f"still in session {story.id}" in stdout and "Yes, fix median first." in stdout
    assert _magics(shell).session is not None and _magics(shell).session.id == story.id
    stdout, _ = _cell(shell, f"%pi fork {second_prompt.id}")
    fork = _magics(shell).session
    assert fork is not None and fork.id != story.id
    assert f"now in the fork, session {fork.id}" in stdout and "--stay keeps the original" in stdout
    # The next command acts on the fork, which holds the path before the prompt.
    stdout, stderr = _cell(shell, f"%pi label {kept.id} before the fix")
    assert stdout.strip() == f"labelled {kept.id}: before the fix" and not stderr
    assert Session.open(fork.require_path()).label(kept.id) == "before the fix"


def test_compact_says_why_nothing_was_compacted(shell: InteractiveShell, tmp_path: Path) -> None:
    session = _magics(shell).current_session()
    session.append_message({"role": "user", "content": "hello " * 50, "timestamp": 1})
    stdout, stderr = _cell(shell, "%pi compact --offline")
    line = (stdout + stderr).strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    held = sum(len(str(m)) for m in session.build_context().messages) // 4 + 1
    assert line.startswith("NothingToCompactError: Nothing to compact (session too small): its ≈")
    assert "fit in the 20,000 recent tokens a compaction keeps (keepRecentTokens)" in line
    figure = int(line.split("≈")[1].split(" ")[0].replace(",", ""))
    assert 0 < figure <= held


def test_name_thinking_and_label_print_what_they_did(shell: InteractiveShell) -> None:
    session = _magics(shell).current_session()
    first = session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert _cell(shell, "%pi name textstats fixes")[0].strip() == (
        f"named session {session.id}: textstats fixes"
    )
    assert session.name == "textstats fixes"
    assert _cell(shell, "%pi thinking high")[0].strip() == "thinking level for the next runs: high"
    assert _magics(shell).thinking == "high"
    assert _cell(shell, f'%pi label {first.id} ""')[0].strip() == f"cleared the label of {first.id}"


def test_an_undefined_name_in_a_cell_is_warned_about(shell: InteractiveShell) -> None:
    shell.user_ns["known"] = 42
    _, stderr = _cell(
        shell, "%%pi --model offline --no-tools\nCompare {known} with {undefined_var}."
    )
    assert stderr.count("warning:") == 1
    assert "warning: {undefined_var}: no such variable in this kernel, sent as written" in stderr
    sent = [e for e in _magics(shell).current_session().entries if e.role == "user"][-1]
    assert "Compare 42 with {undefined_var}." in str(sent.message)


def test_a_context_left_above_the_threshold_is_warned_about(shell: InteractiveShell) -> None:
    # The agent compacts after a run that crosses the threshold; with that switched off
    # (or when nothing can be summarized) the context stays above it, and the cell says so.
    _magics(shell).context_window = 4_000
    _magics(shell).auto_compact = False
    try:
        _, stderr = _cell(shell, "%%pi --model offline --no-tools\n" + "a long prompt " * 1_100)
    finally:
        _magics(shell).auto_compact = True
    assert "warning: the context is left at " in stderr
    assert "of the 4,000-token window, above the compaction threshold (" in stderr
    assert "automatic compaction is off (PiMagics.auto_compact): run %pi compact" in stderr
    # A small prompt leaves it below: no warning.
    _magics(shell).session = None
    _, stderr = _cell(shell, "%%pi --model offline --no-tools\nhello")
    assert "warning" not in stderr


def test_totals_rows_name_files_relative_to_the_sessions_folder(
    shell: InteractiveShell, isolated_agent_dir: Path, tmp_path: Path
) -> None:
    from pinb.core.file.paths import sessions_root

    story = write_story_session(sessions_dir_for(tmp_path / "proj"), tasks=MAIN_TASKS[:2])
    view = shell.run_line_magic("pi", "totals session")
    bundle = view._repr_mimebundle_()
    relative = str(story.require_path().relative_to(sessions_root()))
    assert relative in bundle["text/plain"] and str(sessions_root()) not in bundle["text/plain"]
    assert relative in bundle["text/html"] and str(sessions_root()) not in bundle["text/html"]
    assert view.totals["session"].tolist() == [str(story.path)]  # the data keeps whole paths


_CHAT_HOLDS = """
import sys, time
from pathlib import Path
from pinb.core import Session
session = Session.open(Path(sys.argv[1]))
with session.turn("pinb's agent", role="chat", who="the chat panel (analysis.chat)", long=True):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_cell_while_the_chat_runs_a_turn_is_one_line_before_it_asks_any_server(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    """The chat panel's turn holds the session (another process): the cell says so in one
    line, naming it, before it resolves its model, so a local server busy with the chat's
    reply (which may take seconds to answer a window probe) is never asked."""
    import socket
    import subprocess
    import sys
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    asked: list[object] = []
    threading.Thread(target=lambda: asked.append(server.accept()), daemon=True).start()
    session = Session.create(tmp_path, tmp_path / "s")
    session.append_message({"role": "user", "content": "begin", "timestamp": 1})
    path = session.require_path()
    _cell(shell, f"%pi open {path}")
    _magics(shell).base_urls = {"ollama": f"http://127.0.0.1:{server.getsockname()[1]}/v1"}
    chat = subprocess.Popen(
        [sys.executable, "-c", _CHAT_HOLDS, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert chat.stdout is not None and chat.stdout.readline() == "held\n"
        stdout, stderr = _cell(shell, "%%pi --model ollama/qwen3:8b\nhello")
    finally:
        chat.kill()
        chat.wait()
        server.close()
    text = (stdout + stderr).strip()
    assert text.startswith(
        "busy: the chat panel (analysis.chat) is running a turn on this session (pinb's agent, "
        f"a Python process (-c), pid {chat.pid}, since "
    ), text
    assert text.endswith("; the cell was not run — run it again when the chat's turn ends")
    assert len(text.splitlines()) == 1 and "Traceback" not in text
    assert asked == []  # the model's server was not asked for its window
    assert [e.role for e in Session.open(path).entries] == ["user"]  # nothing written
