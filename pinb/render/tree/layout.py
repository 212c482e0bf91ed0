"""Tidy tree layout in linear time (Walker, as improved by Buchheim et al.), chains collapsible."""

# Positions are computed, never drawn here: ``x`` in sibling-distance units and ``depth`` in
# rows. Long runs of single-child entries can be collapsed into one chain item first, which
# is what keeps 100k-entry sessions drawable.

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ...core.gc import gc_paused
from .graph import SessionGraph

__all__ = ["AUTO_COLLAPSE", "Item", "TreeLayout", "collapse_chains", "layout_tree", "tidy_layout"]

#: ``collapse="auto"`` collapses chains once a tree has more entries than this.
AUTO_COLLAPSE = 400


def tidy_layout(
    children: Sequence[Sequence[int]],
    roots: Sequence[int],
    distance: float = 1.0,
    extra: Sequence[float] | None = None,
) -> list[float]:
    """x positions of a forest: parents centred over their children, no overlaps, O(n).

    Parameters
    ----------
    children:
        ``children[v]`` lists the children of node ``v`` (nodes are ``0 … n-1``), in order.
    roots:
        The root nodes, left to right (laid out as children of one virtual root).
    distance:
        Minimum horizontal distance between neighbours on the same row.
    extra:
        Additional room to the right of each node (e.g. for its label): a node's right-hand
        neighbour on the same row stays ``distance + extra[node]`` away.

    Returns
    -------
    list of float
        The x of every node; the leftmost node sits at 0.

    Notes
    -----
    The recursion of the published algorithm is unrolled into explicit stacks so that a
    chain of 100k entries does not hit Python's recursion limit.
    """
    n = len(children)
    if n == 0:
        return []
    root = n
    kids: list[Sequence[int]] = [*children, list(roots)]
    parent = [-1] * (n + 1)
    number = [0] * (n + 1)
    for v in range(n + 1):
        for j, c in enumerate(kids[v]):
            parent[c] = v
            number[c] = j
    prelim = [0.0] * (n + 1)
    mod = [0.0] * (n + 1)
    shift = [0.0] * (n + 1)
    change = [0.0] * (n + 1)
    thread = [-1] * (n + 1)
    ancestor = list(range(n + 1))
    default_ancestor = [k[0] if k else -1 for k in kids]
    room = [distance + e for e in extra] + [distance] if extra is not None else None

    def next_left(v: int) -> int:
        k = kids[v]
        return k[0] if k else thread[v]

    def next_right(v: int) -> int:
        k = kids[v]
        return k[-1] if k else thread[v]

    def apportion(v: int, da: int) -> int:
        j = number[v]
        p = parent[v]
        if j == 0:
            return da
        vil = kids[p][j - 1]
        vir = vor = v
        vol = kids[p][0]
        sir = sor = mod[v]
        sil = mod[vil]
        sol = mod[vol]
        nr = next_right(vil)
        nl = next_left(vir)
        while nr >= 0 and nl >= 0:
            vil, vir = nr, nl
            vol = next_left(vol)
            vor = next_right(vor)
            ancestor[vor] = v
            gap = (prelim[vil] + sil) - (prelim[vir] + sir) + (room[vil] if room else distance)
            if gap > 0:
                a = ancestor[vil]
                wl = a if parent[a] == p else da
                subtrees = number[v] - number[wl]
                change[v] -= gap / subtrees
                shift[v] += gap
                change[wl] += gap / subtrees
                prelim[v] += gap
                mod[v] += gap
                sir += gap
                sor += gap
            sil += mod[vil]
            sir += mod[vir]
            sol += mod[vol]
            sor += mod[vor]
            nr = next_right(vil)
            nl = next_left(vir)
        if nr >= 0 and next_right(vor) < 0:
            thread[vor] = nr
            mod[vor] += sil - sor
        if nl >= 0 and next_left(vol) < 0:
            thread[vol] = nl
            mod[vol] += sir - sol
            da = v
        return da

    # First walk, post-order.
    stack = [root]
    cursor = [0] * (n + 1)
    while stack:
        v = stack[-1]
        k = cursor[v]
        if k < len(kids[v]):
            cursor[v] = k + 1
            stack.append(kids[v][k])
            continue
        stack.pop()
        p = parent[v]
        left = kids[p][number[v] - 1] if p >= 0 and number[v] > 0 else -1
        step = (room[left] if room else distance) if left >= 0 else 0.0
        if not kids[v]:
            prelim[v] = prelim[left] + step if left >= 0 else 0.0
        else:
            moved = changed = 0.0
            for w in reversed(kids[v]):  # execute the shifts recorded by apportion
                prelim[w] += moved
                mod[w] += moved
                changed += change[w]
                moved += shift[w] + changed
            mid = (prelim[kids[v][0]] + prelim[kids[v][-1]]) / 2
            if left >= 0:
                prelim[v] = prelim[left] + step
                mod[v] = prelim[v] - mid
            else:
                prelim[v] = mid
        if p >= 0:
            default_ancestor[p] = apportion(v, default_ancestor[p])

    # Second walk, pre-order: add up the modifiers.
    x = [0.0] * (n + 1)
    walk: list[tuple[int, float]] = [(root, 0.0)]
    while walk:
        v, m = walk.pop()
        x[v] = prelim[v] + m
        below = m + mod[v]
        walk.extend((w, below) for w in kids[v])
    del x[root]
    low = min(x)
    return [value - low for value in x]


