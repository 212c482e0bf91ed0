"""A 4,096-token local server from the outside: compaction that fits, ``%pi compact`` that finds work."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.core import Session
from pinb.core.compaction.summarize import SUMMARIZER_SYSTEM_PROMPT
from pinb.llm.config.discover import forget_discoveries
from pinb.notebook.live import AssistantReply, RunFailedError
from pinb.testing import LLMServer
from pinb.testing.llm_server import ServerReply
from pinb.testing.llm_wire import prompt_tokens
from tests.shells import pi_shell

WINDOW = 4096


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    forget_discoveries()
    with pi_shell() as ip:
        yield ip


def _session(ip: InteractiveShell) -> Session:
    path = ip.magics_manager.registry["PiMagics"].session.path
    return Session.open(path)


def _summary_requests(server: LLMServer) -> list[dict]:
    return [
        r.body
        for r in server.requests
        if r.body["messages"][0].get("content") == SUMMARIZER_SYSTEM_PROMPT
    ]


def _fits(body: dict) -> bool:
    return prompt_tokens(body) + int(body["max_tokens"]) <= WINDOW


@pytest.mark.parametrize("kind", ["llamacpp", "llama-cpp-python"])
def test_automatic_compaction_on_4096_writes_its_entry_and_every_request_fits(
    shell, monkeypatch, kind: str
) -> None:
    """llama-server says its window; llama-cpp-python's is learned from its overflow."""
    server = LLMServer(context_window=WINDOW, window_endpoint=kind, overflow_style="drop").start()
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.url)
    try:
        for i in range(40):
            server.add(ServerReply(text=f"answer {i}: " + "w" * 3000, no_usage=True))
        with capture_output():
            shell.run_line_magic("pi", "model llamacpp/smol")
            for i in range(6):
                reply = shell.run_cell_magic("pi", "--no-tools", f"question {i}: " + "q" * 3000)
                assert isinstance(reply, AssistantReply), i
    finally:
        server.stop()
    session = _session(shell)
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert compactions, "it compacted on its own"
    summaries = _summary_requests(server)
    assert summaries and all(_fits(b) for b in summaries)
    # the summary request has its own output limit, not the model's 16,384
    assert all(b["max_tokens"] <= WINDOW // 4 for b in summaries)
    chats = [r.body for r in server.requests if r.body not in summaries]
    if kind == "llamacpp":  # the window was known from the start: every request fits
        assert all(_fits(b) for b in chats)
    else:  # llama-cpp-python tells its window only in its overflow answer: from then on
        learned = next(i for i, b in enumerate(chats) if prompt_tokens(b) >= WINDOW)
        assert chats[learned + 1 :] and all(_fits(b) for b in chats[learned + 2 :])
    assert all(
        e.message.get("stopReason") != "error" or "context" in str(e.message.get("errorMessage"))
        for e in session.entries
        if e.role == "assistant"
    )


def test_a_long_span_is_summarized_in_passes_that_each_fit(shell, monkeypatch) -> None:
    server = LLMServer(context_window=WINDOW, window_endpoint="llamacpp").start()
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.url)
    shell.run_line_magic("config", "PiMagics.auto_compact = False")
    try:
        for i in range(30):
            server.add(ServerReply(text=f"answer {i}: " + "w" * 1300, no_usage=True))
        with capture_output():
            shell.run_line_magic("pi", "model llamacpp/smol")
            for i in range(5):
                shell.run_cell_magic("pi", "--no-tools", f"question {i}: " + "q" * 1300)
            # A sixth would leave the reply a few tokens: with automatic compaction off it
            # is not sent, and the cell says to compact.
            sent = len(server.requests)
            with pytest.raises(RunFailedError, match="automatic compaction is off: %pi compact"):
                shell.run_cell_magic("pi", "--no-tools", "question 5: " + "q" * 1300)
            assert len(server.requests) == sent
            # The conversation grew on a larger window; the model now has the small one.
            model = shell.magics_manager.registry["PiMagics"]._model
            model.info = dataclasses.replace(model.info, context_window=WINDOW * 2)
            for i in range(6, 9):
                shell.run_cell_magic("pi", "--no-tools", f"question {i}: " + "q" * 1300)
            model.info = dataclasses.replace(model.info, context_window=WINDOW)
        before = len(server.requests)
        view = shell.run_line_magic("pi", "compact")
    finally:
        server.stop()
    passes = [r.body for r in server.requests[before:]]
    assert len(passes) >= 2  # more than one request could hold
    assert all(_fits(b) for b in passes)
    assert "<previous-summary>" in passes[-1]["messages"][-1]["content"]  # Pi's update prompt
    assert _session(shell).entries[-1].type == "compaction"
    assert view is not None


