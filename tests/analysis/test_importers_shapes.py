"""Importers on the shapes real transcripts have: skipped lines mid-chain, children before parents,
sub-agent files, titles, Codex's newer compaction, dateless rollouts, odd lines.

The transcripts are written here by hand after the formats' public descriptions (Claude Code
2.0/2.1 ``~/.claude/projects`` JSONL, Codex CLI rollouts); each test names the real shape.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.importers import ImportFormatError, import_claude, import_codex
from pinb.core import Session
from pinb.core.format.models import parse_message

SID = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
CWD = "/home/dev/shapes"


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


class Claude:
    """Lines as Claude Code 2.1 writes them, chained by ``parentUuid`` in call order."""

    def __init__(self, session_id: str = SID, *, sidechain: bool = False, agent: str | None = None):
        self.session_id, self.sidechain, self.agent = session_id, sidechain, agent
        self.lines: list[dict[str, Any]] = []
        self.last: str | None = None
        self.clock = 0

    def _line(self, kind: str, parent: str | None = ..., **fields: Any) -> str:  # type: ignore[assignment]
        self.clock += 1
        uid = f"{kind[:2]}-{self.clock:04d}-{'s' if self.sidechain else 'm'}"
        line = {"parentUuid": self.last if parent is ... else parent,
                "isSidechain": self.sidechain, "userType": "external", "cwd": CWD,
                "sessionId": self.session_id, "version": "2.1.12", "gitBranch": "main",
                "type": kind, "uuid": uid,
                "timestamp": f"2026-01-20T11:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z",
                **fields}  # fmt: skip
        if self.agent is not None:
            line["agentId"] = self.agent
        self.lines.append(line)
        self.last = uid
        return uid

    def user(self, text: Any, **kw: Any) -> str:
        return self._line("user", message={"role": "user", "content": text}, **kw)

    def assistant(self, blocks: list[dict[str, Any]], msg_id: str | None = None, **kw: Any) -> str:
        message = {"id": msg_id or f"msg_{self.clock}", "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5", "content": blocks, "stop_reason": None,
                   "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip
        return self._line("assistant", message=message, **kw)

    def say(self, text: str) -> str:
        return self.assistant([{"type": "text", "text": text}])

    def attachment(self) -> str:
        return self._line("attachment", attachment={"type": "hook_success", "hookName": "SessionStart:startup", "output": ""})  # fmt: skip

    def progress(self, tool_id: str = "toolu_x") -> str:
        data = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash"}
        return self._line("progress", data=data, toolUseID=tool_id, parentToolUseID=tool_id)


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        else:
            out.append(
                " ".join(b.get("text", "") for b in content or [] if b.get("type") == "text")
            )
    return out


def test_claude_attachment_and_progress_lines_do_not_break_the_chain(tmp_path: Path) -> None:
    # 23 user lines and 22 replies, each hanging on an attachment or a hook's progress line:
    # this imported as a context of 1 message.
    cc = Claude()
    cc.attachment()
    for turn in range(23):
        cc.user(f"question {turn}")
        if turn < 22:
            (cc.progress if turn % 2 else cc.attachment)()
            cc.say(f"answer {turn}")
            cc.attachment()
    [result] = import_claude(_jsonl(tmp_path / f"{SID}.jsonl", cc.lines), out_dir=tmp_path / "out")
    assert result.skipped == {"attachment": 34, "progress": 11}
    session = Session.open(result.path)
    assert session.problems == [] and len(session.tree()) == 1
    context = session.build_context()
    assert [m["role"] for m in context.messages] == ["user", "assistant"] * 22 + ["user"]
    assert _texts(context.messages)[-3:] == ["question 21", "answer 21", "question 22"]


def test_claude_child_listed_before_its_parent(tmp_path: Path) -> None:
    cc = Claude()
    cc.user("run the tests")
    call = cc.assistant(
        [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pytest"}}]
    )
    result_line = cc.user(
        [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 passed"}]
    )
    cc.say("All green.")
    lines = cc.lines
    # The file lists the tool result before the call it answers.
    at_call = next(i for i, r in enumerate(lines) if r["uuid"] == call)
    at_result = next(i for i, r in enumerate(lines) if r["uuid"] == result_line)
    lines[at_call], lines[at_result] = lines[at_result], lines[at_call]
    [result] = import_claude(_jsonl(tmp_path / "t.jsonl", lines), out_dir=tmp_path / "out")
    session = Session.open(result.path)
    assert len(session.tree()) == 1 and "parent missing (made a root)" not in result.skipped
    messages = session.build_context().messages
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[2]["toolName"] == "Bash" and messages[2]["toolCallId"] == "toolu_1"
    # Parents come first in the file pinb writes.
    seen: set[str] = set()
    for entry in session.entries:
        assert entry.parent_id is None or entry.parent_id in seen
        seen.add(entry.id)


def test_claude_last_line_on_an_earlier_branch_is_the_leaf(tmp_path: Path) -> None:
    cc = Claude()
    cc.user("first")
    answer = cc.say("answer one")
    cc.user("follow-up")
    two = cc.say("answer two")
    cc.last = answer  # the user rewinds to "answer one" and asks something else
    cc.user("instead, this")
    three = cc.say("answer three")
    # A late line of the abandoned branch, then a last line that is not converted.
    cc._line("system", parent=two, subtype="stop_hook_summary", content="")
    cc.last = three
    cc.attachment()
    [result] = import_claude(_jsonl(tmp_path / "t.jsonl", cc.lines), out_dir=tmp_path / "out")
    messages = Session.open(result.path).build_context().messages
    assert _texts(messages) == ["first", "answer one", "instead, this", "answer three"]


def _main_and_agents(project: Path) -> tuple[Path, Path, Path]:
    main = Claude()
    main.user("review the repo")
    main.assistant(
        [{"type": "tool_use", "id": "toolu_t", "name": "Task", "input": {"prompt": "look"}}]
    )
    main.user([{"type": "tool_result", "tool_use_id": "toolu_t", "content": "found 2 bugs"}])
    main.say("Two bugs.")
    main.lines.append({"type": "ai-title", "aiTitle": "Review the repo", "sessionId": SID})
    old = Claude(sidechain=True, agent="a1b2c3d")  # 2.0: agent-*.jsonl beside the main file
    old.user("look at src/")
    old.say("src/ has a bug")
    new = Claude(sidechain=True, agent="e4f5a6b")  # 2.1: <session id>/subagents/agent-*.jsonl
    new.user("look at tests/")
    new.say("tests/ has a bug")
    return (
        _jsonl(project / f"{SID}.jsonl", main.lines),
        _jsonl(project / "agent-a1b2c3d.jsonl", old.lines),
        _jsonl(project / SID / "subagents" / "agent-e4f5a6b.jsonl", new.lines),
    )


def test_claude_subagent_files_become_forks_of_their_session(tmp_path: Path) -> None:
    main, old, new = _main_and_agents(tmp_path / "project")
    out = tmp_path / "out"
    with pytest.raises(ImportFormatError, match="--include-sidechains") as refused:
        import_claude(old, out_dir=out)
    assert str(old) in str(refused.value) and not out.exists()
    # Folder import without the flag: only the main session.
    [only] = import_claude(tmp_path / "project", out_dir=out)
    assert only.source == main
    assert Session.open(only.path).name == "Review the repo"  # from ai-title
    # With the flag, the sub-agent files come too, each linked to the main session.
    results = import_claude(tmp_path / "project", out_dir=out, include_sidechains=True)
    by_source = {r.source: r for r in results}
    assert set(by_source) == {main, old, new} and not by_source[main].created
    ids = {r.session_id for r in results}
    assert len(ids) == 3
    for agent in (old, new):
        forked = Session.open(by_source[agent].path)
        assert forked.parent_session == str(by_source[main].path.absolute())
        assert forked.header["metadata"]["importedFrom"]["parentSessionId"] == SID
        assert [m["role"] for m in forked.build_context().messages] == ["user", "assistant"]


def test_claude_subagent_file_alone_brings_its_parent(tmp_path: Path) -> None:
    main, _, new = _main_and_agents(tmp_path / "project")
    out = tmp_path / "out"
    first = import_claude(new, out_dir=out, include_sidechains=True)
    assert [r.source for r in first] == [main, new]
    assert Session.open(first[1].path).parent_session == str(first[0].path.absolute())
    # Alone again: the same session (its own id, not the main session's), nothing new.
    [again] = import_claude(new, out_dir=out, include_sidechains=True)
    assert not again.created and again.session_id == first[1].session_id != first[0].session_id
    assert len(list(out.glob("*.jsonl"))) == 2


def test_claude_titles_custom_beats_ai_and_summary(tmp_path: Path) -> None:
    cc = Claude()
    cc.user("hello")
    leaf = cc.say("hi")
    cc.lines += [
        {"type": "summary", "summary": "From summary", "leafUuid": leaf},
        {"type": "ai-title", "aiTitle": "Old title", "sessionId": SID},
        {"type": "ai-title", "aiTitle": "AI   title\n", "sessionId": SID},
    ]
    [result] = import_claude(_jsonl(tmp_path / "a.jsonl", cc.lines), out_dir=tmp_path / "a")
    session = Session.open(result.path)
    assert session.name == "AI title" and session.entries[-1].type == "session_info"
    cc.lines.append({"type": "custom-title", "customTitle": "Mine", "sessionId": SID})
    [result] = import_claude(_jsonl(tmp_path / "b.jsonl", cc.lines), out_dir=tmp_path / "b")
    assert Session.open(result.path).name == "Mine"


def test_cli_points_a_subagent_file_at_the_flag(tmp_path: Path) -> None:
    _, old, _ = _main_and_agents(tmp_path / "project")
    result = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "import", "claude", str(old), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--include-sidechains" in result.stderr and str(old) in result.stderr


# -- Codex ---------------------------------------------------------------------------------


ROLLOUT_ID = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001"


def _codex(kind: str, payload: dict[str, Any], second: int | None) -> dict[str, Any]:
    line: dict[str, Any] = {"type": kind, "payload": payload}
    if second is not None:
        line = {"timestamp": f"2025-09-01T08:00:{second:02d}.000Z", **line}
    return line


def _item(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def test_codex_replacement_history_is_the_kept_context(tmp_path: Path) -> None:
    replacement = [
        _item("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        _item("user", "add a --verbose flag"),
        _item("user", "and document it"),
        {"type": "compaction", "encrypted_content": "gAAAAB..."},
        _item("user", "is the README done?"),  # the question being answered
    ]
    records = [
        _codex(
            "session_meta",
            {"id": ROLLOUT_ID, "timestamp": "2025-09-01T08:00:00.000Z", "cwd": CWD},
            0,
        ),
        _codex("response_item", _item("user", "add a --verbose flag"), 1),
        _codex("response_item", _item("assistant", "Added."), 2),
        _codex("response_item", _item("user", "and document it"), 3),
        _codex("response_item", _item("assistant", "Documented."), 4),
        _codex("response_item", _item("user", "is the README done?"), 5),
        # The newer compaction: no message, the kept history instead.
        _codex("compacted", {"message": "", "replacement_history": replacement}, 6),
        _codex("response_item", _item("assistant", "Yes, the README is done."), 7),
    ]
    src = _jsonl(tmp_path / f"rollout-2025-09-01T08-00-00-{ROLLOUT_ID}.jsonl", records)
    [result] = import_codex(src, out_dir=tmp_path / "out")
    messages = Session.open(result.path).build_context().messages
    assert [m["role"] for m in messages] == [
        "compactionSummary",
        "user",
        "user",
        "user",
        "assistant",
    ]
    assert _texts(messages[1:]) == [
        "add a --verbose flag", "and document it", "is the README done?", "Yes, the README is done."
    ]  # fmt: skip
    assert "encrypted" in messages[0]["summary"]


def test_codex_summary_in_replacement_history_is_not_repeated(tmp_path: Path) -> None:
    summary = "Another language model started to solve this problem and produced a summary.\nDid X."
    records = [
        _codex("session_meta", {"id": ROLLOUT_ID, "cwd": CWD}, 0),
        _codex("response_item", _item("user", "do X"), 1),
        _codex("compacted", {"message": summary, "replacement_history": [_item("user", "do X"), _item("user", summary)]}, 2),
        _codex("response_item", _item("user", "now Y"), 3),
    ]  # fmt: skip
    [result] = import_codex(_jsonl(tmp_path / "r.jsonl", records), out_dir=tmp_path / "out")
    messages = Session.open(result.path).build_context().messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "user"]
    assert messages[0]["summary"] == summary and _texts(messages[1:]) == ["do X", "now Y"]


def test_codex_rollout_without_timestamps_imports_once(tmp_path: Path) -> None:
    records = [
        _codex("session_meta", {"id": ROLLOUT_ID, "cwd": CWD}, None),
        _codex("response_item", _item("user", "hi"), None),
        _codex("response_item", _item("assistant", "hello"), None),
    ]
    src = _jsonl(tmp_path / "in" / f"rollout-2025-09-01T08-30-00-{ROLLOUT_ID}.jsonl", records)
    out = tmp_path / "out"
    [first] = import_codex(src, out_dir=out)
    assert first.path.name.startswith("2025-09-01T08-30-00-000Z_")
    [again] = import_codex(src, out_dir=out)
    assert not again.created and again.path == first.path
    # A file an older pinb wrote under another time still counts as this import.
    older = out / f"2030-01-01T00-00-00-000Z_{first.session_id}.jsonl"
    first.path.rename(older)
    [third] = import_codex(src, out_dir=out)
    assert not third.created and third.path == older and len(list(out.iterdir())) == 1
    # A copy with no date in its name either: the same name every time.
    copy = _jsonl(tmp_path / "copy.jsonl", records)
    names = {import_codex(copy, out_dir=tmp_path / "o2")[0].path for _ in range(2)}
    assert len(names) == 1


def test_codex_odd_lines_are_counted_never_empty_messages(tmp_path: Path) -> None:
    records = [
        _codex("session_meta", {"id": ROLLOUT_ID, "cwd": CWD}, 0),
        {"unexpected": True},
        _codex("response_item", {"type": "message", "role": "user", "content": []}, 1),
        _codex("response_item", {"type": "message", "role": "assistant", "content": [{"type": "refusal"}]}, 1),
        _codex("response_item", {"role": "user"}, 1),
        _codex("response_item", _item("user", "<turn_aborted>\n<reason>interrupted</reason>\n</turn_aborted>"), 2),
        _codex("response_item", _item("user", "real question"), 3),
        _codex("response_item", _item("assistant", "real answer"), 4),
    ]  # fmt: skip
    [result] = import_codex(_jsonl(tmp_path / "r.jsonl", records), out_dir=tmp_path / "out")
    assert result.skipped == {
        "line of unknown shape": 1,
        "response_item/message without content": 2,
        "response_item without a type": 1,
    }
    session = Session.open(result.path)
    for entry in session.entries:
        if entry.message is not None:
            parse_message(entry.message)
            assert entry.message["content"], entry.raw
    aborted = [e for e in session.entries if e.type == "custom"]
    assert len(aborted) == 1 and "turn_aborted" in json.dumps(aborted[0].raw)
    assert _texts(session.build_context().messages) == ["real question", "real answer"]


@pytest.mark.parametrize("cwd", ["/tmp/x\x00y", "/" + "deep/" * 60])
def test_a_working_directory_that_cannot_name_a_folder_is_refused(tmp_path: Path, cwd: str) -> None:
    records = [
        _codex("session_meta", {"id": ROLLOUT_ID, "cwd": cwd}, 0),
        _codex("response_item", _item("user", "hi"), 1),
    ]
    src = _jsonl(tmp_path / "r.jsonl", records)
    with pytest.raises(ImportFormatError, match=r"r\.jsonl: .*pass --cwd or -o"):
        import_codex(src)
    [result] = import_codex(src, cwd="/home/dev/fine")
    assert result.created and Session.open(result.path).cwd == "/home/dev/fine"


def test_a_folder_import_goes_on_past_an_odd_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    main, _, _ = _main_and_agents(project)
    # Older Claude Code left files holding nothing but summaries of other sessions.
    odd = _jsonl(
        project / "0000-summaries-only.jsonl",
        [{"type": "summary", "summary": "x", "leafUuid": "elsewhere"}],
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pinb.cli",
            "import",
            "claude",
            str(project),
            "-o",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"not imported: {odd}: no Claude Code messages" in result.stderr
    assert f"imported {main} -> " in result.stdout
    assert "2 sub-agent transcript(s) left out; --include-sidechains" in result.stdout
    rollouts = tmp_path / "codex"
    bad = _jsonl(
        rollouts / "rollout-2025-09-01T08-00-00-bad.jsonl",
        [{"type": "turn_context", "payload": []}],
    )
    good = _jsonl(rollouts / f"rollout-2025-09-01T08-00-00-{ROLLOUT_ID}.jsonl",
                  [_codex("session_meta", {"id": ROLLOUT_ID, "cwd": CWD}, 0),
                   _codex("response_item", _item("user", "hi"), 1)])  # fmt: skip
    results = import_codex(rollouts, out_dir=tmp_path / "o2")
    errors = {r.source.name: r.error for r in results}
    assert errors[good.name] is None and "no Codex rollout items" in str(errors[bad.name])


def test_odd_values_are_counted_not_crashed_on(tmp_path: Path) -> None:
    deep = '{"type":"user","uuid":"u0","message":' + "[" * 100_000 + "]" * 100_000 + "}"
    claude = [
        {"type": "user", "uuid": {"x": 1}, "parentUuid": ["a"], "message": "str"},
        {"type": "user", "uuid": "u1", "parentUuid": "u0", "cwd": CWD, "sessionId": SID,
         "message": {"role": "user", "content": 5}, "timestamp": 123},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "bad",
         "message": {"id": ["x"], "content": [{"type": "tool_use", "id": {"x": 1}, "name": None, "input": "s"}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": None, "content": {"x": 1}}, {"type": "image", "source": "x"}]}},
        {"type": "ai-title", "aiTitle": {"x": 1}},
    ]  # fmt: skip
    src = tmp_path / f"{SID}.jsonl"
    src.write_text(deep + "\n" + "".join(json.dumps(r) + "\n" for r in claude) + "[1]\n")
    [result] = import_claude(src, out_dir=tmp_path / "a")
    assert (
        result.skipped["unreadable line"] == 1 and result.skipped["user line without a uuid"] == 1
    )
    assert len(Session.open(result.path).build_context().messages) == 4
    codex = [
        {"type": "session_meta", "payload": {"id": {"x": 1}, "cwd": ["x"], "timestamp": 5}},
        {"type": "response_item", "payload": {"type": "reasoning", "summary": "x", "content": 5}},
        {"type": "response_item", "payload": {"type": "function_call", "name": None, "arguments": "{bad", "call_id": ["x"]}},
        {"type": "compacted", "payload": {"message": None, "replacement_history": [5, None, {"item": 5}]}},
        {"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": 1e9}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "plain"}},
    ]  # fmt: skip
    [result] = import_codex(_jsonl(tmp_path / "r.jsonl", codex), cwd="/p", out_dir=tmp_path / "c")
    session = Session.open(result.path)
    assert session.cwd == "/p" and _texts(session.build_context().messages)[-1] == "plain"


def test_two_transcripts_never_share_a_session(tmp_path: Path) -> None:
    # Lines copied from another session keep its sessionId: the file's own name decides.
    other = "11111111-2222-4333-8444-555555555555"
    one, two = Claude(), Claude()
    one.user("first file")
    two.user("second file")
    a = import_claude(_jsonl(tmp_path / f"{SID}.jsonl", one.lines), out_dir=tmp_path / "o")[0]
    b = import_claude(_jsonl(tmp_path / f"{other}.jsonl", two.lines), out_dir=tmp_path / "o")[0]
    assert a.created and b.created and a.session_id != b.session_id


def _source_chain_texts(lines: list[dict[str, Any]]) -> list[str]:
    """User and assistant texts on the chain ending at the file's last conversation line."""
    by_uuid = {r["uuid"]: r for r in lines if "uuid" in r}
    current = next((r for r in reversed(lines) if "uuid" in r), None)
    texts: list[str] = []
    while current is not None:
        if current["type"] in ("user", "assistant"):
            content = current["message"]["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            texts += [b["text"] for b in blocks if b.get("type") == "text"]
            texts += [b["content"] for b in blocks if b.get("type") == "tool_result"]
        current = by_uuid.get(current.get("parentUuid"))
    return texts[::-1]


@pytest.mark.parametrize("seed", range(25))
def test_claude_any_shape_keeps_the_source_chain_in_context(tmp_path: Path, seed: int) -> None:
    import random

    rng = random.Random(seed)
    cc = Claude()
    answers: list[str] = []
    for turn in range(rng.randint(3, 12)):
        if answers and rng.random() < 0.2:
            cc.last = rng.choice(answers)  # a rewind: a new branch from an earlier answer
        for _ in range(rng.randint(0, 2)):
            rng.choice([cc.attachment, cc.progress])()
        cc.user(f"question {seed}.{turn}")
        if rng.random() < 0.5:  # a tool call, written over two lines of one response
            msg_id = f"msg_{seed}_{turn}"
            cc.assistant([{"type": "text", "text": f"calling {turn}"}], msg_id)
            cc.assistant(
                [{"type": "tool_use", "id": f"t{turn}", "name": "Read", "input": {}}], msg_id
            )
            cc.progress(f"t{turn}")
            cc.user(
                [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": f"result {turn}"}]
            )
        answers.append(cc.say(f"answer {seed}.{turn}"))
        if rng.random() < 0.3:
            cc.lines.append({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}})
    lines = list(cc.lines)
    for _ in range(rng.randint(0, 4)):  # some children listed before their parents
        i = rng.randrange(len(lines) - 1)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    expected = _source_chain_texts(cc.lines)
    [result] = import_claude(_jsonl(tmp_path / f"{SID}.jsonl", lines), out_dir=tmp_path / "o")
    got = " | ".join(_texts_and_results(Session.open(result.path).build_context().messages))
    missing = [text for text in expected if text not in got]
    assert missing == [], (seed, missing)
    assert "parent missing (made a root)" not in result.skipped


def _texts_and_results(messages: list[dict[str, Any]]) -> list[str]:
    return [t for t in _texts(messages) if t]
