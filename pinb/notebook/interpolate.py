"""``{var}`` in a ``%%pi`` cell: kernel variables pasted into the prompt, compactly."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["compact_repr", "interpolate"]

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
_MAX_CHARS = 4000


def compact_repr(value: Any, max_chars: int = _MAX_CHARS) -> str:
    """A prompt-friendly text for a value; DataFrames as a small table with their shape.

    A text longer than ``max_chars`` ends in a marker saying how much was shown.
    """
    kind = type(value)
    if kind.__module__.startswith("pandas") and kind.__name__ in ("DataFrame", "Series"):
        shape = "×".join(str(n) for n in value.shape)
        table = value.to_string(max_rows=20, max_cols=20, max_colwidth=40)
        text = f"{kind.__name__} ({shape}):\n{table}"
    elif isinstance(value, str):
        text = value
    else:
        text = repr(value)
    if len(text) > max_chars:
        # Say so where the cut is: a silently shortened value reads as the whole of it.
        marker = f" … [cut: {max_chars:,} of {len(text):,} characters shown]"
        text = text[: max(0, max_chars - len(marker))] + marker
    return text


def interpolate(
    text: str,
    namespace: Mapping[str, Any],
    *,
    max_chars: int = _MAX_CHARS,
    missing: list[str] | None = None,
) -> str:
    """Replace ``{name}`` and ``{name.attr}`` with values from ``namespace``.

    Unknown names are left as they are (code in prompts often has braces); ``{{`` and
    ``}}`` give literal braces. Only names and attribute access are resolved — nothing
    is evaluated. A value longer than ``max_chars`` is cut, with a marker that says so
    (``%config PiMagics.interpolate_limit`` sets the limit for ``%%pi``). Each ``{field}``
    left as written is appended to ``missing`` when a list is given.
    """

    def _missing(token: str) -> str:
        if missing is not None and token not in missing:
            missing.append(token)
        return token

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        parts = match.group(1).split(".")
        if parts[0] not in namespace:
            return _missing(token)
        value = namespace[parts[0]]
        for attribute in parts[1:]:
            if attribute.startswith("_") or not hasattr(value, attribute):
                return _missing(token)
            value = getattr(value, attribute)
        return compact_repr(value, max_chars)

    return _FIELD.sub(replace, text)
