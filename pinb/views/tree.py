"""``TreeView``: the whole session tree as SVG, active path highlighted, chains collapsible."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal

from ..core import Session
from ..core.context import UNSET
from ..render.graph import SessionGraph, build_graph, to_networkx
from ..render.html import escape, mimebundle, wrap
from ..render.layout import TreeLayout, layout_tree
from ..render.svg import ROLE_COLORS, label_room, tree_svg

if TYPE_CHECKING:
    import networkx as nx
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["TreeView", "legend_html"]

_LEGEND = (
    ("user", "user"),
    ("assistant", "assistant"),
    ("toolResult", "tool result"),
    ("bashExecution", "bash"),
    ("custom", "custom"),
    ("compaction", "compaction ■"),
    ("branch_summary", "branch summary ◆"),
    ("chain", "collapsed chain"),
)


def legend_html() -> str:
    """A one-line colour legend for tree pictures."""
    parts = [
        f'<span class="pinb-badge" style="background:{ROLE_COLORS[k]};color:#fff">{escape(t)}</span>'
        for k, t in _LEGEND
    ]
    parts.append('<span class="pinb-badge">metadata</span>')
    parts.append(
        '<span class="pinb-muted">blue line: active path · dashed ring: leaf · '
        "faded: summarized by the last compaction</span>"
    )
    return "<div>" + "".join(parts) + "</div>"


class TreeView:
    """The session tree: every branch, the active path, the leaf, labels and summaries.

    A value object: the tree is read and laid out when the view is made; display it (or
    call :meth:`to_svg` / :meth:`to_html`) any number of times.

    Parameters
    ----------
    session:
        The session to draw.
    leaf_id:
        Draw the active path to this entry instead of the session's leaf.
    collapse:
        Collapse runs of plain single-child entries into one "⋯ N entries" item:
        ``True``, ``False`` or ``"auto"`` (only for large trees).
    show_leaf_entries:
        Also draw ``leaf`` navigation records (bookkeeping, hidden by default).
    selected:
        Key of an entry to outline (and keep out of collapsed chains).
    expanded:
        Keys of chain heads to keep open.

    Examples
    --------
    >>> from pinb.core import Session
    >>> s = Session.in_memory("/tmp")
    >>> _ = s.append_message({"role": "user", "content": "hi", "timestamp": 1})
    >>> TreeView(s).to_svg().startswith("<svg")
    True
    """

    def __init__(
        self,
        session: Session,
        leaf_id: Any = UNSET,
        *,
        collapse: bool | Literal["auto"] = "auto",
        show_leaf_entries: bool = False,
        selected: str | None = None,
        expanded: Collection[str] = (),
    ) -> None:
        self.session_id = session.id
        self.session_name = session.name
        self.selected = selected
        self.graph: SessionGraph = build_graph(
            session, leaf_id, show_leaf_entries=show_leaf_entries
        )
        self.layout: TreeLayout = layout_tree(
            self.graph,
            collapse=collapse,
            pinned=(selected,) if selected else (),
            expanded=expanded,
            room=label_room,
        )
        self._svg: str | None = None

    def __len__(self) -> int:
        return len(self.graph)

    def to_text(self) -> str:
        """One line: entries, branches, leaf, compactions."""
        compactions = sum(1 for n in self.graph.nodes if n.type == "compaction")
        summaries = sum(1 for n in self.graph.nodes if n.type == "branch_summary")
        parts = [f"{len(self.graph)} entries", f"{self.graph.branch_count} branches"]
        if compactions:
            parts.append(f"{compactions} compactions")
        if summaries:
            parts.append(f"{summaries} branch summaries")
        if self.layout.chains:
            parts.append(f"{self.layout.chains} chains collapsed")
        return f"<TreeView {', '.join(parts)}; leaf {self.graph.leaf_key}>"

    __repr__ = to_text

    def to_svg(self) -> str:
        """The tree as one SVG document (cached)."""
        if self._svg is None:
            self._svg = tree_svg(self.layout, selected=self.selected)
        return self._svg

    def to_html(self) -> str:
        """Title, legend and the scrollable SVG."""
        title = escape(self.session_name or self.session_id[:8])
        body = (
            f"<h3>Session tree · {title}</h3>"
            f'<div class="pinb-muted">{escape(self.to_text())}</div>'
            f"{legend_html()}"
            f'<div style="max-height:640px;overflow:auto">{self.to_svg()}</div>'
        )
        return wrap(body, "pinb-tree-view")

    def figure(self, ax: Axes | None = None) -> Figure:
        """The same tree drawn with matplotlib (on ``ax`` or a new ``Figure``)."""
        from ..render.figure import draw_tree

        return draw_tree(self.layout, ax)

    def to_networkx(self) -> nx.DiGraph:
        """The drawn entries as a ``networkx.DiGraph`` with their annotations."""
        return to_networkx(self.graph)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(
            self.to_text(),
            html=self.to_html(),
            svg=self.to_svg(),
            include=include,
            exclude=exclude,
        )
