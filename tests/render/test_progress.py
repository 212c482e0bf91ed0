"""The progress bar: silent for short work, then one line redrawn in place."""

from __future__ import annotations

import io

from pinb.render.progress import ProgressBar, html_bar, progress_for


def test_short_work_shows_nothing() -> None:
    out = io.StringIO()
    bar = ProgressBar(after=60, stream=out)
    for done in range(1, 50):
        bar("listing", done, 100)
    assert out.getvalue() == ""


def test_long_work_draws_one_line_in_place_and_ends_it() -> None:
    out = io.StringIO()
    bar = ProgressBar(after=0, stream=out)
    bar("indexing", 1, 4)
    bar("indexing", 4, 4)
    text = out.getvalue()
    assert text.startswith("\rbuilding the search index: [#######")
    assert "1/4 files" in text and text.endswith("] 4/4 files\n")
    assert text.count("\n") == 1


def test_the_html_bar_is_escaped() -> None:
    assert html_bar("<b>", 2, 5) == (
        "<div>&lt;b&gt;: <progress value='2' max='5'></progress> 2/5 files</div>"
    )


def test_nobody_watching_gets_no_bar() -> None:
    assert progress_for(io.StringIO()) is None  # not a terminal
