"""Claude Code and Codex transcripts, written by hand here, imported as Pi sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.importers import ImportFormatError, import_claude, import_codex
from pinb.core import Session, convert_to_llm
from pinb.core.file.paths import sessions_dir_for
from pinb.core.format.models import parse_message


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "not json\n")
    return path


def _t(second: int) -> str:
    return f"2025-06-01T10:00:{second:02d}.000Z"


def _claude(uid: str, parent: str | None, kind: str, second: int, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent, "isSidechain": False, "userType": "external",
        "cwd": "/home/dev/claude-proj", "sessionId": "cc-session-1", "version": "2.0.0",
        "type": kind, "uuid": uid, "timestamp": _t(second), **extra,
    }  # fmt: skip


def _assistant(uid: str, parent: str, second: int, msg_id: str, block: dict[str, Any],
               stop: str | None = None, output: int = 5) -> dict[str, Any]:  # fmt: skip
    return _claude(uid, parent, "assistant", second, message={
        "id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [block], "stop_reason": stop,
        "usage": {"input_tokens": 100, "output_tokens": output,
                  "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 50},
    })  # fmt: skip


def _user(uid: str, parent: str | None, second: int, content: Any, **extra: Any) -> dict[str, Any]:
    return _claude(
        uid, parent, "user", second, message={"role": "user", "content": content}, **extra
    )


CLAUDE = [
    {"type": "summary", "summary": "Fix the flaky test", "leafUuid": "a7"},
    {"type": "summary", "summary": "Some other session", "leafUuid": "elsewhere"},
    {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
    _user("u1", None, 0, "Fix the flaky test <script>x</script>"),
    _assistant("a1", "u1", 1, "msg_1", {"type": "thinking", "thinking": "hmm", "signature": "sig"}),
    _assistant("a2", "a1", 2, "msg_1", {"type": "text", "text": "Let me run it"}),
    _assistant("a3", "a2", 3, "msg_1", {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                        "input": {"command": "pytest -x"}}, "tool_use", 40),
    _user("u2", "a3", 4, [{"type": "tool_result", "tool_use_id": "toolu_1",
                           "content": "1 failed", "is_error": True}]),
    _assistant("a4", "u2", 5, "msg_2", {"type": "text", "text": "Fixed it"}, "end_turn"),
    # A rewind: a second answer to the same tool result.
    _assistant("a5", "u2", 6, "msg_3", {"type": "text", "text": "Alternative fix"}, "end_turn"),
    _claude("x1", None, "user", 7, isSidechain=True, message={"role": "user", "content": "sub"}),
    _claude("s1", None, "system", 8, subtype="compact_boundary", content="Conversation compacted",
            logicalParentUuid="a4", compactMetadata={"trigger": "manual", "preTokens": 12345}),
    _user("u6", "s1", 9, "This session is being continued... Summary: the test was fixed.",
          isCompactSummary=True),
    _claude("s2", "u6", "system", 10, subtype="local_command", content="<cmd>/cost</cmd>"),
    _user("u7", "s2", 11, [{"type": "text", "text": "Thanks"}]),
    _assistant("a7", "u7", 12, "msg_4", {"type": "text", "text": "You're welcome"}, "end_turn"),
]  # fmt: skip


def test_claude_transcript_keeps_tree_merges_responses_and_compacts(tmp_path: Path) -> None:
    src = _write(tmp_path / "claude" / "cc-session-1.jsonl", CLAUDE)
    [result] = import_claude(src, out_dir=tmp_path / "out")
    assert result.created and result.path.parent == tmp_path / "out"
    assert result.skipped == {"unreadable line": 1, "file-history-snapshot": 1, "sidechain": 1}
    session = Session.open(result.path)
    assert session.problems == []
    assert session.cwd == "/home/dev/claude-proj"
    assert session.name == "Fix the flaky test"
    assert session.header["metadata"]["importedFrom"]["format"] == "claude-code"
    for entry in session.entries:
        if entry.message is not None:
            parse_message(entry.message)  # every message is Pi-shaped
    by_type = [e.type for e in session.entries]
    assert by_type.count("compaction") == 1 and by_type.count("custom") == 1
    # Three lines of msg_1 became one assistant message: thinking, text, tool call.
    first = next(e for e in session.entries if e.role == "assistant")
    assert [b["type"] for b in first.message["content"]] == ["thinking", "text", "toolCall"]
    assert first.message["content"][0]["thinkingSignature"] == "sig"
    assert first.message["stopReason"] == "toolUse"
    assert first.message["usage"]["output"] == 40 and first.message["usage"]["totalTokens"] == 1190
    result_entry = session.children(first.id)[0]
    assert result_entry.message["toolName"] == "Bash" and result_entry.message["isError"] is True
    # The rewind is a branch: the tool result has two assistant children.
    answers = session.children(result_entry.id)
    assert sorted(m.message["content"][0]["text"] for m in answers) == [
        "Alternative fix",
        "Fixed it",
    ]
    # The compaction hangs on the logical parent and carries the summary; nothing is kept.
    compaction = next(e for e in session.entries if e.type == "compaction")
    fixed = next(a for a in answers if a.message["content"][0]["text"] == "Fixed it")
    assert compaction.parent_id == fixed.id
    assert compaction.raw["summary"].endswith("the test was fixed.")
    assert compaction.raw["tokensBefore"] == 12345
    context = session.build_context()
    assert [m["role"] for m in context.messages] == ["compactionSummary", "user", "assistant"]
    assert context.messages[-1]["content"][0]["text"] == "You're welcome"
    assert convert_to_llm(context.messages)[0]["content"][0]["text"].startswith("The conversation")
    # Importing again finds the same file.
    [again] = import_claude(src, out_dir=tmp_path / "out")
    assert not again.created and again.path == result.path


def test_claude_interleaved_tool_results_stay_a_chain(tmp_path: Path) -> None:
    records = [
        _user("u1", None, 0, "go"),
        _assistant("a1", "u1", 1, "m1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}),
        _user("r1", "a1", 2, [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}]),
        # Claude Code may write the response's next block after the first result.
        _assistant("a2", "r1", 3, "m1", {"type": "tool_use", "id": "t2", "name": "Grep", "input": {}}, "tool_use"),
        _user("r2", "a2", 4, [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "two"}]}]),
        _assistant("a3", "r2", 5, "m2", {"type": "text", "text": "done"}, "end_turn"),
    ]  # fmt: skip
    [result] = import_claude(_write(tmp_path / "t.jsonl", records), out_dir=tmp_path / "out")
    session = Session.open(result.path)
    roles = [e.role for e in session.path_to()]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert all(len(session.children(e.id)) <= 1 for e in session.entries)  # no false branch
    calls = [b["name"] for b in session.path_to()[1].message["content"]]
    assert calls == ["Read", "Grep"]
    assert [e.message["toolName"] for e in session.path_to()[2:4]] == ["Read", "Grep"]


def test_claude_default_destination_is_pis_folder_for_the_cwd(tmp_path: Path) -> None:
    src = _write(tmp_path / "c.jsonl", CLAUDE[3:6])
    [result] = import_claude(src, cwd="/elsewhere/proj")
    assert result.path.parent == sessions_dir_for("/elsewhere/proj")
    assert Session.open(result.path).cwd == "/elsewhere/proj"


def test_not_a_transcript_is_refused(tmp_path: Path) -> None:
    src = _write(tmp_path / "x.jsonl", [{"hello": "world"}])
    with pytest.raises(ImportFormatError, match="no Claude Code messages"):
        import_claude(src, out_dir=tmp_path)
    with pytest.raises(ImportFormatError, match="no Codex rollout items"):
        import_codex(src, out_dir=tmp_path)
    with pytest.raises(ImportFormatError, match="no such file"):
        import_codex(tmp_path / "missing", out_dir=tmp_path)


def _codex(second: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": _t(second), "type": kind, "payload": payload}


def _msg(role: str, text: str) -> dict[str, Any]:
    part = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _tokens(total: int) -> dict[str, Any]:
    usage = {"input_tokens": total - 50, "cached_input_tokens": 200, "output_tokens": 50,
             "reasoning_output_tokens": 0, "total_tokens": total}  # fmt: skip
    return {"type": "token_count", "info": {"last_token_usage": usage, "total_token_usage": usage}}


CODEX = [
    _codex(0, "session_meta", {"id": "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000", "timestamp": _t(0),
                               "cwd": "/home/dev/codex-proj", "originator": "codex_cli_rs",
                               "cli_version": "0.50.0"}),
    _codex(1, "response_item", _msg("user", "<environment_context>cwd</environment_context>")),
    _codex(1, "turn_context", {"cwd": "/home/dev/codex-proj", "model": "gpt-5-codex", "effort": "high"}),
    _codex(2, "response_item", _msg("user", "list files")),
    _codex(2, "event_msg", {"type": "user_message", "message": "list files", "kind": "plain"}),
    _codex(3, "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Listing"}],
                                "encrypted_content": "gAAA"}),
    _codex(3, "response_item", {"type": "function_call", "name": "shell",
                                "arguments": '{"command":["ls"]}', "call_id": "call_1"}),
    _codex(3, "event_msg", _tokens(1000)),
    _codex(4, "response_item", {"type": "function_call_output", "call_id": "call_1",
                                "output": '{"output":"a.py\\n","metadata":{"exit_code":0}}'}),
    _codex(5, "response_item", _msg("assistant", "There is a.py")),
    _codex(5, "event_msg", _tokens(1200)),
    _codex(6, "response_item", _msg("user", "delete it")),
    _codex(7, "response_item", _msg("assistant", "Deleted")),
    _codex(8, "event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
    _codex(9, "response_item", _msg("user", "keep it instead")),
    _codex(10, "response_item", _msg("assistant", "Kept")),
    _codex(10, "event_msg", _tokens(1500)),
    _codex(11, "compacted", {"message": "Summary: listed files, kept a.py"}),
    _codex(12, "response_item", _msg("user", "next")),
    _codex(13, "response_item", _msg("assistant", "ok")),
    _codex(14, "event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
]  # fmt: skip


def test_codex_rollout_with_rollbacks_becomes_a_tree(tmp_path: Path) -> None:
    src = _write(
        tmp_path / "sessions" / "2025" / "06" / "01" / "rollout-2025-06-01T10-00-00-x.jsonl", CODEX
    )
    [result] = import_codex(tmp_path / "sessions", out_dir=tmp_path / "out")
    assert result.source == src
    assert result.skipped == {"unreadable line": 1, "event_msg/user_message": 1}
    session = Session.open(result.path)
    assert session.problems == [] and session.cwd == "/home/dev/codex-proj"
    for entry in session.entries:
        if entry.message is not None:
            parse_message(entry.message)
    kinds = [e.type for e in session.entries]
    assert kinds[:3] == ["custom", "model_change", "thinking_level_change"]
    assert session.entries[2].raw["thinkingLevel"] == "high"
    first = next(e for e in session.entries if e.role == "assistant")
    assert [b["type"] for b in first.message["content"]] == ["thinking", "toolCall"]
    assert first.message["content"][1]["arguments"] == {"command": ["ls"]}
    assert (
        first.message["usage"]["cacheRead"] == 200 and first.message["usage"]["totalTokens"] == 1000
    )
    assert first.message["model"] == "gpt-5-codex" and first.message["stopReason"] == "toolUse"
    tool = session.children(first.id)[0]
    assert tool.message["toolName"] == "shell" and tool.message["content"][0]["text"] == "a.py\n"
    # The rollback made "delete it" an abandoned branch beside "keep it instead".
    there = next(
        e
        for e in session.entries
        if e.role == "assistant" and e.message["content"][0].get("text") == "There is a.py"
    )
    texts = sorted(c.message["content"][0]["text"] for c in session.children(there.id))
    assert texts == ["delete it", "keep it instead"]
    # The last rollback leaves the conversation at the compaction: a leaf entry says so.
    compaction = next(e for e in session.entries if e.type == "compaction")
    assert compaction.raw["tokensBefore"] == 1500
    assert session.entries[-1].is_navigation and session.leaf_id == compaction.id
    context = session.build_context()
    assert [m["role"] for m in context.messages] == ["compactionSummary"]
    assert context.messages[0]["summary"] == "Summary: listed files, kept a.py"
    # Pi v0.58.3 (which ignores leaf entries) walks up through the last line to the same place.
    old_pi = session.build_context(session.entries[-1].id)
    assert [m["role"] for m in old_pi.messages] == ["compactionSummary"]
