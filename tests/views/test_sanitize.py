"""Every view survives the sanitizers: untrusted JupyterLab, nbconvert ``sanitize_html``, GitHub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.views import (
    CompactionView,
    ContextBreakdown,
    ContextPathView,
    EntryView,
    SessionListView,
    TreeView,
)
from tests.samples import CASE_FILES
from tests.views.builders import demo_session
from tests.views.sanitizers import (
    check_bundle,
    check_html_survives,
    displayed,
    jupyterlab_mime,
    nbconvert_sanitized,
    saved_outputs_notebook,
    visible_text,
)


def _views(s: Session, compaction: str | None) -> list[Any]:
    views: list[Any] = [ContextPathView(s), ContextBreakdown(s), EntryView(s.entries[0], s)]
    if compaction:
        views.append(CompactionView(compaction, s))
    return views


def test_every_view_bundle_survives(tmp_path: Path) -> None:
    demo = demo_session(tmp_path)
    s = demo.session
    for view in _views(s, demo.ids["compaction"]):
        assert check_bundle(view._repr_mimebundle_(), picture=False) == "text/html"
    assert check_bundle(s._repr_mimebundle_(), picture=False) == "text/html"
    assert check_bundle(displayed(TreeView(s)), picture=True) == "image/png"
    listing = SessionListView([{"path": "/a.jsonl", "id": "a", "cwd": "/", "name": "A"}])
    check_bundle(listing._repr_mimebundle_(), picture=False)


@pytest.mark.parametrize("name", ["cycles", "context-edits", "system-messages", "odd-fields"])
def test_odd_files_survive_too(name: str) -> None:
    s = Session.open(CASE_FILES[name])
    for view in _views(s, None):
        check_bundle(view._repr_mimebundle_(), picture=False)
    check_bundle(displayed(TreeView(s)), picture=True)


def test_jupyterlab_picks_what_it_can_show_untrusted() -> None:
    both = {"text/plain": "t", "image/svg+xml": "<svg/>", "image/png": "x"}
    assert jupyterlab_mime(both) == "image/png"
    assert jupyterlab_mime(both, trusted=True) == "image/svg+xml"
    assert jupyterlab_mime({"text/plain": "t", "image/svg+xml": "<svg/>"}) == "text/plain"
    widget = {"text/plain": "t", "application/vnd.jupyter.widget-view+json": {}, "image/png": "x"}
    assert jupyterlab_mime(widget) == "image/png"
    assert jupyterlab_mime(widget, trusted=True) == "application/vnd.jupyter.widget-view+json"


@pytest.mark.parametrize(
    "html",
    [
        "<div><h3>title</h3></div>",
        "<div><table><tr><td>x</td></tr></table></div>",
        "<div><style>.x{}</style>y</div>",
        "<div><details><summary>s</summary>x</details></div>",
        "<div><p>a<br>b</p></div>",
    ],
)
def test_the_checker_catches_markup_a_sanitizer_breaks(html: str) -> None:
    with pytest.raises(AssertionError):
        check_html_survives(html)


def test_nbconvert_with_sanitizing_shows_pictures_and_no_markup(tmp_path: Path) -> None:
    demo = demo_session(tmp_path / "s")
    path = saved_outputs_notebook(tmp_path / "saved.ipynb", demo.session, demo.ids["compaction"])
    html = nbconvert_sanitized(path)
    assert html.count("jp-OutputArea-output") >= 6
    # The tree pictures come through as images (the TreeView and the widget's fallback).
    assert html.count("data:image/svg+xml;base64,") >= 2
    text = visible_text(html)
    for leak in ("<tbody>", "<style", "{font-family", "<table", "<div", "<svg"):
        assert leak not in text, leak
    assert "What the model sees, in order" in text and "tokens (chars/4)" in text


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", SHIPPED, ids=lambda p: p.name)
def test_shipped_notebooks_read_right_untrusted_and_converted(notebook: Path) -> None:
    # The saved outputs a user (or GitHub, or nbviewer) meets before running anything.
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert outputs, "the shipped notebook has no saved outputs"
    pictures = 0
    for output in outputs:
        assert output.output_type != "error", f"{notebook.name} saved an error"
        data = output.get("data", {})
        # pandas' own tables are left alone: nbconvert's sanitizer mangles every
        # DataFrame (its <style> and <tbody>), in any notebook; JupyterLab and GitHub don't.
        if "text/html" in data and 'class="dataframe"' not in data["text/html"]:
            check_html_survives(data["text/html"])
        if "image/svg+xml" in data:
            pictures += 1  # a tree picture: untrusted JupyterLab shows its PNG instead
            assert jupyterlab_mime(data) == "image/png"
        text = str(data.get("text/plain", "")) + "".join(output.get("text", ""))
        for private in ("/tmp/", "/root/", "/home/runner", str(Path.home()) + "/"):
            assert private not in text, f"{notebook.name} shows a local path: {private}"
    if notebook.name.startswith(("01", "02", "04")):
        assert pictures > 0, f"{notebook.name} lost its tree picture"
    converted = nbconvert_sanitized(notebook)
    for leak in ("&lt;div", "&lt;span", "&lt;details", "pinb-view{", "&lt;svg"):
        assert leak not in converted, f"{notebook.name}: {leak} shows as text after nbconvert"
