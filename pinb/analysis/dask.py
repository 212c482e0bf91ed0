"""Many session files as dask bags and dataframes, files grouped into partitions.

Every reader treats a file that is not a Pi session the same way, before any task runs:
``errors="warn"`` (the default) leaves it out with one warning naming it, ``"skip"``
leaves it out silently, ``"raise"`` stops with an error naming it. A stray ``.jsonl`` in
a sessions folder therefore never stops one reader while another only warns.
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from ..core.store import is_valid_header
from ..core.wire import JS_WHITESPACE, loads
from ..errors import PinbError, SessionFileError, UsageError
from .frames import (
    COMPACTION_COLUMNS,
    ENTRY_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    TOOL_CALL_COLUMNS,
    compaction_rows,
    entry_rows,
    message_rows,
    session_paths,
    session_row,
    to_frame,
    tool_call_rows,
)

if TYPE_CHECKING:
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd

__all__ = [
    "DEFAULT_PARTITION_BYTES",
    "Kind",
    "partition_files",
    "read_bag",
    "read_compactions",
    "read_entries",
    "read_messages",
    "read_sessions",
    "read_tool_calls",
]

#: What one row stands for.
Kind = Literal["entries", "messages", "tool_calls", "compactions", "sessions"]
#: What to do with a file that is not a Pi session (see the module docstring).
Errors = Literal["raise", "warn", "skip"]

log = logging.getLogger("pinb.analysis")

#: Bytes read to find a file's header line.
_HEADER_BYTES = 1 << 20

#: Default bytes of session files per partition. One file per partition costs a task per
#: file, which dominates for typical (small) sessions; see ``benchmarks/bench_listing.py``.
DEFAULT_PARTITION_BYTES = 16 * 1024 * 1024

_COLUMNS: dict[str, dict[str, str]] = {
    "entries": ENTRY_COLUMNS,
    "messages": MESSAGE_COLUMNS,
    "tool_calls": TOOL_CALL_COLUMNS,
    "compactions": COMPACTION_COLUMNS,
    "sessions": SESSION_COLUMNS,
}


def _session_rows(path: str) -> list[dict[str, Any]]:
    row = session_row(path)
    return [row] if row is not None else []


_ROWS: dict[str, Callable[[str], list[dict[str, Any]]]] = {
    "entries": entry_rows,
    "messages": message_rows,
    "tool_calls": tool_call_rows,
    "compactions": compaction_rows,
    "sessions": _session_rows,
}


def partition_files(
    paths: Sequence[str | os.PathLike[str]],
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
) -> list[list[str]]:
    """Group files into partitions, keeping their order.

    Parameters
    ----------
    paths:
        Session files.
    files_per_partition:
        A fixed number of files per partition (``1`` gives one partition per file).
    partition_bytes:
        Otherwise, close a partition once its files add up to this many bytes.
    npartitions:
        Otherwise, split into this many partitions of about equal bytes.

    Returns
    -------
    list of list of str
        Never an empty partition; ``[]`` for no files.
    """
    files = [os.fspath(p) for p in paths]
    if not files:
        return []
    if files_per_partition is not None:
        if files_per_partition < 1:
            raise UsageError("files_per_partition must be at least 1")
        step = files_per_partition
        return [files[i : i + step] for i in range(0, len(files), step)]
    sizes = [_size(f) for f in files]
    if npartitions is not None:
        if npartitions < 1:
            raise UsageError("npartitions must be at least 1")
        # Each file goes to the slice of the byte range its middle falls in.
        total, start = max(sum(sizes), 1), 0
        slices: list[list[str]] = [[] for _ in range(npartitions)]
        for name, size in zip(files, sizes, strict=True):
            slot = min(npartitions - 1, int((start + size / 2) * npartitions / total))
            slices[slot].append(name)
            start += size
        return [group for group in slices if group]
    groups: list[list[str]] = []
    current: list[str] = []
    filled = 0
    for name, size in zip(files, sizes, strict=True):
        if current and filled + size > partition_bytes:
            groups.append(current)
            current, filled = [], 0
        current.append(name)
        filled += size
    groups.append(current)
    return groups


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _group_rows(kind: str, errors: str, files: Iterable[str]) -> list[dict[str, Any]]:
    build = _ROWS[kind]
    rows: list[dict[str, Any]] = []
    for name in files:
        try:
            rows.extend(build(name))
        except (PinbError, OSError, ValueError) as exc:
            # Headers were checked when the graph was built; this file changed or broke since.
            if errors == "raise":
                raise
            log.warning("%s: left out: %s", name, exc)
    return rows


def _not_a_session(path: str) -> str | None:
    """Why ``path`` is not a Pi session file (``None`` when its first line is a header)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_HEADER_BYTES)
    except OSError as exc:
        return exc.strerror or str(exc)
    for raw in data.split(b"\n"):
        line = raw.decode("utf-8", errors="replace").strip(JS_WHITESPACE)
        if not line:
            continue
        try:
            value = loads(line)
        except (ValueError, RecursionError):
            return "not a Pi session: the first line is not JSON"
        return None if is_valid_header(value) else "not a Pi session: no session header"
    return "not a Pi session: empty file"


