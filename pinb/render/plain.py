"""Fixed-width text tables for the ``text/plain`` side of views and for terminals."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .html import shorten

__all__ = ["plain_cell", "text_table"]


def plain_cell(value: object, limit: int = 60) -> str:
    """A value as one short line: ``—`` for ``None``, thousands separators for numbers."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return shorten(value, limit)


def text_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    numeric: Iterable[int] = (),
    limit: int = 60,
) -> str:
    """Rows under headers in aligned columns; ``numeric`` columns are right-aligned.

    Examples
    --------
    >>> print(text_table(["tool", "calls"], [("read", 3), ("bash", 12)], numeric=(1,)))
    tool  calls
    read      3
    bash     12
    """
    right = set(numeric)
    cells = [[plain_cell(value, limit) for value in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row[: len(widths)]):
            widths[i] = max(widths[i], len(cell))

    def line(values: Sequence[str]) -> str:
        parts = [
            value.rjust(widths[i]) if i in right else value.ljust(widths[i])
            for i, value in enumerate(values[: len(widths)])
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(headers)), *(line(row) for row in cells)])
