"""The agent's runs share the process's loop and connections: a turn, cells, Ctrl-C, threads.

A real loopback TLS server counts the TCP connections it accepted and those still open;
the cells run in a real IPython shell with ``%load_ext pinb``, the model named in Pi's
``models.json`` as users configure it.
"""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.agent import Agent, ToolContext, ToolResult
from pinb.core import Session
from pinb.core.file.writers import SessionBusyError
from pinb.llm import get_model, pool
from pinb.notebook.live import AssistantReply
from pinb.testing import Reply, ScriptedLLM
from pinb.testing.llm_server import LLMServer
from pinb.testing.tls import Certificate, self_signed_certificate
from tests.shells import pi_shell

#: Hang guard of every wait below (never a measure of speed).
PATIENCE = 30.0


class Count:
    name = "count"
    description = "Count one more."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.text(f"counted {arguments.get('n')}")


class Gate:
    """A tool that waits until the test opens it (a run held in the middle of its turn)."""

    name = "gate"
    description = "Wait for the gate."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.open = threading.Event()

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.reached.set()
        self.open.wait(PATIENCE)
        return ToolResult.text("through")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture()
def tls(
    certificate: Certificate, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LLMServer]:
    """A TLS server the process trusts, named provider ``loop`` in Pi's models.json."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.ca))
    monkeypatch.setenv("LOOP_KEY", "loop-key-0123456789")
    pool.close_pool()
    with LLMServer(certificate=certificate) as srv:
        provider = {
            "baseUrl": srv.openai_base_url,
            "api": "openai-completions",
            "apiKey": "LOOP_KEY",
            "models": [{"id": "tiny", "contextWindow": 32000, "maxTokens": 1000}],
        }
        (isolated_agent_dir / "models.json").write_text(
            json.dumps({"providers": {"loop": provider}})
        )
        yield srv
        pool.close_pool()


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    with pi_shell() as ip:
        yield ip


def _settles(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def _when(condition: Callable[[], bool], then: Callable[[], object]) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            if condition():
                then()
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_ten_request_turn_opens_one_connection(tls: LLMServer, tmp_path: Path) -> None:
    for n in range(9):
        tls.reply(f"step {n}", tool_calls=[("count", {"n": n})])
    tls.reply("counted to nine")
    model = get_model("loop/tiny")  # from models.json, as users configure it
    session = Session.create(tmp_path, tmp_path / "sessions")
    end = Agent(session, model, [Count()]).prompt("count to nine")
    assert end.stop_reason == "stop" and len(end.messages) == 10
    assert len(tls.requests) == 10
    assert tls.connections == 1 and tls.open_connections == 1


def test_cells_reuse_the_connection_and_ctrl_c_closes_only_its_own(
    shell: InteractiveShell, tls: LLMServer
) -> None:
    for i in range(3):
        tls.reply(f"answer {i}")
        reply = shell.run_cell_magic("pi", "--model loop/tiny --no-tools", f"question {i}")
        assert isinstance(reply, AssistantReply) and reply.text == f"answer {i}"
    assert tls.connections == 1  # three cells, one connection

    tls.reply("slow " * 400, chunk_delay=0.01)
    asked = len(tls.requests)
    watcher = _when(
        lambda: len(tls.requests) > asked, lambda: (time.sleep(0.2), _thread.interrupt_main())
    )
    with capture_output() as captured:
        result = shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "talk slowly")
    watcher.join(PATIENCE)
    assert result is None and "interrupted" in captured.stdout
    magics = shell.magics_manager.registry["PiMagics"]
    saved = magics.session.build_context().messages[-1]
    assert saved["stopReason"] == "aborted" and saved["content"][0]["text"].startswith("slow")
    _settles(lambda: tls.open_connections == 0, "the interrupted stream's connection closed")

    tls.reply("after the interrupt")
    reply = shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "and now?")
    assert isinstance(reply, AssistantReply) and reply.text == "after the interrupt"
    assert tls.connections == 2 and tls.open_connections == 1
    assert pool.pool_clients() == 1  # still one pool for the server
    pool.close_pool()
    _settles(lambda: tls.open_connections == 0, "nothing left open after the pool closed")


def test_a_second_run_on_the_same_file_is_refused_at_once_naming_the_first(
    tmp_path: Path,
) -> None:
    first = Session.create(tmp_path, tmp_path / "s")
    Agent(first, ScriptedLLM().reply("ok")).prompt("earlier")  # the file exists now
    assert first.path is not None
    gate = Gate()
    llm = ScriptedLLM().reply_tool_call("gate", {}).reply("first done")
    results: dict[str, Any] = {}

    def run_first() -> None:
        results["first"] = Agent(first, llm, [gate]).prompt("hold the turn")

    holder = threading.Thread(target=run_first, daemon=True)
    holder.start()
    assert gate.reached.wait(PATIENCE)
    second = Session.open(first.path)
    with pytest.raises(SessionBusyError, match="another thread of this process") as caught:
        Agent(second, ScriptedLLM().reply("never sent")).prompt("me too")
    assert caught.value.holder is not None and caught.value.holder.task == "pinb's agent"
    gate.open.set()
    holder.join(PATIENCE)
    assert results["first"].stop_reason == "stop"
    after = Session.open(first.path)
    end = Agent(after, ScriptedLLM().reply("my turn now")).prompt("me too")
    assert end.stop_reason == "stop"
    texts = [m.get("content") for m in Session.open(first.path).build_context().messages]
    assert texts[-1] == [{"type": "text", "text": "my turn now"}]


def test_runs_on_other_files_go_on_while_one_is_held(tmp_path: Path) -> None:
    gate = Gate()
    held = Session.create(tmp_path, tmp_path / "a")
    holder = threading.Thread(
        target=Agent(held, ScriptedLLM().reply_tool_call("gate", {}).reply("done"), [gate]).prompt,
        args=("wait",),
        daemon=True,
    )
    holder.start()
    try:
        assert gate.reached.wait(PATIENCE)
        other = Session.create(tmp_path, tmp_path / "b")
        llm = ScriptedLLM().add(Reply(text="streamed while the other waits", delay=0.001))
        end = Agent(other, llm).prompt("go")
        assert end.stop_reason == "stop" and not gate.open.is_set()
    finally:
        gate.open.set()
        holder.join(PATIENCE)


class WhereLLM(ScriptedLLM):
    """A scripted model that notes the thread each request streams on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def astream(self, *args: Any, **kwargs: Any) -> Any:
        self.threads.append(threading.current_thread().name)
        return super().astream(*args, **kwargs)


def test_every_request_of_every_run_goes_on_the_one_shared_loop(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path / "sessions")
    llm = WhereLLM()
    for n in range(2):
        llm.reply_tool_call("count", {"n": n}).reply(f"run {n} done")
        assert Agent(session, llm, [Count()]).prompt(f"run {n}").stop_reason == "stop"
    assert len(llm.threads) == 4
    assert set(llm.threads) == {"pinb-loop"}  # the pool's loop thread: one turn lock owner


def test_a_run_works_from_inside_a_running_event_loop(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)

    async def cell() -> Any:  # a notebook cell runs inside the kernel's event loop
        return Agent(session, ScriptedLLM().reply("answered")).prompt("go")

    end = asyncio.run(cell())
    assert end.stop_reason == "stop" and end.messages[-1]["content"][0]["text"] == "answered"
