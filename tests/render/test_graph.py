"""The annotated session graph and its networkx form, on demo sessions, vectors and Pi files."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from pinb.core import Session, estimate_tokens
from pinb.core.context import entry_to_message
from pinb.render.graph import build_graph, entry_preview, node_key, to_networkx, tool_tokens
from tests.samples import CASE_FILES, LEGACY, TREES
from tests.views.builders import demo_session

VECTORS = [*CASE_FILES.values(), *TREES]
FIXTURES = list(LEGACY.values())


def test_demo_graph_annotations(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    s, ids = demo.session, demo.ids
    graph = build_graph(s)
    assert graph.hidden == 2  # the two `leaf` navigation records (two branch moves)
    assert all(n.type != "leaf" for n in graph.nodes)
    assert len(graph) == len(s.entries) - 2
    assert graph.leaf_key == ids["a7"] == s.leaf_id
    assert graph.compaction_key == ids["compaction"]
    assert graph.first_kept_key == ids["u4"]
    assert graph.branch_count == 3  # ends: a4, the custom message below a7, the name entry
    regions = {n.key: n.region for n in graph.nodes}
    assert regions[ids["u1"]] == "summarized"
    assert regions[ids["a5"]] == "summarized"
    assert regions[ids["u4"]] == regions[ids["r6"]] == "kept"
    assert regions[ids["compaction"]] == "compaction"
    assert regions[ids["u5"]] == regions[ids["a7"]] == "after"
    assert regions[ids["u2"]] is None and regions[ids["branch_summary"]] is None
    node = graph.get(ids["u3"])
    assert node is not None and node.label == "alternative"
    assert node.on_path and node.kind == "user"
    leaf = graph.get(ids["a7"])
    assert leaf is not None and leaf.is_leaf
    assert graph.path_keys == [node_key(e.id) for e in s.path_to() if e.type != "leaf"]
    for n in graph.nodes:  # tokens are the estimate of the message the entry stands for
        message = entry_to_message(n.entry)
        expected = estimate_tokens(message) if isinstance(message, dict) else 0
        assert n.tokens == expected


def test_leaf_entries_can_be_shown(tmp_path: Path) -> None:
    s = demo_session(tmp_path).session
    graph = build_graph(s, show_leaf_entries=True)
    assert graph.hidden == 0 and len(graph) == len(s.entries)


def test_graph_against_another_leaf(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    graph = build_graph(demo.session, demo.ids["a4"])
    assert graph.compaction_key is None
    assert {n.region for n in graph.nodes if n.on_path} == {"active"}
    empty = build_graph(demo.session, None)
    assert empty.leaf_key is None and not any(n.on_path for n in empty.nodes)


def test_to_networkx(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    g = to_networkx(demo.session)
    assert isinstance(g, nx.DiGraph)
    assert nx.is_arborescence(g)
    assert g.graph["leaf"] == demo.ids["a7"]
    assert g.graph["compaction"] == demo.ids["compaction"]
    data = g.nodes[demo.ids["compaction"]]
    assert data["is_compaction"] and data["region"] == "compaction" and data["on_path"]
    assert g.nodes[demo.ids["branch_summary"]]["is_branch_summary"]
    assert g.nodes[demo.ids["u1"]]["summarized"] and g.nodes[demo.ids["u4"]]["kept"]
    assert g.nodes[demo.ids["u3"]]["label"] == "alternative"
    assert g.nodes[demo.ids["a1"]]["role"] == "assistant"
    assert g.nodes[demo.ids["a1"]]["tokens"] > 0
    assert set(g.successors(demo.ids["a2"])) == {
        demo.ids["u2"],
        demo.ids["u3"],
        demo.ids["branch_summary"],
    }


@pytest.mark.parametrize("path", VECTORS + FIXTURES, ids=lambda p: p.name)
def test_graph_of_pi_files_matches_the_context(path: Path) -> None:
    s = Session.open(path, strict=False)
    graph = build_graph(s)
    context = s.build_context()
    shown = {n.key for n in graph.nodes}
    in_context = {node_key(e.id) for e in context.sources if node_key(e.id) in shown}
    regions = {n.key: n.region for n in graph.nodes}
    # Everything the model sees is kept, after, the compaction, or (no compaction) active.
    assert {regions[k] for k in in_context} <= {"kept", "after", "compaction", "active"}
    g = to_networkx(graph)
    assert g.number_of_nodes() == len(graph)
    assert g.number_of_edges() == len(graph) - len(graph.roots)


def test_previews_and_tool_tokens() -> None:
    s = Session.in_memory("/x")
    e = s.append_message({"role": "user", "content": "  hello\n  world  ", "timestamp": 1})
    assert entry_preview(e) == "hello world"
    assert entry_preview(e, limit=4) == "hel…"
    call = {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "abcd"}},
            {"type": "toolCall", "id": "2", "name": "bash", "arguments": {}},
        ],
    }
    assert [(n, side) for n, side, _ in tool_tokens(call)] == [("read", "call"), ("bash", "call")]
    result = {
        "role": "toolResult",
        "toolName": "read",
        "content": [{"type": "text", "text": "x" * 8}],
    }
    assert list(tool_tokens(result)) == [("read", "result", 2)]
    assert list(tool_tokens("not a message")) == []
