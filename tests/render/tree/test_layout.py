"""The tidy layout: no overlaps, parents centred, order kept, linear time; chain collapsing."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pinb.render.tree.graph import build_graph
from pinb.render.tree.layout import AUTO_COLLAPSE, collapse_chains, layout_tree, tidy_layout
from tests.views.builders import demo_session, long_chain_session


def _forest(parents: list[int]) -> tuple[list[list[int]], list[int]]:
    children: list[list[int]] = [[] for _ in parents]
    roots: list[int] = []
    for node, parent in enumerate(parents):
        (children[parent] if parent >= 0 else roots).append(node)
    return children, roots


@st.composite
def forests(draw: st.DrawFn) -> list[int]:
    n = draw(st.integers(1, 80))
    parents = [-1]
    for node in range(1, n):
        root = draw(st.integers(0, 19)) == 0
        parents.append(-1 if root else draw(st.integers(max(0, node - 6), node - 1)))
    return parents


@given(forests(), st.data())
@settings(max_examples=300, deadline=None)
def test_tidy_layout_is_tidy(parents: list[int], data: st.DataObject) -> None:
    children, roots = _forest(parents)
    with_room = data.draw(st.booleans())
    extra = (
        data.draw(
            st.lists(
                st.sampled_from([0.0, 0.5, 2.0, 5.0]), min_size=len(parents), max_size=len(parents)
            )
        )
        if with_room
        else [0.0] * len(parents)
    )
    xs = tidy_layout(children, roots, extra=extra if with_room else None)
    assert min(xs) == 0
    depth = [0] * len(parents)
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        order.append(node)
        for child in children[node]:
            depth[child] = depth[node] + 1
        stack.extend(reversed(children[node]))
    rows: dict[int, list[int]] = {}
    for node in order:
        rows.setdefault(depth[node], []).append(node)
    for row in rows.values():  # left-to-right order kept, one unit (plus room) apart
        for a, b in itertools.pairwise(row):
            assert xs[b] - xs[a] >= 1 + extra[a] - 1e-9
    for node, kids in enumerate(children):
        if kids:
            assert abs(xs[node] - (xs[kids[0]] + xs[kids[-1]]) / 2) < 1e-9


def test_symmetric_tree_is_drawn_symmetrically() -> None:
    children = [[1, 2], [3, 4], [5, 6], [], [], [], []]
    xs = tidy_layout(children, [0])
    assert xs == [1.5, 0.5, 2.5, 0.0, 1.0, 2.0, 3.0]


def test_a_deep_chain_needs_no_recursion() -> None:
    # 160,000 entries in one chain under a recursion limit of 200: a recursive walk would
    # fail at depth 200. (How the time grows with the size: benchmarks/bench_render.py.)
    children = [[i + 1] for i in range(160_000 - 1)] + [[]]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        xs = tidy_layout(children, [0])
    finally:
        sys.setrecursionlimit(limit)
    assert len(xs) == 160_000 and set(xs) == {0.0}


def test_empty_forest() -> None:
    assert tidy_layout([], []) == []


def test_chains_collapse_but_landmarks_stay() -> None:
    s = long_chain_session(300)
    graph = build_graph(s)
    items, roots, item_of = collapse_chains(graph)
    assert len(roots) == 1
    # root, one chain, and the leaf (which is also the tree's last entry)
    assert [len(item.nodes) for item in items] == [1, 298, 1]
    assert items[1].is_chain and items[1].parent == 0 and items[2].parent == 1
    assert all(i >= 0 for i in item_of)
    head = graph.nodes[items[1].nodes[0]].key
    opened, _, _ = collapse_chains(graph, expanded={head})
    assert len(opened) == 300
    middle = graph.nodes[150].key
    pinned, _, _ = collapse_chains(graph, pinned={middle})
    assert [len(item.nodes) for item in pinned] == [1, 149, 1, 148, 1]
    short, _, _ = collapse_chains(graph, min_chain=1000)
    assert len(short) == 300


def test_branch_points_and_their_children_are_never_collapsed() -> None:
    s = long_chain_session(400, branch_every=50)
    graph = build_graph(s)
    items, _, _ = collapse_chains(graph)
    singles = {graph.nodes[item.node].key for item in items if not item.is_chain}
    for node in graph.nodes:
        if len(node.children) > 1:
            assert node.key in singles
            assert all(graph.nodes[c].key in singles for c in node.children)
    covered = sorted(i for item in items for i in item.nodes)
    assert covered == list(range(len(graph)))


def test_layout_tree_auto_collapse_and_positions() -> None:
    small = layout_tree(build_graph(long_chain_session(AUTO_COLLAPSE)))
    assert small.chains == 0 and len(small.items) == AUTO_COLLAPSE
    big = layout_tree(build_graph(long_chain_session(AUTO_COLLAPSE + 1)))
    assert big.chains == 1 and big.height == 3
    forced = layout_tree(build_graph(long_chain_session(50)), collapse=True)
    assert forced.chains == 1
    positions = forced.positions()
    assert len(positions) == 50
    assert positions[forced.graph.nodes[0].key] == (0.0, 0.0)


def test_demo_tree_layout(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    layout = layout_tree(build_graph(demo.session), collapse=False)
    assert layout.width >= 3  # three branches side by side
    assert layout.roots == [0]
