"""Compaction planning: the spec's machine-checked tables, for Pi v0.58.3 and Pi 1.6."""

from __future__ import annotations

from typing import Any

import pytest

from pinb.core import (
    CompactionSettings,
    Session,
    find_cut_point,
    prepare_compaction,
    serialize_conversation,
)
from pinb.core.compaction.fileops import FileOperations, format_file_operations
from pinb.core.format.entries import Entry

USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120}


def _e(i: str, parent: str | None, **fields: Any) -> Entry:
    return Entry(
        {
            "type": "message",
            "id": i,
            "parentId": parent,
            "timestamp": "2025-01-01T00:00:00.000Z",
            **fields,
        }
    )


def _user(i: str, parent: str | None, tokens: int) -> Entry:
    return _e(i, parent, message={"role": "user", "content": "x" * 4 * tokens, "timestamp": 1})


def _asst(
    i: str, parent: str, *, text_tokens: int = 0, call: tuple[str, str] | None = None
) -> Entry:
    content: list[dict[str, Any]] = []
    if text_tokens:
        content.append({"type": "text", "text": "x" * 4 * text_tokens})
    if call:
        content.append(
            {"type": "toolCall", "id": "c" + i, "name": call[0], "arguments": {"path": call[1]}}
        )
    return _e(
        i,
        parent,
        message={
            "role": "assistant",
            "content": content,
            "usage": USAGE,
            "stopReason": "toolUse" if call else "stop",
            "timestamp": 1,
        },
    )


def _result(i: str, parent: str, tokens: int) -> Entry:
    return _e(
        i,
        parent,
        message={
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "read",
            "content": [{"type": "text", "text": "x" * 4 * tokens}],
            "isError": False,
            "timestamp": 1,
        },
    )


def _path_p() -> list[Entry]:
    return [
        Entry(
            {
                "type": "model_change",
                "id": "m0",
                "parentId": None,
                "timestamp": "2025-01-01T00:00:00.000Z",
                "provider": "a",
                "modelId": "b",
            }
        ),
        _user("u1", "m0", 100),
        _asst("a1", "u1", call=("read", "one.py")),
        _result("r1", "a1", 300),
        _asst("a2", "r1", text_tokens=50),
        Entry(
            {
                "type": "thinking_level_change",
                "id": "t1",
                "parentId": "a2",
                "timestamp": "2025-01-01T00:00:00.000Z",
                "thinkingLevel": "high",
            }
        ),
        _user("u2", "t1", 100),
        _asst("a3", "u2", call=("edit", "two.py")),
        _result("r2", "a3", 300),
        _asst("a4", "r2", text_tokens=50),
    ]


@pytest.mark.parametrize(
    ("keep", "first_kept", "turn_start", "split", "summarize", "prefix", "read", "edited"),
    [
        (
            100,
            "a4",
            "u2",
            True,
            ["u1", "a1", "r1", "a2"],
            ["u2", "a3", "r2"],
            ["one.py"],
            ["two.py"],
        ),
        (400, "t1", "u1", True, [], ["u1", "a1", "r1", "a2"], ["one.py"], []),
        (460, "a2", "u1", True, [], ["u1", "a1", "r1"], ["one.py"], []),
        (600, "a2", "u1", True, [], ["u1", "a1", "r1"], ["one.py"], []),
        (10000, "m0", None, False, [], [], [], []),
    ],
)
@pytest.mark.parametrize("pi", ["0.58", "1.6"])
def test_spec_table_13_3(
    pi: str,
    keep: int,
    first_kept: str,
    turn_start: str | None,
    split: bool,
    summarize: list[str],
    prefix: list[str],
    read: list[str],
    edited: list[str],
) -> None:
    path = _path_p()
    cut = find_cut_point(path, 0, len(path), keep, pi=pi)
    assert path[cut.first_kept_index].id == first_kept
    assert (path[cut.turn_start_index].id if cut.turn_start_index >= 0 else None) == turn_start
    assert cut.is_split_turn is split
    prepared = prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep), pi=pi)
    if pi == "1.6" and not summarize and not prefix:
        assert prepared is None  # Pi 1.x: nothing to summarise, nothing to compact
        return
    assert prepared is not None
    assert [p.entry.id for p in prepared.messages_to_summarize] == summarize
    assert [p.entry.id for p in prepared.turn_prefix_messages] == prefix
    assert list(prepared.file_ops.read) == read and list(prepared.file_ops.edited) == edited
    assert prepared.tokens_before == 120


def _path_q() -> list[Entry]:
    path = _path_p()
    compaction = Entry(
        {
            "type": "compaction",
            "id": "k1",
            "parentId": "a4",
            "timestamp": "2025-01-01T00:00:00.000Z",
            "summary": "S1",
            "firstKeptEntryId": "u2",
            "tokensBefore": 500,
            "details": {"readFiles": ["one.py"], "modifiedFiles": []},
        }
    )
    return [*path, compaction, _user("u3", "k1", 10), _asst("a5", "u3", text_tokens=10)]


def test_second_compaction_v058_forgets_what_the_first_kept() -> None:
    """§12.8: v0.58.3 starts after k1, so u2..a4 (kept by k1) are neither kept nor summarized."""
    prepared = prepare_compaction(_path_q(), CompactionSettings(keep_recent_tokens=5), pi="0.58")
    assert prepared is not None
    assert prepared.first_kept_entry_id == "a5" and prepared.is_split_turn
    assert prepared.messages_to_summarize == []
    assert [p.entry.id for p in prepared.turn_prefix_messages] == ["u3"]
    assert prepared.previous_summary == "S1"
    assert list(prepared.file_ops.read) == ["one.py"]
    nothing = prepare_compaction(
        _path_q(), CompactionSettings(keep_recent_tokens=10_000), pi="0.58"
    )
    assert nothing is not None and nothing.first_kept_entry_id == "u3" and nothing.is_empty


