"""The RPC client against the real Pi 1.6.0, with pinb's loopback server as Pi's custom provider."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinb.agent.events import (
    AgentEnd,
    ModelEvent,
    Notice,
    RetryScheduled,
    ToolEnd,
    ToolStart,
    TurnStart,
)
from pinb.agent.pi.events import PiRun, cancel_dialog
from pinb.agent.pi.rpc import (
    PiExitedError,
    PiHandshakeError,
    PiNotFoundError,
    PiProcess,
    package_version,
    resolve_pi_command,
    split_records,
)
from pinb.core import Session
from pinb.llm import get_model
from pinb.llm.types import TextDelta, ThinkingDelta, ToolCallEnd
from tests.pi.loop import KEY, MODEL, PiLoop, configure, confirm_extension, engine_env
from tests.pi.reference import PiReference

# -- framing ---------------------------------------------------------------------------------


def test_records_split_on_lf_only_and_drop_a_preceding_cr() -> None:
    inner = json.dumps({"text": "a\u2028b\u2029c"}, ensure_ascii=False).encode()
    assert b"\xe2\x80\xa8" in inner  # the separator travels raw, as JSON allows
    records, rest = split_records(inner + b"\r\n" + inner + b"\n" + b'{"par')
    assert [json.loads(r) for r in records] == [{"text": "a\u2028b\u2029c"}] * 2
    assert rest == b'{"par'
    # A CR inside a record is data; only the one before LF is framing.
    records, rest = split_records(b'{"a":"x\\r"}\r\r\n')
    assert records == [b'{"a":"x\\r"}\r'] and rest == b""


FAKE_PI = textwrap.dedent(
    r"""
    import json, sys
    if "--version" in sys.argv:
        print("1.6.0"); sys.exit(0)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        command = json.loads(line)
        if command["type"] == "get_state":
            reply = {"id": command["id"], "type": "response", "command": "get_state",
                     "success": True, "data": {"sessionFile": sys.argv[-1]}}
            # CRLF framing, a raw U+2028 inside a string, and a record split across writes.
            event = json.dumps({"type": "notice", "text": "one\u2028two"}, ensure_ascii=False)
            data = (json.dumps(reply) + "\r\n" + event + "\r\n").encode()
            out.write(data[:7]); out.flush(); out.write(data[7:]); out.flush()
    """
)


def test_a_process_writing_crlf_and_line_separators_is_read_record_by_record(
    tmp_path: Path,
) -> None:
    script = tmp_path / "fake_pi.py"
    script.write_text(FAKE_PI)
    process = PiProcess(
        [sys.executable, str(script)], session_file=tmp_path / "s.jsonl", cwd=tmp_path
    )
    with process:
        assert process.state == {"sessionFile": str(tmp_path / "s.jsonl")}
        assert process.next_record(timeout=10) == {"type": "notice", "text": "one\u2028two"}
        assert process.bad_records == []


NOT_PI = textwrap.dedent(
    """
    import sys, time
    if "--version" in sys.argv:
        print("1.7.0"); sys.exit(0)
    print("a banner, not JSON", flush=True)
    time.sleep(30)
    """
)


def test_a_failed_handshake_names_the_version_found(tmp_path: Path) -> None:
    script = tmp_path / "not_pi.py"
    script.write_text(NOT_PI)
    process = PiProcess(
        [sys.executable, str(script)], session_file=tmp_path / "s.jsonl", cwd=tmp_path
    )
    with pytest.raises(PiHandshakeError) as caught:
        process.start(timeout=2)
    assert "(version 1.7.0) did not answer Pi 1.x's RPC handshake" in str(caught.value)
    assert process.bad_records == [b"a banner, not JSON"]  # counted, not silently dropped
    assert not process.alive


# -- finding Pi --------------------------------------------------------------------------------


def test_pi_missing_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(PiNotFoundError) as caught:
        resolve_pi_command("", env={"PATH": str(tmp_path)})
    message = str(caught.value)
    assert "npm install -g @earendil-works/pi-coding-agent" in message
    assert "--engine pinb" in message and "\n" not in message
    with pytest.raises(PiNotFoundError, match="PINB_PI_COMMAND names 'no-such-pi'"):
        resolve_pi_command("", env={"PATH": str(tmp_path), "PINB_PI_COMMAND": "no-such-pi --x"})


def test_the_command_comes_from_the_variable_then_the_setting_then_path(tmp_path: Path) -> None:
    program = tmp_path / "pi"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    env = {"PATH": str(tmp_path)}
    assert resolve_pi_command("", env=env) == [str(program)]
    assert resolve_pi_command("pi --offline", env=env) == [str(program), "--offline"]
    env["PINB_PI_COMMAND"] = f"{sys.executable} -c pass"
    assert resolve_pi_command("pi --offline", env=env) == [sys.executable, "-c", "pass"]


def test_a_pi_older_than_1x_is_named_with_its_version(
    pi058: PiReference, isolated_agent_dir: Path, tmp_path: Path
) -> None:
    process = PiProcess(
        pi058.cli_argv(),
        session_file=tmp_path / "s.jsonl",
        cwd=tmp_path,
        env=engine_env(pi058, isolated_agent_dir),
    )
    with pytest.raises(PiHandshakeError, match=r"version 0\.58\.3\) is older than Pi 1\.x"):
        process.start()
    assert not process.alive
    # Read from the package.json beside the CLI script, without a second Node start.
    assert package_version(pi058.cli_argv()) == "0.58.3"


def test_an_unknown_model_is_pis_own_error_once(pi_loop: PiLoop, tmp_path: Path) -> None:
    process = PiProcess(
        pi_loop.argv,
        session_file=tmp_path / "s.jsonl",
        cwd=tmp_path,
        model="nope/x",
        env=pi_loop.env,
    )
    with pytest.raises(PiExitedError) as caught:
        process.start()
    assert str(caught.value).count('Model "nope/x" not found') == 1
    assert process.new_stderr() == ""  # already shown, not again


# -- runs --------------------------------------------------------------------------------------


@pytest.fixture()
def pi(pi_loop: PiLoop, tmp_path: Path) -> Iterator[PiProcess]:
    project = tmp_path / "proj"
    project.mkdir()
    with PiProcess(
        pi_loop.argv,
        session_file=project / "session.jsonl",
        cwd=project,
        model=MODEL,
        env=pi_loop.env,
    ) as process:
        yield process
    assert not process.alive


def _run(process: PiProcess, prompt: str, **options: Any) -> list[Any]:
    return list(PiRun(process, prompt, **options).events())


def _texts(events: list[Any]) -> str:
    return "".join(
        e.event.text for e in events if isinstance(e, ModelEvent) and isinstance(e.event, TextDelta)
    )


def test_a_reply_streams_as_the_agents_events(pi: PiProcess, pi_loop: PiLoop) -> None:
    pi_loop.server.reply(text="Hello\u2028from the real Pi", usage={"input": 12, "output": 4})
    events = _run(pi, "hi")
    deltas = [e for e in events if isinstance(e, ModelEvent) and isinstance(e.event, TextDelta)]
    assert len(deltas) > 1  # streamed in pieces, not delivered at the end
    assert _texts(events) == "Hello\u2028from the real Pi"
    assert isinstance(events[0], TurnStart) and isinstance(events[-1], AgentEnd)
    end = events[-1]
    assert end.stop_reason == "stop" and end.usage["input"] == 12 and end.usage["output"] == 4
    sent = {k.lower(): v for k, v in pi_loop.server.requests[-1].headers.items()}
    assert sent["authorization"] == f"Bearer {KEY}"
    session = Session.open(pi.session_file)
    assert (
        session.build_context().messages[-1]["content"][0]["text"] == "Hello\u2028from the real Pi"
    )


def test_pis_own_write_tool_creates_the_file(pi: PiProcess, pi_loop: PiLoop) -> None:
    pi_loop.server.reply(tool_calls=[("write", {"path": "notes.txt", "content": "from Pi\n"})])
    pi_loop.server.reply(text="Wrote notes.txt.")
    events = _run(pi, "write notes.txt")
    assert (pi.cwd / "notes.txt").read_text() == "from Pi\n"
    calls = [
        e.event for e in events if isinstance(e, ModelEvent) and isinstance(e.event, ToolCallEnd)
    ]
    assert [(c.name, c.arguments["path"]) for c in calls] == [("write", "notes.txt")]
    start = next(e for e in events if isinstance(e, ToolStart))
    end = next(e for e in events if isinstance(e, ToolEnd))
    assert start.call_id == end.call_id and end.name == "write" and not end.result.is_error
    assert end.entry is None  # Pi saved it, in its own process
    assert "Successfully wrote" in end.result.content[0]["text"]
    assert events[-1].stop_reason == "stop" and len(events[-1].messages) == 2


def test_abort_ends_with_the_partial_reply_pi_saved(
    pi: PiProcess, pi_loop: PiLoop, pi16: PiReference
) -> None:
    pi_loop.server.reply(text="slow words " * 200, chunk_delay=0.02)
    run = PiRun(pi, "take your time")
    events = []
    for event in run.events():
        events.append(event)
        if isinstance(event, ModelEvent) and isinstance(event.event, TextDelta) and len(events) > 5:
            break
    events.extend(run.abort())
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.stop_reason == "aborted"
    partial = end.messages[-1]["content"][0]["text"]
    assert partial and len(partial) < len("slow words " * 200)
    opened = pi16.open(pi.session_file)  # Pi's own SessionManager reads what it saved
    assert opened["context"]["messages"][-1]["stopReason"] == "aborted"
    session = Session.open(pi.session_file)
    assert not session.problems
    # The process is ready for the next prompt.
    pi_loop.server.reply(text="after the abort")
    assert _texts(_run(pi, "again")) == "after the abort"


def test_compaction_through_rpc(pi_loop: PiLoop, tmp_path: Path, pi16: PiReference) -> None:
    (pi_loop.agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 50}})
    )
    with PiProcess(
        pi_loop.argv, session_file=tmp_path / "s.jsonl", cwd=tmp_path, model=MODEL, env=pi_loop.env
    ) as pi:
        for i in range(3):
            pi_loop.server.reply(text=f"answer {i} " + "words " * 60)
            _run(pi, f"question {i} " + "detail " * 60)
        asked = len(pi_loop.server.requests)
        # The summary, and (when the cut falls inside a turn) the summary of its beginning.
        pi_loop.server.reply(text="## Goal\nThree questions were answered.")
        pi_loop.server.reply(text="## Turn\nThe last question began.")
        data = pi.request("compact", customInstructions="keep it short", timeout=120)
    assert "Three questions were answered." in data["summary"]
    sent = pi_loop.server.requests[asked:]
    assert sent and all("keep it short" in json.dumps(r.body) for r in sent[:1])
    session = Session.open(tmp_path / "s.jsonl")
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert (
        len(compactions) == 1 and compactions[0].raw["firstKeptEntryId"] == data["firstKeptEntryId"]
    )
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(tmp_path / "s.jsonl")["context"] == ours


def test_an_extension_dialog_is_answered(pi_loop: PiLoop, tmp_path: Path) -> None:
    confirm_extension(pi_loop.agent_dir)
    asked: list[dict[str, Any]] = []

    def yes(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"confirmed": True}

    with PiProcess(
        pi_loop.argv, session_file=tmp_path / "s.jsonl", cwd=tmp_path, model=MODEL, env=pi_loop.env
    ) as pi:
        pi_loop.server.reply(tool_calls=[("write", {"path": "yes.txt", "content": "ok"})])
        pi_loop.server.reply(text="done")
        events = _run(pi, "write yes.txt", ui=yes)
        assert [(r["method"], r["title"], r["message"]) for r in asked] == [
            ("confirm", "Write a file?", "yes.txt")
        ]
        assert (tmp_path / "yes.txt").read_text() == "ok"
        notes = [e.text for e in events if isinstance(e, Notice)]
        assert "extension asked (confirm) 'Write a file?': yes" in notes
        assert "extension (info): write allowed" in notes
        # Without anyone to ask: Pi's cancel answer, and the extension blocks the write.
        pi_loop.server.reply(tool_calls=[("write", {"path": "no.txt", "content": "x"})])
        pi_loop.server.reply(text="it was blocked")
        events = _run(pi, "write no.txt", ui=cancel_dialog)
    assert not (tmp_path / "no.txt").exists()
    notes = [e.text for e in events if isinstance(e, Notice)]
    assert any("cancelled: no live notebook front end" in n for n in notes)
    blocked = next(e for e in events if isinstance(e, ToolEnd))
    assert blocked.result.is_error and "Blocked by user" in blocked.result.content[0]["text"]


def test_pi_killed_mid_run_fails_with_its_stderr_and_leaves_a_valid_file(
    pi: PiProcess, pi_loop: PiLoop, pi16: PiReference
) -> None:
    pi_loop.server.reply(text="first answer")
    _run(pi, "first")
    pi_loop.server.reply(text="never finished " * 300, chunk_delay=0.02)
    run = PiRun(pi, "second")
    with pytest.raises(PiExitedError) as caught:
        for event in run.events():
            if isinstance(event, ModelEvent) and pi.pid is not None:
                os.kill(pi.pid, signal.SIGKILL)
    assert caught.value.returncode == -signal.SIGKILL
    assert "exit status -9" in str(caught.value)
    session = Session.open(pi.session_file)
    assert not session.problems
    assert pi16.open(pi.session_file)["context"] == json.loads(
        json.dumps(session.build_context().to_wire())
    )


def test_close_reaps_the_process(pi_loop: PiLoop, tmp_path: Path) -> None:
    process = PiProcess(
        pi_loop.argv, session_file=tmp_path / "s.jsonl", cwd=tmp_path, model=MODEL, env=pi_loop.env
    ).start()
    pid = process.pid
    assert pid is not None and process.alive
    started = time.monotonic()
    process.close()
    assert time.monotonic() - started < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left behind


def test_one_models_json_serves_both_engines(pi: PiProcess, pi_loop: PiLoop) -> None:
    """Pi 1.x's ``$NAME`` key and header templates resolve the same in pinb's registry."""
    configure(pi_loop.agent_dir, pi_loop.server, headers={"X-Team": "${LOOP_TEAM}-x"})
    os.environ["LOOP_TEAM"] = "blue"  # the pi_loop fixture's monkeypatch restores the env
    try:
        with PiProcess(
            pi_loop.argv, session_file=pi.cwd / "t.jsonl", cwd=pi.cwd, model=MODEL,
            env={**pi_loop.env, "LOOP_TEAM": "blue"},
        ) as other:  # fmt: skip
            pi_loop.server.reply(text="from Pi")
            _run(other, "hi")
        pi_loop.server.reply(text="from pinb")
        get_model(MODEL).complete([{"role": "user", "content": "hi", "timestamp": 0}])
    finally:
        del os.environ["LOOP_TEAM"]
    by_pi, by_pinb = pi_loop.server.requests[-2:]
    for request in (by_pi, by_pinb):
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers["authorization"] == f"Bearer {KEY}"
        assert headers["x-team"] == "blue-x"


def test_thinking_and_a_retry_map_onto_the_agents_events(pi_loop: PiLoop, tmp_path: Path) -> None:
    configure(pi_loop.agent_dir, pi_loop.server, reasoning=True)
    (pi_loop.agent_dir / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 20}}))
    pi_loop.server.fail(503, message="overloaded, try again")
    pi_loop.server.reply(text="the answer", thinking="let me ponder this")
    with PiProcess(
        pi_loop.argv, session_file=tmp_path / "s.jsonl", cwd=tmp_path, model=MODEL,
        thinking="low", env=pi_loop.env,
    ) as pi:  # fmt: skip
        events = _run(pi, "think first")
    retry = next(e for e in events if isinstance(e, RetryScheduled))
    assert retry.attempt == 1 and retry.max_retries == 3 and "overloaded" in retry.error
    thought = "".join(
        e.event.thinking for e in events
        if isinstance(e, ModelEvent) and isinstance(e.event, ThinkingDelta)
    )  # fmt: skip
    assert thought == "let me ponder this" and _texts(events) == "the answer"
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.stop_reason == "stop"
    assert [m["stopReason"] for m in end.messages] == ["error", "stop"]  # both saved, as Pi does
