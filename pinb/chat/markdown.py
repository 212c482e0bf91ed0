"""Markdown a chat can show: pinb's one Markdown policy, and pictures as PNG data URIs.

The chat renders a message's body as Markdown (JupyterLab's ``marked``, then its
sanitizer). What the model wrote goes through :func:`pinb.render.markdown.markdown_to_markdown`
(its formatting kept; no raw HTML, no image, no script link, under ``marked`` as under
CommonMark); every other text is :func:`literal`, :func:`code` or :func:`fence`. The one
picture a chat shows is pinb's own: the session tree, a PNG inside the message
(:func:`png_image`), which the browser does not fetch from anywhere.
"""

from __future__ import annotations

import base64
import re

from ..render.markdown import clean, code, fence, literal
from ..render.markdown import markdown_to_markdown as model_markdown

__all__ = ["clean", "code", "fence", "literal", "model_markdown", "png_image"]

#: The largest picture sent inline (base64 grows it by a third; the chat file keeps it).
MAX_PICTURE_BYTES = 1_500_000


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
