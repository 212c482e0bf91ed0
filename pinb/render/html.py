"""Escaped HTML building blocks, a safe Markdown subset, tables and the mimebundle helper."""

from __future__ import annotations

import html as _html
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "CSS",
    "clean_text",
    "escape",
    "markdown_to_html",
    "mimebundle",
    "pre",
    "shorten",
    "table",
    "wrap",
]

# Characters XML 1.0 forbids (and lone surrogates, which cannot be encoded): they would make
# an SVG or XHTML document unparseable, so they become U+FFFD before escaping.
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")

#: One style sheet for every view; every class name starts with ``pinb-``.
CSS = """
.pinb-view{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:13px;
  line-height:1.4;color:#1f2328;max-width:100%;overflow-x:auto}
.pinb-view h3{font-size:14px;margin:6px 0 4px 0}
.pinb-view h4{font-size:13px;margin:6px 0 2px 0}
.pinb-view table.pinb-table{border-collapse:collapse;margin:4px 0}
.pinb-view table.pinb-table th,.pinb-view table.pinb-table td{border-bottom:1px solid #d0d7de;
  padding:2px 8px;text-align:left;vertical-align:top;white-space:nowrap}
.pinb-view table.pinb-table td.pinb-wrap{white-space:normal;min-width:16em;max-width:48em;
  overflow-wrap:anywhere}
.pinb-view table.pinb-table td.pinb-num,.pinb-view table.pinb-table th.pinb-num{text-align:right;
  font-variant-numeric:tabular-nums}
.pinb-view .pinb-muted{color:#6e7781}
.pinb-view .pinb-summarized{color:#8c959f;text-decoration:line-through}
.pinb-view .pinb-kept{background:#eef6ff}
.pinb-view .pinb-after{background:#f0fff4}
.pinb-view .pinb-summary-row{background:#fff8e1}
.pinb-view pre.pinb-pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;
  padding:6px;border-radius:4px;margin:2px 0;max-height:30em;overflow:auto}
.pinb-view .pinb-md{border-left:3px solid #d0d7de;padding-left:8px}
.pinb-view .pinb-badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;
  background:#eaeef2;margin-right:4px}
.pinb-view .pinb-bar{display:inline-block;height:10px;vertical-align:middle}
.pinb-view .pinb-warn{color:#9a6700}
.pinb-view .pinb-error{color:#cf222e}
"""


def clean_text(value: object) -> str:
    """``str(value)`` with characters that XML/HTML cannot carry replaced by U+FFFD."""
    text = value if isinstance(value, str) else str(value)
    return _INVALID.sub("\ufffd", text)


def escape(value: object) -> str:
    """Escape any value for HTML/SVG text *and* quoted attribute values (``& < > " '``)."""
    return _html.escape(clean_text(value), quote=True)


def shorten(text: object, limit: int) -> str:
    """One line of at most ``limit`` characters (whitespace collapsed, ``…`` when cut).

    Any value is accepted: files can hold a number or an object where text belongs.
    """
    flat = " ".join(clean_text(text).split())
    if len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 1)].rstrip() + "…"


