"""``MemoryView``: long-term memory records as a plain-text and escaped-HTML table (no widgets)."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..memory.records import MemoryRecord
from ..memory.store import MemoryStore

__all__ = ["MemoryView", "memory_html", "memory_text"]

#: Rows shown in the text/plain form before "… and N more".
TEXT_ROWS = 10

_STYLE = (
    "<style>"
    ".pinb-memory table{border-collapse:collapse;font-size:90%}"
    ".pinb-memory th,.pinb-memory td{padding:2px 8px;text-align:left;vertical-align:top;"
    "border-bottom:1px solid #ddd}"
    ".pinb-memory .kind{font-family:monospace;white-space:nowrap}"
    ".pinb-memory .date{white-space:nowrap;color:#666}"
    ".pinb-memory tr.forgotten{opacity:.55}"
    ".pinb-memory tr.forgotten .text{text-decoration:line-through}"
    "</style>"
)


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _file_uri(path: str) -> str:
    """A ``file://`` URI for a session path: pinb builds the scheme, the path is %-quoted."""
    absolute = os.path.abspath(path)
    with_slashes = Path(absolute).as_posix()
    if not with_slashes.startswith("/"):
        with_slashes = "/" + with_slashes
    return "file://" + quote(with_slashes, safe="/:")


def _source_cell(record: MemoryRecord) -> str:
    if not record.source_session:
        return ""
    name = _e(Path(record.source_session).name)
    entry = f" · {_e(record.source_entry)}" if record.source_entry else ""
    if record.source_deleted:
        return (
            f'<s title="{_e(record.source_session)}">{name}</s>{entry} '
            f'<em title="removed {_e(record.source_deleted_at)}">(deleted)</em>'
        )
    return (
        f'<a href="{_e(_file_uri(record.source_session))}" title="{_e(record.source_session)}">'
        f"{name}</a>{entry}"
    )


def memory_html(records: Sequence[MemoryRecord], *, title: str = "Memory") -> str:
    """An HTML table of ``records``: kind, text, tags, source link and dates; all escaped."""
    rows: list[str] = []
    for r in records:
        text = _e(r.text)
        if r.deleted:
            text += f'<br><em>forgotten: {_e(r.deleted_reason)}</em>'
        kind = _e(r.kind)
        if r.kind == "observation" and r.proposed_kind:
            kind += f"<br><small>→ {_e(r.proposed_kind)}?</small>"
        rows.append(
            f'<tr class="{"forgotten" if r.deleted else "live"}">'
            f"<td>{r.id}</td><td class=\"kind\">{kind}</td><td class=\"text\">{text}</td>"
            f"<td>{_e(', '.join(r.tags))}</td><td>{_source_cell(r)}</td>"
            f'<td class="date" title="{_e(r.created_at)}">{_e(r.created_at[:10])}</td>'
            f'<td class="date" title="{_e(r.updated_at)}">{_e(r.updated_at[:10])}</td></tr>'
        )
    body = "".join(rows) or '<tr><td colspan="7"><em>no memories</em></td></tr>'
    return (
        f'<div class="pinb-memory">{_STYLE}<strong>{_e(title)}</strong> '
        f"<small>({len(records)} record{'s' if len(records) != 1 else ''})</small>"
        "<table><thead><tr><th>#</th><th>kind</th><th>text</th><th>tags</th><th>source</th>"
        f"<th>created</th><th>updated</th></tr></thead><tbody>{body}</tbody></table></div>"
    )


def memory_text(records: Sequence[MemoryRecord], *, title: str = "Memory") -> str:
    """A short plain-text listing: a count, then one line per record (the first few)."""
    noun = "record" if len(records) == 1 else "records"
    lines = [f"{title}: {len(records)} {noun}"]
    for r in records[:TEXT_ROWS]:
        text = " ".join(r.text.split())
        if len(text) > 80:
            text = text[:79] + "…"
        mark = " (forgotten)" if r.deleted else ""
        lines.append(f"  #{r.id} [{r.kind}] {text}{mark}  {r.updated_at[:10]}")
    if len(records) > TEXT_ROWS:
        lines.append(f"  … and {len(records) - TEXT_ROWS} more")
    return "\n".join(lines)


class MemoryView:
    """A project's memory as a table that renders anywhere (no widgets needed).

    Parameters
    ----------
    source:
        A :class:`~pinb.memory.store.MemoryStore`, a list of records, or ``None`` for
        the standard database.
    project:
        Project id when reading a store; default the current directory's project.
    include_deleted:
        Show forgotten records too (struck through, with the reason).
    limit:
        At most this many records (newest first).

    Examples
    --------
    >>> MemoryView([])
    Memory: 0 records
    """

    def __init__(
        self,
        source: MemoryStore | Sequence[MemoryRecord] | None = None,
        project: str | None = None,
        *,
        include_deleted: bool = False,
        limit: int | None = None,
        title: str = "Memory",
    ) -> None:
        self.title = title
        if source is None or isinstance(source, MemoryStore):
            store = source if source is not None else MemoryStore()
            self.records = store.records(project, include_deleted=include_deleted, limit=limit)
        else:
            records = list(source)
            self.records = records[:limit] if limit is not None else records

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return memory_text(self.records, title=self.title)

    def _repr_html_(self) -> str:
        return memory_html(self.records, title=self.title)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {
            "text/plain": memory_text(self.records, title=self.title),
            "text/html": memory_html(self.records, title=self.title),
        }
