"""Writing is append-only, deferred like Pi's, byte-compatible, and survives other writers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pinb.core import UNSET, Session, build_session_context
from pinb.errors import EntryNotFoundError, InvalidEntryError
from tests.conftest import SHARED
from tests.core.helpers import assistant, tool_result, user


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_new_session_is_written_at_the_first_assistant_message(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "proj", tmp_path / "sessions")
    session.append_model_change("anthropic", "claude-sonnet-4-5")
    session.append_thinking_level_change("off")
    session.append_message(user("hi"))
    assert session.path is not None and not session.path.exists()
    session.append_message(assistant("hello"))
    assert [line["type"] for line in _lines(session.path)] == [
        "session",
        "model_change",
        "thinking_level_change",
        "message",
        "message",
    ]
    session.append_message(user("more"))
    assert len(_lines(session.path)) == 6
    assert session.path.name.endswith(f"_{session.id}.jsonl")
    header = _lines(session.path)[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["cwd"] == str(tmp_path / "proj")


def test_default_folder_is_pis_folder_for_the_cwd(tmp_path: Path, isolated_agent_dir: Path) -> None:
    session = Session.create("/home/dev/proj")
    assert session.path is not None
    assert session.path.parent == isolated_agent_dir / "sessions" / "--home-dev-proj--"


def test_entries_are_written_with_pis_key_order(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path)
    session.append_message(user("a"))
    reply = session.append_message(assistant("b"))
    session.append_thinking_level_change("high")
    session.append_model_change("openai", "gpt-5")
    session.append_custom("ext", {"k": 1})
    session.append_custom_message("note", "text", display=False)
    session.set_label(reply.id, "  good ")
    session.set_label(reply.id, None)
    session.set_name("my\nsession ")
    session.append_compaction("S", reply.id, 1234, details={"readFiles": [], "modifiedFiles": []})
    session.branch_with_summary(reply.id, "B")
    session.append_active_tools_change(["read"])
    assert session.path is not None
    orders = [list(line) for line in _lines(session.path)[3:]]
    assert orders == [
        ["type", "id", "parentId", "timestamp", "thinkingLevel"],
        ["type", "id", "parentId", "timestamp", "provider", "modelId"],
        ["type", "customType", "data", "id", "parentId", "timestamp"],
        ["type", "customType", "content", "display", "id", "parentId", "timestamp"],
        ["type", "id", "parentId", "timestamp", "targetId", "label"],
        ["type", "id", "parentId", "timestamp", "targetId"],
        ["type", "id", "parentId", "timestamp", "name"],
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
        ],
        ["type", "id", "parentId", "timestamp", "fromId", "summary"],
        ["type", "id", "parentId", "timestamp", "activeToolNames"],
    ]
    lines = _lines(session.path)
    assert lines[7]["label"] == "good" and "label" not in lines[8]
    assert lines[9]["name"] == "my session"
    assert lines[11]["parentId"] == reply.id and lines[11]["fromId"] == reply.id
    assert session.label(reply.id) is None and session.name == "my session"


def test_root_branch_summary_uses_root_from_id(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    session.append_message(user("a"))
    entry = session.branch_with_summary(None, "S")
    assert entry.parent_id is None and entry.raw["fromId"] == "root"
    with pytest.raises(EntryNotFoundError):
        session.branch_with_summary("nope", "S")


def test_invalid_messages_are_refused(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    with pytest.raises(InvalidEntryError):
        session.append_message({"role": "assistant", "content": "not a list"})


def test_appends_never_change_earlier_bytes(tmp_path: Path) -> None:
    path = tmp_path / "copy.jsonl"
    shutil.copyfile(SHARED / "spec" / "pi-vectors" / "v02_two_leaves.jsonl", path)
    original = path.read_bytes()
    session = Session.open(path)
    session.append_message(user("next"))
    session.append_message(assistant("done"))
    data = path.read_bytes()
    assert data.startswith(original)
    assert data.count(b"\n") == original.count(b"\n") + 2
    assert data.count(b'"type":"session"') == 1  # no duplicate header (Pi's §12.2 defect)


def test_opening_a_file_without_assistant_appends_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x","timestamp":1}}\n'
    )
    session = Session.open(path)
    session.append_message(user("y"))
    assert len(path.read_text().splitlines()) == 3


def test_blank_file_becomes_a_new_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n")
    session = Session.open(path)
    session.append_message(user("a"))
    assert path.read_text() == "\n"
    session.append_message(assistant("b"))
    assert [line["type"] for line in _lines(path)] == ["session", "message", "message"]


def test_first_append_migrates_an_old_file_atomically_with_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    shutil.copyfile(SHARED / "spec" / "pi-vectors" / "v12_v1_migration.jsonl", path)
    original = path.read_bytes()
    session = Session.open(path)
    before = session.build_context().messages
    assert path.read_bytes() == original  # reading did not migrate the file
    session.append_message(user("after migration"))
    backup = path.with_name(path.name + ".pre-v3.bak")
    assert backup.read_bytes() == original
    lines = _lines(path)
    assert lines[0]["version"] == 3
    assert all(isinstance(line.get("id"), str) for line in lines[1:])
    reopened = Session.open(path)
    assert reopened.build_context().messages == [*before, user("after migration")]
    assert reopened.loaded is not None and not reopened.loaded.migrated


def test_torn_last_line_does_not_corrupt_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SHARED / "spec" / "pi-vectors" / "v01_linear.jsonl", path)
    with open(path, "ab") as handle:
        handle.write(b'{"type":"message","id":"torn","parentId":"e00')
    session = Session.open(path)
    assert any(p.kind == "torn-line" for p in session.problems)
    count = len(session.entries)
    session.append_message(user("after the crash"))
    reopened = Session.open(path)
    assert len(reopened.entries) == count + 1
    assert reopened.entries[-1].message == user("after the crash")
    assert [p.kind for p in reopened.problems] == ["malformed-line"]


def test_navigation_is_persisted_for_newer_pi_and_v0583(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SHARED / "spec" / "pi-vectors" / "v02_two_leaves.jsonl", path)
    session = Session.open(path)
    session.branch("e0000004")
    assert session.leaf_id == "e0000004"
    reopened = Session.open(path)
    assert reopened.leaf_id == "e0000004"
    expected = [e.message for e in reopened.path_to("e0000004")]
    # A v0.58.3 reader takes the last line (the leaf entry) as its leaf and walks up.
    assert build_session_context(reopened.index, UNSET).messages == expected
    assert reopened.build_context().messages == expected
    reopened.reset_leaf()
    again = Session.open(path)
    assert again.leaf_id is None and again.build_context().messages == []
    assert build_session_context(again.index, UNSET).messages == []
    with pytest.raises(EntryNotFoundError):
        again.branch("nope")


def test_appending_after_navigation_creates_a_sibling(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    u = session.append_message(user("q"))
    a1 = session.append_message(assistant("one"))
    session.branch(u.id)
    a2 = session.append_message(assistant("two"))
    assert a2.parent_id == u.id
    assert {c.id for c in session.children(u.id) if c.type == "message"} == {a1.id, a2.id}


def test_refresh_reads_only_what_another_process_appended(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(SHARED / "spec" / "pi-vectors" / "v01_linear.jsonl", path)
    watcher = Session.open(path)
    writer = Session.open(path)
    call = assistant("", tool_calls=[("c1", "read", {"path": "a.py"})])
    writer.append_message(call)
    writer.append_message(tool_result("c1", "read", "contents"))
    new = watcher.refresh()
    assert [e.role for e in new] == ["assistant", "toolResult"]
    assert watcher.leaf_id == writer.leaf_id
    assert watcher.refresh() == []
    # The watcher's own appends see the writer's entries (ids checked, parent kept).
    own = watcher.append_message(user("from watcher"))
    assert own.parent_id == writer.leaf_id
    assert len(Session.open(path).entries) == len(writer.entries) + 1


def test_pi_written_lines_round_trip_byte_for_byte() -> None:
    """Every line Pi wrote in the real fixtures is re-serialized by pinb to the same bytes."""
    from pinb.core.store import serialize_line

    for name in ("large-session.jsonl", "before-compaction.jsonl"):
        path = SHARED / "fixtures" / "pi" / name
        lines = path.read_bytes().split(b"\n")
        session = Session.open(path)
        header = {k: v for k, v in session.header.items() if k != "version"}
        assert serialize_line(header) == lines[0] + b"\n"
        for entry in session.entries:
            if entry.type == "compaction":
                continue  # migration legitimately replaced firstKeptEntryIndex
            # Migration appended id/parentId (as Pi does); without them it is Pi's line.
            original = {k: v for k, v in entry.raw.items() if k not in ("id", "parentId")}
            assert serialize_line(original) == lines[entry.line - 1] + b"\n", entry.line


def test_read_only_files_are_never_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "ro.jsonl"
    shutil.copyfile(SHARED / "spec" / "pi-vectors" / "v01_linear.jsonl", path)
    path.chmod(0o444)
    original = path.read_bytes()
    session = Session.open(path)
    with pytest.raises(Exception, match="read-only"):
        session.append_message(user("x"))
    assert path.read_bytes() == original
