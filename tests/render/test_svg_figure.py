"""SVG strings are well-formed and mark what they should; matplotlib figures avoid pyplot."""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pinb.render.figure import draw_stacked_bars, draw_token_bars, draw_tree
from pinb.render.graph import build_graph
from pinb.render.layout import layout_tree
from pinb.render.svg import bar_chart_svg, label_room, stacked_bars_svg, tree_svg
from tests.views.builders import demo_session, long_chain_session

SVG = "{http://www.w3.org/2000/svg}"


def test_tree_svg_marks_path_leaf_compaction_summary_and_labels(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    graph = build_graph(demo.session)
    layout = layout_tree(graph, collapse=False, room=label_room)
    svg = tree_svg(layout, selected=demo.ids["u2"])
    root = ET.fromstring(svg)
    ids = {el.get("data-id") for el in root.iter() if el.get("data-id")}
    assert ids == {n.key for n in graph.nodes}
    titles = [el.text or "" for el in root.iter(f"{SVG}title")]
    assert len(titles) == len(graph)
    compaction = next(el for el in root.iter() if el.get("data-id") == demo.ids["compaction"])
    assert compaction.tag == f"{SVG}rect"
    summary = next(el for el in root.iter() if el.get("data-id") == demo.ids["branch_summary"])
    assert summary.tag == f"{SVG}path"
    texts = " ".join(el.text or "" for el in root.iter(f"{SVG}text"))
    assert "[alternative]" in texts and "compaction" in texts and "← leaf" in texts
    paths = [el for el in root.iter(f"{SVG}path") if el.get("stroke") == "#0969da"]
    assert len(paths) == 1  # the active path is one thick blue path
    rings = [el for el in root.iter(f"{SVG}circle") if el.get("stroke-dasharray")]
    assert len(rings) == 1  # the leaf marker
    assert any(el.get("stroke") == "#fb8500" for el in root.iter(f"{SVG}circle"))
    faded = [el for el in root.iter(f"{SVG}circle") if el.get("fill-opacity")]
    assert faded  # entries summarized by the compaction


def test_tree_svg_chain_pill() -> None:
    layout = layout_tree(build_graph(long_chain_session(100)), collapse=True)
    root = ET.fromstring(tree_svg(layout))
    chains = [el for el in root.iter(f"{SVG}rect") if el.get("data-chain")]
    assert [el.get("data-chain") for el in chains] == ["98"]
    assert "98 entries" in (chains[0].find(f"{SVG}title").text or "")  # type: ignore[union-attr]


def test_bar_svgs_are_well_formed() -> None:
    ET.fromstring(bar_chart_svg([("user", 10), ("<x>", 0)]))
    ET.fromstring(bar_chart_svg([]))
    svg = stacked_bars_svg(
        [("before", {"user": 5, "assistant": 7}), ("after", {"user": 1})],
        marks=[("threshold", 10), ("window", 12)],
    )
    root = ET.fromstring(svg)
    assert len(list(root.iter(f"{SVG}line"))) == 2


def test_figures_draw_on_given_axes_or_new_figure(tmp_path: Path) -> None:
    s = demo_session(tmp_path).session
    figure = draw_tree(s)
    assert isinstance(figure, Figure)
    fresh = Figure()
    ax: Axes = fresh.add_subplot()
    assert draw_tree(build_graph(s), ax) is fresh
    assert len(ax.collections) >= 3  # two edge collections and the node scatters
    bars = draw_token_bars([("user", 3), ("$x$ tool", 5)], title="t $")
    stacked = draw_stacked_bars(
        [("before", {"user": 5}), ("after", {"user": 2})], marks=[("window", 9)]
    )
    for fig in (figure, fresh, bars, stacked):
        fig.savefig(io.BytesIO(), format="png")  # renders without pyplot


def test_render_never_imports_pyplot_ipython_or_widgets() -> None:
    code = (
        "import sys\n"
        "from pinb.core import Session\n"
        "import pinb.render as r\n"
        "s = Session.in_memory('/x')\n"
        "s.append_message({'role': 'user', 'content': 'hi', 'timestamp': 1})\n"
        "r.draw_tree(s).savefig(__import__('io').BytesIO())\n"
        "r.to_networkx(s)\n"
        "bad = [m for m in ('matplotlib.pyplot', 'IPython', 'ipywidgets') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "import pinb.views\n"
        "assert 'ipywidgets' not in sys.modules and 'IPython' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_core_does_not_import_render_or_views() -> None:
    code = (
        "import sys, pinb.core\n"
        "assert not [m for m in sys.modules if m.startswith(('pinb.render', 'pinb.views'))]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def _row_of(y: float) -> int:
    return round((y - 14) / 22)  # MARGIN and DY of the tree drawing


def test_labels_never_overlap_their_right_neighbour(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    graph = build_graph(demo.session)
    tight = layout_tree(graph, collapse=False)  # no room made: labels are cut or dropped
    roomy = layout_tree(graph, collapse=False, room=label_room)
    assert roomy.width > tight.width
    for layout in (tight, roomy):
        root = ET.fromstring(tree_svg(layout))
        nodes: dict[int, list[float]] = {}
        for item in layout.items:
            nodes.setdefault(item.depth, []).append(14 + item.x * 20)
        labels = [
            (float(el.get("x") or 0), _row_of(float(el.get("y") or 0) - 4), el.text or "")
            for el in root.iter(f"{SVG}text")
        ]
        assert labels
        for x, row, text in labels:
            right = [cx for cx in nodes[row] if cx > x]
            if right:
                assert x + 6.5 * len(text) <= min(right), (text, x, right)
