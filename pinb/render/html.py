"""Escaped HTML building blocks, tables and the mimebundle helper (Markdown: :mod:`.markdown`)."""

from __future__ import annotations

import html as _html
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..core.js.jsontext import SHOWN_DEPTH, value_text, visible

__all__ = [
    "CSS",
    "SAFE_TAGS",
    "STYLES",
    "clean_text",
    "div",
    "escape",
    "fold",
    "gauge",
    "heading",
    "mimebundle",
    "muted",
    "pre",
    "shorten",
    "style",
    "table",
    "title",
    "wrap",
]

# Characters XML 1.0 forbids (and lone surrogates, which cannot be encoded): they would make
# an SVG or XHTML document unparseable, so they become U+FFFD before escaping.
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
#: Markup every view limits itself to: what survives JupyterLab's sanitizer for untrusted
#: outputs, nbconvert's ``sanitize_html`` (bleach) and GitHub alike. Other tags would be
#: dropped or, worse, shown escaped as text; so there are no headings, paragraphs, line
#: breaks, tables (bleach shows their ``<tbody>`` as text), ``<details>``, ``<style>`` or
#: inline SVG. Pictures are outputs of
#: their own (``image/svg+xml``, ``image/png``).
SAFE_TAGS = frozenset(
    {
        "a",
        "b",
        "code",
        "div",
        "em",
        "i",
        "li",
        "ol",
        "pre",
        "span",
        "strong",
        "table",
        "td",
        "tr",
        "ul",
    }
)

#: Inline styles (JupyterLab keeps them for untrusted outputs; nbconvert drops them, and the
#: views still read right without them: every status is also written as a word).
STYLES: dict[str, str] = {
    "view": (
        "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;"
        "line-height:1.45;color:#1f2328;max-width:100%;overflow-x:auto"
    ),
    "title": "font-size:15px;font-weight:bold;margin:4px 0 2px 0",
    "heading": "font-weight:bold;margin:10px 0 2px 0",
    "muted": "color:#6e7781",
    "table": "display:table;border-collapse:collapse;margin:4px 0",
    # A table wider than its cell scrolls in a box of its own: the scrollbar sits right
    # under the rows, not under whatever text the view shows below them.
    "scroll": "max-width:100%;overflow-x:auto",
    "tr": "display:table-row",
    "cell": (
        "display:table-cell;border-bottom:1px solid #d0d7de;padding:2px 8px;text-align:left;"
        "vertical-align:top;white-space:nowrap"
    ),
    # Headings wrap between words, so a long column title never widens a table of numbers.
    "head": "color:#57606a;font-weight:bold;white-space:normal",
    "num": "text-align:right",
    # ``overflow-wrap:anywhere`` would be dropped: JupyterLab keeps only normal|break-word.
    "wrap": "white-space:normal;min-width:10em;max-width:48em;overflow-wrap:break-word",
    # ``word-break:normal``: JupyterLab breaks every output ``pre`` anywhere ("wor ds");
    # a word is only broken when it is wider than the line on its own.
    "pre": (
        "white-space:pre-wrap;overflow-wrap:break-word;word-break:normal;"
        "background-color:#f6f8fa;padding:6px;"
        "margin:2px 0;max-height:30em;overflow:auto"
    ),
    "md": "border-left:3px solid #d0d7de;padding-left:8px",
    # A long section's body: at most a third of a screen, the rest a scroll away (sanitizer
    # safe, unlike <details>: nbconvert's clean_html escapes that into visible text, and
    # drops the style, so there the section simply shows whole).
    "fold": "max-height:26em;overflow-y:auto;border-top:1px solid #d0d7de;"
    "border-bottom:1px solid #d0d7de",
    # The model's Markdown (pinb.render.markdown): a quote, a rule, a strikethrough.
    "quote": "border-left:3px solid #d0d7de;padding-left:8px;color:#57606a;margin:4px 0",
    "rule": "border-top:1px solid #d0d7de;margin:6px 0",
    "strike": "text-decoration:line-through",
    "badge": (
        "display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;"
        "background-color:#eaeef2;margin-right:4px"
    ),
    "warn": "color:#9a6700",
    "error": "color:#cf222e",
    "ok": "color:#1a7f37",
    "gauge": "font-family:ui-monospace,Menlo,Consolas,monospace;white-space:pre",
    # Row tones (the class names stay on the rows too).
    "pinb-summarized": "color:#8c959f;text-decoration:line-through",
    "pinb-kept": "background-color:#eef6ff",
    "pinb-after": "background-color:#f0fff4",
    "pinb-summary-row": "background-color:#fff8e1",
    "pinb-edited": "background-color:#f6f0ff",
    "pinb-muted": "color:#6e7781",
    "pinb-faded": "color:#8c959f;background-color:#f3f4f6",
}