@dataclass(slots=True)
class Item:
    """One drawn box: a single node or a collapsed chain of nodes (graph indices)."""

    nodes: list[int]
    parent: int
    depth: int
    children: list[int] = field(default_factory=list)
    x: float = 0.0

    @property
    def is_chain(self) -> bool:
        return len(self.nodes) > 1

    @property
    def node(self) -> int:
        """The first (top) node of the item."""
        return self.nodes[0]


@dataclass
class TreeLayout:
    """Positions of the items of one graph.

    Attributes
    ----------
    graph:
        The annotated session graph laid out.
    items:
        Drawn items in pre-order; ``x`` in units, ``depth`` in rows.
    roots:
        Item indices of the roots.
    item_of:
        Graph node index → index of the item that shows it.
    width / height:
        Extent in units (columns) and rows.
    """

    graph: SessionGraph
    items: list[Item]
    roots: list[int]
    item_of: list[int]
    width: float
    height: int

    @property
    def chains(self) -> int:
        """How many collapsed chains the layout holds."""
        return sum(1 for item in self.items if item.is_chain)

    def positions(self) -> dict[str, tuple[float, float]]:
        """Node key → ``(x, -depth)`` for every node (chain members share their chain's)."""
        out: dict[str, tuple[float, float]] = {}
        for item in self.items:
            for i in item.nodes:
                out[self.graph.nodes[i].key] = (item.x, -float(item.depth))
        return out


def _pinned(graph: SessionGraph, pinned: Collection[str]) -> list[bool]:
    nodes = graph.nodes
    flags = [False] * len(nodes)
    for i, node in enumerate(nodes):
        flags[i] = (
            node.parent < 0
            or len(node.children) != 1
            or len(nodes[node.parent].children) != 1
            or node.is_leaf
            or node.label is not None
            or node.type in ("compaction", "branch_summary")
            or node.key == graph.first_kept_key
            or node.key in pinned
        )
    return flags


def collapse_chains(
    graph: SessionGraph,
    *,
    min_chain: int = 3,
    pinned: Collection[str] = (),
    expanded: Collection[str] = (),
    enabled: bool = True,
) -> tuple[list[Item], list[int], list[int]]:
    """Group runs of ``min_chain`` or more plain single-child entries into chain items.

    Roots, branch points and their children, tree leaves, the current leaf, labelled
    entries, compactions, branch summaries, the first kept entry and ``pinned`` keys always
    stay single. A chain whose first node's key is in ``expanded`` stays open.

    Returns
    -------
    items, roots, item_of
        Items in pre-order, the root items, and the item of every graph node.
    """
    nodes = graph.nodes
    n = len(nodes)
    head = list(range(n))
    run = [1] * n
    keep = _pinned(graph, pinned) if enabled else [True] * n
    for i, node in enumerate(nodes):
        p = node.parent
        if not keep[i] and p >= 0 and not keep[p]:
            head[i] = head[p]
            run[head[i]] += 1
    expanded_set = set(expanded)
    items: list[Item] = []
    roots: list[int] = []
    item_of = [-1] * n
    for i, node in enumerate(nodes):
        h = head[i]
        chained = not keep[i] and run[h] >= min_chain and nodes[h].key not in expanded_set
        if chained and h != i:
            item = item_of[h]
            items[item].nodes.append(i)
            item_of[i] = item
            continue
        p = node.parent
        parent_item = item_of[p] if p >= 0 else -1
        depth = items[parent_item].depth + 1 if parent_item >= 0 else 0
        position = len(items)
        items.append(Item([i], parent_item, depth))
        item_of[i] = position
        if parent_item >= 0:
            items[parent_item].children.append(position)
        else:
            roots.append(position)
    return items, roots, item_of


def layout_tree(
    graph: SessionGraph,
    *,
    collapse: bool | Literal["auto"] = "auto",
    min_chain: int = 3,
    pinned: Collection[str] = (),
    expanded: Collection[str] = (),
    room: Callable[[SessionGraph, Item], float] | None = None,
) -> TreeLayout:
    """Collapse chains (if asked) and compute tidy positions for a session graph.

    Parameters
    ----------
    graph:
        From :func:`~pinb.render.tree.graph.build_graph`.
    collapse:
        ``True``/``False``, or ``"auto"``: collapse when the graph has more than
        :data:`AUTO_COLLAPSE` nodes.
    min_chain:
        Shortest run of plain entries that becomes one chain item.
    pinned:
        Keys that must stay visible as single items (e.g. a selected entry).
    expanded:
        Keys of chain heads to keep open.
    room:
        Extra room (in units) an item needs to its right, e.g. for its label
        (:func:`~pinb.render.svg.label_room` for SVG labels).

    Returns
    -------
    TreeLayout
    """
    enabled = len(graph) > AUTO_COLLAPSE if collapse == "auto" else bool(collapse)
    with gc_paused():
        items, roots, item_of = collapse_chains(
            graph, min_chain=max(2, min_chain), pinned=pinned, expanded=expanded, enabled=enabled
        )
        extra = [room(graph, item) for item in items] if room is not None else None
        xs = tidy_layout([item.children for item in items], roots, extra=extra)
    for item, x in zip(items, xs, strict=True):
        item.x = x
    width = (max(xs) + 1.0) if xs else 0.0
    height = (max(item.depth for item in items) + 1) if items else 0
    return TreeLayout(graph, items, roots, item_of, width, height)
