"""Escaping, tables and the mimebundle helper (the Markdown policy: test_markdown.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pinb
from pinb.render.html import (
    clean_text,
    escape,
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


def test_a_null_field_shows_as_nothing() -> None:
    # A file may leave any field null: it is nothing to show, not Python's "None".
    assert escape(None) == ""
    assert escape([None, True]) == "[null, true]"


def test_every_html_escape_in_pinb_is_the_one_in_render_html() -> None:
    """One escaping policy: no module but render/html.py escapes HTML with the stdlib."""
    package = Path(pinb.__file__).parent
    own = package / "render" / "html.py"
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path == own:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            if any(name == "html" or name.startswith(("html.", "markupsafe")) for name in names):
                offenders.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    assert offenders == []


def test_shorten_collapses_whitespace_and_marks_the_cut() -> None:
    assert shorten("a  b\n c", 10) == "a b c"
    assert shorten("abcdefghij", 5) == "abcd…"


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