#: Kept for callers that still put a style sheet inside their own trusted output; the views
#: themselves use inline :data:`STYLES` only.
CSS = ""


def style(*names: str) -> str:
    """A ``style="…"`` attribute joining :data:`STYLES` entries (empty for none)."""
    rules = ";".join(STYLES[n] for n in names if n in STYLES)
    return f' style="{rules}"' if rules else ""


def div(body: str, *styles: str, css_class: str = "") -> str:
    """A ``<div>`` with inline styles and an optional class (``body`` is trusted HTML)."""
    cls = f' class="{escape(css_class)}"' if css_class else ""
    return f"<div{cls}{style(*styles)}>{body}</div>"


def title(text: object) -> str:
    """A view's title line (no ``<h3>``: sanitizers escape it)."""
    return div(escape(text), "title")


def heading(text: object) -> str:
    """A section heading inside a view."""
    return div(escape(text), "heading")


def fold(body: str) -> str:
    """``body`` (trusted HTML) in a box at most a third of a screen tall that scrolls, so a
    long table or summary never pushes the rest of its view a screen down."""
    return f'<div class="pinb-fold"{style("fold")}>{body}</div>'


def muted(text: object) -> str:
    """Grey, escaped text in a ``<span>``."""
    return f"<span{style('muted')}>{escape(text)}</span>"


def gauge(share: float | None, width: int = 30) -> str:
    """A text bar ``███████░░░░░`` for a share (0–1) of something; survives any sanitizer."""
    if share is None:
        return ""
    filled = max(0, min(width, round(share * width)))
    return "█" * filled + "░" * (width - filled)


def visible_source(value: object) -> str:
    """``str(value)`` safe at any depth (a list or dict as JSON, cut at :data:`SHOWN_DEPTH`)."""
    return value if isinstance(value, str) else value_text(value, max_depth=SHOWN_DEPTH)


def clean_text(value: object) -> str:
    """``str(value)`` with characters that XML/HTML cannot carry replaced by U+FFFD.

    A list or dict shows as JSON, nested levels beyond :data:`SHOWN_DEPTH` as ``[…]``.
    """
    return _INVALID.sub("\ufffd", visible_source(value))


def escape(value: object) -> str:
    """Escape any value for HTML/SVG text *and* quoted attribute values (``& < > " '``).

    The one HTML escape of pinb: every view, picture and export writes untrusted text
    through it. ``None`` (a field a file leaves null) shows as nothing; any other value as
    :func:`clean_text` gives it (a list or dict as JSON, characters XML cannot carry and
    lone surrogates as U+FFFD, so the text is valid in SVG and XHTML as in HTML).
    """
    return "" if value is None else _html.escape(clean_text(value), quote=True)


def shorten(text: object, limit: int) -> str:
    """One line of at most ``limit`` characters (whitespace collapsed, ``…`` when cut).

    Any value is accepted: files can hold a number or an object where text belongs.
    Whitespace (line breaks included) collapses to one space; other control characters
    are shown as escapes (:func:`visible`).
    """
    flat = visible(" ".join(visible_source(text).split()))
    if len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 1)].rstrip() + "…"


