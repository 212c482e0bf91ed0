"""Other parsers that read pinb's Markdown, and what in their HTML would be live.

pinb's Markdown is shown by renderers it does not control: JupyterLab's ``marked`` (the
chat panel, a notebook's Markdown cells), GitHub's CommonMark, nbconvert's mistune. Each is
run here with raw HTML passed through (as ``marked`` does before JupyterLab's sanitizer,
which keeps ``<img>``), so whatever markup they make of pinb's output is seen:

- :func:`commonmark_html`: markdown-it-py's CommonMark with GitHub's tables and
  strikethrough, raw HTML on;
- :func:`github_html`: GitHub's own renderer, cmark-gfm (its extensions: tables,
  strikethrough, autolinks, task lists), raw HTML on;
- :func:`mistune_html`: nbconvert's own Markdown renderer (mistune with nbconvert's
  plugins: strikethrough, tables, bare URLs, task lists, definition lists; maths), raw
  HTML passed through as nbconvert passes it;
- :func:`marked_html`: marked itself, with GitHub's extensions on (JupyterLab's options),
  run by the Node 22 of the pinned Pi install (``tests/pi``; marked 18 is in its lock,
  pulled in by Pi's terminal UI).

:func:`live` lists what in a page is more than formatting.
"""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

from nbconvert.filters.markdown_mistune import markdown2html_mistune

from tests.pi.reference import node_binary

#: The tags a Markdown renderer makes of formatting alone (``div``/``span``: nbconvert's
#: syntax highlighting of a fence, classes only; other attributes are checked below).
FORMATTING = frozenset(
    {"p", "strong", "em", "code", "pre", "ul", "ol", "li", "blockquote", "br", "hr", "a", "del"}
    | {"s", "table", "thead", "tbody", "tr", "th", "td", "h1", "h2", "h3", "h4", "h5", "h6"}
    | {"div", "span"}
)
#: Attributes that fetch nothing and run nothing (``href`` is checked on its own; ``id``:
#: nbconvert's heading anchors; ``lang``: GitHub's fence language).
HARMLESS = frozenset({"title", "class", "start", "align", "alt", "href", "rel", "target"})
HARMLESS |= {"id", "lang"}
# (ftp: too: marked links a bare ftp:// address in text itself, a link to click like any)
LINK_SCHEMES = ("http://", "https://", "mailto:", "#", "ftp://")


def commonmark_html(markdown: str) -> str:
    """CommonMark (markdown-it-py) with tables and strikethrough, raw HTML passed through."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return parser.render(markdown)


def github_html(markdown: str) -> str:
    """GitHub's cmark-gfm with its extensions, raw HTML passed through."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    return str(
        cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    )


def mistune_html(markdown: str) -> str:
    """nbconvert's Markdown renderer (``jupyter nbconvert --to html``, nbviewer)."""
    return markdown2html_mistune(markdown)


_MARKED = """
import fs from 'fs';
const { marked } = await import(process.argv[1]);
const texts = JSON.parse(fs.readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(texts.map(t => marked.parse(t, {gfm: true, async: false}))));
"""


def marked_html(texts: list[str], install: Path) -> list[str]:
    """Each text as ``marked`` renders it (GitHub's extensions on, raw HTML passed through)."""
    module = install / "node_modules" / "marked" / "lib" / "marked.esm.js"
    if not module.is_file():
        raise AssertionError(f"marked is not in the pinned install {install}: tests/pi lock")
    done = subprocess.run(
        [str(node_binary(install)), "--input-type=module", "-e", _MARKED, module.as_uri()],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rendered = json.loads(done.stdout)
    assert isinstance(rendered, list) and len(rendered) == len(texts)
    return [str(page) for page in rendered]


class _Live(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in FORMATTING:
            self.found.append(f"<{tag} {attrs}>")
        for name, value in attrs:
            if name == "style" and tag in ("td", "th") and (value or "").startswith("text-align:"):
                continue  # markdown-it's column alignment
            if name not in HARMLESS:
                self.found.append(f"<{tag} {name}={value!r}>")
            elif name == "href":
                url = "".join((value or "").split()).lower()
                if not url.startswith(LINK_SCHEMES):
                    self.found.append(f"<{tag} href={value!r}>")

    handle_startendtag = handle_starttag


def live(html: str) -> list[str]:
    """What in ``html`` is more than formatting: other tags, attributes that fetch (``src``,
    ``style``, ``poster`` …) or run (``on…``), links to anything but a web page or mail."""
    parser = _Live()
    parser.feed(html)
    parser.close()
    return parser.found
