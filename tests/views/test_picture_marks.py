"""The tree picture's layout data: no label leaves the picture, runs into another, or is crossed.

:func:`pinb.render.tree.marks.picture_marks` places every text, stroke and glyph; the SVG, the
PNG (Pillow) and matplotlib draw those marks. These tests check the marks of awkward trees
(long titles and summaries, a compaction boundary, folded and elided rows, wide text), that
the SVG carries exactly them, and that Pillow and matplotlib draw each text inside its box.
:func:`picture_problems` and :func:`svg_picture` also serve the browser test of the shipped
notebooks (``tests/views/test_notebook_outputs.py``), which reads the pictures they saved.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pinb.core import ExtractiveSummarizer, Session, navigate
from pinb.render.tree.graph import build_graph
from pinb.render.tree.marks import Box, Line, Picture, Text, picture_marks
from pinb.render.tree.picture import tree_picture_svg
from pinb.render.tree.rows import row_layout
from pinb.testing.story import (
    EXTRA_TASKS,
    MAIN_TASKS,
    WRONG_TURN,
    append_prompt,
    append_reply,
    story_tasks,
    write_story_session,
)
from tests.render.test_svg_figure import branchy_session
from tests.views.builders import demo_session, long_chain_session, user
from tests.views.test_xss import TEXT

SVG = "{http://www.w3.org/2000/svg}"
#: Boxes may touch; they overlap when they share more than this many pixels each way.
TOUCH = 0.25


def _overlap(a: Box, b: Box) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > TOUCH and min(a[3], b[3]) - max(a[1], b[1]) > TOUCH


def picture_problems(picture: Picture, *, name: str = "picture") -> list[str]:
    """What is wrong with a picture's layout: texts outside it, on top of each other, or
    crossed by a stroke, a node or a legend symbol (each problem said in one line)."""
    problems: list[str] = []
    texts = [t for t in picture.texts if t.text]
    boxes = [t.box() for t in texts]
    for text, box in zip(texts, boxes, strict=True):
        inside = (-TOUCH, -TOUCH, picture.width + TOUCH, picture.height + TOUCH)
        if box[0] < inside[0] or box[1] < inside[1] or box[2] > inside[2] or box[3] > inside[3]:
            problems.append(f"{name}: {text.text!r} leaves the picture ({_fmt(box)})")
    for i, (a, box_a) in enumerate(zip(texts, boxes, strict=True)):
        for b, box_b in zip(texts[i + 1 :], boxes[i + 1 :], strict=True):
            if _overlap(box_a, box_b):
                problems.append(f"{name}: {a.text!r} runs into {b.text!r}")
    others: list[tuple[str, Box]] = [
        *((f"a {line.role} stroke", line.box()) for line in picture.lines),
        *((f"the {node.glyph} of {node.key}", node.box()) for node in picture.nodes),
        *((f"the legend's {key.glyph}", key.box()) for key in picture.keys),
        *(("a lane", _link_box(link)) for link in picture.links),
    ]
    for text, box in zip(texts, boxes, strict=True):
        for what, other in others:
            if _overlap(box, other):
                problems.append(f"{name}: {text.text!r} is crossed by {what}")
    return problems


def _link_box(link: object) -> Box:
    x0, y0, x1, y1 = (getattr(link, n) for n in ("x0", "y0", "x1", "y1"))
    return (min(x0, x1) - 1.5, min(y0, y1) - 1.5, max(x0, x1) + 1.5, max(y0, y1) + 1.5)


def _fmt(box: Box) -> str:
    return ", ".join(f"{v:.1f}" for v in box)


# -- reading a picture back from its SVG ---------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")


def _path_boxes(d: str, width: float) -> list[Box]:
    """The bounding box of every segment of an SVG path (M, L, H, V, Q, l, h, v, z)."""
    boxes: list[Box] = []
    x = y = 0.0
    for command, args in re.findall(r"([MLHVQZmlhvqz])([^MLHVQZmlhvqz]*)", d):
        values = [float(v) for v in _NUMBER.findall(args)]
        points: list[tuple[float, float]] = []
        if command == "M":
            x, y = values[0], values[1]
            continue
        if command == "L":
            points = [(values[0], values[1])]
        elif command == "l":
            points = [(x + values[0], y + values[1])]
        elif command == "H":
            points = [(values[0], y)]
        elif command == "h":
            points = [(x + values[0], y)]
        elif command == "V":
            points = [(x, values[0])]
        elif command == "v":
            points = [(x, y + values[0])]
        elif command == "Q":
            points = [(values[0], values[1]), (values[2], values[3])]
        else:  # z
            continue
        xs = [x, *(p[0] for p in points)]
        ys = [y, *(p[1] for p in points)]
        half = width / 2
        boxes.append((min(xs) - half, min(ys) - half, max(xs) + half, max(ys) + half))
        x, y = points[-1]
    return boxes


def svg_picture(svg: str) -> Picture:
    """A :class:`Picture` read back from a tree SVG: its texts, and every stroke and shape
    that is not a background (the white page, the row bands) as a line's box."""
    root = ET.fromstring(svg)
    picture = Picture(width=float(root.get("width", 0)), height=float(root.get("height", 0)))
    size = float(root.get("font-size", "12"))
    for element in root.iter():
        tag = element.tag.removeprefix(SVG)
        if tag == "text":
            family = element.get("font-family", "")
            picture.texts.append(
                Text(
                    float(element.get("x", 0)),
                    float(element.get("y", 0)),
                    element.text or "",
                    element.get("fill", ""),
                    float(element.get("font-size", size)),
                    "sans" if "sans-serif" in family and "mono" not in family else "mono",
                    element.get("font-weight") == "bold",
                    element.get("font-style") == "italic",
                    "end" if element.get("text-anchor") == "end" else "start",
                )
            )
            continue
        stroke = float(element.get("stroke-width", "1")) if element.get("stroke") else 0.0
        boxes: list[Box] = []
        if tag == "path":
            boxes = _path_boxes(element.get("d", ""), stroke)
        elif tag == "circle":
            cx, cy, r = (float(element.get(n, 0)) for n in ("cx", "cy", "r"))
            boxes = [(cx - r, cy - r, cx + r, cy + r)]
        elif tag == "rect" and (element.get("stroke") or element.get("data-id")):
            x, y = float(element.get("x", 0)), float(element.get("y", 0))
            w, h = float(element.get("width", 0)), float(element.get("height", 0))
            boxes = [(x, y, x + w, y + h)]  # a glyph; a plain filled rect is a background
        for box in boxes:
            x0, y0, x1, y1 = box
            picture.lines.append(Line(x0, y0, x1, y1, "", 0.0, role=f"{tag} ({_fmt(box)})"))
    return picture


