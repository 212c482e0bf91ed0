"""The core's entry helpers: the one preview of an entry or message, tool sizes."""

from __future__ import annotations

import json

import pytest

from pinb.core import Session
from pinb.core.describe import _short_args, entry_preview, message_preview, tool_tokens
from pinb.render.tree import graph
from tests.samples import CASE_FILES


def test_previews_and_tool_tokens() -> None:
    s = Session.in_memory("/x")
    e = s.append_message({"role": "user", "content": "  hello\n  world  ", "timestamp": 1})
    assert entry_preview(e) == "hello world"
    assert entry_preview(e, limit=4) == "hel…"
    call = {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "abcd"}},
            {"type": "toolCall", "id": "2", "name": "bash", "arguments": {}},
        ],
    }
    assert [(n, side) for n, side, _ in tool_tokens(call)] == [("read", "call"), ("bash", "call")]
    result = {
        "role": "toolResult",
        "toolName": "read",
        "content": [{"type": "text", "text": "x" * 8}],
    }
    assert list(tool_tokens(result)) == [("read", "result", 2)]
    assert list(tool_tokens("not a message")) == []


def test_cut_tool_arguments_say_they_were_cut() -> None:
    path = "/very/long/" + "directory/" * 10 + "file.py"
    short = _short_args({"path": path, "a": 1, "b": 2, "c": 3})
    assert "…" in short and path not in short
    assert short.endswith(", …")  # a fourth argument left out is said too
    assert _short_args({"path": "x.py"}) == "path=x.py"
    assert _short_args("y" * 100).endswith("…")


def test_summary_messages_preview_their_summary() -> None:
    for role in ("compactionSummary", "branchSummary"):
        message = {"role": role, "summary": "  what was\n done ", "timestamp": 1}
        assert message_preview(message) == "what was done"
    assert message_preview("not a message") == ""
    s = Session.in_memory("/x")
    e = s.append_message({"role": "user", "content": "same text", "timestamp": 1})
    assert entry_preview(e) == message_preview(e.message)


def test_there_is_one_preview() -> None:
    # The render layer and the CLI use the core's preview, not copies of it.
    assert graph.entry_preview is entry_preview


def test_cli_context_lines_use_the_core_preview(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pinb.cli import main

    path = CASE_FILES["two-leaves"]
    assert main(["context", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert main(["context", str(path), "--json"]) == 0
    messages = json.loads(capsys.readouterr().out)["messages"]
    assert lines == [f"[{m.get('role')}] {message_preview(m, 72)}" for m in messages]
