"""``TreeView``: the session tree as a picture you can read — rows beside a lane graph.

The picture is an output of its own (``image/svg+xml`` and, with matplotlib, ``image/png``)
with a text form (``text/plain``), so it shows untrusted, converted by nbconvert with
sanitizing on, and on GitHub alike; :meth:`TreeView.to_html` gives the same rows as a
sanitizer-safe table for embedding in other HTML.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal

from ..core import Session
from ..core.context.build import UNSET
from ..render.html import escape, mimebundle, muted, style, table, title, wrap
from ..render.tree.cells import Cells, row_cells, title_lines
from ..render.tree.digraph import to_networkx
from ..render.tree.graph import SessionGraph, build_graph
from ..render.tree.picture import lane_strings, tree_picture_svg, tree_text
from ..render.tree.rows import MAX_ROWS, RowLayout, row_layout

if TYPE_CHECKING:
    import networkx as nx
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["TreeView", "tree_table_html"]


def tree_table_html(layout: RowLayout, cells: list[Cells] | None = None) -> str:
    """The rows as an HTML table (lanes as box-drawing text): no SVG, no style sheet."""
    cells = cells if cells is not None else row_cells(layout, text_chars=90)
    lanes = lane_strings(layout, cells)
    rows: list[tuple[Any, ...]] = []
    classes: list[str] = []
    for lane, cell in zip(lanes, cells, strict=True):
        if cell.boundary:
            rows.append(("", "", "", f"┄┄ {cell.boundary} ┄┄", None))
            classes.append("pinb-summary-row")
        tags = " ".join(text for text, _ in cell.tags)
        label = f"[{cell.label}]" if cell.label else ""
        body = " ".join(part for part in (tags, label, cell.text) if part)
        rows.append(
            (
                f'<span style="font-family:ui-monospace,Menlo,Consolas,monospace;'
                f'white-space:pre;color:{cell.color}">{escape(lane)}</span>',
                cell.kind_text,
                cell.id_text,
                body,
                cell.tokens,
            )
        )
        classes.append(
            "pinb-faded"
            if cell.band == "summarized"
            else "pinb-summary-row"
            if cell.band in ("compaction", "branch_summary")
            else "pinb-kept"
            if cell.on_path
            else ""
        )
    return table(
        ["", "kind", "id", "label and content", "tokens (chars/4)"],
        rows,
        numeric=(4,),
        raw_columns=(0,),
        wrap_columns=(3,),
        row_classes=classes,
    )


class TreeView:
    """The session tree: one row per entry beside the lane graph, the active path marked.

    Every row says what the entry is (kind, short id, label, a line of its content, its
    chars/4 tokens); the active path is the thick blue lane, the leaf is ringed, entries
    the last compaction summarized are greyed, its boundary is a red dashed line, branch
    summaries are gold. Bookkeeping markers (navigation, archive) are hidden, archived
    branches are left out and counted. A value object: the tree is read and laid out
    when the view is made.

    Parameters
    ----------
    session:
        The session to draw.
    leaf_id:
        Draw the active path to this entry instead of the session's leaf.
    collapse:
        Collapse runs of plain single-child entries into one row: ``True``, ``False`` or
        ``"auto"`` (only for large trees).
    show_leaf_entries:
        Also draw pinb's navigation and archive markers (bookkeeping, hidden by default).
    show_archived:
        Draw archived branches too (flagged "archived").
    selected:
        Key of an entry to highlight (and keep out of collapsed chains).
    expanded:
        Keys of chain heads and folded branches to keep open.
    max_rows:
        Most rows in the picture: beyond it, side branches are folded, then rows elided.
    png:
        Add an ``image/png`` rendering (needs matplotlib) to the display, which is what an
        untrusted notebook in JupyterLab shows.

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
        show_archived: bool = False,
        selected: str | None = None,
        expanded: Collection[str] = (),
        max_rows: int | None = MAX_ROWS,
        png: bool = True,
    ) -> None:
        self.session_id = session.id
        self.session_name = session.name
        self.selected = selected
        self.png = png
        self.graph: SessionGraph = build_graph(
            session, leaf_id, show_leaf_entries=show_leaf_entries, show_archived=show_archived
        )
        self.layout: RowLayout = row_layout(
            self.graph,
            collapse=collapse,
            pinned=(selected,) if selected else (),
            expanded=expanded,
            max_rows=max_rows,
        )
        self.cells: list[Cells] = row_cells(self.layout)
        self._svg: str | None = None
        self._png: tuple[bytes, int, int] | None = None

    def __len__(self) -> int:
        return len(self.graph)

    def summary(self) -> str:
        """One line: entries, branches, compactions, summaries, what is hidden, the leaf."""
        return title_lines(self.layout)[1]

    def __repr__(self) -> str:
        return f"<TreeView {self.summary()}>"

    def to_text(self) -> str:
        """The tree as text, like ``git log --graph`` (the ``text/plain`` form)."""
        return tree_text(self.layout)

    def to_svg(self) -> str:
        """The picture as one SVG document (cached)."""
        if self._svg is None:
            self._svg = tree_picture_svg(self.layout, cells=self.cells, selected=self.selected)
        return self._svg

    def to_png(self) -> bytes:
        """The picture as PNG (matplotlib, the same layout), cached."""
        return self._png_data()[0]

    def _png_data(self) -> tuple[bytes, int, int]:
        if self._png is None:
            from ..render.figure import tree_png

            self._png = tree_png(self.layout, selected=self.selected)
        return self._png

    def to_html(self) -> str:
        """Title, summary and the rows as a sanitizer-safe table (no inline SVG)."""
        heading, summary = title_lines(self.layout)
        body = title(heading) + f"<div{style('muted')}>{escape(summary)}</div>"
        if self.layout.rows:
            body += tree_table_html(self.layout, self.cells)
        else:
            body += muted("Nothing to draw yet: the tree grows with the first message.")
        return wrap(body, "pinb-tree-view")

    def figure(self, ax: Axes | None = None) -> Figure:
        """The same picture drawn with matplotlib (on ``ax`` or a new ``Figure``)."""
        from ..render.figure import draw_tree

        return draw_tree(self.layout, ax, selected=self.selected)

    def to_networkx(self) -> nx.DiGraph:
        """The drawn entries as a ``networkx.DiGraph`` with their annotations and rows."""
        return to_networkx(self.graph, layout=self.layout)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """``text/plain`` (the text form) and ``image/svg+xml``; IPython adds ``image/png``
        from :meth:`_repr_png_` (with its display size), which untrusted notebooks show."""
        return mimebundle(self.to_text(), svg=self.to_svg(), include=include, exclude=exclude)

    def _repr_png_(self) -> tuple[bytes, dict[str, int]] | None:
        if not self.png:
            return None
        try:
            png, width, height = self._png_data()
        except ImportError:  # no Pillow: the SVG and the text still show
            return None
        return png, {"width": width, "height": height}
