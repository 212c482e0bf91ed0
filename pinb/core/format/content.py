"""The text of a message's content, by Pi's rule: one function every room calls.

Pi (pi-ai's ``contentText``) reads a message's ``content`` as either a string, taken as it
is, or a list of blocks whose ``text`` blocks are joined; images, thinking and tool calls
carry no text. Values are joined as JavaScript's ``Array.prototype.join`` joins them
(``null`` and a missing ``text`` become ``""``, anything else ``String(value)``), so a
hand-written or odd file reads here as Pi reads it.
"""

from __future__ import annotations

from typing import Any

from ..js.wire import js_string
from .entries import MISSING

__all__ = ["content_text"]


def content_text(content: Any, separator: str = "\n") -> str:
    """The text of ``content``: a string as is, else its ``text`` blocks joined.

    Parameters
    ----------
    content:
        A message's ``content`` (a string, a list of blocks, or anything else, read as no
        text).
    separator:
        Between two text blocks: Pi joins with a newline; one-line previews pass ``" "``,
        a model reply's parts ``""``.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        _join_item(block.get("text"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


def _join_item(value: Any) -> str:
    """An element of ``Array.prototype.join``: ``null``/``undefined`` become ""."""
    return "" if value is None or value is MISSING else js_string(value)
