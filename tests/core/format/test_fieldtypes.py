"""Odd field types: Pi's result, and a problem naming the file, the line and the field, once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.core.context.build import current_system_message
from pinb.core.context.tokens import estimate_context_tokens
from pinb.core.file.listing import read_session_info
from pinb.core.format.fieldtypes import odd_fields
from pinb.core.js.wire import dumps, loads
from pinb.testing.conformance import answer
from tests.core.test_odd_json_differential import differences
from tests.pi.reference import PiError, PiReference

HEADER = {"type": "session", "version": 3, "id": "t-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}  # fmt: skip
USER = {"role": "user", "content": "hi", "timestamp": 1}


def _line(entry_id: str, parent: str | None, second: int, **fields: Any) -> str:
    entry = {"id": entry_id, "parentId": parent,
             "timestamp": f"2025-01-01T00:00:{second:02d}.000Z", **fields}  # fmt: skip
    return json.dumps(entry)


def _file(tmp_path: Path, odd: dict[str, Any]) -> Path:
    """A session whose third line (the second entry) is ``odd``, a user message before it."""
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(HEADER), _line("u1", None, 1, type="message", message=USER),
             _line("x1", "u1", 2, **odd),
             _line("u2", "x1", 3, type="message", message={**USER, "timestamp": 3})]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def _assistant(**fields: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": [{"type": "text", "text": "ok"}],
               "provider": "p", "model": "m", "stopReason": "stop", "timestamp": 2,
               "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                         "totalTokens": 2}}  # fmt: skip
    return {"type": "message", "message": {**message, **fields}}


#: (what is odd, the entry, the field the problem names).
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("tool name", {"type": "message", "message": {"role": "system", "content": "S", "timestamp": 2,
                                                  "toolsAdded": [{"name": {}}]}},
     "message.toolsAdded[0].name"),
    ("tool list", {"type": "message", "message": {"role": "system", "content": "S", "timestamp": 2,
                                                  "toolsAdded": "read"}},
     "message.toolsAdded"),
    ("section", {"type": "message", "message": {"role": "system", "content": "S", "timestamp": 2,
                                                "sections": {"rules": 5}}},
     "message.sections['rules']"),
    ("usage total", _assistant(usage={"input": "7", "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                      "totalTokens": 0}),
     "message.usage.input"),
    ("usage null", _assistant(usage={"input": None, "output": 3, "cacheRead": 0, "cacheWrite": 0,
                                     "totalTokens": 0}),
     "message.usage.input"),
    ("usage boolean", _assistant(usage={"input": 5, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                        "totalTokens": True}),
     "message.usage.totalTokens"),
    ("usage", _assistant(usage=[1, 2]), "message.usage"),
    ("content object", {"type": "message", "message": {"role": "user", "content": {"a": 1},
                                                       "timestamp": 2}},
     "message.content"),
    ("content number", _assistant(content=5), "message.content"),
    ("block text", _assistant(content=[{"type": "text", "text": ["a"]}]), "message.content[0].text"),
    ("tool call name", _assistant(content=[{"type": "toolCall", "id": "c", "name": 3,
                                            "arguments": {}}]),
     "message.content[0].name"),
    ("custom content", {"type": "custom_message", "customType": "k", "content": 12,
                        "display": True},
     "content"),
    ("summary", {"type": "branch_summary", "fromId": "u1", "summary": {"s": 1}}, "summary"),
    ("session name", {"type": "session_info", "name": {"n": 1}}, "name"),
    ("label", {"type": "label", "targetId": "u1", "label": 7}, "label"),
    ("model id", {"type": "model_change", "provider": "p", "modelId": 5}, "modelId"),
]  # fmt: skip


def _odd_problems(session: Session) -> list[Any]:
    return [p for p in session.problems if p.kind == "odd-field"]


@pytest.mark.parametrize(("what", "odd", "field"), CASES, ids=[c[0] for c in CASES])
def test_an_odd_field_is_reported_once_where_it_is_used(
    what: str, odd: dict[str, Any], field: str, tmp_path: Path
) -> None:
    path = _file(tmp_path, odd)
    session = Session.open(path)
    for _ in range(3):  # every operation that reads the fields, repeated
        session.build_context()
        session.build_context("x1")
        context = session.current_context()
        assert estimate_context_tokens(context.messages).tokens >= 0
        session.tree()
        _ = session.name, session.labels
    found = _odd_problems(session)
    assert len(found) == 1, found
    problem = found[0]
    assert problem.path == path
    assert problem.line == 3  # the header is line 1, the odd entry line 3
    assert field in problem.message
    assert str(problem).startswith(f"{path}:3: {field} is ")


def test_a_sound_file_has_no_odd_field(tmp_path: Path) -> None:
    path = _file(tmp_path, _assistant())
    session = Session.open(path)
    session.build_context()
    assert _odd_problems(session) == []
    assert odd_fields(session.entries[1].raw) == []


def test_message_lines_are_not_checked_at_open(tmp_path: Path) -> None:
    # A lazy open leaves message lines undecoded; their fields are checked when used.
    path = _file(tmp_path, CASES[2][1])
    session = Session.open(path)
    assert _odd_problems(session) == []
    session.build_context()
    assert [p.line for p in _odd_problems(session)] == [3]


def test_an_odd_tool_name_keeps_pis_merged_tools(tmp_path: Path) -> None:
    session = Session.open(_file(tmp_path, CASES[0][1]))
    head = current_system_message(session.build_context().messages)
    assert head is not None and head["toolsAdded"] == [{"name": {}}]
    assert len(_odd_problems(session)) == 1


def test_a_problem_is_a_report_beside_pis_answer(pi16: PiReference, tmp_path: Path) -> None:
    """Every odd file gives the real Pi 1.6.0's answer, with its problem beside it.

    Except usage totals that are text or a boolean: Pi's figures stop being numbers there
    ("7" + 1 is "71", and ``totalTokens: true`` is its usage); pinb keeps each a number (a documented best
    effort, :func:`pinb.core.context.tokens._text_len`), and the problem is what tells the user.
    """
    query = {"target": "pi-1.6.0", "leaves": [{"key": "@default"}, {"key": "x1", "leaf": "x1"}],
             "plans": ["small"], "budgets": [300], "tree": "nested",
             "planPresets": {"small": {"reserve": 100, "keep": 50, "window": 1000}}}  # fmt: skip
    for number, (what, odd, _) in enumerate(CASES):
        if what in ("usage total", "usage boolean"):
            continue
        folder = tmp_path / str(number)
        folder.mkdir()
        path = _file(folder, odd)
        try:
            pi = loads(pi16.answer_text(query, path))
        except PiError as exc:  # Pi throws (`name?.trim is not a function`); pinb reads on
            assert what == "session name", (what, exc)
            assert Session.open(path).name is None
            continue
        assert differences(loads(dumps(answer(query, path))), pi) == [], what


def test_a_listing_row_names_the_odd_fields_it_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(HEADER), _line("u1", None, 1, type="message", message=USER),
             _line("n1", "u1", 2, type="session_info", name=["x"]),
             _line("u2", "n1", 3, type="message",
                   message={"role": "user", "content": {"text": "x"}, "timestamp": 3})]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    for _ in range(2):  # a second read (from the cache, or again) reports the same, once each
        row = read_session_info(path)
        assert row is not None
        assert (row.name, row.first_message, row.message_count) == (None, "hi", 2)
        assert [(p.kind, p.path, p.line) for p in row.problems] == [
            ("odd-field", path, 3),
            ("odd-field", path, 4),
        ]
        assert row.problems[0].message.startswith("name is a list, not text")
        assert row.problems[1].message.startswith("message.content is an object")
