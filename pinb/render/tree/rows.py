"""The session tree as rows beside a lane graph, like ``git log --graph`` or Pi's ``/tree``.

One row per entry (or per collapsed chain, or per folded branch), in pre-order. The lane
graph keeps the active path in one straight lane: at a branch point the branches that leave
the path are listed first, one lane to the right, and the path continues below them in the
same lane. Off the path, the latest child continues its parent's lane and the others step
right. Everything here is computed, never drawn: SVG, text, matplotlib and the widget draw
the same :class:`RowLayout`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from ...core.gc import gc_paused
from .graph import SessionGraph, kind_name, plural
from .layout import AUTO_COLLAPSE, collapse_chains

__all__ = [
    "MAX_ROWS",
    "Edge",
    "Row",
    "RowLayout",
    "row_layout",
]

#: Rows a static picture shows at most; larger trees fold side branches, then elide.
MAX_ROWS = 300


@dataclass(slots=True)
class Row:
    """One drawn row.

    Attributes
    ----------
    kind:
        ``"entry"``, ``"chain"`` (a run of single-child entries), ``"folded"`` (a whole
        side branch in one row) or ``"elided"`` (rows left out of a static picture).
    nodes:
        Graph node indices the row stands for (the chain's run, the folded subtree).
    lane:
        Column of the row's node in the lane graph.
    parent:
        Row index of the parent row (``-1`` for a root or a row below an elided gap).
    key:
        Key of the row's (first) entry; for an elided row, ``""``.
    count:
        Entries the row stands for.
    tokens:
        chars/4 estimate of the entries it stands for.
    on_path:
        The row's entries are on the active path.
    """

    kind: str
    nodes: list[int]
    lane: int
    parent: int
    key: str
    count: int
    tokens: int
    on_path: bool

    @property
    def node(self) -> int:
        """The (first) graph node of the row (``-1`` for an elided row)."""
        return self.nodes[0] if self.nodes else -1


@dataclass(frozen=True, slots=True)
class Edge:
    """A parent → child link between two rows.

    Drawn as a vertical line in the parent's lane from ``parent`` down to ``child`` and,
    when ``side``, a short turn into the child's lane at the child's row.
    """

    parent: int
    child: int
    lane: int
    child_lane: int
    on_path: bool
    dotted: bool = False

    @property
    def side(self) -> bool:
        return self.child_lane != self.lane


@dataclass
class RowLayout:
    """Rows and edges of one session graph, ready to draw.

    Attributes
    ----------
    graph:
        The annotated graph laid out.
    rows / edges:
        Rows top to bottom; links between them.
    lanes:
        Number of lanes (graph columns).
    row_of:
        Graph node index → row showing it (absent for elided nodes).
    folded / chains:
        Keys of folded branch roots and of collapsed chain heads.
    elided:
        Rows left out of the picture (``max_rows``).
    """

    graph: SessionGraph
    rows: list[Row]
    edges: list[Edge]
    lanes: int
    row_of: dict[int, int]
    folded: list[str] = field(default_factory=list)
    chains: list[str] = field(default_factory=list)
    elided: int = 0

    def __len__(self) -> int:
        return len(self.rows)

    def row_for(self, key: str) -> int | None:
        """The row that shows the entry ``key`` (its chain's or folded branch's row)."""
        node = self.graph.index.get(key)
        return None if node is None else self.row_of.get(node)

    def kinds_present(self) -> list[str]:
        """Node kinds drawn (entry rows), in first-seen order, for the legend."""
        kinds: dict[str, None] = {}
        nodes = self.graph.nodes
        for row in self.rows:
            if row.kind == "entry":
                kinds.setdefault(nodes[row.node].kind, None)
            elif row.kind in ("chain", "folded"):
                kinds.setdefault(row.kind, None)
        return list(kinds)

    def chain_breakdown(self, row: Row) -> str:
        """``"12 user, 11 assistant, 11 tool result"`` for a chain or folded row."""
        counts = Counter(self.graph.nodes[i].kind for i in row.nodes)
        return ", ".join(f"{n:,} {kind_name(k)}" for k, n in counts.most_common(4)) + (
            ", …" if len(counts) > 4 else ""
        )

    def describe(self, row: Row) -> str:
        """The text of a chain, folded or elided row."""
        if row.kind == "elided":
            return f"… {plural(row.count, 'row')} not shown …"
        if row.kind == "chain":
            return f"{plural(row.count, 'entry')} in a chain: {self.chain_breakdown(row)}"
        branches = sum(1 for i in row.nodes if not self.graph.nodes[i].children)
        return (
            f"folded: a branch of {plural(row.count, 'entry')} "
            f"({plural(branches, 'end')}): {self.chain_breakdown(row)}"
        )


def _subtree_sizes(children: list[list[int]], roots: list[int]) -> list[int]:
    """Items in each item's subtree (iterative post-order)."""
    size = [1] * len(children)
    order: list[int] = []
    stack = list(roots)
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(children[v])
    for v in reversed(order):
        for c in children[v]:
            size[v] += size[c]
    return size


def row_layout(
    graph: SessionGraph,
    *,
    collapse: bool | Literal["auto"] = "auto",
    min_chain: int = 3,
    pinned: Collection[str] = (),
    expanded: Collection[str] = (),
    max_rows: int | None = MAX_ROWS,
) -> RowLayout:
    """Lay a session graph out as rows beside a lane graph.

    Parameters
    ----------
    graph:
        From :func:`~pinb.render.tree.graph.build_graph`.
    collapse:
        Collapse runs of plain single-child entries into one row: ``True``, ``False`` or
        ``"auto"`` (when the graph has more than :data:`~pinb.render.tree.layout.AUTO_COLLAPSE`
        entries).
    min_chain:
        Shortest run that becomes a chain row.
    pinned:
        Keys that must keep a row of their own (a selection, search hits); their branches
        are never folded.
    expanded:
        Keys of chain heads and folded branch roots to show open.
    max_rows:
        Most rows to draw (``None``: all). Beyond it, the largest branches off the active
        path are folded into one row each; if that is not enough, the middle rows are
        elided (the top and the rows around the leaf stay).

    Returns
    -------
    RowLayout
    """
    with gc_paused():
        return _row_layout(graph, collapse, min_chain, pinned, expanded, max_rows)


def _row_layout(
    graph: SessionGraph,
    collapse: bool | Literal["auto"],
    min_chain: int,
    pinned: Collection[str],
    expanded: Collection[str],
    max_rows: int | None,
) -> RowLayout:
    nodes = graph.nodes
    enabled = len(graph) > AUTO_COLLAPSE if collapse == "auto" else bool(collapse)
    items, roots, item_of = collapse_chains(
        graph, min_chain=max(2, min_chain), pinned=pinned, expanded=expanded, enabled=enabled
    )
    n = len(items)
    children = [item.children for item in items]
    on_path = [any(nodes[i].on_path for i in item.nodes) for item in items]

    # Which child continues its parent's lane: the one on the active path, else the last.
    continuing = [-1] * n
    for v in range(n):
        kids = children[v]
        if kids:
            continuing[v] = next((c for c in kids if on_path[c]), kids[-1])

    # Fold the largest branches off the path while there are too many rows.
    folded: set[int] = set()
    if max_rows is not None and n > max_rows:
        sizes = _subtree_sizes(children, roots)
        keep = {item_of[graph.index[k]] for k in pinned if k in graph.index}
        protected = set(keep)
        # An item must not be folded when a pinned item lies below it.
        parent_of = [item.parent for item in items]
        for k in keep:
            p = parent_of[k]
            while p >= 0 and p not in protected:
                protected.add(p)
                p = parent_of[p]
        expanded_set = set(expanded)
        candidates = [
            v
            for v in range(n)
            if not on_path[v]
            and v not in protected
            and sizes[v] > 1
            and nodes[items[v].nodes[0]].key not in expanded_set
        ]
        candidates.sort(key=lambda v: -sizes[v])
        rows_now = n
        for v in candidates:
            if rows_now <= max_rows:
                break
            p = parent_of[v]
            covered = False
            while p >= 0:
                if p in folded:
                    covered = True
                    break
                p = parent_of[p]
            if covered:
                continue
            folded.add(v)
            rows_now -= sizes[v] - 1

    # Pre-order walk: branches leaving a node first (one lane right), its lane continued last.
    rows: list[Row] = []
    row_of: dict[int, int] = {}
    chains: list[str] = []
    folded_keys: list[str] = []
    ordered_roots = sorted(roots, key=lambda r: not on_path[r])  # the path's tree first
    stack: list[tuple[int, int, int]] = [(r, 0, -1) for r in reversed(ordered_roots)]
    while stack:
        v, lane, parent_row = stack.pop()
        item = items[v]
        head = nodes[item.nodes[0]]
        position = len(rows)
        if v in folded:
            members: list[int] = []
            walk = [v]
            while walk:
                w = walk.pop()
                members.extend(items[w].nodes)
                walk.extend(children[w])
            rows.append(
                Row(
                    "folded",
                    members,
                    lane,
                    parent_row,
                    head.key,
                    len(members),
                    sum(nodes[i].tokens for i in members),
                    False,
                )
            )
            folded_keys.append(head.key)
            for i in members:
                row_of[i] = position
            continue
        kind = "chain" if item.is_chain else "entry"
        if item.is_chain:
            chains.append(head.key)
        rows.append(
            Row(
                kind,
                list(item.nodes),
                lane,
                parent_row,
                head.key,
                len(item.nodes),
                sum(nodes[i].tokens for i in item.nodes),
                on_path[v],
            )
        )
        for i in item.nodes:
            row_of[i] = position
        kids = children[v]
        if not kids:
            continue
        cont = continuing[v]
        stack.append((cont, lane, position))
        for c in reversed(kids):
            if c != cont:
                stack.append((c, lane + 1, position))

    elided = 0
    if max_rows is not None and len(rows) > max_rows:
        rows, row_of, elided = _elide(rows, row_of, max_rows, graph)

    edges: list[Edge] = []
    for index, row in enumerate(rows):
        if row.parent < 0:
            continue
        parent = rows[row.parent]
        edges.append(
            Edge(
                row.parent,
                index,
                parent.lane,
                row.lane,
                row.on_path and parent.on_path,
                dotted=parent.kind == "elided",
            )
        )
    lanes = max((row.lane for row in rows), default=-1) + 1
    return RowLayout(graph, rows, edges, lanes, row_of, folded_keys, chains, elided)


def _elide(
    rows: list[Row], row_of: dict[int, int], max_rows: int, graph: SessionGraph
) -> tuple[list[Row], dict[int, int], int]:
    """Keep the first rows and those up to the leaf's; one ``elided`` row stands between."""
    leaf_row = next(
        (i for i, r in enumerate(rows) if any(graph.nodes[n].is_leaf for n in r.nodes)),
        len(rows) - 1,
    )
    tail = max(1, (max_rows * 3) // 4)
    end = min(len(rows), max(leaf_row + max(1, max_rows // 8), tail))
    start_tail = max(0, end - tail)
    head = max(1, max_rows - tail - 1)
    if start_tail <= head:
        start_tail, end = head, head + tail
    kept = [*range(head), *range(start_tail, min(end, len(rows)))]
    kept_set = set(kept)
    hidden = len(rows) - len(kept)
    new_index: dict[int, int] = {}
    out: list[Row] = []
    gap = -1
    for old in kept:
        if old == start_tail and hidden:
            gap = len(out)
            lane = rows[old].lane
            out.append(Row("elided", [], lane, -1, "", hidden, 0, False))
        new_index[old] = len(out)
        out.append(rows[old])
    for row in out:
        if row.kind == "elided":
            continue
        if row.parent >= 0:
            row.parent = new_index[row.parent] if row.parent in kept_set else gap
    new_row_of = {node: new_index[r] for node, r in row_of.items() if r in new_index}
    return out, new_row_of, hidden