def pre(text: object, css_class: str = "pinb-pre") -> str:
    """Preformatted, escaped text."""
    return f'<pre class="{escape(css_class)}">{escape(text)}</pre>'


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    numeric: Iterable[int] = (),
    row_classes: Sequence[str] | None = None,
    raw_columns: Iterable[int] = (),
    wrap_columns: Iterable[int] = (),
) -> str:
    """An HTML table; every cell is escaped except the ``raw_columns`` the caller built.

    Parameters
    ----------
    headers:
        Column titles (escaped).
    rows:
        Cell values; ``None`` shows as empty.
    numeric:
        Column indices aligned right (numbers are shown with thousands separators).
    row_classes:
        A CSS class per row (``""`` for none).
    raw_columns:
        Column indices whose cells are already-safe HTML produced by this package.
    wrap_columns:
        Column indices whose long text wraps (all others stay on one line).
    """
    numeric_set = set(numeric)
    raw_set = set(raw_columns)
    wrap_set = set(wrap_columns)
    parts = ['<table class="pinb-table"><thead><tr>']
    for i, header in enumerate(headers):
        cls = ' class="pinb-num"' if i in numeric_set else ""
        parts.append(f"<th{cls}>{escape(header)}</th>")
    parts.append("</tr></thead><tbody>")
    for r, row in enumerate(rows):
        cls = row_classes[r] if row_classes is not None and r < len(row_classes) else ""
        parts.append(f'<tr class="{escape(cls)}">' if cls else "<tr>")
        for i, cell in enumerate(row):
            if i in raw_set:
                text = "" if cell is None else str(cell)
            elif cell is None:
                text = ""
            elif i in numeric_set and isinstance(cell, int | float) and not isinstance(cell, bool):
                text = f"{cell:,}"
            else:
                text = escape(cell)
            td = (
                ' class="pinb-num"'
                if i in numeric_set
                else (' class="pinb-wrap"' if i in wrap_set else "")
            )
            parts.append(f"<td{td}>{text}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def wrap(body: str, css_class: str = "") -> str:
    """Wrap view HTML in a ``pinb-view`` container with the shared style sheet.

    The container opts out of MathJax (``tex2jax_ignore``/``mathjax_ignore``): Jupyter
    typesets ``$…$`` in HTML output, and session text must stay text.
    """
    extra = f" {escape(css_class)}" if css_class else ""
    return (
        f'<div class="pinb-view{extra} tex2jax_ignore mathjax_ignore"><style>{CSS}</style>'
        f"{body}</div>"
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


# ---------------------------------------------------------------------------------------
# Markdown: a small subset, rendered from escaped text so raw HTML can never pass through.
# ---------------------------------------------------------------------------------------

_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_LINK = re.compile(r"\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_ORDERED = re.compile(r"^(\s*)\d{1,9}[.)]\s+(.*)$")
_TASK = re.compile(r"^\[([ xX])\]\s+(.*)$")


def _safe_url(escaped_url: str) -> str | None:
    """The URL (still escaped) if its scheme is on the allow list, else ``None``."""
    raw = _html.unescape(escaped_url)
    probe = "".join(ch for ch in raw if ch > " ").lower()
    if probe.startswith(_SAFE_SCHEMES) and raw == raw.strip():
        return escape(raw)
    return None


def _link(match: re.Match[str]) -> str:
    text, url = match.group(1), match.group(2)
    safe = _safe_url(url)
    if safe is None:
        return match.group(0)  # stays literal (already escaped) text
    return f'<a href="{safe}" rel="noopener noreferrer nofollow" target="_blank">{text}</a>'


def _inline(text: str) -> str:
    """Inline Markdown of one escaped-on-the-way line: code spans, links, bold, italic."""
    out: list[str] = []
    pieces = text.split("`")
    if len(pieces) % 2 == 0:  # an unmatched backtick: leave the last one literal
        pieces[-2:] = [pieces[-2] + "`" + pieces[-1]]
    for i, piece in enumerate(pieces):
        escaped = escape(piece)
        if i % 2 == 1:
            out.append(f"<code>{escaped}</code>")
            continue
        escaped = _LINK.sub(_link, escaped)
        escaped = _BOLD.sub(r"<strong>\1</strong>", escaped)
        escaped = _ITALIC.sub(r"<em>\1</em>", escaped)
        out.append(escaped)
    return "".join(out)


def markdown_to_html(text: object) -> str:
    """Render a safe Markdown subset; any HTML in the input is shown as text.

    Supported: ATX headings, paragraphs, ``-``/``*``/``1.`` lists (with ``[ ]``/``[x]``
    task markers), fenced code blocks, inline code, ``**bold**``, ``*italic*`` and links
    whose scheme is ``http``, ``https`` or ``mailto`` (anything else stays literal text).

    Examples
    --------
    >>> markdown_to_html("**hi** <script>x</script>")
    '<div class="pinb-md"><p><strong>hi</strong> &lt;script&gt;x&lt;/script&gt;</p></div>'
    """
    lines = clean_text(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    paragraph: list[str] = []
    list_kind: str | None = None
    fence: str | None = None
    code: list[str] = []

    def close_paragraph() -> None:
        if paragraph:
            out.append("<p>" + "<br>".join(_inline(line) for line in paragraph) + "</p>")
            paragraph.clear()

    def close_list() -> None:
        nonlocal list_kind
        if list_kind:
            out.append(f"</{list_kind}>")
            list_kind = None

    for line in lines:
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                out.append(f'<pre class="pinb-pre"><code>{escape(chr(10).join(code))}</code></pre>')
                code.clear()
                fence = None
            else:
                code.append(line)
            continue
        if stripped.startswith(("```", "~~~")):
            close_paragraph()
            close_list()
            fence = stripped[:3]
            continue
        if not stripped:
            close_paragraph()
            close_list()
            continue
        heading = _HEADING.match(stripped)
        if heading:
            close_paragraph()
            close_list()
            level = min(6, len(heading.group(1)) + 2)  # keep headings small inside a view
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            continue
        item = _BULLET.match(line)
        kind = "ul"
        if item is None:
            item = _ORDERED.match(line)
            kind = "ol"
        if item is not None:
            close_paragraph()
            if list_kind != kind:
                close_list()
                out.append(f"<{kind}>")
                list_kind = kind
            body = item.group(2)
            task = _TASK.match(body)
            if task:
                mark = "☑" if task.group(1) in "xX" else "☐"
                out.append(f"<li>{mark} {_inline(task.group(2))}</li>")
            else:
                out.append(f"<li>{_inline(body)}</li>")
            continue
        close_list()
        paragraph.append(stripped)
    if fence is not None:
        out.append(f'<pre class="pinb-pre"><code>{escape(chr(10).join(code))}</code></pre>')
    close_paragraph()
    close_list()
    return '<div class="pinb-md">' + "".join(out) + "</div>"
