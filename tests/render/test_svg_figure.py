"""The tree picture (SVG, text, matplotlib/PNG) marks what it should; figures avoid pyplot."""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pinb.core import Session
from pinb.core.compaction.span import compaction_span
from pinb.render.figure import draw_stacked_bars, draw_token_bars, draw_tree, tree_png
from pinb.render.svg import bar_chart_svg, stacked_bars_svg
from pinb.render.tree.cells import row_cells
from pinb.render.tree.graph import build_graph
from pinb.render.tree.picture import tree_picture_svg, tree_text
from pinb.render.tree.rows import row_layout
from tests.views.builders import demo_session, long_chain_session, user

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> str:
    return " ".join(el.text or "" for el in ET.fromstring(svg).iter(f"{SVG}text"))


def test_picture_says_what_each_row_is(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    ids = demo.ids
    graph = build_graph(demo.session)
    layout = row_layout(graph)
    svg = tree_picture_svg(layout, selected=ids["u2"])
    root = ET.fromstring(svg)
    shown = {el.get("data-id") for el in root.iter() if el.get("data-id")}
    assert shown == {n.key for n in graph.nodes}  # one node per entry, nothing collapsed
    texts = _texts(svg)
    # Title, counts with correct plurals, column heads and a line of every entry.
    assert "Session tree · Demo session" in texts
    assert "25 entries, 3 branches, 1 compaction, 1 branch summary" in texts
    assert "tokens (chars/4)" in texts
    assert "Read the config and fix the bug" in texts and "All tests pass." in texts
    assert "[alternative]" in texts and "◀ leaf" in texts
    assert "summarized" in texts and "kept" in texts
    # The compaction boundary, with the core's count of what it summarized and kept.
    compaction = next(e for e in demo.session.path_to() if e.type == "compaction")
    span = compaction_span(demo.session, compaction)
    assert (
        f"▲ {len(span.summarized)} entries summarized by compaction {compaction.id[:8]} · "
        f"{len(span.kept)} kept ▼" in texts
    )
    assert ids["u1"][:8] in texts  # short ids, as Pi shows them
    compaction = next(el for el in root.iter() if el.get("data-id") == ids["compaction"])
    assert compaction.tag == f"{SVG}rect"
    summary = next(el for el in root.iter() if el.get("data-id") == ids["branch_summary"])
    assert summary.tag == f"{SVG}path"
    blue = [
        el
        for el in root.iter(f"{SVG}path")
        if el.get("stroke") == "#0969da" and "V" in (el.get("d") or "")
    ]
    assert len(blue) == 1  # the active path is one thick blue line
    rings = [el for el in root.iter(f"{SVG}circle") if el.get("r") == "8.5"]
    assert len(rings) == 1  # the leaf marker (the legend has its own, smaller)
    assert any(el.get("fill") == "#ffe8cc" for el in root.iter(f"{SVG}rect"))  # selected row
    # The legend lists only kinds present.
    assert "system" not in texts and "collapsed chain" not in texts
    assert "bookkeeping (model change, thinking level, session name, label)" in texts


def test_active_path_is_one_straight_lane(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    layout = row_layout(build_graph(demo.session))
    on_path = [row for row in layout.rows if row.on_path]
    assert on_path and all(row.lane == 0 for row in on_path)
    # The branches leaving a2 come before the path continues, one lane right.
    order = [row.key for row in layout.rows]
    a2 = order.index(demo.ids["a2"])
    assert order[a2 + 1] == demo.ids["u2"] and layout.rows[a2 + 1].lane == 1
    assert order.index(demo.ids["u3"]) > order.index(demo.ids["a4"])
    for edge in layout.edges:
        assert edge.parent < edge.child
        assert edge.child_lane in (edge.lane, edge.lane + 1)


def test_text_form_reads_like_git_log_graph(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    text = tree_text(row_layout(build_graph(demo.session)))
    lines = text.splitlines()
    assert lines[0] == "Session tree · Demo session"
    assert any(line.startswith("├─○") and "Also run the tests" in line for line in lines)
    assert any(line.startswith("●") and "◀ leaf" in line for line in lines)
    assert any("entries summarized by compaction" in line and "kept ▼" in line for line in lines)
    assert lines[-1].startswith("legend:")


def test_empty_session_says_so() -> None:
    s = Session.in_memory("/x")
    layout = row_layout(build_graph(s))
    assert not layout.rows
    assert "empty session: no entries yet" in tree_text(layout)
    assert "Nothing to draw yet" in _texts(tree_picture_svg(layout))
    assert "leaf None" not in tree_text(layout)


def branchy_session(main: int = 300, every: int = 30, side: int = 40) -> Session:
    """A main line with a side branch of ``side`` entries every ``every`` entries."""
    s = Session.in_memory("/x")
    previous = None
    for i in range(main):
        entry = s.append_message(user(f"main {i}"), validate=False)
        if i and i % every == 0:
            s.branch(entry.id, persist=False)
            for j in range(side):
                s.append_message(user(f"side {i}.{j}"), validate=False)
            s.branch(entry.id, persist=False)
        previous = entry
    assert previous is not None
    return s


def test_chains_and_folds_keep_large_trees_small() -> None:
    s = branchy_session()
    graph = build_graph(s)
    layout = row_layout(graph, max_rows=20)
    assert len(layout.rows) <= 21
    assert layout.chains and layout.folded
    svg = tree_picture_svg(layout)
    texts = _texts(svg)
    assert "in a chain" in texts and "folded: a branch of" in texts
    # Every node is represented by a row, and the leaf's row is there.
    leaf_row = layout.row_for(graph.leaf_key or "")
    assert leaf_row is not None and layout.rows[leaf_row].on_path
    assert sum(r.count for r in layout.rows if r.kind != "elided") + sum(
        r.count for r in layout.rows if r.kind == "elided"
    ) >= len(layout.rows)
    expanded = row_layout(graph, max_rows=None, collapse=False)
    assert len(expanded.rows) == len(graph)


def test_elided_rows_when_the_path_alone_is_too_long() -> None:
    s = long_chain_session(300)
    graph = build_graph(s)
    labels = [e.id for e in s.entries[::3]]
    layout = row_layout(graph, pinned=labels, max_rows=40)
    assert layout.elided > 0
    gap = [r for r in layout.rows if r.kind == "elided"]
    assert len(gap) == 1 and gap[0].count == layout.elided
    assert any(e.dotted for e in layout.edges)
    assert "rows not shown" in tree_text(layout)
    ET.fromstring(tree_picture_svg(layout))


def test_matplotlib_draws_the_same_rows(tmp_path: Path) -> None:
    s = demo_session(tmp_path).session
    layout = row_layout(build_graph(s))
    figure = draw_tree(layout)
    assert isinstance(figure, Figure)
    texts = [t.get_text() for t in figure.axes[0].texts]
    cells = row_cells(layout)
    assert [c.kind_text for c in cells] == [t for t in texts if t in {c.kind_text for c in cells}][
        : len(cells)
    ]
    assert "Session tree · Demo session" in texts
    fresh = Figure()
    ax: Axes = fresh.add_subplot()
    assert draw_tree(build_graph(s), ax) is fresh
    png, width, height = tree_png(layout)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and width > 500 and height > 300
    bars = draw_token_bars([("user", 3), ("$x$ tool", 5)], title="t $")
    stacked = draw_stacked_bars(
        [("before", {"user": 5}), ("after", {"user": 2})], marks=[("window", 9)]
    )
    for fig in (figure, fresh, bars, stacked):
        fig.savefig(io.BytesIO(), format="png")  # renders without pyplot


def test_bar_svgs_are_well_formed() -> None:
    ET.fromstring(bar_chart_svg([("user", 10), ("<x>", 0)]))
    ET.fromstring(bar_chart_svg([]))
    svg = stacked_bars_svg(
        [("before", {"user": 5, "assistant": 7}), ("after", {"user": 1})],
        marks=[("threshold", 10), ("window", 12)],
    )
    root = ET.fromstring(svg)
    assert len(list(root.iter(f"{SVG}line"))) == 2


def test_render_never_imports_pyplot_ipython_or_widgets() -> None:
    code = (
        "import sys\n"
        "from pinb.core import Session\n"
        "import pinb.render as r\n"
        "s = Session.in_memory('/x')\n"
        "s.append_message({'role': 'user', 'content': 'hi', 'timestamp': 1})\n"
        "r.draw_tree(s).savefig(__import__('io').BytesIO())\n"
        "r.tree_png(s)\n"
        "r.to_networkx(s)\n"
        "bad = [m for m in ('matplotlib.pyplot', 'IPython', 'ipywidgets') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "import pinb.views\n"
        "assert 'ipywidgets' not in sys.modules and 'IPython' not in sys.modules\n"
        "assert 'anywidget' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_core_does_not_import_render_or_views() -> None:
    code = (
        "import sys, pinb.core\n"
        "assert not [m for m in sys.modules if m.startswith(('pinb.render', 'pinb.views'))]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_bookkeeping_leaf_points_to_where_the_conversation_continues(tmp_path: Path) -> None:
    from pinb.render.tree.cells import title_lines

    s = Session.create("/p", tmp_path)
    s.append_message(user("first"))
    last = s.append_message(user("second"))
    label = s.set_label(last.id, "checkpoint")  # Pi's /label appends at the leaf
    change = s.append_model_change("anthropic", "claude-haiku-4-5")
    layout = row_layout(build_graph(s))
    cells = {c.key: c for c in row_cells(layout)}
    assert s.leaf_id == change.id
    # The ring and the words go to the last message; what follows is bookkeeping.
    assert [c.key for c in cells.values() if c.is_leaf] == [last.id]
    assert ("◀ continues here", "leaf") in cells[last.id].tags
    assert ("bookkeeping after it", "summarized") in cells[label.id].tags
    assert ("leaf · bookkeeping", "summarized") in cells[change.id].tags
    summary = title_lines(layout)[1]
    assert f"leaf {change.id} (a model change: the conversation continues after {last.id})" in (
        summary
    )
    text = tree_text(layout)
    assert "◀ continues here" in text and "◀ leaf" not in text
    # A message at the leaf is the leaf, as before.
    reply = s.append_message(user("third"))
    cells = {c.key: c for c in row_cells(row_layout(build_graph(s)))}
    assert cells[reply.id].is_leaf and ("◀ leaf", "leaf") in cells[reply.id].tags
    assert not any(tag for tag, _ in cells[change.id].tags)
    assert "continues after" not in title_lines(row_layout(build_graph(s)))[1]
