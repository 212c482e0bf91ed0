"""A long context without compactions: the first context after open reuses the walk and
the messages open picked, and is the same context a fresh index builds, at every leaf,
for both Pi releases, after appends and with messages that have no content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import UNSET, Session, build_session_context
from pinb.core.context.build import SessionContext, context_entries
from pinb.core.format.tree import SessionIndex
from pinb.testing.generate import SessionShape, generate_session


def _seen(context: SessionContext) -> tuple[Any, ...]:
    """Everything a context holds, its sources by line (entries are objects of an index)."""
    return (
        json.dumps(context.messages, sort_keys=True),
        [e.line for e in context.sources],
        [e.line for e in context.selected],
        [e.line for e in context.path],
        context.thinking_level,
        context.model,
        context.branch_edits,
        context.compaction is None,
    )


def _long(tmp_path: Path, entries: int = 900) -> Path:
    return generate_session(
        tmp_path / "long.jsonl",
        SessionShape(entries=entries, main_depth=entries * 2 // 3, compaction_every=0),
        seed=7,
    )


@pytest.mark.parametrize("pi", ["1.6", "0.58"])
def test_the_first_context_after_open_is_the_one_a_fresh_index_builds(
    tmp_path: Path, pi: str
) -> None:
    session = Session.open(_long(tmp_path), pi=pi)
    index = session.index
    # Open kept the whole walk and the messages of the path it decoded.
    leaf = index.get(session.leaf_id)
    assert leaf is not None
    assert index.recall(("messages", index.position_of(leaf), session.pi)) is not None
    first = build_session_context(index, UNSET, pi=pi)
    fresh = build_session_context(SessionIndex(list(index.entries)), UNSET, pi=pi)
    assert _seen(first) == _seen(fresh)
    assert len(first.messages) > 400 and first.compaction is None
    assert first.sources[0] is index.entries[first.sources[0].line - 2]  # objects of the index
    # Every other leaf goes the ordinary way, and agrees too.
    for entry in index.entries[::37]:
        ours = build_session_context(index, entry.id, pi=pi)
        theirs = build_session_context(list(index.entries), entry.id, pi=pi)
        assert _seen(ours) == _seen(theirs)


def test_what_open_kept_is_let_go_when_the_session_changes(tmp_path: Path) -> None:
    session = Session.open(_long(tmp_path, 300))
    index = session.index
    leaf = index.get(session.leaf_id)
    assert leaf is not None
    key = ("messages", index.position_of(leaf), session.pi)
    assert index.recall(key) is not None
    session.append_message(
        {"role": "user", "content": [{"type": "text", "text": "more"}], "timestamp": 1}
    )
    assert index.recall(key) is None
    context = build_session_context(index, UNSET)
    assert context.messages[-1]["content"][0]["text"] == "more"
    assert _seen(context) == _seen(build_session_context(list(index.entries), UNSET))


def test_a_message_without_content_reads_as_pi_reads_it(tmp_path: Path) -> None:
    path = _long(tmp_path, 200)
    lines = path.read_bytes().splitlines()
    last = json.loads(lines[-1])
    odd = {
        "type": "message",
        "id": "nocontent",
        "parentId": last["id"],
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "timestamp": 1},
    }
    path.write_bytes(b"\n".join([*lines, json.dumps(odd).encode()]) + b"\n")
    for pi in ("1.6", "0.58"):
        session = Session.open(path, pi=pi)
        context = build_session_context(session.index, UNSET, pi=pi)
        expected = build_session_context(list(session.index.entries), UNSET, pi=pi)
        assert _seen(context) == _seen(expected)
        assert ("content" in context.messages[-1]) == (pi == "1.6")


def test_context_entries_decodes_what_the_context_reads(tmp_path: Path) -> None:
    session = Session.open(_long(tmp_path, 300))
    index = session.index
    chosen = context_entries(index, session.leaf_id)
    assert chosen and all(entry._raw is not None for entry in chosen)
    assert [e.line for e in chosen] == [e.line for e in index.path_to(session.leaf_id)]
