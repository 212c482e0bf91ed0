"""Every picture of the tree (text, SVG, PNG, matplotlib, the view's PNG) draws an entry
id holding line breaks, control characters or a lone surrogate (issue 23, reproduction 4).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session

HEADER = {"type": "session", "version": 3, "id": "odd-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}  # fmt: skip


def _message(entry_id: str, parent: str | None, message: dict[str, Any], second: int) -> str:
    entry = {"type": "message", "id": entry_id, "parentId": parent,
             "timestamp": f"2025-01-01T00:00:{second:02d}.000Z", "message": message}  # fmt: skip
    return json.dumps(entry)


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
@pytest.mark.parametrize("odd", ["ab\r\ncd", "ab\u0085cd", "ab\u2028cd", "a\x00\x1b[31m", "\ud83d"])
def test_every_picture_draws_an_odd_id(odd: str, tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from pinb.render import build_graph, draw_tree, row_layout, tree_picture_svg, tree_text
    from pinb.render.tree.raster import tree_png_pillow
    from pinb.views import TreeView

    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([json.dumps(HEADER),
                   _message(odd, None, {"role": odd, "content": odd, "timestamp": 1}, 1),
                   json.dumps({"type": "label", "id": "l1", "parentId": odd, "targetId": odd,
                               "label": odd, "timestamp": "2025-01-01T00:00:02.000Z"})])
        + "\n"
    )  # fmt: skip
    session = Session.open(path)
    layout = row_layout(build_graph(session), collapse=False)
    escaped = odd.encode("unicode_escape").decode("ascii")[:7]  # the id column shows 8
    text = tree_text(layout)
    svg = tree_picture_svg(layout)
    assert escaped in text and escaped in svg
    assert not any(c in text for c in "\r\x85\u2028\x00\x1b")
    png, width, height = tree_png_pillow(layout, scale=1.0)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and width > 0 and height > 0
    figure = Figure()
    draw_tree(layout, figure.add_subplot())
    figure.savefig(io.BytesIO(), format="png")
    assert TreeView(session).to_png()[:8] == b"\x89PNG\r\n\x1a\n"  # what untrusted notebooks show