# -- the trees ------------------------------------------------------------------------------


def _branching(folder: Path) -> Session:
    """Notebook 04's tree: a branch summary, a label, the leaf a bookkeeping entry."""
    session = write_story_session(folder, tasks=list(MAIN_TASKS[:2]))
    fixed = session.leaf_id
    append_prompt(session, WRONG_TURN[0].prompt)
    whitespace = append_reply(session, "Counting whitespace-separated words instead.")
    assert fixed is not None
    session.branch(fixed)
    append_prompt(session, "Now fix word_count, keeping apostrophes inside words.")
    append_reply(session, "WORD now matches letters with inner apostrophes.")
    navigate(session, whitespace.id, summarize=True, summarizer=ExtractiveSummarizer(),
             label="letters fix")  # fmt: skip
    return session


def _wide_text(folder: Path) -> Session:
    """Text wider than its characters: CJK, emoji, a long unbroken word, a long name."""
    session = demo_session(folder, text="表示するテキスト 😀 " + "x" * 300).session
    session.set_name("名前 " * 40 + "a session name far longer than any picture")
    session.append_message(user("Ｗｉｄｅ ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ " * 10))
    return session


def _sessions(tmp_path: Path) -> dict[str, Session]:
    demo = demo_session(tmp_path / "demo", text=TEXT)
    return {
        "demo (script text)": demo.session,
        "story (compactions, small window)": write_story_session(
            tmp_path / "story",
            seed=7,
            tasks=story_tasks(extras=EXTRA_TASKS),
            context_window=5_000,
        ),
        "branching (notebook 04)": _branching(tmp_path / "branching"),
        "wide text": _wide_text(tmp_path / "wide"),
        "branchy (folds and chains)": branchy_session(),
        "elided": long_chain_session(400),
        "empty": Session.in_memory("/x"),
    }


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Picture]]:
    out: dict[str, tuple[object, Picture]] = {}
    for name, session in _sessions(tmp_path_factory.mktemp("trees")).items():
        layout = row_layout(build_graph(session), max_rows=60 if name == "elided" else 300)
        out[name] = (layout, picture_marks(layout))
    return out


