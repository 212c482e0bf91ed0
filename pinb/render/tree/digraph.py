"""The session tree as a ``networkx.DiGraph``, placed on the rows' lanes when given a layout.

Above both the graph (:mod:`.graph`) and the rows (:mod:`.rows`): it reads the one and,
when asked, the other, and neither of them needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core import Session
from ...core.context.build import UNSET
from .graph import SessionGraph, build_graph
from .rows import RowLayout

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["to_networkx"]


def to_networkx(
    session: Session | SessionGraph,
    leaf_id: Any = UNSET,
    *,
    show_leaf_entries: bool = False,
    layout: RowLayout | None = None,
) -> nx.DiGraph:
    """The session tree as a ``networkx.DiGraph`` (edges parent → child).

    Node attributes: ``type``, ``role``, ``kind``, ``label``, ``tokens``, ``timestamp``,
    ``depth``, ``on_path``, ``is_leaf``, ``region`` (``"summarized"``, ``"kept"``,
    ``"compaction"``, ``"after"`` or ``"active"`` on the active path, else ``None``),
    ``summarized`` / ``kept`` (by the last compaction), ``is_compaction``,
    ``is_branch_summary``, ``cycle``, ``orphan``, ``edit`` and ``archived``; with a
    ``layout`` (:func:`~pinb.render.tree.rows.row_layout`) also ``row``, ``lane`` and ``pos``
    (``(lane, -row)``, for ``networkx.draw``). Graph attributes: ``leaf``, ``compaction``,
    ``first_kept``, ``archived`` (target key → entries hidden).

    Examples
    --------
    >>> from pinb.core import Session
    >>> s = Session.in_memory("/tmp")
    >>> _ = s.append_message({"role": "user", "content": "hi", "timestamp": 1})
    >>> g = to_networkx(s)
    >>> [d["role"] for _, d in g.nodes(data=True)]
    ['user']
    """
    import networkx as nx

    graph = (
        session
        if isinstance(session, SessionGraph)
        else build_graph(session, leaf_id, show_leaf_entries=show_leaf_entries)
    )
    if layout is not None and layout.graph is not graph:
        graph = layout.graph
    g = nx.DiGraph(
        leaf=graph.leaf_key,
        compaction=graph.compaction_key,
        first_kept=graph.first_kept_key,
        archived=dict(graph.archived),
    )
    for i, node in enumerate(graph.nodes):
        extra: dict[str, Any] = {}
        if layout is not None:
            row = layout.row_of.get(i)
            if row is not None:
                lane = layout.rows[row].lane
                extra = {"row": row, "lane": lane, "pos": (float(lane), -float(row))}
        g.add_node(
            node.key,
            type=node.type,
            role=node.role,
            kind=node.kind,
            label=node.label,
            tokens=node.tokens,
            timestamp=node.entry.timestamp,
            depth=node.depth,
            on_path=node.on_path,
            is_leaf=node.is_leaf,
            region=node.region,
            summarized=node.region == "summarized",
            kept=node.region == "kept",
            is_compaction=node.type == "compaction",
            is_branch_summary=node.type == "branch_summary",
            cycle=node.cycle,
            orphan=node.orphan,
            edit=node.edit,
            archived=node.archived,
            **extra,
        )
    for node in graph.nodes:
        if node.parent >= 0:
            g.add_edge(graph.nodes[node.parent].key, node.key)
    return g
