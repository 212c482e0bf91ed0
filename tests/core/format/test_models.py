"""Typed models: every entry type and role validates, writes Pi's JSON, keeps unknown fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinb.core import Session
from pinb.core.format.models import (
    AssistantMessage,
    CompactionEntry,
    ContextEditEntry,
    LabelEntry,
    MessageEntry,
    OtherMessage,
    SessionHeader,
    SystemMessage,
    ToolCall,
    UnknownEntry,
    Usage,
    UsageEntry,
    UserMessage,
    parse_entry,
    parse_message,
)
from pinb.testing.fuzz import random_session_bytes
from tests.sessions import write_case

WELL_FORMED = [
    "linear",
    "tools-and-files",
    "compactions",
    "branch-summaries",
    "custom-entries",
    "bash",
    "context-edits",
    "usage-entries",
    "system-messages",
    "unknown-types",
]


def test_every_entry_of_well_formed_files_validates(tmp_path: Path) -> None:
    files = [write_case(name, tmp_path) for name in WELL_FORMED]
    for seed in range(10):
        path = tmp_path / f"fuzz-{seed}.jsonl"
        path.write_bytes(random_session_bytes(seed, 60))
        files.append(path)
    kinds = set()
    for path in files:
        for entry in Session.open(path).entries:
            model = entry.model
            kinds.add(type(model).__name__)
            if isinstance(model, MessageEntry):
                assert model.message.role == entry.role  # type: ignore[union-attr]
    assert {
        "MessageEntry",
        "CompactionEntry",
        "ModelChangeEntry",
        "ThinkingLevelChangeEntry",
        "UsageEntry",
        "ContextEditEntry",
        "UnknownEntry",
    } <= kinds


def test_snake_case_api_camel_case_wire() -> None:
    message = parse_message(
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "a"}}
            ],
            "api": "x",
            "provider": "p",
            "model": "m",
            "stopReason": "toolUse",
            "timestamp": 1,
            "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 0},
            "responseId": "r-1",
        }
    )
    assert isinstance(message, AssistantMessage)
    assert message.stop_reason == "toolUse" and message.usage.cache_read == 3
    assert message.usage.context_tokens() == 10
    assert isinstance(message.content[0], ToolCall) and message.tool_calls()[0].arguments == {
        "path": "a"
    }
    wire = message.to_wire()
    assert wire["stopReason"] == "toolUse" and wire["responseId"] == "r-1"  # unknown field kept
    assert "errorMessage" not in wire  # omitted, never null


def test_pi_key_orders_and_null_rules() -> None:
    compaction = CompactionEntry(
        id="c1",
        parent_id=None,
        timestamp="t",
        summary="s",
        first_kept_entry_id="e",
        tokens_before=5,
    )
    assert list(compaction.to_wire()) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
    ]
    assert compaction.to_wire()["parentId"] is None
    cleared = LabelEntry(id="l", parent_id="c1", timestamp="t", target_id="e")
    assert "label" not in cleared.to_wire()
    omit = ContextEditEntry(id="x", parent_id="p", timestamp="t", target_id="u")
    assert omit.to_wire() == {  # an omission is written as an explicit null, as Pi does
        "type": "context_edit",
        "id": "x",
        "parentId": "p",
        "timestamp": "t",
        "targetId": "u",
        "replacement": None,
    }
    usage = UsageEntry(
        id="u",
        parent_id="x",
        timestamp="t",
        kind="cache_warm",
        provider="a",
        model="m",
        usage=Usage(),
    )
    assert list(usage.to_wire()) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "kind",
        "provider",
        "model",
        "usage",
    ]
    header = SessionHeader(id="s", version=3, timestamp="t", cwd="/")
    assert list(header.to_wire()) == ["type", "version", "id", "timestamp", "cwd"]
    assert list(UserMessage(content="x", timestamp=1).to_wire()) == ["role", "content", "timestamp"]
    assert Usage().to_wire()["cost"] == {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "total": 0,
    }


def test_unknown_types_and_roles_pass_through() -> None:
    unknown = parse_entry(
        {"type": "future_thing", "id": "f", "parentId": None, "timestamp": "t", "payload": [1]}
    )
    assert isinstance(unknown, UnknownEntry) and unknown.to_wire()["payload"] == [1]
    other = parse_message({"role": "developer", "deltas": []})
    assert isinstance(other, OtherMessage) and other.to_wire() == {
        "role": "developer",
        "deltas": [],
    }
    system = parse_message(
        {
            "role": "system",
            "content": "",
            "sections": {"cwd": None},
            "toolsAdded": [],
            "timestamp": 1,
        }
    )
    assert isinstance(system, SystemMessage) and system.sections == {"cwd": None}


def test_typed_messages_can_be_appended(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    entry = session.append_message(UserMessage(content="typed", timestamp=5))
    assert entry.raw["message"] == {"role": "user", "content": "typed", "timestamp": 5}
    with pytest.raises(ValueError):
        parse_message({"role": "user"})
