"""Memory records as a pandas DataFrame, for analysis in a notebook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .store import MemoryStore

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MEMORY_COLUMNS", "memory_frame"]

#: The columns of :func:`memory_frame`, in order.
MEMORY_COLUMNS = (
    "id",
    "project",
    "kind",
    "text",
    "tags",
    "proposed_kind",
    "source_session",
    "source_entry",
    "source_deleted",
    "created",
    "updated",
    "deleted",
    "deleted_reason",
)


def memory_frame(
    store: MemoryStore | None = None,
    project: str | None = None,
    *,
    include_deleted: bool = False,
    all_projects: bool = False,
) -> pd.DataFrame:
    """One row per memory record, oldest first.

    Parameters
    ----------
    store:
        Default the standard database.
    project:
        Project id; default the current directory's project.
    include_deleted:
        Keep forgotten records (``deleted`` and ``deleted_reason`` say when and why).
    all_projects:
        Every project in the database.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`MEMORY_COLUMNS`; ``created``, ``updated`` and ``deleted`` are
        UTC datetimes (``NaT`` when not deleted), ``tags`` a list per row,
        ``source_deleted`` a bool.

    Examples
    --------
    >>> memory_frame().groupby("kind").size()  # doctest: +SKIP
    """
    import pandas as pd  # lazily: pinb.memory works without pandas

    store = store if store is not None else MemoryStore()
    records = store.records(project, include_deleted=include_deleted, all_projects=all_projects)
    records.sort(key=lambda r: r.id)
    rows = [
        (
            r.id,
            r.project,
            r.kind,
            r.text,
            list(r.tags),
            r.proposed_kind,
            r.source_session,
            r.source_entry,
            r.source_deleted,
            r.created_at,
            r.updated_at,
            r.deleted_at,
            r.deleted_reason,
        )
        for r in records
    ]
    frame = pd.DataFrame(rows, columns=list(MEMORY_COLUMNS))
    for column in ("created", "updated", "deleted"):
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    frame["id"] = frame["id"].astype("int64")
    frame["source_deleted"] = frame["source_deleted"].astype(bool)
    return frame
