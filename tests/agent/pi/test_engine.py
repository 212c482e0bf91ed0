"""``PiEngine``: the user's real Pi 1.6.0 as the engine of turns on pinb's session file.

The engine shows nothing of its own: each test is its front end, taking the run's events
through ``show`` and answering Pi's dialogs through ``ui``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pinb.agent.events import AgentEnd, AgentEvent, ModelEvent, Notice, ToolEnd, TurnStart
from pinb.agent.pi.engine import PiEngine, reread, with_estimates
from pinb.core import Session
from pinb.llm.types import TextDelta
from pinb.testing.llm_wire import ServerReply
from pinb.testing.messages import assistant, user
from tests.pi.loop import MODEL, PiLoop, confirm_extension
from tests.pi.reference import PiReference

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py


def _texts(events: list[AgentEvent]) -> str:
    return "".join(
        e.event.text for e in events if isinstance(e, ModelEvent) and isinstance(e.event, TextDelta)
    )


def _said(session: Session) -> list[str]:
    """The text of each user message and reply in the session's context (Pi's system
    message, which Pi 1.6 writes first, left out)."""
    return [
        "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
        for m in session.build_context().messages
        if m["role"] in ("user", "assistant")
    ]


def _notes(events: list[AgentEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


def _run(engine: PiEngine, session: Session, prompt: str, **options: Any) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    cwd = Path(session.cwd or ".")
    engine.run(session, prompt, cwd=cwd, model=options.pop("model", MODEL), thinking=None,
               show=events.append, **options)  # fmt: skip
    return events


@pytest.fixture()
def engine() -> Any:
    made = PiEngine()
    yield made
    made.close()


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_a_run_shows_pis_events_and_the_session_reads_what_pi_wrote(
    engine: PiEngine, pi_loop: PiLoop, project: Path, pi16: PiReference
) -> None:
    pi_loop.server.reply(text="Hello from Pi, " + "in pieces " * 20, chunk_delay=0.005)
    session = Session.create(project, project / "sessions")
    events = _run(engine, session, "hi")
    assert isinstance(events[-1], AgentEnd) and events[-1].stop_reason == "stop"
    assert any(isinstance(e, TurnStart) for e in events)
    deltas = [e for e in events if isinstance(e, ModelEvent) and isinstance(e.event, TextDelta)]
    assert len(deltas) > 1 and _texts(events) == "Hello from Pi, " + "in pieces " * 20
    # pinb's new session had no file: Pi wrote its header, and reread opens what Pi wrote.
    fresh = reread(session)
    assert fresh is not session and fresh.path == session.path
    assert _said(fresh) == ["hi", "Hello from Pi, " + "in pieces " * 20]
    assert pi16.open(fresh.require_path())["context"] == json.loads(
        json.dumps(fresh.build_context().to_wire())
    )
    # A session that had entries reads only the bytes Pi appended, in place.
    pi_loop.server.reply(text="again")
    _run(engine, fresh, "once more")
    assert reread(fresh) is fresh and _said(fresh)[-2:] == ["once more", "again"]


def test_pi_reads_the_file_again_when_another_writer_appended(
    engine: PiEngine, pi_loop: PiLoop, project: Path
) -> None:
    pi_loop.server.reply(text="first answer")
    session = Session.create(project, project / "sessions")
    _run(engine, session, "first question")
    session = reread(session)
    # pinb's own agent (or pi in a terminal) writes a turn Pi did not see.
    session.append_message(user("a question pinb asked"))
    session.append_message(assistant("an answer pinb got"))
    pi_loop.server.reply(text="third answer")
    _run(engine, session, "third question")
    sent = json.dumps(pi_loop.server.requests[-1].body)
    assert "a question pinb asked" in sent and "an answer pinb got" in sent
    session = reread(session)
    # Pi continued from the file's leaf: one conversation, no branch.
    assert _said(session) == [
        "first question", "first answer", "a question pinb asked", "an answer pinb got",
        "third question", "third answer",
    ]  # fmt: skip


def test_dialogs_are_answered_by_the_ui_its_owner_gives(pi_loop: PiLoop, project: Path) -> None:
    confirm_extension(pi_loop.agent_dir)
    asked: list[dict[str, Any]] = []

    def yes(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"confirmed": True}

    session = Session.create(project, project / "sessions")
    answering, default = PiEngine(ui=yes), PiEngine()
    try:
        pi_loop.server.reply(tool_calls=[("write", {"path": "yes.txt", "content": "ok"})])
        pi_loop.server.reply(text="written")
        events = _run(answering, session, "write yes.txt")
        assert [r["title"] for r in asked] == ["Write a file?"]
        assert (project / "yes.txt").read_text() == "ok"
        assert "extension asked (confirm) 'Write a file?': yes" in _notes(events)
        answering.close()
        # No ui given: Pi's cancel, with a note, and the extension blocks the write.
        session = reread(session)
        pi_loop.server.reply(tool_calls=[("write", {"path": "no.txt", "content": "x"})])
        pi_loop.server.reply(text="blocked")
        events = _run(default, session, "write no.txt")
    finally:
        answering.close()
        default.close()
    assert not (project / "no.txt").exists()
    assert any("'Write a file?': cancelled" in note for note in _notes(events))
    ended = next(e for e in events if isinstance(e, ToolEnd))
    assert ended.result.is_error


def test_a_pi_that_died_between_runs_is_started_again_with_a_note(
    engine: PiEngine, pi_loop: PiLoop, project: Path
) -> None:
    pi_loop.server.reply(text="first")
    session = Session.create(project, project / "sessions")
    _run(engine, session, "first")
    session = reread(session)
    assert engine.process is not None and engine.process.pid is not None
    pid = engine.process.pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while engine.process.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    pi_loop.server.reply(text="back")
    events = _run(engine, session, "second")
    assert "Pi had stopped (exit status -9); started it again" in _notes(events)
    assert _texts(events) == "back" and engine.process.pid != pid


def test_replies_pi_saved_without_usage_get_the_built_in_agents_estimate(
    engine: PiEngine, pi_loop: PiLoop, project: Path
) -> None:
    pi_loop.server.add(ServerReply(text="an answer with no token counts", no_usage=True))
    session = Session.create(project, project / "sessions")
    events: list[AgentEvent] = []
    end = engine.run(session, "hi " * 50, cwd=project, model=MODEL, thinking=None,
                     show=events.append)  # fmt: skip
    assert not end.usage_estimated and end.usage["input"] == 0  # what Pi saved
    estimated = with_estimates(reread(session), end)
    assert estimated.usage_estimated
    assert estimated.usage["input"] > 0 and estimated.usage["output"] > 0
    assert "(estimated: the server reported no usage)" in estimated.footer_lines()[0]


ORPHAN = textwrap.dedent(
    """
    import os, sys
    from pinb.agent.pi.rpc import PiProcess, resolve_pi_command
    process = PiProcess(resolve_pi_command(), session_file=sys.argv[1], cwd=os.getcwd()).start()
    print(process.pid, flush=True)
    if sys.argv[2] == "crash":
        os._exit(1)  # the kernel dies: no close, no atexit
    from pinb.agent.pi.engine import PiEngine
    engine = PiEngine()
    engine.process, engine.session_file = process, process.session_file
    # a normal exit: the engine's atexit hook closes Pi
    """
)


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):  # exited; waiting for init to reap it
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("how", ["exit", "crash"])
def test_pi_does_not_outlive_its_kernel(pi_loop: PiLoop, tmp_path: Path, how: str) -> None:
    import subprocess

    script = tmp_path / "kernel.py"
    script.write_text(ORPHAN)
    root = str(Path(__file__).resolve().parents[3])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "s.jsonl"), how],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    pid = int(done.stdout.split()[0])
    # atexit closes it at once; after a crash Pi sees stdin close and shuts itself down.
    assert _gone(pid, 20), f"Pi {pid} still runs after its kernel's {how}"
