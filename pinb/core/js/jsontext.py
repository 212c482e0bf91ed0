"""JSON values as text for people, at any nesting depth: previews, reprs and ``--json`` output.

Session files may nest values thousands of levels deep (``JSON.parse`` reads them), and
Python's ``json.dumps``, ``str`` and ``repr`` recurse over nested lists and dicts, so one
such value used to crash every command that showed it. :func:`json_text` writes the same
text as ``json.dumps`` without recursion, optionally cut at a depth (``[…]`` / ``{…}``) or
a length (a final ``…``), so a cut never looks whole. :func:`value_text` is what a preview
shows of any value (a string as itself). Exact ``JSON.stringify`` output, for writing
files, is :func:`pinb.core.js.wire.dumps`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

__all__ = ["ELLIPSIS", "SHOWN_DEPTH", "json_text", "short_repr", "value_text", "visible"]

#: What stands for whatever was cut away.
ELLIPSIS = "…"
#: How deep a view or an export shows a nested value before it writes ``[…]`` / ``{…}``.
SHOWN_DEPTH = 32


def _scalar(value: Any, ensure_ascii: bool, default: Callable[[Any], Any] | None) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ensure_ascii)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        # JSON has no Infinity or NaN (an integer too long for a double is Infinity).
        return float.__repr__(value) if math.isfinite(value) else "null"
    if default is not None:
        shown = default(value)
        if not isinstance(shown, dict | list | tuple):
            return _scalar(shown, ensure_ascii, None)
        return json.dumps(str(shown), ensure_ascii=ensure_ascii)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_text(
    value: Any,
    *,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = False,
    max_depth: int | None = None,
    limit: int | None = None,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """``json.dumps(value, ...)`` without recursion, optionally cut short.

    Parameters
    ----------
    value:
        Any JSON value (dicts, lists and tuples, strings, numbers, booleans, ``None``).
    indent, separators, ensure_ascii, default:
        As for :func:`json.dumps` (``ensure_ascii`` defaults to ``False`` here); a value
        ``default`` turns into a list or dict is shown as its ``str``.
    max_depth:
        Containers nested deeper than this are written ``[…]`` / ``{…}``; ``None``
        writes every level.
    limit:
        Stop after about this many characters; the text then ends in ``…`` and is at
        most ``limit`` characters long.

    Returns
    -------
    str
        The text; non-finite floats are written ``null``.
    """
    if separators is None:
        separators = (", ", ": ") if indent is None else (",", ": ")
    if max_depth is None and limit is None:
        try:  # the C encoder when it can: all but the deepest values and non-finite floats
            return json.dumps(
                value, indent=indent, separators=separators, ensure_ascii=ensure_ascii,
                default=default, allow_nan=False,
            )  # fmt: skip
        except RecursionError:
            pass
        except ValueError as exc:  # Infinity or NaN (written null below); a cycle stays an error
            if "ircular" in str(exc):
                raise
    item_separator, key_separator = separators
    out: list[str] = []
    size = 0
    # One frame per open container: the items still to write, reversed, and its closer.
    frames: list[tuple[list[tuple[str | None, Any]], str]] = []
    pending_key: str | None = None
    item: Any = value
    while True:
        piece: str
        if pending_key is not None:
            piece = _scalar(pending_key, ensure_ascii, None) + key_separator
            out.append(piece)
            size += len(piece)
        depth = len(frames)
        opened = False
        if isinstance(item, dict | list | tuple) and item:
            if max_depth is not None and depth >= max_depth:
                piece = "{…}" if isinstance(item, dict) else "[…]"
            else:
                if isinstance(item, dict):
                    items: list[tuple[str | None, Any]] = [
                        (k if isinstance(k, str) else _key(k), v) for k, v in item.items()
                    ]
                    frames.append((items[::-1], "}"))
                    piece = "{"
                else:
                    frames.append(([(None, v) for v in reversed(item)], "]"))
                    piece = "["
                opened = True
        elif isinstance(item, dict):
            piece = "{}"
        elif isinstance(item, list | tuple):
            piece = "[]"
        else:
            piece = _scalar(item, ensure_ascii, default)
        out.append(piece)
        size += len(piece)
        if limit is not None and size > limit:
            return "".join(out)[: max(limit - 1, 0)] + ELLIPSIS
        first = opened
        while frames:
            pending, closer = frames[-1]
            if pending:
                pending_key, item = pending.pop()
                piece = "" if first else item_separator
                if indent is not None:
                    piece += "\n" + " " * (indent * len(frames))
                out.append(piece)
                size += len(piece)
                break
            frames.pop()
            piece = closer if indent is None else "\n" + " " * (indent * len(frames)) + closer
            out.append(piece)
            size += len(piece)
            first = False
        else:
            return "".join(out)


def _key(key: Any) -> str:
    """A dict key as ``json.dumps`` writes it (numbers and booleans as JSON text)."""
    if key is None or isinstance(key, bool | int | float):
        return _scalar(key, False, None)
    return str(key)


def value_text(value: Any, limit: int | None = None, *, max_depth: int = 8) -> str:
    """``str(value)`` for a preview, safe at any depth: a list or dict shows as JSON.

    Scalars read as ``str`` reads them (``None``, ``True``, ``1.5``); containers nested
    beyond ``max_depth`` levels show ``[…]`` / ``{…}``; ``limit`` cuts with ``…``.
    """
    if isinstance(value, str):
        text = value
    elif not isinstance(value, dict | list | tuple):
        text = str(value)
    else:
        text = json_text(value, max_depth=max_depth, limit=limit, default=str)
    if limit is not None and len(text) > limit:
        return text[: max(limit - 1, 0)] + ELLIPSIS
    return text


def short_repr(value: Any, limit: int | None = 60) -> str:
    """``repr(value)`` for a message (a problem, an error), safe at any depth.

    A scalar is its ``repr``; a list or dict is JSON, three levels deep, cut at ``limit``
    characters (``None``: every level, uncut; an exact, unique text).
    """
    if not isinstance(value, dict | list | tuple):
        text = repr(value)
        return text if limit is None or len(text) <= limit else text[: limit - 1] + ELLIPSIS
    if limit is None:
        return json_text(value, default=repr)
    return json_text(value, max_depth=3, limit=limit, default=repr)


#: Characters a one-line label shows as escapes: C0 and C1 controls, line and paragraph
#: separators, bidirectional overrides, surrogates and non-characters.
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _SHORT_ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(value: object) -> str:
    """Any value as one line every picture format draws: controls shown as escapes.

    ``\\r\\n`` becomes the four characters ``\\r\\n``, U+0085 ``\\x85``, U+2028
    ``\\u2028``, a lone surrogate ``\\ud83d``; everything else is kept. A list or dict
    is JSON text first (:func:`value_text`, cut at :data:`SHOWN_DEPTH` levels).
    """
    text = value if isinstance(value, str) else value_text(value, max_depth=SHOWN_DEPTH)
    return _CONTROL.sub(_escaped, text)