def test_pi_1x_summarizes_what_the_previous_compaction_kept() -> None:
    """Pi 1.x starts at k1's kept range: u2..a4 are summarized again with S1 given."""
    prepared = prepare_compaction(_path_q(), CompactionSettings(keep_recent_tokens=5))
    assert prepared is not None
    assert prepared.first_kept_entry_id == "a5" and prepared.is_split_turn
    assert [p.entry.id for p in prepared.messages_to_summarize] == ["u2", "a3", "r2", "a4"]
    assert [p.index for p in prepared.messages_to_summarize] == [6, 7, 8, 9]  # path positions
    assert [p.entry.id for p in prepared.turn_prefix_messages] == ["u3"]
    assert prepared.previous_summary == "S1" and prepared.previous_compaction_index == 10
    assert list(prepared.file_ops.read) == ["one.py"]
    assert sorted(prepared.file_ops.edited) == ["two.py"]
    assert prepared.tokens_before == 120
    assert prepare_compaction(_path_q(), CompactionSettings(keep_recent_tokens=10_000)) is None


def test_nothing_to_summarize_is_nothing_to_compact_in_pi_1x() -> None:
    path = [_user("u1", None, 10)]
    assert prepare_compaction(path) is None
    legacy = prepare_compaction(path, pi="0.58")
    assert legacy is not None and legacy.first_kept_entry_id == "u1" and legacy.is_empty
    assert prepare_compaction([*_path_q()[:-2]]) is None  # leaf is a compaction


def test_file_lists_and_format() -> None:
    ops = FileOperations()
    for name, path in [
        ("read", "b.py"),
        ("read", "a.py"),
        ("read", "c.py"),
        ("write", "c.py"),
        ("edit", "d.py"),
    ]:
        ops.add_message(
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "x", "name": name, "arguments": {"path": path}}
                ],
            }
        )
    assert ops.details() == {"readFiles": ["a.py", "b.py"], "modifiedFiles": ["c.py", "d.py"]}
    assert format_file_operations(*ops.file_lists()) == (
        "\n\n<read-files>\na.py\nb.py\n</read-files>\n\n<modified-files>\nc.py\nd.py\n</modified-files>"
    )
    assert format_file_operations([], []) == ""


@pytest.mark.parametrize("pi", ["0.58", "1.6"])
def test_serialize_conversation_vector(pi: str) -> None:
    messages = [
        {"role": "user", "content": "Fix bug"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "think"},
                {"type": "text", "text": "hi"},
                {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "a.py"}},
            ],
        },
        {"role": "toolResult", "content": [{"type": "text", "text": "y" * 2005}]},
        {"role": "user", "content": [{"type": "text", "text": "Ran `ls`\n```\nabc\n```"}]},
    ]
    thinking = "[Assistant thinking]: think\n\n" if pi == "0.58" else ""  # Pi 1.x omits it
    assert serialize_conversation(messages, pi=pi) == (
        "[User]: Fix bug\n\n" + thinking + "[Assistant]: hi\n\n"
        '[Assistant tool calls]: read(path="a.py")\n\n[Tool result]: '
        + "y" * 2000
        + "\n\n[... 5 more characters truncated]\n\n[User]: Ran `ls`\n```\nabc\n```"
    )


def test_pi_1x_never_cuts_a_surrogate_pair_in_a_tool_result() -> None:
    message = {"role": "toolResult", "content": [{"type": "text", "text": "y" * 1999 + "🎉zzzzz"}]}
    newer = serialize_conversation([message])
    assert newer == "[Tool result]: " + "y" * 1999 + "\n\n[... 6 more characters truncated]"
    older = serialize_conversation([message], pi="0.58")
    assert older == "[Tool result]: " + "y" * 1999 + "\ud83c\n\n[... 6 more characters truncated]"


def test_pi_1x_recovery_cut_summarizes_the_prompt_of_a_hidden_failed_reply() -> None:
    """§7.2 rule 5: after an omitted failed reply, the prompt before it is not kept."""
    session = Session.in_memory("/p")
    for i in range(3):
        session.append_message({"role": "user", "content": "q" * 400, "timestamp": i})
        session.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a" * 400}],
                "api": "x",
                "provider": "p",
                "model": "m",
                "usage": USAGE,
                "stopReason": "stop",
                "timestamp": i,
            }
        )
    prompt = session.append_message({"role": "user", "content": "big " * 100, "timestamp": 9})
    failed = session.append_message(
        {
            "role": "assistant",
            "content": [],
            "api": "x",
            "provider": "p",
            "model": "m",
            "usage": USAGE,
            "stopReason": "error",
            "errorMessage": "context too long",
            "timestamp": 9,
        }
    )
    session.append_context_edit(failed.id, None)
    prepared = prepare_compaction(session.path_to(), CompactionSettings(keep_recent_tokens=50))
    assert prepared is not None
    assert prepared.first_kept_entry_id == failed.id
    assert prepared.is_split_turn
    assert [p.entry.id for p in prepared.turn_prefix_messages] == [prompt.id]


def test_previous_first_kept_off_the_path_falls_back_to_after_the_compaction() -> None:
    path = _path_q()
    path[10] = Entry({**path[10].raw, "firstKeptEntryId": "elsewhere"})
    prepared = prepare_compaction(path, CompactionSettings(keep_recent_tokens=5))
    assert prepared is not None
    assert prepared.messages_to_summarize == []  # nothing of k1's range is on the path
    assert [p.entry.id for p in prepared.turn_prefix_messages] == ["u3"]
