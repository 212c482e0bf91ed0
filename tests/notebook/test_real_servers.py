"""``%%pi`` against servers that fail like real ones: a real shell, the loopback server, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.agent.events import AgentEnd, ModelEvent, TurnStart
from pinb.core import Session
from pinb.llm import TextDelta
from pinb.llm.config.discover import forget_discoveries
from pinb.notebook import PiMagics
from pinb.notebook.live import AssistantReply, LiveRun, RunFailedError
from pinb.notebook.terminal import TerminalRun
from pinb.testing import LLMServer
from pinb.testing.llm_server import ServerReply, ToolCallScript
from tests.shells import pi_shell

KEY = "sk-loop-key-that-must-never-leak-0123456789"


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    forget_discoveries()
    with pi_shell() as ip:
        yield ip


@pytest.fixture()
def fast_retries(isolated_agent_dir: Path) -> None:
    (isolated_agent_dir / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 10}}))


def _magics(ip: InteractiveShell) -> PiMagics:
    return ip.magics_manager.registry["PiMagics"]  # type: ignore[no-any-return]


def _session(ip: InteractiveShell) -> Session:
    session = _magics(ip).session
    assert session is not None and session.path is not None
    return Session.open(session.path)


def _local_server(monkeypatch: pytest.MonkeyPatch, **options) -> LLMServer:
    server = LLMServer(**options).start()
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.url)  # no /v1: pinb adds it
    return server


@pytest.mark.parametrize("cut_request", [0, 1])
def test_a_tool_cell_completes_when_a_stream_is_cut(
    shell, monkeypatch, tmp_path: Path, fast_retries, cut_request: int
) -> None:
    (tmp_path / "app.py").write_text("print('helo')\n")
    edit = ToolCallScript("edit", {"path": "app.py", "oldText": "helo", "newText": "hello"})
    replies = [ServerReply(text="Fixing.", tool_calls=[edit]), ServerReply(text="Fixed app.py.")]
    cut = ServerReply(**{**replies[cut_request].__dict__, "chunk_size": 2, "disconnect_after": 3})
    server = _local_server(monkeypatch)
    try:
        server.add(*replies[:cut_request], cut, *replies[cut_request:])
        with capture_output() as captured:
            reply = shell.run_cell_magic("pi", "--model llamacpp/smol", "fix the typo")
    finally:
        server.stop()
    assert isinstance(reply, AssistantReply) and reply.text == "Fixed app.py."
    assert (tmp_path / "app.py").read_text() == "print('hello')\n"
    shown = str(captured.outputs[-1].data["text/plain"])  # the display's final state
    assert shown.count("retrying in") == 1 and "retry 1 of 3" in shown


def test_the_final_error_is_raised_once(shell, monkeypatch, fast_retries) -> None:
    server = _local_server(monkeypatch)
    server.fail(503, times=4, message="server overloaded, slow down")
    try:
        with capture_output() as captured, pytest.raises(RunFailedError) as info:
            shell.run_cell_magic("pi", "--model llamacpp/smol --no-tools", "hello")
    finally:
        server.stop()
    assert "gave up after 3 retries" in str(info.value)
    assert info.value._render_traceback_() == [f"RunFailedError: {info.value}"]
    shown = str(captured.outputs[-1].data["text/plain"]) + captured.stdout
    assert shown.count("retrying in") == 3 and "gave up" not in shown  # said once: raised
    assert captured.stderr == ""  # no second wording through logging
    session = _session(shell)
    assert session.entries[-1].message["stopReason"] == "error"  # type: ignore[index]


def test_a_local_server_needs_no_file_and_brings_its_window(shell, monkeypatch) -> None:
    server = _local_server(monkeypatch, context_window=4096, window_endpoint="llamacpp")
    try:
        for i in range(8):
            server.add(ServerReply(text=f"answer {i} " + "w" * 1600, no_usage=True))
        server.add(*(ServerReply(text=f"answer {i}", no_usage=True) for i in range(8, 12)))
        with capture_output() as captured:
            shell.run_line_magic("pi", "model llamacpp/smol")
            for i in range(8):
                reply = shell.run_cell_magic("pi", "--no-tools", f"question {i} " + "q" * 800)
                assert isinstance(reply, AssistantReply), i
    finally:
        server.stop()
    assert "window 4,096" in captured.stdout
    session = _session(shell)
    assert any(e.type == "compaction" for e in session.entries), "compacted on its own"
    assert reply.end.usage_estimated
    assert "(estimated: the server reported no usage)" in reply._repr_mimebundle_()["text/plain"]
    view = shell.run_line_magic("pi", "context")
    assert "threshold 3,072" in view._repr_mimebundle_()["text/plain"]


def test_an_oversized_cell_fails_fast_then_the_next_cell_works(shell, monkeypatch) -> None:
    server = _local_server(monkeypatch, context_window=2000, overflow_style="drop")
    try:
        server.reply("hi there")
        shell.run_cell_magic("pi", "--model llamacpp/smol --no-tools", "hello")
        started = time.monotonic()
        with pytest.raises(RunFailedError) as info:
            shell.run_cell_magic("pi", "--model llamacpp/smol --no-tools", "word " * 4000)
        assert time.monotonic() - started < 3
        server.reply("I am still here.")
        reply = shell.run_cell_magic("pi", "--model llamacpp/smol --no-tools", "still there?")
    finally:
        server.stop()
    message = str(info.value)
    assert "your message alone is about 5,000 tokens" in message
    assert "context window (2,000 tokens)" in message and "\n" not in message
    assert isinstance(reply, AssistantReply) and reply.text == "I am still here."


def test_base_url_and_tool_choice_from_the_notebook(shell, tmp_path: Path) -> None:
    with LLMServer(context_window=8192, window_endpoint="ollama") as server:
        with capture_output() as captured:
            shell.run_line_magic("pi", f"model ollama/qwen3:0.6b --base-url {server.url}")
        assert "window 8,192" in captured.stdout
        server.reply("", tool_calls=[ToolCallScript("ls", {})])
        server.reply("Nothing much here.")
        shell.run_cell_magic("pi", "--tool-choice ls", "what is here?")
    first = server.requests[0].body
    assert first["tool_choice"] == {"type": "function", "function": {"name": "ls"}}
    assert first["model"] == "qwen3:0.6b"


def test_offline_compaction_and_the_context_view_use_the_small_window(shell, monkeypatch) -> None:
    server = _local_server(monkeypatch, context_window=4096, window_endpoint="llamacpp")
    try:
        for i in range(3):
            server.reply(f"answer {i} " + "w" * 2400)
        with capture_output():
            for i in range(3):
                shell.run_cell_magic("pi", "--model llamacpp/smol --no-tools", f"q{i} " + "q" * 900)
    finally:
        server.stop()
    view = shell.run_line_magic("pi", "context")
    assert "threshold 3,072" in view._repr_mimebundle_()["text/plain"]  # never negative
    report = shell.run_line_magic("pi", "compact --offline")
    assert _session(shell).entries[-1].type == "compaction"
    assert "Extractive summary" in report._repr_mimebundle_()["text/html"]


def test_keys_with_a_newline_work_and_broken_keys_say_where(
    shell, monkeypatch, isolated_agent_dir: Path
) -> None:
    with LLMServer() as server:
        (isolated_agent_dir / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "loop": {
                            "baseUrl": server.openai_base_url,
                            "api": "openai-completions",
                            "apiKey": "LOOP_KEY",
                            "models": [{"id": "tiny", "contextWindow": 4000}],
                        }
                    }
                }
            )
        )
        monkeypatch.setenv("LOOP_KEY", KEY + "\n")
        server.reply("fine")
        with capture_output() as captured:
            shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "hi")
        assert server.last_request.headers["authorization"] == f"Bearer {KEY}"
        monkeypatch.setenv("LOOP_KEY", KEY[:10] + "ü" + KEY[10:])
        _magics(shell)._model = None
        with pytest.raises(Exception) as info:
            shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "hi")
    text = info.value._render_traceback_()[0]  # type: ignore[attr-defined]
    assert "LOOP_KEY" in text and KEY[:10] not in text
    leaked = captured.stdout + captured.stderr + str(captured.outputs)
    leaked += _session(shell).path.read_text()  # type: ignore[union-attr]
    assert KEY[:10] not in leaked


def test_terminal_mode_prints_increments_and_the_answer(shell, monkeypatch) -> None:
    _magics(shell).renderer = "terminal"
    server = _local_server(monkeypatch)
    try:
        server.reply("Looking.", tool_calls=[ToolCallScript("ls", {})], chunk_size=3)
        server.reply("The folder is empty, as far as I can see.", chunk_size=3)
        with capture_output() as captured:
            reply = shell.run_cell_magic("pi", "--model llamacpp/smol", "what is here?")
    finally:
        server.stop()
    out = captured.stdout
    assert out.count("The folder is empty, as far as I can see.") == 1
    assert out.count("Looking.") == 1 and "→ ls({})" in out
    assert captured.outputs == []  # nothing re-displayed
    assert isinstance(reply, AssistantReply)
    assert reply._repr_mimebundle_()["text/plain"].startswith("this run (")  # no second copy


def test_a_script_prints_the_answer_and_exits_non_zero_on_failure(tmp_path: Path) -> None:
    script = tmp_path / "run.ipy"
    script.write_text(
        "%load_ext pinb\n"
        'get_ipython().run_cell_magic("pi", "--model llamacpp/smol --no-tools", "hello")\n'
        'get_ipython().run_cell_magic("pi", "--model llamacpp/smol --no-tools", "again")\n'
        'print("not reached")\n'
    )
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"retry": {"maxRetries": 0}}))
    with LLMServer() as server:
        server.reply("Hello from the server.")
        server.fail(401, message="bad key for this server")
        env = {
            **os.environ,
            "PI_CODING_AGENT_DIR": str(agent),
            "LLAMACPP_BASE_URL": server.url,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        }
        done = subprocess.run(
            [sys.executable, "-m", "IPython", "--no-banner", "--colors=nocolor", str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    assert done.stdout.count("Hello from the server.") == 1
    assert "not reached" not in done.stdout
    said = done.stdout + done.stderr
    assert said.count("bad key for this server") == 1 and "RunFailedError" in said


def test_huge_replies_stream_in_linear_time() -> None:
    """Each update draws the end of the text, not all of it: the work per update is bounded."""
    sizes: list[int] = []

    class Handle:
        def update(self, obj: object) -> None:
            bundle = obj._repr_mimebundle_()  # type: ignore[attr-defined]
            sizes.append(len(bundle["text/plain"]) + len(bundle.get("text/html", "")))

    def display(obj: object, display_id: bool = False) -> Handle:
        return Handle()

    # Every event is shown: each is a day after the last on the throttle's clock, so even
    # the back-off after a slow draw (4 x its real seconds) never skips one under load.
    days = iter(range(0, 10**12, 86_400))
    live = LiveRun(display, clock=lambda: float(next(days)))
    piece = ("lorem ipsum **dolor** sit amet\n" * 200)[:4000]
    live.add(TurnStart(1))
    for _ in range(1000):  # 4 MB in 1,000 pieces
        live.add(ModelEvent(TextDelta(0, piece)))
    streaming = list(sizes)
    live.add(AgentEnd("stop", []))
    live.finish()  # the end shows the whole answer, once
    assert len(streaming) >= 1000
    assert max(streaming) < 200_000  # while streaming: the shown end, never the 4 MB so far
    text = live.transcript.turns[0].text.value()
    assert len(text) == 4_000_000


def test_the_terminal_renderer_writes_each_piece_once() -> None:
    import io

    out = io.StringIO()
    run = TerminalRun(out)
    run.add(TurnStart(1))
    for _ in range(2500):
        run.add(ModelEvent(TextDelta(0, "x" * 4000)))
    run.finish()
    assert len(out.getvalue()) == 10_000_001  # 10 MB and one newline, nothing repeated


def test_interpolated_values_say_where_they_were_cut(shell) -> None:
    shell.user_ns["big"] = "a" * 10_000
    from pinb.notebook.interpolate import interpolate

    text = interpolate("see {big}", shell.user_ns)
    assert len(text) == 4 + 4000 and "[cut: 4,000 of 10,000 characters shown]" in text
    _magics(shell).interpolate_limit = 200
    with LLMServer() as server:
        server.reply("ok")
        shell.run_line_magic("pi", f"model llamacpp/smol --base-url {server.url}")
        with capture_output():
            shell.run_cell_magic("pi", "--no-tools", "see {big}")
    sent = server.requests[-1].body["messages"][-1]["content"]
    assert "[cut: 200 of 10,000 characters shown]" in sent and len(sent) == 4 + 200


def test_without_a_spec_a_local_server_is_found_with_a_short_model_id(shell, monkeypatch) -> None:
    for name in ("OLLAMA_HOST", "OLLAMA_BASE_URL", "LMSTUDIO_BASE_URL", "VLLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    server = _local_server(monkeypatch, context_window=4096, window_endpoint="llamacpp")
    try:
        with capture_output() as captured:
            shell.run_line_magic("pi", "model")
    finally:
        server.stop()
    # llama-cpp-python lists the GGUF file's path as the model id
    assert server.model_id.startswith("/models/")
    assert captured.stdout.startswith("llamacpp/loopback-135M.Q4_1 · window 4,096")


def test_discover_lists_servers_and_chooses_none(shell, monkeypatch) -> None:
    import dataclasses

    from pinb.llm.config.catalog import BUILTIN_PROVIDERS

    for name in ("OLLAMA_HOST", "OLLAMA_BASE_URL", "LMSTUDIO_BASE_URL", "VLLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("LLAMACPP_BASE_URL", raising=False)
    with LLMServer(context_window=4096, window_endpoint="llamacpp") as server:
        moved = dataclasses.replace(BUILTIN_PROVIDERS["llamacpp"], base_url=server.openai_base_url)
        monkeypatch.setitem(BUILTIN_PROVIDERS, "llamacpp", moved)
        with capture_output() as captured:
            shell.run_line_magic("pi", "model --discover")
        assert _magics(shell)._model is None  # listed, not chosen
        with pytest.raises(Exception, match="no model configured"):
            shell.run_line_magic("pi", "model")
        url = server.url
    assert f"llamacpp at {url}/v1 (default port)" in captured.stdout
    assert "window 4,096 (/props n_ctx)" in captured.stdout
    assert f"%pi model llamacpp/loopback-135M.Q4_1 --base-url {url}" in captured.stdout


def test_every_cell_request_carries_a_limit_that_fits_and_the_footer_says_it(
    shell, monkeypatch
) -> None:
    from pinb.testing.llm_wire import prompt_tokens

    server = _local_server(monkeypatch, context_window=4096, window_endpoint="llamacpp")
    try:
        for i in range(12):  # compactions take some
            server.add(ServerReply(text=f"answer {i} " + "w" * 2000, no_usage=True))
        with capture_output():
            shell.run_line_magic("pi", "model llamacpp/smol")
            for i in range(4):
                reply = shell.run_cell_magic("pi", "--no-tools", f"question {i} " + "q" * 2400)
    finally:
        server.stop()
    chats = [r.body for r in server.requests]
    assert chats and all(isinstance(b.get("max_tokens"), int) for b in chats)
    assert all(prompt_tokens(b) + b["max_tokens"] <= 4096 for b in chats)
    assert "output limit: " in reply._repr_mimebundle_()["text/plain"]
    assert "4,096-token window" in reply._repr_mimebundle_()["text/plain"]
