"""Compaction planning: the machine-checked table of spec §13.3, and pinb's data-keeping default."""

from __future__ import annotations

from typing import Any

import pytest

from pinb.core import CompactionSettings, find_cut_point, prepare_compaction, serialize_conversation
from pinb.core.entries import Entry
from pinb.core.fileops import FileOperations, format_file_operations

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
def test_spec_table_13_3(
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
    cut = find_cut_point(path, 0, len(path), keep)
    assert path[cut.first_kept_index].id == first_kept
    assert (path[cut.turn_start_index].id if cut.turn_start_index >= 0 else None) == turn_start
    assert cut.is_split_turn is split
    prepared = prepare_compaction(
        path, CompactionSettings(keep_recent_tokens=keep, legacy_range=True)
    )
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


def test_second_compaction_legacy_range() -> None:
    prepared = prepare_compaction(
        _path_q(), CompactionSettings(keep_recent_tokens=5, legacy_range=True)
    )
    assert prepared is not None
    assert prepared.first_kept_entry_id == "a5" and prepared.is_split_turn
    assert prepared.messages_to_summarize == []
    assert [p.entry.id for p in prepared.turn_prefix_messages] == ["u3"]
    assert prepared.previous_summary == "S1"
    assert list(prepared.file_ops.read) == ["one.py"]
    nothing = prepare_compaction(
        _path_q(), CompactionSettings(keep_recent_tokens=10_000, legacy_range=True)
    )
    assert nothing is not None and nothing.first_kept_entry_id == "u3" and nothing.is_empty


def test_default_range_summarizes_what_the_previous_compaction_kept() -> None:
    """§12.8: v0.58.3 would drop u2..a4 (kept by k1); pinb summarizes them instead."""
    prepared = prepare_compaction(_path_q(), CompactionSettings(keep_recent_tokens=5))
    assert prepared is not None
    assert prepared.boundary_start == 6  # u2, the previous first kept entry
    assert [p.entry.id for p in prepared.messages_to_summarize] == ["u2", "a3", "r2", "a4"]
    assert prepared.previous_summary == "S1"
    assert sorted(prepared.file_ops.edited) == ["two.py"]


def test_nothing_to_summarize_is_nothing_to_compact_by_default() -> None:
    path = [_user("u1", None, 10)]
    assert prepare_compaction(path) is None
    legacy = prepare_compaction(path, CompactionSettings(legacy_range=True))
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


def test_serialize_conversation_vector() -> None:
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
    assert serialize_conversation(messages) == (
        "[User]: Fix bug\n\n[Assistant thinking]: think\n\n[Assistant]: hi\n\n"
        '[Assistant tool calls]: read(path="a.py")\n\n[Tool result]: '
        + "y" * 2000
        + "\n\n[... 5 more characters truncated]\n\n[User]: Ran `ls`\n```\nabc\n```"
    )


def test_previous_first_kept_off_the_path_falls_back_to_after_the_compaction() -> None:
    path = _path_q()
    path[10] = Entry({**path[10].raw, "firstKeptEntryId": "elsewhere"})
    prepared = prepare_compaction(path, CompactionSettings(keep_recent_tokens=5))
    assert prepared is not None and prepared.boundary_start == 11
