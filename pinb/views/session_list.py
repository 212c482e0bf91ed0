"""``SessionListView``: the sessions of a folder as a table, sorted by any column."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.js.jsontext import value_text
from ..render.html import escape, mimebundle, shorten, style, table, title, wrap
from ..render.tree.graph import plural

__all__ = ["COLUMNS", "SessionListView", "SessionRow"]

#: Column name → title, in display order.
COLUMNS: dict[str, str] = {
    "modified": "modified",
    "name": "name",
    "first_message": "first message",
    "message_count": "messages",
    "created": "created",
    "cwd": "cwd",
    "id": "id",
    "path": "path",
    "parent_session_path": "parent session",
}

_CAMEL = {
    "parent_session_path": "parentSessionPath",
    "message_count": "messageCount",
    "first_message": "firstMessage",
}


@dataclass(frozen=True)
class SessionRow:
    """One listed session (fields of ``pinb.core.file.listing.SessionInfo``)."""

    path: str
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: Any
    modified: Any
    message_count: int
    first_message: str

    @classmethod
    def of(cls, item: Any) -> SessionRow:
        """From a ``SessionInfo``-like object or a dict (snake_case or Pi's camelCase keys)."""

        def get(name: str) -> Any:
            if isinstance(item, Mapping):
                if name in item:
                    return item[name]
                return item.get(_CAMEL.get(name, name))
            return getattr(item, name, None)

        count = get("message_count")
        return cls(
            path=str(get("path") or ""),
            id=str(get("id") or ""),
            cwd=str(get("cwd") or ""),
            name=None if get("name") is None else str(get("name")),
            parent_session_path=None
            if get("parent_session_path") is None
            else str(get("parent_session_path")),
            created=get("created"),
            modified=get("modified"),
            message_count=count if isinstance(count, int) else 0,
            first_message=str(get("first_message") or ""),
        )


def _as_datetime(value: Any) -> _dt.datetime | None:
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_dt.UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # Pi's epoch milliseconds
        try:
            return _dt.datetime.fromtimestamp(seconds, tz=_dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.UTC)
    return None


def _sort_key(row: SessionRow, column: str) -> tuple[int, Any]:
    value = getattr(row, column)
    if column in ("created", "modified"):
        moment = _as_datetime(value)
        return (0, moment.timestamp()) if moment else (1, 0.0)
    if value is None or value == "":
        return (1, "")
    return (0, value.lower() if isinstance(value, str) else value)


def _cell(row: SessionRow, column: str) -> str:
    value = getattr(row, column)
    if column in ("created", "modified"):
        moment = _as_datetime(value)
        return (
            moment.strftime("%Y-%m-%d %H:%M")
            if moment
            else ("" if value is None else value_text(value))
        )
    if column == "first_message":
        return shorten(value_text(value), 100)
    return "" if value is None else value_text(value)


class SessionListView:
    """Sessions of a folder as a table; :meth:`sorted` gives the table in another order.

    Parameters
    ----------
    sessions:
        ``SessionInfo``-like objects or dicts with ``path, id, cwd, name,
        parent_session_path, created, modified, message_count, first_message``.
    sort_by:
        A column of :data:`COLUMNS`.
    descending:
        Largest (newest) first.
    columns:
        Columns to show, in order.
    """

    def __init__(
        self,
        sessions: Iterable[Any],
        *,
        sort_by: str = "modified",
        descending: bool = True,
        columns: Iterable[str] = (
            "modified",
            "name",
            "first_message",
            "message_count",
            "cwd",
            "id",
        ),
    ) -> None:
        if sort_by not in COLUMNS:
            raise ValueError(f"cannot sort by {sort_by!r}; choose one of {', '.join(COLUMNS)}")
        self.columns = tuple(c for c in columns if c in COLUMNS)
        self.sort_by = sort_by
        self.descending = descending
        rows = [item if isinstance(item, SessionRow) else SessionRow.of(item) for item in sessions]
        present = [r for r in rows if _sort_key(r, sort_by)[0] == 0]
        missing = [r for r in rows if _sort_key(r, sort_by)[0] != 0]
        present.sort(key=lambda r: _sort_key(r, sort_by)[1], reverse=descending)
        self.rows: list[SessionRow] = present + missing  # empty values always last

    def sorted(self, by: str, descending: bool | None = None) -> SessionListView:
        """The same sessions sorted by another column (a new view)."""
        return SessionListView(
            self.rows,
            sort_by=by,
            descending=self.descending if descending is None else descending,
            columns=self.columns,
        )

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> SessionRow:
        return self.rows[index]

    def to_text(self) -> str:
        order = "descending" if self.descending else "ascending"
        return f"<SessionListView {plural(len(self.rows), 'session')}, by {self.sort_by} ({order})>"

    __repr__ = to_text

    def to_html(self) -> str:
        arrow = "▼" if self.descending else "▲"
        headers = [f"{COLUMNS[c]}{' ' + arrow if c == self.sort_by else ''}" for c in self.columns]
        body: list[tuple[Any, ...]] = []
        for row in self.rows:
            cells: list[Any] = []
            for c in self.columns:
                text = escape(_cell(row, c))
                if c == "name" and not row.name:
                    text = '<span style="color:#6e7781">—</span>'
                cells.append(text)
            body.append(tuple(cells))
        numeric = [i for i, c in enumerate(self.columns) if c == "message_count"]
        wrapped = [i for i, c in enumerate(self.columns) if c in ("first_message", "name")]
        html = (
            title(f"{plural(len(self.rows), 'session')}")
            + f"<div{style('muted')}>sorted by {escape(COLUMNS[self.sort_by])}; "
            "use <code>.sorted(column)</code> for another order</div>"
            + table(
                headers,
                body,
                raw_columns=range(len(self.columns)),
                numeric=numeric,
                wrap_columns=wrapped,
            )
        )
        return wrap(html, "pinb-session-list")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)
