"""The one Markdown policy: the model's Markdown as safe Markdown and as safe HTML, from one parse.

What a model writes is untrusted (a prompt-injected reply can hold anything), and what it
writes is Markdown. One parse (markdown-it-py: CommonMark with GitHub's tables and
strikethrough, raw HTML off) feeds two writers:

- :func:`markdown_to_markdown`, Markdown source that other renderers show: the chat panel's
  message body (JupyterLab's ``marked``, then its sanitizer), ``pinb export --md`` (GitHub,
  an editor's preview) and ``--ipynb``'s Markdown cells;
- :func:`markdown_to_html`, HTML for the views, the live ``%%pi`` display and ``--html``,
  in the tags every notebook sanitizer keeps (:data:`pinb.render.html.SAFE_TAGS`).

The policy is the same in both:

- raw HTML, block or inline, is text: ``<img src=…>`` shows as written;
- nothing makes the browser fetch anything: an image (inline, reference-style, inside a
  table, a list, a heading) becomes a link the user may click, ``image: alt``; inside a
  link, or at an address not allowed below, it is that text with the address as code;
- a link keeps its address when it is ``http:``, ``https:`` or ``mailto:``; any other
  (``javascript:``, ``vbscript:``, ``data:``, ``file:``, relative, ``//host``) shows the
  link's text with the address as code beside it;
- the rest of the model's formatting is kept: headings, emphasis, strikethrough, lists
  (task boxes as ☐/☑), quotes, code spans, code blocks, tables and rules.

A text longer than :data:`MAX_MARKDOWN_CHARS`, or nested deeper than the parser follows
(:data:`MAX_NESTING`), is shown literally instead, every character kept. Text that is not
the model's Markdown (prompts, tool output, names) never goes through the parser: it is
:func:`literal`, :func:`code` or :func:`fence`, with the same escapes.

**Markdown back to Markdown, and why not mdformat.** mdformat renders markdown-it-py's
tree back to CommonMark and lets a plugin change how an image renders; but its aim is a
canonical document that *CommonMark* reads the same, so its escapes are CommonMark's exact
minimum, while this output is read by looser parsers too; images, links, autolinks, text
and code spans would all need renderers of our own, and tables a second plugin
(mdformat-tables). The writer here is small, walks the token list once (no recursion, so
any input depth is safe), and owns every character it writes:

- text outside code gets a backslash before `` ` * [ ] | ~ $``, before ``_`` at a word's
  edge and before ``!`` ahead of a link's ``[``; ``& < >`` and ``\\`` itself become
  entities (so no tag, autolink, entity or maths delimiter is made of it under any
  parser); at a line's start, ``# + - = :`` and an ordered marker's ``.``/``)`` get a
  backslash and indentation becomes entities; in a link's text ``[ ]`` are entities
  (marked unescapes them there and parses the text again);
- code spans and fenced blocks are the only raw text, so they are written only where
  CommonMark, GitHub, nbconvert and ``marked`` agree where they end. A fence: on lines of
  its own with every container's prefix, longer than any backtick run inside, its info
  string of word characters only. A code span: one backtick each side, so marked's
  masking of code while it looks for emphasis, strikethrough and link ends covers it; it
  is written as escaped text instead when it holds a backtick, ``~~`` in a paragraph with
  a strikethrough (nbconvert's mistune may end that there), or what nbconvert takes for
  display maths wherever it stands (``$$``, ``\\\\[``, ``\\begin{``: a pair could run on
  into a later fence), and in a table a backslash (GitHub and marked count backslashes
  before ``|`` differently); one ending in a backslash is padded, and in a table ``|``
  inside it is ``\\|`` (every parser splits cells before code); a bare URL that marked,
  GitHub or mistune would autolink through markup or a code span's backtick (they take
  everything up to a space) gets ``\\:`` (``http\\://``, ``www\\.``);
- link addresses are percent-encoded by the parser, with ``&`` as an entity, ``$`` as
  ``%24`` and parentheses escaped; a link's title is left out (a tooltip, not worth an
  escape rule of its own); an image's alternative text is plain escaped text.

Rendered with raw HTML on by markdown-it, GitHub's cmark-gfm, nbconvert's mistune and
marked, the output has no image, no raw tag and no script link, and the formatting reads
as the original's (``tests/render/test_markdown.py``); in JupyterLab and Chromium, no
request leaves the page's origin (``tests/chat/test_browser.py``).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .html import clean_text, escape, pre, style, table, visible_source

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = [
    "MAX_MARKDOWN_CHARS",
    "MAX_NESTING",
    "STREAM_PARSE_CHARS",
    "MarkdownStream",
    "clean",
    "code",
    "fence",
    "literal",
    "literal_line",
    "markdown_to_html",
    "markdown_to_markdown",
    "safe_href",
]

#: Longer model texts are shown literally. The parse is linear, but on hostile input (a
#: run of ``![``) it costs up to ~30 µs a character on a loaded machine, where ordinary
#: Markdown costs ~2.5 µs: a million would stall a chat for many seconds
#: (benchmarks/bench_markdown.py).
MAX_MARKDOWN_CHARS = 100_000
#: While a text streams, its last (still open) block is parsed again on every update; one
#: longer than this is shown literally until the text is whole.
STREAM_PARSE_CHARS = 20_000
#: How deep the parser follows nested blocks and link labels (markdown-it's CommonMark
#: preset). Its cost per ``[`` grows with this depth; blocks nested deeper would be
#: dropped by the parser, so such a text is shown literally instead.
MAX_NESTING = 20

_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_CONTAINERS = frozenset(
    {"blockquote_open", "list_item_open", "bullet_list_open", "ordered_list_open"}
)
_SURROGATE = re.compile("[\ud800-\udfff]")
# Anywhere in text: code, emphasis (``_`` only at a word's edge: CommonMark and marked never
# emphasise inside a word), links and images, tables, strikethrough and Jupyter's maths
# get a backslash; ``& < >`` and the backslash itself become entities (a written ``\\``
# would give nbconvert's search for ``\\[``…``\\]`` maths something to find).
_ANYWHERE = re.compile(r"[\\&<>`*\[\]|~$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ENTITIES = {"\\": "&#92;", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
# In code, what nbconvert takes for display maths wherever it stands, across blocks: a pair
# could run from a code span into a later fence and leave the rest of that line as text.
_MATHS = re.compile(r"\$\$|\\\\[\[\]()]|\\(?:begin|end)\{")
# At a line's start: indentation (kept as entities, never a code block), a heading, list
# item, setext underline or table delimiter (``# + - = :``), an ordered item's marker.
_INDENT = re.compile(r"^[ \t]+")
_LINE_START = re.compile(r"^([#+\-=:])")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")
_BACKTICKS = re.compile(r"`+")
_URL_KEEP = re.compile(r"[^A-Za-z0-9;/?:@&=+$,\-_.!~*'()#%]")
_INFO = re.compile(r"[A-Za-z0-9_+.#-]+")
_TASK = {"[ ] ": "☐ ", "[x] ": "☑ ", "[X] ": "☑ "}
_OTHER_MARKER = {"-": "*", "*": "+", "+": "-", ".": ")", ")": "."}


@functools.cache
def _parser() -> MarkdownIt:
    """The one parser (imported on first use: views that show no Markdown never load it)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING})
    md.enable(["table", "strikethrough"])
    # Every link reaches the writers, which decide (safe_href): markdown-it would leave a
    # link it refuses as its source text, and relative links it allows.
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    return md


