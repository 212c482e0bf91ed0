"""``{var}`` in a ``%%pi`` cell: kernel variables pasted into the prompt, compactly."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["compact_repr", "interpolate"]

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}")
_MAX_CHARS = 4000


def compact_repr(value: Any, max_chars: int = _MAX_CHARS) -> str:
    """A prompt-friendly text for a value; DataFrames as a small table with their shape."""
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
        text = text[: max_chars - 1] + "…"
    return text


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace ``{name}`` and ``{name.attr}`` with values from ``namespace``.

    Unknown names are left as they are (code in prompts often has braces); ``{{`` and
    ``}}`` give literal braces. Only names and attribute access are resolved — nothing
    is evaluated.
    """

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        parts = match.group(1).split(".")
        if parts[0] not in namespace:
            return token
        value = namespace[parts[0]]
        for attribute in parts[1:]:
            if attribute.startswith("_") or not hasattr(value, attribute):
                return token
            value = getattr(value, attribute)
        return compact_repr(value)

    return _FIELD.sub(replace, text)