def test_compact_above_the_window_always_finds_something(shell, monkeypatch) -> None:
    """The last message alone passes keepRecentTokens: Pi's plan keeps everything."""
    server = LLMServer(context_window=WINDOW * 4, window_endpoint="llamacpp").start()
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.url)
    shell.run_line_magic("config", "PiMagics.auto_compact = False")
    try:
        server.add(ServerReply(text="short answer", no_usage=True))
        server.add(ServerReply(text="long answer " + "w" * 14_000, no_usage=True))
        with capture_output():
            shell.run_line_magic("pi", "model llamacpp/smol --base-url " + server.url)
            shell.run_cell_magic("pi", "--no-tools", "first question")
            shell.run_cell_magic("pi", "--no-tools", "second question")
        # the server restarted with a quarter of the window: the context is now over it
        shell.run_line_magic("pi", "model llamacpp/smol")
        model = shell.magics_manager.registry["PiMagics"]._model
        model.info = dataclasses.replace(model.info, context_window=WINDOW)
        server.add(ServerReply(text="## Goal\nsummary", no_usage=True))
        server.add(ServerReply(text="## Original Request\nsummary", no_usage=True))
        shell.run_line_magic("pi", "compact")
    finally:
        server.stop()
    last = _session(shell).entries[-1]
    assert last.type == "compaction"
    kept = _session(shell).build_context().messages
    assert any("long answer" in str(m) for m in kept)  # the last reply is kept whole
    assert not any("first question" in str(m) for m in kept[1:])  # the rest summarized


def test_whatif_asks_the_model_only_when_told(shell, monkeypatch) -> None:
    """A what-if is free: the configured model's summary is scored with ``--model`` only."""
    server = LLMServer(context_window=WINDOW * 4, window_endpoint="llamacpp").start()
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.url)
    shell.run_line_magic("config", "PiMagics.auto_compact = False")
    try:
        for i in range(6):
            server.add(ServerReply(text=f"answer {i}: " + "w" * 2000, no_usage=True))
        with capture_output():
            shell.run_line_magic("pi", "model llamacpp/smol")
            for i in range(6):
                shell.run_cell_magic("pi", "--no-tools", f"question {i}: " + "q" * 2000)
        sent = len(server.requests)
        free = shell.run_line_magic("pi", "whatif --keep 1000")
        assert len(server.requests) == sent  # nothing asked of the model
        assert free.strategies is not None
        assert not any("Pi's prompt" in row.name for row in free.strategies.rows)
        assert (
            "summary is not scored (a request): add --model"
            in free._repr_mimebundle_()["text/plain"]
        )
        for _ in range(2):  # the summary, and a split turn's prefix when the cut splits one
            server.add(ServerReply(text="## Goal\nanswer the questions", no_usage=True))
        asked = shell.run_line_magic("pi", "whatif --keep 1000 --model")
    finally:
        server.stop()
    assert len(server.requests) > sent
    assert len(_summary_requests(server)) == len(server.requests) - sent  # Pi's summary prompt
    (row,) = [r for r in asked.strategies.rows if "Pi's prompt" in r.name]
    assert row.retention is not None and row.retention.summary.startswith("## Goal")
