"""Typed models: every entry type and role validates, writes Pi's JSON, keeps unknown fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinb.core import Session
from pinb.core.models import (
    AssistantMessage,
    CompactionEntry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    OtherMessage,
    SessionHeader,
    ToolCall,
    UnknownEntry,
    Usage,
    UserMessage,
    parse_entry,
    parse_message,
)
from tests.conftest import SHARED


def test_every_entry_in_the_fixtures_and_vectors_validates() -> None:
    files = [
        *(SHARED / "fixtures" / "pi").glob("*.jsonl"),
        *(SHARED / "spec" / "conformance" / "cases").glob("*.jsonl"),
    ]
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
    leaf = LeafEntry(id="x", parent_id="p", timestamp="t", target_id=None)
    assert leaf.to_wire() == {
        "type": "leaf",
        "id": "x",
        "parentId": "p",
        "timestamp": "t",
        "targetId": None,
    }
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
    system = parse_message({"role": "system", "deltas": []})
    assert isinstance(system, OtherMessage) and system.to_wire() == {"role": "system", "deltas": []}


def test_typed_messages_can_be_appended(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    entry = session.append_message(UserMessage(content="typed", timestamp=5))
    assert entry.raw["message"] == {"role": "user", "content": "typed", "timestamp": 5}
    with pytest.raises(ValueError):
        parse_message({"role": "user"})
