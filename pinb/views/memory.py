"""``MemoryView``: long-term memory records as a plain-text and escaped-HTML table (no widgets)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..memory.records import MemoryRecord
from ..memory.store import MemoryStore
from ..render.html import div, escape, muted, style, table, wrap

__all__ = ["MemoryView", "memory_html", "memory_text"]

#: Rows shown in the text/plain form before "… and N more".
TEXT_ROWS = 10


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
    name = escape(Path(record.source_session).name)
    entry = f" · {escape(record.source_entry)}" if record.source_entry else ""
    if record.source_deleted:
        return (
            f'<span title="{escape(record.source_session)}"{style("pinb-summarized")}>{name}</span>'
            f'{entry} <em title="removed {escape(record.source_deleted_at)}">(deleted)</em>'
        )
    return (
        f'<a href="{escape(_file_uri(record.source_session))}" title="{escape(record.source_session)}">'
        f"{name}</a>{entry}"
    )


def memory_html(records: Sequence[MemoryRecord], *, title: str = "Memory") -> str:
    """A table of ``records``: kind, text, tags, source link and dates; all escaped.

    Safe tags and inline styles only, like every view: it reads the same untrusted and
    after nbconvert's sanitizer.
    """
    rows: list[tuple[object, ...]] = []
    for r in records:
        text = escape(r.text)
        if r.deleted:
            text = f"<span{style('pinb-summarized')}>{text}</span> " + (
                f"<em>forgotten: {escape(r.deleted_reason)}</em>"
            )
        kind = f"<code>{escape(r.kind)}</code>"
        if r.kind == "observation" and r.proposed_kind:
            kind += f" <span{style('muted')}>→ {escape(r.proposed_kind)}?</span>"
        rows.append((
            r.id, kind, text, ", ".join(r.tags), _source_cell(r),
            r.created_at[:10], r.updated_at[:10],
        ))  # fmt: skip
    noun = "record" if len(records) == 1 else "records"
    head = div(f"{escape(title)} " + muted(f"({len(records)} {noun})"), "title")
    if not rows:
        return wrap(head + muted("no memories"), "pinb-memory")
    body = table(
        ("#", "kind", "text", "tags", "source", "created", "updated"),
        rows,
        numeric=(0,),
        row_classes=["pinb-faded" if r.deleted else "" for r in records],
        raw_columns=(1, 2, 4),
        wrap_columns=(2,),
    )
    return wrap(head + body, "pinb-memory")


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
