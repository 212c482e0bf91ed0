"""``UsageTotalsView``: :func:`pinb.analysis.totals.usage_totals` as a table whose caption
says how copies were counted (was ``pinb.analysis.totals.UsageTotalsView``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.totals import SUM_COLUMNS as _SUMS
from ..core.context.accounting import thousands
from ..core.js.jsontext import value_text
from ..render.html import escape, mimebundle, table, wrap

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["UsageTotalsView"]


class UsageTotalsView:
    """:func:`usage_totals` as a table whose caption says how copies were counted.

    Parameters
    ----------
    totals:
        A frame from :func:`usage_totals` (its ``attrs`` give the caption).
    limit:
        Rows shown (the rest are summed in a last line).
    root:
        The sessions folder: session files inside it are shown relative to it, as search
        cites them (the frame keeps every path whole).
    """

    def __init__(
        self, totals: pd.DataFrame, *, limit: int = 50, root: str | os.PathLike[str] | None = None
    ) -> None:
        self.totals = totals
        self.limit = limit
        self.root = Path(root) if root is not None else None

    def _shown(self, column: str, value: object) -> object:
        if column != "session" or self.root is None or not isinstance(value, str | Path):
            return value
        try:
            return str(Path(value).relative_to(self.root))
        except ValueError:
            return value

    def caption(self) -> str:
        """One line: what is grouped, how copies were counted, what could not be matched."""
        attrs = self.totals.attrs
        by = ", ".join(attrs.get("by", ())) or "?"
        text = f"Usage by {by}: {attrs.get('rule', 'rule unknown')}."
        unresolved = attrs.get("unresolved") or []
        if unresolved:
            text += f" {len(unresolved)} fork(s) name a parent that was not found."
        return text

    def _rows(self) -> tuple[list[str], list[list[object]]]:
        frame = self.totals
        shown = frame.head(self.limit)
        headers = [str(c) for c in frame.columns]
        columns = [str(c) for c in frame.columns]
        rows = [
            [_cell(self._shown(c, v)) for c, v in zip(columns, record, strict=True)]
            for record in shown.itertuples(index=False)
        ]
        return headers, rows

    def __repr__(self) -> str:
        headers, rows = self._rows()
        lines = [self.caption(), "  ".join(headers)]
        lines += ["  ".join(_plain(v) for v in row) for row in rows]
        if len(self.totals) > self.limit:
            lines.append(f"… {len(self.totals) - self.limit} more row(s)")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        headers, rows = self._rows()
        numeric = [i for i, c in enumerate(self.totals.columns) if c in (*_SUMS, "records",
                   "copies_skipped", "sessions")]  # fmt: skip
        # "cache_write" → "cache write": a heading wraps between words, so the columns of
        # numbers stay as narrow as their numbers (the frame keeps its column names).
        shown = [h.replace("_", " ") for h in headers]
        body = f"<div><strong>{escape(self.caption())}</strong></div>" + table(
            shown, rows, numeric=numeric
        )
        if len(self.totals) > self.limit:
            body += f"<div>… {len(self.totals) - self.limit} more row(s)</div>"
        return mimebundle(
            repr(self), html=wrap(body, "pinb-usage-totals"), include=include, exclude=exclude
        )


def _cell(value: Any) -> object:
    """A frame value for :func:`~pinb.render.html.table` (missing values empty)."""
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.date().isoformat() if value == value.normalize() else value.isoformat()
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()  # a numpy scalar
    if isinstance(value, float):
        return None if value != value else round(value, 4)
    return value if isinstance(value, int | str) else value_text(value)


def _plain(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, int):
        return thousands(value)
    return os.fspath(value) if isinstance(value, Path) else value_text(value)
