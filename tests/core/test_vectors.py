"""The hand-made vectors of spec §13.1 (shared/spec/pi-vectors) build the expected contexts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pinb.core import UNSET, Session, build_session_context
from tests.conftest import SHARED

VECTORS = SHARED / "spec" / "pi-vectors"
EXPECTED = json.loads((VECTORS / "expected.json").read_text(encoding="utf-8"))["vectors"]
RUNS = [
    (name, i, run)
    for name, vector in sorted(EXPECTED.items())
    for i, run in enumerate(vector["runs"])
]


def _resolve(item: Any, session: Session, lines: list[str]) -> Any:
    if isinstance(item, dict) and "$entry" in item:
        return session[item["$entry"]].message
    if isinstance(item, dict) and "$line" in item:
        entry = next(e for e in session.entries if e.line == item["$line"])
        return entry.message
    return item


@pytest.mark.parametrize(("name", "number", "run"), RUNS, ids=[f"{n}-{i}" for n, i, _ in RUNS])
def test_vector(name: str, number: int, run: dict[str, Any]) -> None:
    path = VECTORS / EXPECTED[name]["file"]
    session = Session.open(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    newer = run["version"] == "newer"
    leaf = run["leaf"]
    if leaf == "<default>":
        # v0.58.3 takes the last line as the leaf; newer Pi replays `leaf` entries.
        leaf_arg: Any = session.leaf_id if newer else UNSET
    else:
        leaf_arg = leaf
    context = build_session_context(session.index, leaf_arg, nested_compactions=newer)
    expected = {
        "messages": [_resolve(m, session, lines) for m in run["messages"]],
        "thinkingLevel": run["thinkingLevel"],
        "model": run["model"],
    }
    if "activeToolNames" in run:
        expected["activeToolNames"] = run["activeToolNames"]
    assert context.to_wire(newer="activeToolNames" in run) == expected


def test_session_resumes_v18_where_newer_pi_does() -> None:
    session = Session.open(VECTORS / "v18_newer_leaf.jsonl")
    assert session.leaf_id == "e0000002"
    assert [m["content"] for m in session.build_context().messages] == [
        "Q",
        [{"type": "text", "text": "A1."}],
    ]
