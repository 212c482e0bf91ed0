"""Pure rendering: session → annotated graph → rows / tidy layout → SVG, text, HTML, figures.

Nothing here imports IPython or ipywidgets; networkx and matplotlib are imported only by
the functions that need them (a test checks this).
"""

from __future__ import annotations

from .context_chart import ContextChart, context_chart, draw_context_chart
from .figure import draw_stacked_bars, draw_token_bars, draw_tree, tree_png
from .html import SAFE_TAGS, clean_text, escape, mimebundle, table
from .markdown import markdown_to_html, markdown_to_markdown
from .svg import ROLE_COLORS, bar_chart_svg, color_of, stacked_bars_svg
from .tree.cells import Cells, row_cells
from .tree.digraph import to_networkx
from .tree.graph import (
    KIND_NAMES,
    NodeInfo,
    SessionGraph,
    build_graph,
    entry_kind,
    entry_preview,
    entry_tokens,
    kind_name,
    node_key,
    path_regions,
    plural,
    tool_tokens,
)
from .tree.layout import AUTO_COLLAPSE, Item, TreeLayout, collapse_chains, layout_tree, tidy_layout
from .tree.picture import tree_picture_svg, tree_text
from .tree.rows import MAX_ROWS, Edge, Row, RowLayout, row_layout

__all__ = [
    "AUTO_COLLAPSE",
    "KIND_NAMES",
    "MAX_ROWS",
    "ROLE_COLORS",
    "SAFE_TAGS",
    "Cells",
    "ContextChart",
    "Edge",
    "Item",
    "NodeInfo",
    "Row",
    "RowLayout",
    "SessionGraph",
    "TreeLayout",
    "bar_chart_svg",
    "build_graph",
    "clean_text",
    "collapse_chains",
    "color_of",
    "context_chart",
    "draw_context_chart",
    "draw_stacked_bars",
    "draw_token_bars",
    "draw_tree",
    "entry_kind",
    "entry_preview",
    "entry_tokens",
    "escape",
    "kind_name",
    "layout_tree",
    "markdown_to_html",
    "markdown_to_markdown",
    "mimebundle",
    "node_key",
    "path_regions",
    "plural",
    "row_cells",
    "row_layout",
    "stacked_bars_svg",
    "table",
    "tidy_layout",
    "to_networkx",
    "tool_tokens",
    "tree_picture_svg",
    "tree_png",
    "tree_text",
]
