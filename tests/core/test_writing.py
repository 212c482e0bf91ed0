"""Writing is append-only, deferred like Pi's, byte-compatible, and survives other writers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinb.core import UNSET, Session, build_session_context
from pinb.errors import EntryNotFoundError, InvalidEntryError, InvalidHeaderError, UsageError
from tests.core.helpers import assistant, tool_result, user
from tests.sessions import write_case


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(("pi", "written_with"), [("1.6", 3), ("0.58", 4)])
def test_new_session_is_written_when_the_conversation_starts(
    tmp_path: Path, pi: str, written_with: int
) -> None:
    """Pi 1.x writes at the first user message, v0.58.3 at the first assistant message."""
    session = Session.create(tmp_path / "proj", tmp_path / "sessions", pi=pi)
    session.append_model_change("anthropic", "claude-sonnet-4-5")
    session.append_thinking_level_change("off")
    assert session.path is not None and not session.path.exists()
    session.append_message(user("hi"))
    assert session.path.exists() is (written_with == 3)
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
    session.set_name("my\r\n\nsession ")
    session.append_compaction("S", reply.id, 1234, details={"readFiles": [], "modifiedFiles": []})
    session.branch_with_summary(reply.id, "B")
    session.append_usage("cache_warm", "anthropic", "claude-sonnet-4-5", {"input": 1}, "idle")
    session.append_context_edit(reply.id, "shorter")
    session.append_context_edit(reply.id, None)
    session.append_message(
        {"role": "system", "content": "Be terse.", "sections": {"cwd": "/p"}, "timestamp": 5}
    )
    session.append_compaction("S2", None, 99, usage={"input": 2})
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
        ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage", "note"],
        ["type", "id", "parentId", "timestamp", "targetId", "replacement"],
        ["type", "id", "parentId", "timestamp", "targetId", "replacement"],
        ["type", "id", "parentId", "timestamp", "message"],
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "usage",
            "systemMessage",
        ],
    ]
    lines = _lines(session.path)
    assert lines[7]["label"] == "  good " and "label" not in lines[8]  # stored as given
    assert lines[9]["name"] == "my session"
    compaction = lines[10]
    summary = lines[11]
    assert summary["parentId"] == reply.id and summary["fromId"] == compaction["id"]  # left leaf
    assert lines[13]["replacement"] == {"content": [{"type": "text", "text": "shorter"}]}
    assert lines[14]["replacement"] is None
    retain_none = lines[16]
    assert retain_none["firstKeptEntryId"] == retain_none["id"]
    assert retain_none["systemMessage"] == {
        "role": "system",
        "content": "Be terse.",
        "sections": {"cwd": "/p"},
        "timestamp": retain_none["systemMessage"]["timestamp"],
    }
    assert session.label(reply.id) is None and session.name == "my session"


def test_branch_summary_from_id_per_release(tmp_path: Path) -> None:
    """Pi 1.x records the leaf that was left; v0.58.3 recorded the branch point."""
    for pi, expected in (("1.6", "left"), ("0.58", "root")):
        session = Session.in_memory(tmp_path, pi=pi)
        left = session.append_message(user("a"))
        entry = session.branch_with_summary(None, "S")
        assert entry.parent_id is None
        assert entry.raw["fromId"] == (left.id if expected == "left" else "root")
        with pytest.raises(EntryNotFoundError):
            session.branch_with_summary("nope", "S")
    empty = Session.in_memory(tmp_path)
    assert empty.branch_with_summary(None, "S").raw["fromId"] == "root"


def test_context_edit_writer_checks(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    question = session.append_message(user("q"))
    session.append_model_change("openai", "gpt-5")
    session.append_message(assistant("a"))
    with pytest.raises(InvalidEntryError, match="must be null or contain string/array"):
        session.append_context_edit(question.id, {"nope": 1})
    with pytest.raises(EntryNotFoundError):
        session.append_context_edit("missing", None)
    with pytest.raises(InvalidEntryError, match="does not contribute editable model content"):
        session.append_context_edit(session.path_to()[1].id, None)
    session.branch(question.id)
    side = session.append_message(user("side"))
    session.branch(question.id)
    with pytest.raises(InvalidEntryError, match="is not on the active branch"):
        session.append_context_edit(side.id, None)
    edit = session.append_context_edit(question.id, [{"type": "text", "text": "Q"}])
    assert edit.raw["replacement"] == {"content": [{"type": "text", "text": "Q"}]}
    assert session.build_context().messages == [
        {**user("q"), "content": [{"type": "text", "text": "Q"}]}
    ]
    old = Session.in_memory(tmp_path, pi="0.58")
    first = old.append_message(user("q"))
    with pytest.raises(UsageError, match=r"need Pi 1\.x"):
        old.append_context_edit(first.id, None)


def test_invalid_messages_are_refused(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    with pytest.raises(InvalidEntryError):
        session.append_message({"role": "assistant", "content": "not a list"})


def test_appends_never_change_earlier_bytes(tmp_path: Path) -> None:
    path = write_case("two-leaves", tmp_path)
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
    path.write_text("")
    session = Session.open(path)
    session.append_message(user("a"))
    assert [line["type"] for line in _lines(path)] == ["session", "message"]
    # v0.58.3 also took a whitespace-only file for blank; Pi 1.x refuses it, untouched.
    spaces = tmp_path / "spaces.jsonl"
    spaces.write_text("\n")
    old = Session.open(spaces, pi="0.58")
    old.append_message(user("a"))
    old.append_message(assistant("b"))
    assert [line["type"] for line in _lines(spaces)] == ["session", "message", "message"]
    spaces.write_text("\n")
    with pytest.raises(InvalidHeaderError, match="only whitespace"):
        Session.open(spaces)
    assert spaces.read_text() == "\n"


def test_first_append_migrates_an_old_file_atomically_with_a_backup(tmp_path: Path) -> None:
    path = write_case("v1-legacy", tmp_path)
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
    path = write_case("linear", tmp_path)
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


def test_navigation_is_persisted_for_pi(tmp_path: Path) -> None:
    path = write_case("two-leaves", tmp_path)
    session = Session.open(path)
    session.branch("e0000004")
    assert session.leaf_id == "e0000004"
    marker = _lines(path)[-1]
    assert marker["type"] == "custom" and marker["parentId"] == "e0000004"
    reopened = Session.open(path)
    assert reopened.leaf_id == "e0000004"
    expected = [e.message for e in reopened.path_to("e0000004")]
    # Pi takes the last line (the marker) as its leaf and walks up through it.
    for pi in ("1.6", "0.58"):
        assert build_session_context(reopened.index, UNSET, pi=pi).messages == expected
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
    path = write_case("linear", tmp_path)
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


def test_read_only_files_are_never_appended_to(tmp_path: Path) -> None:
    path = write_case("linear", tmp_path)
    path.chmod(0o444)
    original = path.read_bytes()
    session = Session.open(path)
    with pytest.raises(Exception, match="read-only"):
        session.append_message(user("x"))
    assert path.read_bytes() == original


def test_archiving_a_branch_is_recorded_reversibly_and_inert_for_pi(tmp_path: Path) -> None:
    session = Session.create(tmp_path, tmp_path / "s")
    root = session.append_message(user("question"))
    dead = session.append_message(assistant("a wrong turn"))
    session.branch(root.id)
    alive = session.append_message(assistant("the right answer"))
    before = session.build_context().messages
    assert session.path is not None
    bytes_before = session.path.read_bytes()
    marker = session.archive(dead.id, note="wrong turn")
    assert session.path.read_bytes().startswith(bytes_before)  # nothing else touched
    assert session.archived == {dead.id: marker}
    assert session.build_context().messages == before  # invisible to the model
    assert marker.parent_id == alive.id and session.leaf_id == marker.id
    assert marker.raw["data"] == {"targetId": dead.id, "archived": True, "note": "wrong turn"}
    reopened = Session.open(session.path)
    assert set(reopened.archived) == {dead.id}
    reopened.unarchive(dead.id)
    assert reopened.archived == {}
    assert Session.open(session.path).archived == {}
    with pytest.raises(InvalidEntryError):
        reopened.unarchive(dead.id)
