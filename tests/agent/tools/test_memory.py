"""The three memory tools, executed through the agent's Tool protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinb.agent.tool import Tool, ToolContext, ToolResult
from pinb.agent.tools.memory import memory_tools
from pinb.core.session import Session
from pinb.memory import MemoryStore, project_id


@pytest.fixture
def tools(store: MemoryStore) -> dict[str, Tool]:
    return {tool.name: tool for tool in memory_tools(store)}


def _text(result: ToolResult) -> str:
    assert [block["type"] for block in result.content] == ["text"]
    return str(result.content[0]["text"])


def test_tools_follow_the_protocol_with_json_schemas(tools: dict[str, Tool]) -> None:
    assert list(tools) == ["memory_save", "memory_recall", "memory_forget"]
    for tool in tools.values():
        assert isinstance(tool, Tool)
        assert tool.description
        schema = tool.parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        json.dumps(schema)  # plain JSON
    assert tools["memory_save"].parameters["required"] == ["text"]
    assert tools["memory_forget"].parameters["required"] == ["id", "reason"]
    assert "observation" not in tools["memory_save"].parameters["properties"]["kind"]["enum"]


def test_save_recall_forget_through_execute(
    tools: dict[str, Tool], store: MemoryStore, project_dirs: tuple[Path, Path], write_session
) -> None:
    cwd = project_dirs[0]
    session = Session.open(write_session(str(cwd), "5e55-tools"))
    context = ToolContext(cwd=cwd, session=session)

    saved = tools["memory_save"].execute(
        {"text": "Releases are cut from main", "kind": "decision", "tags": ["release"]}, context
    )
    assert not saved.is_error
    assert _text(saved).startswith("Saved memory #")
    details = saved.details
    assert details["kind"] == "decision" and details["tags"] == ["release"]
    assert details["sourceSession"] == str(session.path)
    assert details["sourceEntryId"] == session.leaf_id
    record = store.get(details["id"])
    assert record.project == project_id(cwd) and record.source_entry == session.leaf_id
    again = tools["memory_save"].execute(
        {"text": "releases are cut from main", "kind": "decision"}, context
    )
    assert _text(again) == f"Already saved as memory #{record.id} (decision)."

    recalled = tools["memory_recall"].execute({"query": "how are releases cut?"}, context)
    assert not recalled.is_error
    text = _text(recalled)
    assert text.splitlines()[0] == "1 memory for 'how are releases cut?':"
    assert f"#{record.id} [decision] Releases are cut from main" in text
    assert recalled.details["results"][0]["id"] == record.id
    assert recalled.details["results"][0]["score"] > 0

    forgot = tools["memory_forget"].execute({"id": record.id, "reason": "now tags"}, context)
    assert not forgot.is_error and _text(forgot) == f"Forgot memory #{record.id}: now tags"
    assert forgot.details["reason"] == "now tags" and forgot.details["deletedAt"]

    empty = tools["memory_recall"].execute({"query": "releases"}, context)
    assert not empty.is_error and _text(empty) == "No memories match 'releases'."
    assert empty.details == {"query": "releases", "results": []}


def test_tools_answer_errors_as_pi_error_results(
    tools: dict[str, Tool], project_dirs: tuple[Path, Path]
) -> None:
    one, two = project_dirs
    saved = tools["memory_save"].execute({"text": "only in one"}, ToolContext(cwd=one))
    assert "sourceSession" not in saved.details  # no session in the context, no source
    other = ToolContext(cwd=two)
    cases = [
        ("memory_forget", {"id": saved.details["id"], "reason": "x"}, "no memory #"),
        ("memory_forget", {"id": 1}, "reason"),
        ("memory_save", {"text": ""}, "text"),
        ("memory_save", {"text": "x", "kind": "observation"}, "kind"),
        ("memory_recall", {"query": "x", "limit": 0}, "limit"),
        ("memory_recall", {"query": "x", "kinds": ["gossip"]}, "kind"),
    ]
    for name, arguments, needle in cases:
        result = tools[name].execute(arguments, other)
        assert result.is_error, (name, arguments)
        assert result.details == {}
        assert needle in _text(result) and _text(result).startswith(name)


def test_recall_respects_kind_tag_and_limit(tools: dict[str, Tool], tmp_path: Path) -> None:
    context = ToolContext(cwd=tmp_path)
    for i in range(4):
        tools["memory_save"].execute(
            {"text": f"lint rule {i}", "kind": "fact" if i % 2 else "note", "tags": [f"t{i}"]},
            context,
        )
    facts = tools["memory_recall"].execute({"query": "lint", "kinds": ["fact"]}, context)
    assert [r["kind"] for r in facts.details["results"]] == ["fact", "fact"]
    tagged = tools["memory_recall"].execute({"query": "lint", "tags": ["t2"]}, context)
    assert [r["text"] for r in tagged.details["results"]] == ["lint rule 2"]
    limited = tools["memory_recall"].execute({"query": "lint", "limit": 3}, context)
    assert len(limited.details["results"]) == 3


def test_a_broken_database_is_an_error_result_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.sqlite"
    path.write_bytes(b"garbage" * 1000)
    save = memory_tools(MemoryStore(path))[0]
    result = save.execute({"text": "x"}, ToolContext(cwd=tmp_path))
    assert result.is_error and "damaged" in _text(result)
