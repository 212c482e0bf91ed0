"""Pure rendering: session → annotated graph → tidy layout → SVG / HTML / networkx / matplotlib."""

# Nothing here imports IPython or ipywidgets; networkx and matplotlib are imported only by
# the functions that need them (a test checks this).

from __future__ import annotations

from .figure import draw_stacked_bars, draw_token_bars, draw_tree
from .graph import (
    NodeInfo,
    SessionGraph,
    build_graph,
    entry_kind,
    entry_preview,
    entry_tokens,
    node_key,
    path_regions,
    to_networkx,
    tool_tokens,
)
from .html import clean_text, escape, markdown_to_html, mimebundle, table
from .layout import AUTO_COLLAPSE, Item, TreeLayout, collapse_chains, layout_tree, tidy_layout
from .svg import ROLE_COLORS, bar_chart_svg, color_of, label_room, stacked_bars_svg, tree_svg

__all__ = [
    "AUTO_COLLAPSE",
    "ROLE_COLORS",
    "Item",
    "NodeInfo",
    "SessionGraph",
    "TreeLayout",
    "bar_chart_svg",
    "build_graph",
    "clean_text",
    "collapse_chains",
    "color_of",
    "draw_stacked_bars",
    "draw_token_bars",
    "draw_tree",
    "entry_kind",
    "entry_preview",
    "entry_tokens",
    "escape",
    "label_room",
    "layout_tree",
    "markdown_to_html",
    "mimebundle",
    "node_key",
    "path_regions",
    "stacked_bars_svg",
    "table",
    "tidy_layout",
    "to_networkx",
    "tool_tokens",
    "tree_svg",
]
