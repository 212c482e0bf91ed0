"""Frames as Parquet files (pyarrow) that read back equal: timestamps, nullable ints, text.

:func:`write_parquet` writes one frame of every session a source means; :func:`to_parquet`
writes a frame already made. Each column keeps its pandas type (``datetime64[ms, UTC]``,
``Int64``, ``boolean``, ``string``), so ``pd.read_parquet(path)`` gives the frame back,
and DuckDB, Polars or Spark read the file as typed columns. The dask readers write theirs
with :func:`pinb.analysis.dask.to_parquet`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PinbError, UsageError
from .frames import (
    COMPACTION_COLUMNS,
    ENTRY_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    TOOL_CALL_COLUMNS,
    compaction_rows,
    entry_rows,
    message_rows,
    session_row,
    to_frame,
    tool_call_rows,
)
from .sources import Progress, collect_rows, open_session, warn_skipped

if TYPE_CHECKING:
    import pandas as pd

    from ..core import Session

__all__ = ["FRAME_KINDS", "MissingExtraError", "frame_of", "require", "to_parquet", "write_parquet"]


class MissingExtraError(PinbError, ImportError):
    """An optional package is not installed; the message names the extra that brings it."""


def require(module: str, extra: str, purpose: str) -> None:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``pinb[extra]``."""
    try:
        __import__(module)
    except ImportError:
        raise MissingExtraError(
            f"{purpose} needs {module}, which is not installed: "
            f"pip install 'pinb[{extra}]' (or pip install {module})"
        ) from None


def _usage_rows(item: Session | Path) -> list[dict[str, Any]]:
    from .totals import usage_rows

    return usage_rows(item)


def _usage_columns() -> dict[str, str]:
    from .totals import USAGE_COLUMNS

    return USAGE_COLUMNS


#: Frame kind -> (rows of one session, its columns).
_KINDS: dict[str, tuple[Callable[[Any], list[dict[str, Any]]], Callable[[], dict[str, str]]]] = {
    "entries": (entry_rows, lambda: ENTRY_COLUMNS),
    "messages": (message_rows, lambda: MESSAGE_COLUMNS),
    "tool_calls": (tool_call_rows, lambda: TOOL_CALL_COLUMNS),
    "compactions": (compaction_rows, lambda: COMPACTION_COLUMNS),
    "sessions": (lambda item: _one(session_row(item)), lambda: SESSION_COLUMNS),
    "usage": (_usage_rows, _usage_columns),
}
#: What :func:`write_parquet` can write: the frames of :mod:`pinb.analysis.frames`, and
#: ``"usage"`` (one row per usage record, :data:`pinb.analysis.totals.USAGE_COLUMNS`).
FRAME_KINDS = tuple(_KINDS)


def _one(row: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [] if row is None else [row]


def frame_of(
    kind: str, source: Any = None, *, progress: bool | Progress | None = None
) -> pd.DataFrame:
    """One frame of ``kind`` for every session ``source`` means, in file order.

    ``source`` is what :func:`~pinb.analysis.sessions_frame` takes. Files that are not
    sessions are left out with a warning and listed in ``attrs["skipped"]``. The
    ``sessions`` kind keeps file order (``sessions_frame`` sorts by time).
    """
    require("pandas", "notebook", "A frame")
    if kind not in _KINDS:
        raise UsageError(f"unknown frame kind {kind!r}; use one of {', '.join(FRAME_KINDS)}")
    rows_of, columns = _KINDS[kind]

    def rows(item: Session | Path) -> list[dict[str, Any]] | None:
        session = open_session(item)
        if session.loaded is not None and session.loaded.blank:
            return None  # an empty file: not a session yet
        return rows_of(session)

    found, skipped = collect_rows(source, rows, progress)
    frame = to_frame(found, columns())
    frame.attrs["skipped"] = skipped
    warn_skipped(skipped, stacklevel=3)
    return frame


def to_parquet(frame: pd.DataFrame, path: str | os.PathLike[str], **options: Any) -> Path:
    """Write a pinb frame to one Parquet file, keeping its column types and ``attrs``.

    ``options`` go to :meth:`pandas.DataFrame.to_parquet` (``compression="zstd"`` ...);
    the index is not written (pinb's frames number their rows from 0).

    Raises
    ------
    MissingExtraError
        pyarrow is not installed (``pip install 'pinb[parquet]'``).
    """
    require("pyarrow", "parquet", "Writing Parquet")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(target, engine="pyarrow", index=False, **options)
    return target


def write_parquet(
    kind: str,
    source: Any,
    path: str | os.PathLike[str],
    *,
    progress: bool | Progress | None = None,
    **options: Any,
) -> Path:
    """Write the ``kind`` frame of every session of ``source`` to a Parquet file.

    Parameters
    ----------
    kind:
        One of :data:`FRAME_KINDS`: ``"entries"``, ``"messages"``, ``"tool_calls"``,
        ``"compactions"``, ``"sessions"`` or ``"usage"``.
    source:
        A session file, a folder (searched recursively), a glob, sessions, or a list.
    path:
        The file to write (its folder is made).
    progress, options:
        As for :func:`frame_of` and :func:`to_parquet`.

    Returns
    -------
    pathlib.Path
        The file written; ``pd.read_parquet(path)`` equals :func:`frame_of`'s frame.

    Examples
    --------
    >>> write_parquet("messages", "~/.pi/agent/sessions", "messages.parquet")  # doctest: +SKIP
    >>> import duckdb  # doctest: +SKIP
    >>> duckdb.sql("SELECT role, count(*) FROM 'messages.parquet' GROUP BY role")  # doctest: +SKIP
    """
    require("pyarrow", "parquet", "Writing Parquet")
    return to_parquet(frame_of(kind, source, progress=progress), path, **options)
