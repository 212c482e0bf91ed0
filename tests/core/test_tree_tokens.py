"""Tree, labels and names (§4, §13.4) and token accounting (§6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinb.core import (
    CompactionSettings,
    Session,
    estimate_context_tokens,
    estimate_tokens,
    should_compact,
)
from pinb.core.format.entries import Entry
from pinb.core.format.tree import SessionIndex, TreeNode


def _t(seconds: int) -> str:
    return f"2025-01-01T00:00:{seconds:02d}.000Z"


def _entries(rows: list[dict[str, Any]]) -> list[Entry]:
    return [Entry(row, i + 2) for i, row in enumerate(rows)]


def _vector_13_4() -> SessionIndex:
    def msg(i: str, parent: Any, t: int) -> dict[str, Any]:
        return {
            "type": "message",
            "id": i,
            "parentId": parent,
            "timestamp": _t(t),
            "message": {"role": "user", "content": i, "timestamp": t},
        }

    return SessionIndex(
        _entries(
            [
                msg("r1", None, 1),
                msg("c2", "r1", 5),
                msg("c1", "r1", 3),
                msg("o1", "missing", 2),
                {
                    "type": "custom",
                    "customType": "x",
                    "id": "sp",
                    "parentId": "sp",
                    "timestamp": _t(4),
                },
                {
                    "type": "label",
                    "id": "l1",
                    "parentId": "c2",
                    "timestamp": _t(6),
                    "targetId": "c1",
                    "label": "one",
                },
                {
                    "type": "label",
                    "id": "l2",
                    "parentId": "l1",
                    "timestamp": _t(7),
                    "targetId": "c1",
                    "label": "two",
                },
                {
                    "type": "label",
                    "id": "l3",
                    "parentId": "l2",
                    "timestamp": _t(8),
                    "targetId": "r1",
                    "label": "root",
                },
                {
                    "type": "label",
                    "id": "l4",
                    "parentId": "l3",
                    "timestamp": _t(9),
                    "targetId": "r1",
                },
                {
                    "type": "session_info",
                    "id": "n1",
                    "parentId": "l4",
                    "timestamp": _t(10),
                    "name": "  First name ",
                },
                {
                    "type": "session_info",
                    "id": "n2",
                    "parentId": "n1",
                    "timestamp": _t(11),
                    "name": "",
                },
            ]
        )
    )


def _render(roots: list[TreeNode]) -> list[str]:
    return [
        "  " * depth + node.entry.id + (f" [{node.label}]" if node.label else "")
        for root in roots
        for node, depth in root.walk()
    ]


def test_tree_label_and_name_vector() -> None:
    index = _vector_13_4()
    assert _render(index.tree()) == [
        "r1",
        "  c1 [two]",
        "  c2",
        "    l1",
        "      l2",
        "        l3",
        "          l4",
        "            n1",
        "              n2",
        "o1",
        "sp",
    ]
    assert index.label("r1") is None
    assert index.session_name("0.58") == "  First name "  # latest non-empty, as stored
    assert index.session_name("1.6") is None  # the latest session_info clears it
    assert [e.id for e in index.children("r1")] == ["c2", "c1"]
    assert index.last_entry_id == "n2"


def test_unparseable_timestamps_sort_as_v8_does() -> None:
    def child(i: str, ts: str) -> dict[str, Any]:
        return {"type": "custom", "customType": "x", "id": i, "parentId": "p", "timestamp": ts}

    root = {"type": "custom", "customType": "x", "id": "p", "parentId": None, "timestamp": _t(0)}
    first = SessionIndex(_entries([root, child("A", _t(3)), child("X", "bad"), child("B", _t(1))]))
    assert [n.entry.id for n in first.tree()[0].children] == ["A", "X", "B"]
    second = SessionIndex(_entries([root, child("X", "bad"), child("A", _t(3)), child("B", _t(1))]))
    assert [n.entry.id for n in second.tree()[0].children] == ["X", "B", "A"]


def test_common_ancestor(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    root = session.append_message({"role": "user", "content": "q", "timestamp": 1})
    a = session.append_message({"role": "user", "content": "a", "timestamp": 1})
    session.branch(root.id)
    b = session.append_message({"role": "user", "content": "b", "timestamp": 1})
    assert session.common_ancestor(a.id, b.id) is root
    assert session.common_ancestor(a.id, "nope") is None


# --- tokens --------------------------------------------------------------------------------

IMAGE = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
USAGE = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120}
SEVEN = [
    {"role": "user", "content": "abcdefgh", "timestamp": 1},
    {"role": "user", "content": [{"type": "text", "text": "abcde"}, IMAGE], "timestamp": 1},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "think"},
            {"type": "text", "text": "hi"},
            {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "a.py"}},
        ],
        "usage": USAGE,
        "stopReason": "toolUse",
        "timestamp": 1,
    },
    {
        "role": "toolResult",
        "content": [{"type": "text", "text": "0123456789"}, IMAGE],
        "timestamp": 1,
    },
    {"role": "bashExecution", "command": "ls", "output": "abc", "timestamp": 1},
    {"role": "compactionSummary", "summary": "123456789", "tokensBefore": 1, "timestamp": 1},
    {"role": "custom", "customType": "x", "content": "cust", "display": True, "timestamp": 1},
]


def test_estimate_tokens_examples() -> None:
    assert [estimate_tokens(m, pi="0.58") for m in SEVEN] == [2, 2, 7, 1203, 2, 3, 1]
    assert estimate_tokens(SEVEN[1], pi="0.58") == 2  # v0.58.3 ignores user images
    assert estimate_tokens(SEVEN[1]) == 1202  # Pi 1.x counts 4800 chars for one
    system = {
        "role": "system",
        "content": "abcd",
        "sections": {"a": "12345678", "b": None},
        "toolsAdded": [{"name": "read"}],
    }
    assert estimate_tokens(system) == 8  # (4 + 8 + 17) / 4
    assert estimate_tokens(system, pi="0.58") == 0
    assert estimate_tokens({"role": "user", "content": "😀😀😀"}) == 2  # 6 UTF-16 units
    assert estimate_tokens({"role": "mystery"}) == 0


def test_estimate_context_tokens_examples() -> None:
    assert estimate_context_tokens(SEVEN).to_wire() == {
        "tokens": 1329,
        "usageTokens": 120,
        "trailingTokens": 1209,
        "lastUsageIndex": 2,
    }
    errored = {
        "role": "assistant",
        "content": [{"type": "text", "text": "bad"}],
        "usage": USAGE,
        "stopReason": "error",
        "timestamp": 1,
    }
    tail = {"role": "user", "content": "tail text!!", "timestamp": 1}
    assert estimate_context_tokens([*SEVEN[:3], errored, tail]).to_wire() == {
        "tokens": 124,
        "usageTokens": 120,
        "trailingTokens": 4,
        "lastUsageIndex": 2,
    }
    no_total = {
        **SEVEN[2],
        "usage": {"input": 5, "output": 6, "cacheRead": 7, "cacheWrite": 8, "totalTokens": 0},
    }
    assert estimate_context_tokens([no_total]).usage_tokens == 26


def test_pi_1x_skips_usage_that_totals_zero() -> None:
    """A server that reports no usage (all zeros) must not make the context look empty."""
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    messages = [
        {"role": "user", "content": "abcd", "timestamp": 1},
        {**SEVEN[2], "content": [], "usage": {**zero, "totalTokens": 100}, "stopReason": "stop"},
        {"role": "user", "content": "abcdefgh", "timestamp": 1},
        {**SEVEN[2], "content": [{"type": "text", "text": "12345678"}], "usage": zero},
    ]
    assert estimate_context_tokens(messages).to_wire() == {
        "tokens": 104,
        "usageTokens": 100,
        "trailingTokens": 4,
        "lastUsageIndex": 1,
    }
    assert estimate_context_tokens(messages, pi="0.58").to_wire() == {  # trusts the zeros
        "tokens": 0,
        "usageTokens": 0,
        "trailingTokens": 0,
        "lastUsageIndex": 3,
    }


def test_should_compact_threshold_is_strict() -> None:
    assert should_compact(111_617, 128_000)
    assert not should_compact(111_616, 128_000)
    assert not should_compact(10**9, 128_000, CompactionSettings(enabled=False))


def test_nan_comparisons_count_as_equal_in_v8s_run_detection() -> None:
    """SortCompare turns NaN into +0: an ascending run goes on through it, a descending one stops."""

    def child(i: str, ts: str) -> dict[str, Any]:
        return {"type": "custom", "customType": "x", "id": i, "parentId": "p", "timestamp": ts}

    root = {"type": "custom", "customType": "x", "id": "p", "parentId": None, "timestamp": _t(0)}
    ascending = SessionIndex(
        _entries([root, child("A", _t(1)), child("X", "bad"), child("B", _t(0)), child("C", _t(2))])
    )
    assert [n.entry.id for n in ascending.tree()[0].children] == ["A", "X", "B", "C"]
    descending = SessionIndex(
        _entries([root, child("B", _t(2)), child("A", _t(1)), child("X", "bad"), child("C", _t(0))])
    )
    assert [n.entry.id for n in descending.tree()[0].children] == ["C", "A", "B", "X"]