def _sessions_only(
    paths: Sequence[os.PathLike[str] | str], errors: str, stacklevel: int
) -> list[str]:
    if errors not in ("raise", "warn", "skip"):
        raise UsageError(f"errors must be 'raise', 'warn' or 'skip', not {errors!r}")
    kept: list[str] = []
    left_out: list[tuple[str, str]] = []
    for item in paths:
        path = os.fspath(item)
        reason = _not_a_session(path)
        if reason is None:
            kept.append(path)
        elif errors == "raise":
            raise SessionFileError(f"{reason} (errors='warn' or 'skip' leaves it out)", path=path)
        else:
            left_out.append((path, reason))
    if left_out and errors == "warn":
        example = f"{left_out[0][0]}: {left_out[0][1]}"
        warnings.warn(f"{len(left_out)} file(s) left out, e.g. {example}", stacklevel=stacklevel)
    return kept


def _group_frame(kind: str, errors: str, files: Sequence[str]) -> pd.DataFrame:
    return to_frame(_group_rows(kind, errors, files), _COLUMNS[kind])


def _groups(
    source: Any,
    files_per_partition: int | None,
    partition_bytes: int,
    npartitions: int | None,
    errors: str,
    caller_depth: int,
) -> list[list[str]]:
    found = session_paths(source)
    if not found:
        raise UsageError(f"no session files found for {source!r}")
    # The warning points at the user's call: this frame, the reader(s), then the caller.
    paths = _sessions_only(found, errors, caller_depth + 2)
    if not paths:
        raise UsageError(f"none of the {len(found)} file(s) found for {source!r} is a Pi session")
    return partition_files(
        paths,
        files_per_partition=files_per_partition,
        partition_bytes=partition_bytes,
        npartitions=npartitions,
    )


def read_bag(
    source: Any,
    kind: Kind = "entries",
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
) -> db.Bag:
    """A dask bag of row dicts (the same keys as the pandas frames; times in Unix ms).

    Parameters
    ----------
    source:
        A glob (``"~/.pi/agent/sessions/*/*.jsonl"``), a folder, a file, or a list of them.
    kind:
        ``"entries"``, ``"messages"``, ``"tool_calls"``, ``"compactions"`` or ``"sessions"``.
    files_per_partition, partition_bytes, npartitions:
        How files are grouped (:func:`partition_files`).
    errors:
        A file that is not a Pi session: ``"warn"`` (default) leaves it out with a
        warning, ``"skip"`` leaves it out silently, ``"raise"`` raises
        :class:`~pinb.errors.SessionFileError` naming it. Checked before any task runs.

    Examples
    --------
    >>> bag = read_bag("sessions/*/*.jsonl", "tool_calls")  # doctest: +SKIP
    >>> bag.pluck("tool_name").frequencies().compute()  # doctest: +SKIP
    """
    import dask.bag as dbag

    _check_kind(kind)
    groups = _groups(
        source, files_per_partition, partition_bytes, npartitions, errors, caller_depth=2
    )
    bag = dbag.from_sequence(groups, npartitions=len(groups))  # type: ignore[no-untyped-call]
    rows = functools.partial(_partition_rows, kind, errors)
    return cast("db.Bag", bag.map_partitions(rows))


def _partition_rows(kind: str, errors: str, groups: Iterable[list[str]]) -> list[dict[str, Any]]:
    return [row for files in groups for row in _group_rows(kind, errors, files)]


def _check_kind(kind: str) -> None:
    if kind not in _COLUMNS:
        raise UsageError(f"unknown kind {kind!r}; use one of {', '.join(_COLUMNS)}")


def _read_frame(
    kind: str,
    source: Any,
    files_per_partition: int | None,
    partition_bytes: int,
    npartitions: int | None,
    errors: str,
) -> dd.DataFrame:
    import dask.dataframe as ddf

    _check_kind(kind)
    groups = _groups(
        source, files_per_partition, partition_bytes, npartitions, errors, caller_depth=3
    )
    meta = to_frame([], _COLUMNS[kind])
    loader = functools.partial(_group_frame, kind, errors)
    frame = ddf.from_map(  # type: ignore[no-untyped-call]
        loader, groups, meta=meta, label=f"pinb-{kind}", enforce_metadata=False
    )
    return cast("dd.DataFrame", frame)


def read_entries(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
) -> dd.DataFrame:
    """Entries of many files as a dask DataFrame with the columns of ``entries_frame``.

    Works on the local scheduler and on a ``dask.distributed`` client: each task opens
    its own group of files, so only paths travel to the workers (they must see the same
    file system). Parameters as in :func:`read_bag`.

    Examples
    --------
    >>> df = read_entries("sessions/*/*.jsonl")  # doctest: +SKIP
    >>> df.groupby("model").cost.sum().compute()  # doctest: +SKIP
    """
    return _read_frame("entries", source, files_per_partition, partition_bytes, npartitions, errors)


def read_messages(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
) -> dd.DataFrame:
    """Messages (every branch) with the columns of ``messages_frame``."""
    return _read_frame(
        "messages", source, files_per_partition, partition_bytes, npartitions, errors
    )


def read_tool_calls(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
) -> dd.DataFrame:
    """Tool calls with their results, the columns of ``tool_calls_frame``."""
    return _read_frame(
        "tool_calls", source, files_per_partition, partition_bytes, npartitions, errors
    )


def read_compactions(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
) -> dd.DataFrame:
    """Compaction entries with the columns of ``compactions_frame``."""
    return _read_frame(
        "compactions", source, files_per_partition, partition_bytes, npartitions, errors
    )


def read_sessions(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
) -> dd.DataFrame:
    """One row per session with the columns of ``sessions_frame`` (unsorted).

    Files that are not sessions follow ``errors``, as in every reader of this module.
    """
    return _read_frame(
        "sessions", source, files_per_partition, partition_bytes, npartitions, errors
    )
