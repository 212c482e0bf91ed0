"""The annotated session graph and its networkx form, on demo sessions, vectors and Pi files."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

from pinb.core import Session, estimate_tokens
from pinb.core.context.build import entry_to_message
from pinb.render.tree.cells import row_cells
from pinb.render.tree.digraph import to_networkx
from pinb.render.tree.graph import build_graph, node_key
from pinb.render.tree.picture import tree_picture_svg, tree_text
from pinb.render.tree.rows import row_layout
from pinb.testing.fuzz import random_session_bytes
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


def test_entries_on_a_parent_loop_stay_visible_and_flagged() -> None:
    s = Session.open(CASE_FILES["cycles"])
    graph = build_graph(s)
    assert len(graph) == len(s.entries)  # the 2-cycle no root reaches is drawn too
    flagged = {n.key for n in graph.nodes if n.cycle}
    assert flagged == {"self", "loopA", "loopB"}
    assert "3 entries on a parent loop" in graph.summary()
    layout = row_layout(graph)
    assert {layout.rows[layout.row_for(k)].key for k in flagged} == flagged  # type: ignore[index]
    assert "parent loop" in tree_text(layout)


def test_duplicate_ids_and_odd_fields_do_not_break_the_graph() -> None:
    s = Session.open(CASE_FILES["duplicate-ids"])
    graph = build_graph(s)
    assert graph.shadowed == 1 and "1 line with a repeated id" in graph.summary()
    odd = Session.open(CASE_FILES["odd-fields"])
    graph = build_graph(odd)
    label = next(n for n in graph.nodes if n.label is not None)
    assert label.label == 7 and label.label_text == "7"  # a number as a label
    assert any(n.orphan for n in graph.nodes)
    tree_text(row_layout(graph))


def test_archived_branches_are_hidden_counted_and_reversible(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    s, ids = demo.session, demo.ids
    before = len(build_graph(s))
    s.archive(ids["u2"], note="dead end")
    graph = build_graph(s)
    assert graph.archived == {ids["u2"]: 4}
    assert len(graph) == before - 4
    assert graph.get(ids["a4"]) is None
    assert "1 archived branch hidden (4 entries)" in graph.summary()
    assert graph.leaf_key == ids["a7"]  # the marker appended at the leaf is not the leaf shown
    shown = build_graph(s, show_archived=True)
    node = shown.get(ids["u2"])
    assert node is not None and node.archived
    # An archived branch the active path runs through stays visible.
    s.archive(ids["u3"])
    on_path = build_graph(s).get(ids["u3"])
    assert on_path is not None and on_path.archived and on_path.on_path
    s.unarchive(ids["u2"])
    assert build_graph(s).get(ids["a4"]) is not None


def test_context_edits_are_marked_on_their_targets() -> None:
    s = Session.open(CASE_FILES["context-edits"])
    graph = build_graph(s)
    edited = {n.key: (n.edit, n.edit_key) for n in graph.nodes if n.edit}
    assert edited["e0000003"] == ("replaced", "e0000006")
    cells = {c.key: c for c in row_cells(row_layout(graph))}
    assert ("replaced by e0000006", "edit") in cells["e0000003"].tags


@pytest.mark.parametrize("seed", range(12))
def test_random_odd_trees_render(seed: int, tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_bytes(random_session_bytes(seed, 80, newer=True, odd=True))
    s = Session.open(path, strict=False)
    graph = build_graph(s)
    keys = [n.key for n in graph.nodes]
    assert len(keys) == len(set(keys))
    layout = row_layout(graph, max_rows=30)
    assert len(layout.rows) <= 31
    tree_text(layout)
    ET.fromstring(tree_picture_svg(layout))