def clean(text: str) -> str:
    """Text every encoder takes (a chat's document, a notebook): lone surrogates as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def safe_href(url: object) -> str | None:
    """``url`` if a link may point there (``http:``, ``https:``, ``mailto:``), else ``None``."""
    if not isinstance(url, str) or url != url.strip() or any(ch <= " " for ch in url):
        return None
    return url if url.lower().startswith(_SAFE_SCHEMES) else None


def _parse(text: str) -> list[Token] | None:
    """The tokens of ``text``, or ``None`` when it is to be shown literally."""
    if len(text) > MAX_MARKDOWN_CHARS:
        return None
    tokens = _parser().parse(text)
    if any(t.type in _CONTAINERS and t.level >= MAX_NESTING - 1 for t in tokens):
        return None  # the parser stopped following the nesting: what is inside is not in it
    _mark_tasks(tokens)
    return tokens


def _mark_tasks(tokens: list[Token]) -> None:
    """A list item starting ``[ ]``/``[x]`` starts with ☐/☑ (in both outputs)."""
    for i, token in enumerate(tokens[:-2]):
        if token.type != "list_item_open" or tokens[i + 1].type != "paragraph_open":
            continue
        children = tokens[i + 2].children or []
        if children and children[0].type == "text":
            box = _TASK.get(children[0].content[:4])
            if box is not None:
                children[0].content = box + children[0].content[4:]


# -- text ---------------------------------------------------------------------------------


def _escape(text: str) -> str:
    """Text that no parser turns into markup where it stands (not at a line's start)."""
    return _ANYWHERE.sub(lambda m: _ENTITIES.get(m[0]) or "\\" + m[0], text)


def _line_start(text: str) -> str:
    """Escaped text that begins a line: no block is made of its first characters."""
    indent = _INDENT.match(text)
    if indent is not None:
        spaces = indent[0].replace(" ", "&#32;").replace("\t", "&#9;")
        return spaces + text[indent.end() :]
    text = _LINE_START.sub(r"\\\1", text)
    return _ORDERED.sub(r"\1\\\2", text)


def _code_span(text: str, *, in_table: bool = False) -> str | None:
    """``text`` as one code span, or ``None`` where a parser could misread where it ends.

    A code span is the only inline text written raw, so its ends must be the same for
    every parser. marked finds emphasis, strikethrough and link ends over the text with
    single-backtick spans masked out (a longer delimiter is not masked, and neither is a
    backtick after a backslash), and splits a table row at ``|`` after an even run of
    backslashes where GitHub splits after any: so only a span without a backtick inside is
    written, one ending in a backslash is padded, and in a table one holding a backslash
    is not written; the caller writes its text escaped instead.
    """
    text = " ".join(text.replace("\r", "\n").split("\n"))
    if "`" in text or (in_table and "\\" in text) or _MATHS.search(text):
        return None
    if text.endswith("\\") or (text.startswith(" ") and text.endswith(" ") and text.strip(" ")):
        text = f" {text} "  # CommonMark and marked take one space off each end
    if in_table:
        text = text.replace("|", "\\|")
    return f"`{text}`"


def _fence_lines(text: str, info: str = "") -> list[str]:
    """The lines of a fenced block holding ``text``: longer than any backtick run inside."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text[:-1] if text.endswith("\n") else text  # the block's own line end is enough
    return [ticks + info, *(body.split("\n") if text else []), ticks]


def literal(value: object) -> str:
    """Text that renders as itself: no emphasis, heading, list, link, code or HTML made of it.

    A line break stays a line break (a hard one), a blank line a paragraph break, and
    leading spaces stay spaces rather than making a code block. Any JSON value is taken.
    """
    text = visible_source(value).replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = []
    for paragraph in re.split(r"\n(?:[ \t]*\n)+", text.strip("\n")):
        lines = [_line_start(_escape(line)) for line in paragraph.split("\n")]
        paragraphs.append("\\\n".join(lines))
    return "\n\n".join(paragraphs)


def literal_line(value: object) -> str:
    """Like :func:`literal`, on one line (a heading's text, where a line break would end it)."""
    return literal(" ".join(visible_source(value).split()))


def code(value: object) -> str:
    """``value`` as one inline code span; text holding a backtick as escaped text instead
    (no parser can then end the span early: see :func:`_code_span`)."""
    text = visible_source(value)
    span = _code_span(text)
    return _escape(" ".join(text.split())) if span is None else span


def fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block longer than any run of backticks inside it."""
    return "\n".join(_fence_lines(text, info))


def _alt(image: Token) -> str:
    """An image's alternative text as plain text (nested images give their own)."""
    parts: list[str] = []
    stack = list(reversed(image.children or []))
    while stack:
        token = stack.pop()
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            stack.extend(reversed(token.children or []))
    alt = " ".join("".join(parts).split())
    return f"image: {alt}" if alt else "image"


# -- Markdown -------------------------------------------------------------------------------


def _md_url(href: str) -> str:
    """A link destination every parser reads back as ``href``."""
    href = _URL_KEEP.sub(lambda m: "".join(f"%{b:02X}" for b in m[0].encode("utf-8")), href)
    # ($ as %24: "$$" in an address is display maths to nbconvert, wherever it stands)
    href = href.replace("&", "&amp;").replace("$", "%24")
    return href.replace("(", "\\(").replace(")", "\\)")


#: Where a bare-URL autolink begins (marked, GitHub, mistune): it takes all up to a space or ``<``.
_URL_START = re.compile(r"(?i)(?:https?|ftp)(?=://)|www(?=\.)")
_URL_STOP = re.compile(r"[\s<]")


class _Inline:
    """An inline token list written as Markdown: pieces of escaped text, code and markup."""

    def __init__(self, one_line: bool, in_table: bool) -> None:
        self.one_line, self.in_table = one_line, in_table
        # ("text" | "linked" (a link's text) | "code" | "mark", what is written)
        self.pieces: list[tuple[str, str]] = []
        self.line_start = not in_table
        # A strikethrough in the same run: mistune (nbconvert) looks for its end by a plain
        # search, so a "~~" inside a code span there could end it and free the span's text.
        self.struck = False
        # Inside a link's text marked turns \\[ and \\] back into brackets and parses the text
        # again (so !\\[x\\](u) would be an image there): brackets are entities instead.
        self.linked = 0

    def text(self, content: str) -> None:
        if not content:
            return
        text = _escape(content)
        if self.one_line:
            text = text.replace("#", "\\#")
        kind = "text"
        if self.linked:  # (and no renderer autolinks a bare URL inside a link's text)
            text = text.replace("\\[", "&#91;").replace("\\]", "&#93;")
            kind = "linked"
        self.pieces.append((kind, _line_start(text) if self.line_start else text))
        self.line_start = False

    def code(self, content: str) -> None:
        span = _code_span(content, in_table=self.in_table)
        if span is None or (self.struck and "~~" in content):
            self.text(" ".join(content.split("\n")))
        else:
            self.pieces.append(("code", span))
            self.line_start = False

    def mark(self, markup: str) -> None:
        self.pieces.append(("mark", markup))
        self.line_start = False

    def link_start(self) -> None:
        """A link's ``[``: a ``!`` just before it would make the link an image."""
        for i in range(len(self.pieces) - 1, -1, -1):
            kind, written = self.pieces[i]
            if written:
                if kind in ("text", "linked") and written.endswith("!"):
                    self.pieces[i] = (kind, written[:-1] + "\\!")
                break
        self.mark("[")
        self.linked += 1

    def link_end(self, href: str) -> None:
        self.linked -= 1
        self.mark(f"]({_md_url(href)})")

    def line_break(self, hard: bool) -> None:
        if self.one_line or self.in_table:
            self.pieces.append(("text", " "))
            return
        if self.pieces and self.pieces[-1][1].endswith(" "):
            kind, written = self.pieces[-1]  # trailing spaces would make a hard break
            stripped = written.rstrip(" ")
            self.pieces[-1] = (kind, stripped + "&#32;" * (len(written) - len(stripped)))
        self.pieces.append(("mark", "\\\n" if hard else "\n"))
        self.line_start = True

    def written(self) -> str:
        """The pieces joined, with a bare URL broken (``http\\://``, ``www\\.``) where the
        run a renderer would autolink reaches markup or code: marked, GitHub and mistune
        take everything up to a space into such a link, and a backtick or ``~~`` taken there
        leaves the rest of the line paired otherwise, a code span's text out of its span."""
        full = "".join(written for _, written in self.pieces)
        if _URL_START.search(full) is None:
            return full
        text_spans: list[tuple[int, int]] = []
        markup_starts: list[int] = []
        at = 0
        for kind, written in self.pieces:
            if kind == "text":
                text_spans.append((at, at + len(written)))
            elif written and kind != "linked":
                markup_starts.append(at)
            at += len(written)
        stops = [m.start() for m in _URL_STOP.finditer(full)] + [len(full)]
        breaks = []
        for match in _URL_START.finditer(full):
            start = match.start()
            span = bisect.bisect_right(text_spans, (start, len(full) + 1)) - 1
            if span < 0 or not text_spans[span][0] <= start < text_spans[span][1]:
                continue  # in code or in a link's address: every renderer reads those whole
            stop = stops[bisect.bisect_left(stops, start)]
            markup = bisect.bisect_left(markup_starts, start)
            if markup < len(markup_starts) and markup_starts[markup] < stop:
                breaks.append(match.end())
        for end in reversed(breaks):
            full = full[:end] + "\\" + full[end:]
        return full


def _inline_md(children: Iterable[Token], *, one_line: bool = False, in_table: bool = False) -> str:
    """An inline token list as Markdown (``one_line``: breaks as spaces, ``#`` escaped)."""
    children = list(children)
    out = _Inline(one_line, in_table)
    out.struck = any(token.type == "s_open" for token in children)
    links: list[tuple[str | None, Token]] = []
    hidden = False  # inside an autolink shown as code: its text is the address, shown once
    for token in children:
        kind = token.type
        if hidden and kind != "link_close":
            continue
        if kind == "text":
            out.text(token.content)
        elif kind in ("softbreak", "hardbreak"):
            out.line_break(kind == "hardbreak")
        elif kind == "code_inline":
            out.code(token.content)
        elif kind in ("em_open", "em_close", "strong_open", "strong_close", "s_open", "s_close"):
            out.mark(token.markup)
        elif kind == "link_open":
            href = safe_href(token.attrs.get("href"))
            links.append((href, token))
            if href is not None:
                out.link_start()
            elif token.markup == "autolink":
                hidden = True
        elif kind == "link_close" and links:
            href, opening = links.pop()
            hidden = False
            if href is not None:  # no title: a tooltip is not worth a third escape rule
                out.link_end(href)
            elif opening.attrs.get("href"):
                address = str(opening.attrs["href"])
                if opening.markup == "autolink":
                    out.code(address)
                else:
                    out.text(" (")
                    out.code(address)
                    out.text(")")
        elif kind == "image":
            href = safe_href(token.attrs.get("src"))
            if href is not None and not any(h is not None for h, _ in links):
                out.link_start()
                out.text(_alt(token))
                out.link_end(href)
            elif token.attrs.get("src"):
                out.text(f"{_alt(token)} (")
                out.code(str(token.attrs["src"]))
                out.text(")")
            else:
                out.text(_alt(token))
        elif token.content:  # nothing else is made with raw HTML off; anything new is text
            out.text(token.content)
    return out.written()


class _Box:
    """A container being written: a quote or a list item (its line prefixes), or a list."""

    __slots__ = (
        "blocks",
        "first",
        "last_list",
        "marker",
        "number",
        "ordered",
        "rest",
        "tight",
        "used",
    )

    def __init__(self, first: str = "", rest: str = "", tight: bool = False) -> None:
        self.first, self.rest, self.tight = first, rest, tight
        self.used = False  # its first line (a list item's, with the marker) is written
        self.blocks = 0  # blocks written directly inside it
        self.marker = ""  # a list's marker: "-", "*" or "+"; "." or ")" after a number
        self.ordered = False
        self.number = 1  # an ordered list's next number
        self.last_list = ""  # the marker of the last block inside, if that was a list


def _tight_lists(tokens: list[Token]) -> dict[int, bool]:
    """For each list's opening token (by index), whether it is tight (its paragraphs hidden)."""
    tight: dict[int, bool] = {}
    open_lists: list[int] = []
    for i, token in enumerate(tokens):
        if token.type in ("bullet_list_open", "ordered_list_open"):
            tight[i] = True
            open_lists.append(i)
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            open_lists.pop()
        elif token.type == "paragraph_open" and open_lists:
            owner = open_lists[-1]
            if token.level == tokens[owner].level + 2 and not token.hidden:
                tight[owner] = False
    return tight


class _MarkdownWriter:
    """Block tokens to Markdown lines, every line with its containers' prefixes."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.root = _Box()
        self.stack: list[_Box] = []

    def line(self, text: str) -> None:
        prefix = []
        for box in self.stack:
            prefix.append(box.rest if box.used else box.first)
            box.used = True
        line = "".join(prefix) + text
        self.lines.append(line if text else line.rstrip())

    def begin_block(self) -> None:
        box = self.stack[-1] if self.stack else self.root
        if box.blocks and not box.tight:
            self.line("")
        box.blocks += 1
        box.last_list = ""

    def write(self, tokens: list[Token]) -> str:
        tight = _tight_lists(tokens)
        i, count = 0, len(tokens)
        while i < count:
            token = tokens[i]
            kind = token.type
            if kind in ("paragraph_open", "heading_open"):
                self.begin_block()
                children = tokens[i + 1].children or []
                if kind == "heading_open":
                    body = _inline_md(children, one_line=True)
                    self.line("#" * int(token.tag[1:]) + (f" {body}" if body else ""))
                else:
                    for text in _inline_md(children).split("\n"):
                        self.line(text)
                i += 3
                continue
            if kind in ("fence", "code_block"):
                self.begin_block()
                words = _INFO.findall(token.info.split(" ")[0]) if token.info else []
                for text in _fence_lines(token.content, "".join(words)):
                    self.line(text)
            elif kind == "hr":
                self.begin_block()
                self.line("***")
            elif kind == "blockquote_open":
                self.begin_block()
                self.stack.append(_Box("> ", "> "))
            elif kind in ("bullet_list_open", "ordered_list_open"):
                parent = self.stack[-1] if self.stack else self.root
                previous = parent.last_list
                self.begin_block()
                box = _Box(tight=tight.get(i, True))
                start = token.attrs.get("start", 1)
                box.number = start if isinstance(start, int) else 1
                box.marker, box.ordered = token.markup, kind == "ordered_list_open"
                if box.marker == previous:  # the same marker again would continue that list
                    box.marker = _OTHER_MARKER.get(box.marker, box.marker)
                parent.last_list = box.marker
                self.stack.append(box)
            elif kind == "list_item_open":
                owner = self.stack[-1]
                if owner.blocks and not owner.tight:
                    self.line("")
                owner.blocks += 1
                if owner.ordered:
                    number = token.info if token.info.isdigit() else str(owner.number)
                    marker = f"{number}{owner.marker} "
                    owner.number += 1
                else:
                    marker = f"{owner.marker} "
                self.stack.append(_Box(marker, " " * len(marker), tight=owner.tight))
            elif kind == "list_item_close":
                if not self.stack[-1].used:
                    self.line("")  # an empty item: its marker alone
                self.stack.pop()
            elif kind == "blockquote_close":
                if not self.stack[-1].used:
                    self.line("")  # an empty quote: its ">" alone
                self.stack.pop()
            elif kind in ("bullet_list_close", "ordered_list_close"):
                self.stack.pop()
            elif kind == "table_open":
                self.begin_block()
                i = self.table(tokens, i)
            i += 1
        while self.lines and not self.lines[-1]:
            self.lines.pop()
        return "\n".join(self.lines)

    def table(self, tokens: list[Token], i: int) -> int:
        """Write the table opening at ``i``; the index of its closing token."""
        rows: list[list[str]] = []
        aligns: list[str] = []
        while tokens[i].type != "table_close":
            token = tokens[i]
            if token.type == "tr_open":
                rows.append([])
            elif token.type in ("th_open", "td_open"):
                cell = _inline_md(tokens[i + 1].children or [], in_table=True)
                rows[-1].append(cell)
                if token.type == "th_open":
                    aligns.append(str(token.attrs.get("style", "")))
            i += 1
        marks = {
            "text-align:left": ":---",
            "text-align:right": "---:",
            "text-align:center": ":---:",
        }
        delimiter = [marks.get(a, "---") for a in aligns]
        for n, row in enumerate(rows):
            self.line("| " + " | ".join(row) + " |")
            if n == 0:
                self.line("| " + " | ".join(delimiter) + " |")
        return i


def markdown_to_markdown(text: object) -> str:
    """The model's Markdown as safe Markdown: formatting kept, no raw HTML, no image, no
    script link, under CommonMark, GitHub's renderer and ``marked`` alike (see the module).

    Examples
    --------
    >>> markdown_to_markdown("**hi** <b>x</b> ![t](http://h/p.png)")
    '**hi** &lt;b&gt;x&lt;/b&gt; [image: t](http://h/p.png)'
    """
    source = clean(visible_source(text))
    tokens = _parse(source)
    if tokens is None:
        return literal(source)
    return _MarkdownWriter().write(tokens)


class MarkdownStream:
    """:func:`markdown_to_markdown` of a text that grows (a reply as it streams): each
    update parses only what follows the blocks that are complete.

    A top-level block is complete once the parser has begun another after it: nothing
    that follows can change it, save a reference definition further on, which the final
    render (``final=True``: the whole text, parsed once) takes into account. Each update
    is as safe as a whole render; only the last block is parsed again and again, and while
    it is longer than :data:`STREAM_PARSE_CHARS` it is shown literally (as the notebook's
    live display shows a long reply's end), so an update costs a bounded parse at most.
    """

    def __init__(self) -> None:
        self._text = ""  # the (line-normalised) text of the last update
        self._done = 0  # where its complete blocks end
        self._written: list[str] = []  # their Markdown

    def render(self, text: str, *, final: bool = False) -> str:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if (
            final
            or len(text) > MAX_MARKDOWN_CHARS
            or text[: self._done] != self._text[: self._done]
        ):
            self._text, self._done, self._written = "", 0, []
            return markdown_to_markdown(text)
        self._text = text
        if len(text) - self._done > STREAM_PARSE_CHARS:  # one block that long: text for now
            return "\n\n".join([*self._written, literal(clean(text[self._done :]))])
        tokens = _parse(clean(text[self._done :]))
        if tokens is None:
            return markdown_to_markdown(text)
        starts = [i for i, t in enumerate(tokens) if t.level == 0 and t.nesting >= 0 and t.map]
        line = tokens[starts[-1]].map[0] if len(starts) >= 2 else 0  # type: ignore[index]
        if line > 0:  # the blocks before the last one's first line are complete
            last = starts[-1]
            tail = text[self._done :]
            offset = 0
            for _ in range(line):
                offset = tail.index("\n", offset) + 1
            self._written.append(_MarkdownWriter().write(tokens[:last]))
            self._done += offset
            tokens = tokens[last:]
        parts = [*self._written, _MarkdownWriter().write(tokens)]
        return "\n\n".join(part for part in parts if part)


# -- HTML -----------------------------------------------------------------------------------

_LINK_ATTRS = 'rel="noopener noreferrer nofollow" target="_blank"'


def _a(href: str, token: Token, body: str) -> str:
    title = token.attrs.get("title")
    titled = f' title="{escape(title)}"' if isinstance(title, str) and title else ""
    return f'<a href="{escape(href)}"{titled} {_LINK_ATTRS}>{body}</a>'


def _inline_html(children: Iterable[Token], *, one_line: bool = False) -> str:
    """An inline token list as HTML; a break at the top level is ``\\n`` (a new line's
    ``<div>``), inside emphasis or a link a space (``one_line``: always a space)."""
    out: list[str] = []
    links: list[tuple[str | None, Token]] = []
    depth = 0  # open inline elements: a break inside one cannot start a new line's div
    hidden = 0
    tags = {
        "em_open": "<em>",
        "em_close": "</em>",
        "strong_open": "<strong>",
        "strong_close": "</strong>",
        "s_open": f"<span{style('strike')}>",
        "s_close": "</span>",
    }
    for token in children:
        kind = token.type
        if hidden and kind != "link_close":
            continue
        if kind == "text":
            out.append(escape(token.content))
        elif kind in ("softbreak", "hardbreak"):
            out.append(" " if one_line or depth else "\n")
        elif kind == "code_inline":
            out.append(f"<code>{escape(token.content)}</code>")
        elif kind in tags:
            depth += 1 if kind.endswith("_open") else -1
            out.append(tags[kind])
        elif kind == "link_open":
            href = safe_href(token.attrs.get("href"))
            links.append((href, token))
            if href is not None:
                depth += 1
                out.append(_a(href, token, "")[: -len("</a>")])
            elif token.markup == "autolink":
                hidden = 1
        elif kind == "link_close":
            if not links:
                continue
            href, opening = links.pop()
            hidden = 0
            if href is not None:
                depth -= 1
                out.append("</a>")
            elif opening.attrs.get("href"):
                address = f"<code>{escape(opening.attrs['href'])}</code>"
                out.append(address if opening.markup == "autolink" else f" ({address})")
        elif kind == "image":
            label = escape(_alt(token))
            href = safe_href(token.attrs.get("src"))
            if href is not None and not any(h is not None for h, _ in links):
                out.append(_a(href, token, label))
            elif token.attrs.get("src"):
                out.append(f"{label} (<code>{escape(token.attrs['src'])}</code>)")
            else:
                out.append(label)
        elif token.content:
            out.append(escape(token.content))
    return "".join(out)


def _html(tokens: list[Token]) -> str:
    out: list[str] = []
    i, count = 0, len(tokens)
    simple = {
        "bullet_list_open": "<ul>",
        "bullet_list_close": "</ul>",
        "ordered_list_close": "</ol>",
        "list_item_open": "<li>",
        "list_item_close": "</li>",
        "blockquote_open": f"<div{style('quote')}>",
        "blockquote_close": "</div>",
        "hr": f"<div{style('rule')}></div>",
    }
    while i < count:
        token = tokens[i]
        kind = token.type
        if kind == "paragraph_open":
            lines = _inline_html(tokens[i + 1].children or []).split("\n")
            if token.hidden and len(lines) == 1:  # a tight list's item: its text alone
                out.append(lines[0])
            else:
                out.extend(f"<div>{line}</div>" for line in lines)
            i += 3
            continue
        if kind == "heading_open":
            body = _inline_html(tokens[i + 1].children or [], one_line=True)
            out.append(f"<div{style('heading')}><b>{body}</b></div>")
            i += 3
            continue
        if kind in ("fence", "code_block"):
            body = token.content[:-1] if token.content.endswith("\n") else token.content
            out.append(f'<pre class="pinb-pre"{style("pre")}><code>{escape(body)}</code></pre>')
        elif kind == "ordered_list_open":
            start = token.attrs.get("start", 1)
            out.append(f'<ol start="{int(start)}">' if start != 1 else "<ol>")
        elif kind in simple:
            out.append(simple[kind])
        elif kind == "table_open":
            i = _html_table(tokens, i, out)
        i += 1
    return "".join(out)


def _html_table(tokens: list[Token], i: int, out: list[str]) -> int:
    """The table opening at ``i`` as the views' table (styled divs); its closing index."""
    rows: list[list[str]] = []
    right: set[int] = set()
    while tokens[i].type != "table_close":
        token = tokens[i]
        if token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            cell = _inline_html(tokens[i + 1].children or [], one_line=True)
            if token.type == "th_open":
                cell = f"<b>{cell}</b>"
                if token.attrs.get("style") == "text-align:right":
                    right.add(len(rows[-1]))
            rows[-1].append(cell)
        i += 1
    columns = range(max((len(r) for r in rows), default=0))
    out.append(table([], rows, numeric=right, raw_columns=columns, wrap_columns=columns))
    return i


def markdown_to_html(text: object) -> str:
    """The model's Markdown as HTML a sanitizer keeps whole: formatting kept, any HTML in
    the input shown as text, no image, links only to ``http:``, ``https:`` or ``mailto:``.

    Examples
    --------
    >>> markdown_to_html("**hi** <script>x</script>")[-60:]
    '<div><strong>hi</strong> &lt;script&gt;x&lt;/script&gt;</div></div>'
    """
    source = clean_text(text)
    tokens = _parse(source)
    body = pre(source) if tokens is None else _html(tokens)
    return f'<div class="pinb-md"{style("md")}>{body}</div>'
