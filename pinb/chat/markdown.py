"""Markdown a chat can show: untrusted text stays text, pictures travel as PNG data URIs.

The chat renders a message's body as Markdown. pinb's one escape policy for Markdown is the
export's (:mod:`pinb.analysis.export`: the model's Markdown keeps its formatting with raw
HTML and script links neutralised, every other text literal, tool output fenced); this
module applies it to chat messages. One addition: a fenced code block the model wrote is
left as it is (nothing inside a fence is HTML or a link, so its ``<`` shows as ``<``). A
line is taken for the start of a fence only where CommonMark and ``marked`` (JupyterLab's
renderer) both take it for one, and for its end wherever either would end it, so a
disagreement can only leave text escaped, never live.
"""

from __future__ import annotations

import base64
import re

from ..analysis.export import _clean, _fence, _md_code, _md_literal, _md_text, _str

__all__ = ["clean", "code", "fence", "literal", "model_markdown", "png_image"]

#: A fence opening: up to three spaces, then three or more backticks (an info string
#: without backticks) or tildes.
_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}(?=[^`\n]*$)|~{3,})")
_CLOSE_REST = re.compile(r"[~`]*[ \t]*")
#: The largest picture sent inline (base64 grows it by a third; the chat file keeps it).
MAX_PICTURE_BYTES = 1_500_000


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` would end a fence opened by ``fence`` in CommonMark or in marked.

    CommonMark: the same character at least as many times, then only spaces. marked also
    ends it with more backticks or tildes after the run: either counts here.
    """
    body = line.lstrip(" ")
    if len(line) - len(body) > 3 or not body.startswith(fence):
        return False
    return _CLOSE_REST.fullmatch(body[len(fence) :]) is not None


def model_markdown(text: object) -> str:
    """The model's Markdown for the chat: formatting kept, no raw HTML, no script link.

    Prose goes through the export's policy (``<``, ``>``, ``&`` as entities; a
    ``javascript:``/``vbscript:`` scheme, and ``data:``/``file:`` as a link target, broken
    by a zero-width space before its colon). A fenced code block is kept verbatim; an
    unclosed one runs to the end, as in CommonMark.
    """
    lines = _str(text).split("\n")
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in lines:
        if fence is None:
            opened = _OPEN.match(line)
            if opened is None:
                prose.append(line)
                continue
            if prose:
                out.append(_md_text("\n".join(prose)))
                prose = []
            fence = opened.group("fence")
            out.append(line)
        else:
            out.append(line)
            if _closes(line, fence):
                fence = None
    if prose:
        out.append(_md_text("\n".join(prose)))
    return "\n".join(out)


def clean(text: str) -> str:
    """Text every encoder takes (the chat's document is UTF-8): lone surrogates as U+FFFD."""
    return _clean(text)


def literal(text: object) -> str:
    """Text shown exactly as it is: no emphasis, heading, list, link, code or HTML made of it."""
    return _md_literal(text)


def code(text: object) -> str:
    """``text`` as one inline code span (backticks and line breaks cannot end it early)."""
    return f"`{_md_code(text)}`"


def fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block longer than any run of backticks inside it."""
    return _fence(text, info)


def png_image(data: bytes, alt: str) -> str:
    """A PNG as a Markdown image with a ``data:`` URI (the chat file keeps the picture).

    A picture over :data:`MAX_PICTURE_BYTES` is not sent: the line says so instead.
    """
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError("not a PNG")
    if len(data) > MAX_PICTURE_BYTES:
        return literal(
            f"(the picture is {len(data) // 1024:,} KB, too large to send in the chat; "
            "%pi tree in the notebook draws it)"
        )
    alt_text = re.sub(r"[\[\]\\\n]", " ", alt)
    return f"![{alt_text}](data:image/png;base64,{base64.b64encode(data).decode('ascii')})"