def pre(text: object, css_class: str = "pinb-pre") -> str:
    """Preformatted, escaped text."""
    return f'<pre class="{escape(css_class)}"{style("pre")}>{escape(text)}</pre>'


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    numeric: Iterable[int] = (),
    row_classes: Sequence[str] | None = None,
    raw_columns: Iterable[int] = (),
    wrap_columns: Iterable[int] = (),
) -> str:
    """A table made of ``<div>`` rows and ``<span>`` cells laid out by inline styles.

    Not ``<table>``: nbconvert's sanitizer (bleach) turns the ``<tbody>`` every parser adds
    into visible text. With styles (JupyterLab, trusted or not) this is a real table; where
    styles are stripped, each row stays one line and the cells are separated by a ``│``
    that is otherwise hidden. The table sits in a box of its own (``pinb-table-scroll``):
    wider than its cell, it scrolls there, its scrollbar right under its rows.

    Parameters
    ----------
    headers:
        Column titles (escaped); an all-empty header row is left out.
    rows:
        Cell values; ``None`` shows as empty.
    numeric:
        Column indices aligned right (numbers are shown with thousands separators).
    row_classes:
        A class per row (``""`` for none); the ``pinb-…`` tones of :data:`STYLES` are also
        applied inline.
    raw_columns:
        Column indices whose cells are already-safe HTML produced by this package.
    wrap_columns:
        Column indices whose long text wraps (all others stay on one line; headings
        always wrap between words).
    """
    numeric_set = set(numeric)
    raw_set = set(raw_columns)
    wrap_set = set(wrap_columns)
    separator = '<span style="display:none"> │ </span>'

    def cell(i: int, text: str, *extra: str) -> str:
        names = ["cell", *extra]
        if i in numeric_set:
            names.append("num")
        if i in wrap_set:
            names.append("wrap")
        return f'<span class="pinb-td"{style(*names)}>{text}</span>'

    parts = [f'<div class="pinb-table-scroll"{style("scroll")}>']
    parts.append(f'<div class="pinb-table"{style("table")}>')
    if any(headers):
        cells = [cell(i, escape(h), "head") for i, h in enumerate(headers)]
        parts.append(f'<div class="pinb-tr"{style("tr")}>{separator.join(cells)}</div>')
    for r, row in enumerate(rows):
        cls = row_classes[r] if row_classes is not None and r < len(row_classes) else ""
        cells = []
        for i, value in enumerate(row):
            if i in raw_set:
                text = "" if value is None else value_text(value)
            elif value is None:
                text = ""
            elif (
                i in numeric_set and isinstance(value, int | float) and not isinstance(value, bool)
            ):
                text = f"{value:,}"
            else:
                text = escape(value)
            cells.append(cell(i, text))
        classes = f"pinb-tr {escape(cls)}".strip()
        parts.append(f'<div class="{classes}"{style("tr", cls)}>{separator.join(cells)}</div>')
    parts.append("</div></div>")
    return "".join(parts)


def wrap(body: str, css_class: str = "") -> str:
    """Wrap view HTML in a ``pinb-view`` container (inline styles, no style sheet).

    The container opts out of MathJax (``tex2jax_ignore``/``mathjax_ignore``): Jupyter
    typesets ``$…$`` in HTML output, and session text must stay text.
    """
    extra = f" {escape(css_class)}" if css_class else ""
    return (
        f'<div class="pinb-view{extra} tex2jax_ignore mathjax_ignore"{style("view")}>{body}</div>'
    )


def mimebundle(
    plain: str,
    *,
    html: str | None = None,
    svg: str | None = None,
    include: Any = None,
    exclude: Any = None,
) -> dict[str, str]:
    """A ``_repr_mimebundle_`` dict honouring IPython's ``include``/``exclude`` filters."""
    bundle: dict[str, str] = {"text/plain": plain}
    if html is not None:
        bundle["text/html"] = html
    if svg is not None:
        bundle["image/svg+xml"] = svg
    if include:
        bundle = {k: v for k, v in bundle.items() if k in include}
    if exclude:
        bundle = {k: v for k, v in bundle.items() if k not in exclude}
    return bundle
