"""The notebook's progress bar: one HTML bar in the cell's output, updated in place."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.notebook.progress import NotebookProgress


def test_one_html_bar_is_shown_then_updated() -> None:
    InteractiveShell.instance()
    bar = NotebookProgress(after=0)
    with capture_output() as captured:
        bar("listing", 1, 3)
        bar("listing", 2, 3)
        bar("listing", 3, 3)
    first, *later = captured.outputs
    assert "<progress value='1' max='3'>" in first.data["text/html"] and not first.update
    assert "reading sessions" in first.data["text/html"]
    # Later states update that output (same display id) rather than adding outputs.
    assert later and all(o.update for o in later)
    assert {o.transient["display_id"] for o in later} == {first.transient["display_id"]}
    assert "<progress value='3' max='3'>" in later[-1].data["text/html"]
