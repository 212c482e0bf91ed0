"""Escaping, the safe Markdown subset, tables and the mimebundle helper."""

from __future__ import annotations

import pytest

from pinb.render.html import (
    clean_text,
    escape,
    markdown_to_html,
    mimebundle,
    shorten,
    style,
    table,
    wrap,
)


def test_escape_covers_text_and_attribute_contexts() -> None:
    assert escape("<a href=\"x\" title='y'>&</a>") == (
        "&lt;a href=&quot;x&quot; title=&#x27;y&#x27;&gt;&amp;&lt;/a&gt;"
    )


def test_characters_xml_cannot_carry_are_replaced() -> None:
    assert clean_text("a\x00b\x1bc\ud800d\ufffe") == "a\ufffdb\ufffdc\ufffdd\ufffd"
    assert escape("tab\tand\nnewline") == "tab\tand\nnewline"
    assert escape(42) == "42"


def test_shorten_collapses_whitespace_and_marks_the_cut() -> None:
    assert shorten("a  b\n c", 10) == "a b c"
    assert shorten("abcdefghij", 5) == "abcd…"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("# Goal", f"<div{style('heading')}><b>Goal</b></div>"),
        ("**bold** and *it*", "<div><strong>bold</strong> and <em>it</em></div>"),
        ("- [x] done\n- [ ] todo", "<ul><li>☑ done</li><li>☐ todo</li></ul>"),
        ("1. one\n2. two", "<ol><li>one</li><li>two</li></ol>"),
        ("`<b>` **x**", "<div><code>&lt;b&gt;</code> <strong>x</strong></div>"),
        ("a\nb\n\nc", "<div>a</div><div>b</div><div>c</div>"),
        (
            "```\n<script>x</script>\n```",
            f'<pre class="pinb-pre"{style("pre")}><code>&lt;script&gt;x&lt;/script&gt;</code></pre>',
        ),
    ],
)
def test_markdown_subset(source: str, expected: str) -> None:
    assert markdown_to_html(source) == f'<div class="pinb-md"{style("md")}>{expected}</div>'


def test_markdown_links_only_for_safe_schemes() -> None:
    html = markdown_to_html("[ok](https://example.org/a?b=1&c=2) [mail](mailto:a@b.c)")
    assert '<a href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer nofollow"' in html
    assert '<a href="mailto:a@b.c"' in html
    for url in (
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,x",
        "vbscript:x",
        "java\tscript:x",
        "//evil.example",
        "#x",
    ):
        rendered = markdown_to_html(f"[x]({url})")
        assert "<a " not in rendered, url


def test_markdown_never_passes_html_through() -> None:
    source = (
        "<script>alert(1)</script>\n<img src=x onerror=alert(1)>\n"
        '"><svg onload=alert(1)>\n[x](https://a.b/"onmouseover="alert(1))\n'
        "# <iframe src=javascript:alert(1)>\n- <b onclick=x>"
    )
    html = markdown_to_html(source)
    for bad in ("<script", "<img", "<svg", "<iframe", "<b ", '" onmouseover'):
        assert bad not in html
    assert "&lt;script&gt;" in html
    assert "&quot;onmouseover=&quot;" in html  # the quote stays inside the href value


def test_unclosed_fence_and_backtick_do_not_swallow_text() -> None:
    assert "&lt;x&gt;" in markdown_to_html("```\n<x>")
    assert markdown_to_html("a ` b") == f'<div class="pinb-md"{style("md")}><div>a ` b</div></div>'


def test_table_escapes_cells_and_formats_numbers() -> None:
    html = table(["<h>", "n"], [("<td>", 12345), (None, 1.5)], numeric=(1,), row_classes=["x", ""])
    assert ">&lt;h&gt;</span>" in html and "<table" not in html and "<th" not in html
    assert ">&lt;td&gt;</span>" in html
    assert f'<span class="pinb-td"{style("cell", "num")}>12,345</span>' in html
    assert '<div class="pinb-tr x"' in html
    # Where styles are stripped (nbconvert), cells stay apart: the separator shows.
    assert '<span style="display:none"> │ </span>' in html


def test_mimebundle_filters() -> None:
    bundle = mimebundle("t", html="<b>", svg="<svg/>")
    assert set(bundle) == {"text/plain", "text/html", "image/svg+xml"}
    assert set(mimebundle("t", html="h", include=["text/html"])) == {"text/html"}
    assert set(mimebundle("t", html="h", exclude=["text/html"])) == {"text/plain"}


def test_wrapped_views_opt_out_of_mathjax() -> None:
    html = wrap("$x$", "pinb-extra")
    assert html.startswith('<div class="pinb-view pinb-extra tex2jax_ignore mathjax_ignore" style=')
    assert "<style" not in html
    assert html.endswith("$x$</div>")
