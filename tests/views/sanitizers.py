"""Does a mimebundle survive the sanitizers a notebook meets? JupyterLab, nbconvert, GitHub.

- **JupyterLab, untrusted** (a notebook someone else ran): the output shows the first
  *safe* mime type in rank order — ``text/html`` (sanitized), markdown, LaTeX, then the
  images (``image/png``, not ``image/svg+xml``, which JupyterLab never shows untrusted),
  then text. Its sanitizer keeps the tags and inline style properties listed below (read
  from JupyterLab 4's ``Sanitizer``) and drops ``<style>`` with its content.
- **nbconvert with ``sanitize_html``** (nbviewer and similar): ``text/html`` goes through
  ``clean_html`` (bleach): tags outside a short list are *escaped into visible text*,
  attributes outside it (``style`` too) are dropped; ``image/svg+xml`` becomes an ``<img>``.
  The real function is called here.
- **GitHub** renders notebooks with a comparable allowlist; the nbconvert check stands in.
"""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from pinb.render.html import SAFE_TAGS

#: Tags JupyterLab 4's sanitizer keeps (``@jupyterlab/apputils`` ``Sanitizer``).
JUPYTERLAB_TAGS = frozenset(
    [
        "a",
        "abbr",
        "acronym",
        "address",
        "area",
        "article",
        "aside",
        "audio",
        "b",
        "bdi",
        "bdo",
        "big",
        "blockquote",
        "br",
        "button",
        "canvas",
        "caption",
        "center",
        "cite",
        "code",
        "col",
        "colgroup",
        "colspan",
        "command",
        "data",
        "datalist",
        "dd",
        "del",
        "details",
        "dfn",
        "dir",
        "div",
        "dl",
        "dt",
        "em",
        "fieldset",
        "figcaption",
        "figure",
        "font",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "i",
        "img",
        "input",
        "ins",
        "kbd",
        "label",
        "legend",
        "li",
        "map",
        "mark",
        "menu",
        "meter",
        "nav",
        "nobr",
        "ol",
        "optgroup",
        "option",
        "output",
        "p",
        "pre",
        "progress",
        "q",
        "rowspan",
        "s",
        "samp",
        "section",
        "select",
        "small",
        "source",
        "span",
        "strike",
        "strong",
        "sub",
        "summary",
        "sup",
        "table",
        "tbody",
        "td",
        "textarea",
        "tfoot",
        "th",
        "thead",
        "time",
        "tr",
        "track",
        "tt",
        "u",
        "ul",
        "var",
        "video",
        "wbr",
    ]
)
#: Inline style properties it keeps (a subset of its list: the ones pinb could use).
JUPYTERLAB_STYLES = frozenset(
    [
        "background",
        "background-color",
        "border",
        "border-bottom",
        "border-collapse",
        "border-left",
        "border-radius",
        "border-right",
        "border-top",
        "color",
        "display",
        "font",
        "font-family",
        "font-size",
        "font-style",
        "font-weight",
        "height",
        "line-height",
        "margin",
        "margin-bottom",
        "margin-left",
        "margin-right",
        "margin-top",
        "max-height",
        "max-width",
        "min-width",
        "overflow",
        "overflow-wrap",
        "overflow-x",
        "overflow-y",
        "padding",
        "padding-bottom",
        "padding-left",
        "padding-right",
        "padding-top",
        "text-align",
        "text-decoration",
        "vertical-align",
        "white-space",
        "width",
        "word-break",
    ]
)
#: The values it keeps for keyword properties (its sanitizer's patterns); others are dropped.
JUPYTERLAB_VALUES = {
    "overflow-wrap": {"normal", "break-word"},
    "word-break": {"normal", "keep-all", "break-all"},
    "white-space": {"normal", "pre", "nowrap", "pre-wrap", "pre-line"},
    "overflow-x": {"visible", "hidden", "scroll", "auto"},
    "overflow-y": {"visible", "hidden", "scroll", "auto"},
    "overflow": {"visible", "hidden", "scroll", "auto"},
}
#: Tags nbconvert's ``clean_html`` keeps (bleach's defaults plus a few); others are escaped.
NBCONVERT_TAGS = frozenset(
    {
        "a",
        "abbr",
        "acronym",
        "b",
        "blockquote",
        "code",
        "em",
        "i",
        "li",
        "ol",
        "strong",
        "ul",
        "div",
        "pre",
        "span",
        "table",
        "tr",
        "td",
    }
)
#: JupyterLab's renderers: (mime type, rank, safe).
JUPYTERLAB_RENDERERS = [
    ("application/vnd.jupyter.widget-view+json", 0, False),
    ("text/html", 50, True),
    ("text/markdown", 60, True),
    ("text/latex", 70, True),
    ("image/svg+xml", 80, False),
    ("image/png", 90, True),
    ("image/jpeg", 90, True),
    ("text/plain", 120, True),
]


