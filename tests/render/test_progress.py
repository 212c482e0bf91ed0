"""The progress bar: silent for short work, then one line redrawn in place (or HTML)."""

from __future__ import annotations

import io

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.render.progress import ProgressBar, progress_for


def test_short_work_shows_nothing() -> None:
    out = io.StringIO()
    bar = ProgressBar(after=60, stream=out, notebook=False)
    for done in range(1, 50):
        bar("listing", done, 100)
    assert out.getvalue() == ""


def test_long_work_draws_one_line_in_place_and_ends_it() -> None:
    out = io.StringIO()
    bar = ProgressBar(after=0, stream=out, notebook=False)
    bar("indexing", 1, 4)
    bar("indexing", 4, 4)
    text = out.getvalue()
    assert text.startswith("\rbuilding the search index: [#######")
    assert "1/4 files" in text and text.endswith("] 4/4 files\n")
    assert text.count("\n") == 1


def test_in_a_notebook_one_html_bar_is_updated() -> None:
    InteractiveShell.instance()
    bar = ProgressBar(after=0, notebook=True)
    with capture_output() as captured:
        bar("listing", 1, 3)
        bar("listing", 3, 3)
    shown = [o.data["text/html"] for o in captured.outputs]
    assert "<progress value='1' max='3'>" in shown[0]
    assert "reading sessions" in shown[0]


def test_nobody_watching_gets_no_bar() -> None:
    assert progress_for(io.StringIO()) is None  # not a terminal, no kernel