def test_no_label_leaves_the_picture_runs_into_another_or_is_crossed(
    pictures: dict[str, tuple[object, Picture]],
) -> None:
    problems = [
        p for name, (_, picture) in pictures.items() for p in picture_problems(picture, name=name)
    ]
    assert problems == []
    # The trees are the awkward ones: a boundary band, a wrapped summary, a cut title.
    story = pictures["story (compactions, small window)"][1]
    assert [t.role for t in story.texts].count("boundary") == 1
    assert sum(1 for line in story.lines if line.role == "boundary") == 2
    branching = pictures["branching (notebook 04)"][1]
    summary = " ".join(t.text for t in branching.texts if t.role == "summary")
    assert "(a label: the conversation continues after" in summary
    wide = pictures["wide text"][1]
    title = next(t for t in wide.texts if t.role == "title")
    assert title.text.endswith("…") and title.box()[2] <= wide.width - 10 + TOUCH


def test_the_boundary_label_sits_in_a_band_of_its_own(
    pictures: dict[str, tuple[object, Picture]],
) -> None:
    picture = pictures["story (compactions, small window)"][1]
    label = next(t for t in picture.texts if t.role == "boundary")
    left, right = (line for line in picture.lines if line.role == "boundary")
    x0, y0, x1, y1 = label.box()
    assert left.x1 < x0 and right.x0 > x1  # the strokes stop short of the words
    assert left.y0 == right.y0 and y0 < left.y0 < y1  # and are in line with them
    rows = [t.box() for t in picture.texts if t.role in ("kind", "id", "body", "tokens")]
    above = max(b[3] for b in rows if b[3] <= y0)
    below = min(b[1] for b in rows if b[1] >= y1)
    assert above < y0 and below > y1


def test_the_svg_draws_the_marks(pictures: dict[str, tuple[object, Picture]]) -> None:
    for name, (layout, picture) in pictures.items():
        read = svg_picture(tree_picture_svg(layout))  # type: ignore[arg-type]
        assert (read.width, read.height) == pytest.approx((picture.width, picture.height), abs=0.1)
        shown = [(round(t.x, 1), round(t.y, 1), t.text, t.size, t.font, t.bold, t.anchor)
                 for t in read.texts]  # fmt: skip
        marks = [(round(t.x, 1), round(t.y, 1), t.text, t.size, t.font, t.bold, t.anchor)
                 for t in picture.texts]  # fmt: skip
        assert shown == marks, name
        assert picture_problems(read, name=f"{name} (SVG)") == []


def test_pillow_and_matplotlib_draw_each_text_inside_its_box(
    pictures: dict[str, tuple[object, Picture]],
) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from pinb.render.figure import draw_tree
    from pinb.render.tree.raster import font_for

    for name in ("demo (script text)", "story (compactions, small window)"):
        layout, picture = pictures[name]
        for scale in (1.0, 2.0):
            for text in picture.texts:
                drawn = font_for(text, scale).getlength(text.text) / scale
                assert drawn <= text.width + 0.5, (name, scale, text.text, drawn, text.width)
        figure = draw_tree(layout)  # type: ignore[arg-type]
        canvas = FigureCanvasAgg(figure)
        renderer = canvas.get_renderer()
        ax = figure.axes[0]
        drawn_texts = [t for t in ax.texts if t.get_text()]
        assert len(drawn_texts) == len([t for t in picture.texts if t.text])
        for artist, text in zip(drawn_texts, (t for t in picture.texts if t.text), strict=True):
            extent = artist.get_window_extent(renderer)
            (x0, _), (x1, _) = ax.transData.inverted().transform(
                [(extent.x0, extent.y0), (extent.x1, extent.y1)]
            )
            box = text.box()
            assert box[0] - 1 <= x0 and x1 <= box[2] + 1, (name, text.text, (x0, x1), box)


def test_every_character_of_the_pictures_is_in_the_face_that_draws_it(
    pictures: dict[str, tuple[object, Picture]],
) -> None:
    """The PNG cannot fall back to another font: pinb's own words and marks use only
    characters DejaVu has (a session's own text is the session's)."""
    from fontTools.ttLib import TTFont

    from pinb.render.tree.raster import font_for

    for name in ("demo (script text)", "story (compactions, small window)", "elided"):
        _, picture = pictures[name]
        for text in picture.texts:
            face = TTFont(font_for(text).path)
            cmap = face.getBestCmap()
            missing = sorted({ch for ch in text.text if ord(ch) not in cmap and not ch.isspace()})
            assert not missing, (name, text.text, missing)