def jupyterlab_mime(bundle: dict[str, Any], *, trusted: bool = False) -> str | None:
    """The mime type JupyterLab shows for ``bundle`` (``preferredMimeType``)."""
    for mime, _, safe in sorted(JUPYTERLAB_RENDERERS, key=lambda r: r[1]):
        if mime in bundle and (trusted or safe):
            return mime
    return None


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.styles: list[str] = []
        self.values: list[tuple[str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name == "style" and value:
                for rule in value.split(";"):
                    if rule.strip():
                        prop, _, setting = rule.partition(":")
                        self.styles.append(prop.strip().lower())
                        self.values.append((prop.strip().lower(), setting.strip().lower()))

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser


def visible_text(html: str) -> str:
    return re.sub(r"\s+", " ", "".join(parse(html).text)).strip()


def check_html_survives(html: str) -> None:
    """Assert ``html`` reads the same after JupyterLab's and nbconvert's sanitizers."""
    from nbconvert.filters.strings import clean_html

    found = parse(html)
    assert set(found.tags) <= SAFE_TAGS, set(found.tags) - SAFE_TAGS
    assert set(found.tags) <= NBCONVERT_TAGS & JUPYTERLAB_TAGS
    assert set(found.styles) <= JUPYTERLAB_STYLES, set(found.styles) - JUPYTERLAB_STYLES
    dropped = {(p, v) for p, v in found.values if v not in JUPYTERLAB_VALUES.get(p, {v})}
    assert not dropped, f"JupyterLab drops these declarations: {dropped}"
    cleaned = clean_html(html)
    # Nothing was escaped into text (bleach escapes the tags it does not allow).
    assert visible_text(cleaned) == visible_text(html)
    for tag in ("&lt;style", "&lt;svg", "&lt;tbody", "&lt;table"):
        assert cleaned.count(tag) == html.count(tag), tag  # none added by the sanitizer


def check_bundle(bundle: Any, *, picture: bool) -> str:
    """Check a ``_repr_mimebundle_`` result; return what an untrusted JupyterLab shows.

    ``picture``: the output is a picture, which must then show untrusted (``image/png``)
    and converted (``image/svg+xml`` or ``image/png``).
    """
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "text/plain" in data
    shown = jupyterlab_mime(data)
    assert shown is not None
    if "text/html" in data:
        check_html_survives(data["text/html"])
        assert "<svg" not in data["text/html"], "inline SVG is dropped untrusted"
    if picture:
        assert shown == "image/png", f"an untrusted notebook would show {shown}, not the picture"
        assert base64.b64decode(data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
        assert data["image/svg+xml"].startswith("<svg")
    return shown


def displayed(obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a kernel sends for ``obj``: IPython's formatter (``_repr_*_`` methods merged)."""
    from IPython.core.formatters import DisplayFormatter

    data, metadata = DisplayFormatter().format(obj)
    # The kernel sends binary outputs base64-encoded (ipykernel's json_clean).
    data = {
        k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
        for k, v in data.items()
    }
    return dict(data), dict(metadata)


def output_of(obj: Any) -> dict[str, Any]:
    """The ``display_data`` output a kernel would save for ``obj``."""
    data, metadata = displayed(obj)
    return {"output_type": "display_data", "data": data, "metadata": metadata}


def saved_outputs_notebook(path: Path, session: Any, compaction_id: str) -> Path:
    """A notebook whose cells carry saved outputs of every view (no signature: untrusted)."""
    from pinb.views import (
        CompactionView,
        ContextBreakdown,
        ContextPathView,
        SessionExplorer,
        TreeView,
    )

    explorer = SessionExplorer(session)
    cells = [
        ("from pinb.views import TreeView\nTreeView(session)", [TreeView(session)]),
        ("ContextPathView(session)", [ContextPathView(session)]),
        ("CompactionView(id, session)", [CompactionView(compaction_id, session)]),
        ("ContextBreakdown(session)", [ContextBreakdown(session)]),
        ("session", [session]),
        ("SessionExplorer(session)", [explorer]),
    ]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "id": f"cell-{i}",
                "metadata": {},
                "source": source,
                "outputs": [output_of(obj) for obj in objs],
                "execution_count": i + 1,
            }
            for i, (source, objs) in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    explorer.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def nbconvert_sanitized(path: Path) -> str:
    """The notebook converted to HTML by nbconvert with ``sanitize_html`` on."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(sanitize_html=True)
    body, _ = exporter.from_notebook_node(nbformat.read(path, as_version=4))
    return str(body)
