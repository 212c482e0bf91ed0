"""Many session files as dask bags and dataframes, files grouped into partitions.

Files are local paths or fsspec URLs (``s3://``, ``gs://``, ``memory://`` ...); each task
opens its group of files where they live. With ``client=`` (a ``distributed.Client`` or a
scheduler address) the files are also listed and checked on the cluster.

Every reader treats a file that is not a Pi session the same way, before any task runs:
``errors="warn"`` (the default) leaves it out with one warning naming it, ``"skip"``
leaves it out silently, ``"raise"`` stops with an error naming it. A stray ``.jsonl`` in
a sessions folder therefore never stops one reader while another only warns.
"""

from __future__ import annotations

import functools
import logging
import os
import posixpath
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from ..core.file.listing import session_info_from_bytes
from ..core.file.read import is_valid_header
from ..core.js.wire import JS_WHITESPACE, loads
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
    session_row,
    to_frame,
    tool_call_rows,
)
from .lineage import header_reference, session_lineage
from .renamed import renamed
from .sources import open_session_bytes, session_paths

if TYPE_CHECKING:
    import dask.bag as db
    import dask.dataframe as dd
    import distributed
    import pandas as pd
    from fsspec import AbstractFileSystem

T = TypeVar("T")

__all__ = [
    "DEFAULT_PARTITION_BYTES",
    "FileRef",
    "Kind",
    "find_session_files",
    "partition_files",
    "read_bag",
    "read_compactions",
    "read_entries",
    "read_messages",
    "read_sessions",
    "read_tool_calls",
    "to_parquet",
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


_ROWS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "entries": entry_rows,
    "messages": message_rows,
    "tool_calls": tool_call_rows,
    "compactions": compaction_rows,
    "sessions": _session_rows,
}


@dataclass(frozen=True)
class FileRef:
    """Where one session file lives: a local path, or a path on an fsspec file system.

    Only this small record travels to a worker, which opens the file where it lives. (A
    reference, not an open file: that is :class:`pinb.core.file.write.SessionFile`.)
    """

    #: What rows and errors call the file: the local path, or the URL (``s3://b/k.jsonl``).
    name: str
    #: The file's path on ``fs`` (or the local path).
    path: str
    #: Bytes, for grouping files into partitions.
    size: int = 0
    #: The fsspec file system holding it; ``None`` for a local file opened directly.
    fs: AbstractFileSystem | None = None

    def read(self, limit: int | None = None) -> bytes:
        """The file's bytes (the first ``limit`` of them)."""
        if self.fs is None:
            with open(self.path, "rb") as handle:
                return handle.read() if limit is None else handle.read(limit)
        with self.fs.open(self.path, "rb") as handle:
            return cast(bytes, handle.read() if limit is None else handle.read(limit))

    def rows(self, kind: str) -> list[dict[str, Any]]:
        """The rows of ``kind`` for this file (``[]`` when it is not a session)."""
        if self.fs is None:
            return _ROWS[kind](self.path)
        data = self.read()
        session = open_session_bytes(data, self.name)
        # The parent of a fork is looked for on the same file system.
        lineage = session_lineage(session, path=self.path, reader=_FsReader(self.fs))
        if kind != "sessions":
            return _ROWS[kind](session, lineage=lineage)
        info = session_info_from_bytes(data, Path(self.path), self._mtime())
        if info is None:
            return []
        row = session_row(session, info=info, path=self.name, lineage=lineage)
        return [row] if row is not None else []

    def _mtime(self) -> float:
        assert self.fs is not None
        try:
            return float(self.fs.modified(self.path).timestamp())
        except (NotImplementedError, OSError, AttributeError, ValueError):
            return 0.0


@dataclass(frozen=True)
class _FsReader:
    """Reads parent sessions on an fsspec file system (see :mod:`pinb.analysis.lineage`)."""

    fs: AbstractFileSystem
    pathmod: Any = posixpath

    def is_file(self, path: str) -> bool:
        try:
            return bool(self.fs.isfile(path))
        except OSError:
            return False

    def open_session(self, path: str) -> Any:
        name = self.name(path)  # as when the file is read for its own rows (version 1 ids)
        return open_session_bytes(FileRef(name, path, 0, self.fs).read(), name)

    def parent_reference(self, path: str) -> str | None:
        try:
            return header_reference(FileRef(path, path, 0, self.fs).read(1 << 16))
        except OSError:
            return None

    def name(self, path: str) -> str:
        return str(self.fs.unstrip_protocol(path))

    def stamp(self, path: str) -> object:
        try:
            info = self.fs.info(path)
        except OSError:
            return None
        return (info.get("size"), info.get("mtime") or info.get("LastModified"))


#: Old names of this module's public names, still importable with a warning.
_DEPRECATED = {"SessionFile": "FileRef"}  # renamed: pinb.core.file.write has a SessionFile


__getattr__ = renamed(__name__, globals(), _DEPRECATED)


def _is_url(item: Any) -> bool:
    return isinstance(item, str) and "://" in item


def find_session_files(
    source: Any, *, storage_options: Mapping[str, Any] | None = None
) -> list[FileRef]:
    """The ``.jsonl`` files meant by ``source``, local or behind an fsspec URL.

    ``source`` is a folder (searched recursively), a file, a glob, an fsspec URL of any of
    those (``"s3://bucket/sessions/**/*.jsonl"``, ``"memory://sessions"``), or a list of
    them. ``storage_options`` go to the file system of each URL (credentials, endpoints).
    """
    if _is_url(source):
        return _find_url(source, dict(storage_options or {}))
    if isinstance(source, str | os.PathLike):
        return [FileRef(str(p), str(p), _size(str(p))) for p in session_paths(source)]
    if isinstance(source, FileRef):
        return [source]
    return [f for item in source for f in find_session_files(item, storage_options=storage_options)]


def _find_url(url: str, storage_options: dict[str, Any]) -> list[FileRef]:
    from fsspec.core import url_to_fs

    fs, root = url_to_fs(url, **storage_options)
    if any(ch in root for ch in "*?["):
        found = fs.glob(root, detail=True)
    elif fs.isdir(root):
        found = fs.find(root, detail=True)
        found = {k: v for k, v in found.items() if k.endswith(".jsonl")}
    elif fs.isfile(root):
        found = {root: fs.info(root)}
    else:
        found = {}
    files = [
        FileRef(fs.unstrip_protocol(path), path, int(info.get("size") or 0), fs)
        for path, info in found.items()
        if info.get("type", "file") == "file"
    ]
    return sorted(files, key=lambda f: f.name)


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
    sizes = [_size(f) for f in files] if files_per_partition is None else [0] * len(files)
    return _partition(files, sizes, files_per_partition, partition_bytes, npartitions)


def _partition(
    items: Sequence[T],
    sizes: Sequence[int],
    files_per_partition: int | None,
    partition_bytes: int,
    npartitions: int | None,
) -> list[list[T]]:
    if not items:
        return []
    if files_per_partition is not None:
        if files_per_partition < 1:
            raise UsageError("files_per_partition must be at least 1")
        step = files_per_partition
        return [list(items[i : i + step]) for i in range(0, len(items), step)]
    if npartitions is not None:
        if npartitions < 1:
            raise UsageError("npartitions must be at least 1")
        # Each file goes to the slice of the byte range its middle falls in.
        total, start = max(sum(sizes), 1), 0
        slices: list[list[T]] = [[] for _ in range(npartitions)]
        for item, size in zip(items, sizes, strict=True):
            slot = min(npartitions - 1, int((start + size / 2) * npartitions / total))
            slices[slot].append(item)
            start += size
        return [group for group in slices if group]
    groups: list[list[T]] = []
    current: list[T] = []
    filled = 0
    for item, size in zip(items, sizes, strict=True):
        if current and filled + size > partition_bytes:
            groups.append(current)
            current, filled = [], 0
        current.append(item)
        filled += size
    groups.append(current)
    return groups


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _group_rows(kind: str, errors: str, files: Iterable[FileRef]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for file in files:
        try:
            rows.extend(file.rows(kind))
        except (PinbError, OSError, ValueError) as exc:
            # Headers were checked when the graph was built; this file changed or broke since.
            if errors == "raise":
                raise
            log.warning("%s: left out: %s", file.name, exc)
    return rows


def _not_a_session(file: FileRef) -> str | None:
    """Why ``file`` is not a Pi session file (``None`` when its first line is a header)."""
    try:
        data = file.read(_HEADER_BYTES)
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


def _check_group(files: Sequence[FileRef]) -> list[str | None]:
    return [_not_a_session(f) for f in files]


def _group_frame(kind: str, errors: str, files: Sequence[FileRef]) -> pd.DataFrame:
    return to_frame(_group_rows(kind, errors, files), _COLUMNS[kind])


@dataclass(frozen=True)
class _Options:
    files_per_partition: int | None = None
    partition_bytes: int = DEFAULT_PARTITION_BYTES
    npartitions: int | None = None
    errors: str = "warn"
    client: Any = None
    storage_options: Mapping[str, Any] | None = None


def _resolve_client(client: Any) -> distributed.Client | None:
    """``None``, a ``distributed.Client``, or a scheduler address (a client is made once)."""
    if client is None:
        return None
    if isinstance(client, str):
        import distributed

        made = _clients.get(client)
        if made is None or made.status in ("closing", "closed"):
            made = _clients[client] = distributed.Client(client)  # type: ignore[no-untyped-call]
        return made
    if not hasattr(client, "submit") or not hasattr(client, "gather"):
        raise UsageError(
            f"client must be a dask.distributed Client or a scheduler address, not {client!r}"
        )
    return cast("distributed.Client", client)


#: Clients made for scheduler addresses, reused by later calls.
_clients: dict[str, distributed.Client] = {}


def _groups(source: Any, options: _Options, caller_depth: int) -> list[list[FileRef]]:
    if options.errors not in ("raise", "warn", "skip"):
        raise UsageError(f"errors must be 'raise', 'warn' or 'skip', not {options.errors!r}")
    client = _resolve_client(options.client)
    # With a client, the files are listed and their headers read on the cluster, where
    # they live; the machine calling this need not see them at all.
    if client is None:
        found = find_session_files(source, storage_options=options.storage_options)
    else:
        found = client.submit(
            find_session_files, source, storage_options=options.storage_options, pure=False
        ).result()
    if not found:
        raise UsageError(f"no session files found for {source!r}")
    groups = _partition(
        found,
        [f.size for f in found],
        options.files_per_partition,
        options.partition_bytes,
        options.npartitions,
    )
    if client is None:
        reasons = [_check_group(g) for g in groups]
    else:
        reasons = client.gather(client.map(_check_group, groups, pure=False))  # type: ignore[no-untyped-call]
    kept_groups: list[list[FileRef]] = []
    left_out: list[tuple[str, str]] = []
    for group, why in zip(groups, reasons, strict=True):
        kept = [f for f, reason in zip(group, why, strict=True) if reason is None]
        for file, reason in zip(group, why, strict=True):
            if reason is None:
                continue
            if options.errors == "raise":
                raise SessionFileError(
                    f"{reason} (errors='warn' or 'skip' leaves it out)", path=file.name
                )
            left_out.append((file.name, reason))
        if kept:
            kept_groups.append(kept)
    if left_out and options.errors == "warn":
        example = f"{left_out[0][0]}: {left_out[0][1]}"
        # The warning points at the user's call: this frame, the reader(s), then the caller.
        warnings.warn(
            f"{len(left_out)} file(s) left out, e.g. {example}", stacklevel=caller_depth + 1
        )
    if not kept_groups:
        raise UsageError(f"none of the {len(found)} file(s) found for {source!r} is a Pi session")
    return kept_groups


def read_bag(
    source: Any,
    kind: Kind = "entries",
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
    client: Any = None,
    storage_options: Mapping[str, Any] | None = None,
) -> db.Bag:
    """A dask bag of row dicts (the same keys as the pandas frames; times in Unix ms).

    Parameters
    ----------
    source:
        A glob (``"~/.pi/agent/sessions/*/*.jsonl"``), a folder, a file, an fsspec URL of
        any of them (``"s3://bucket/sessions/**/*.jsonl"``, ``"memory://sessions"``), or a
        list of them.
    kind:
        ``"entries"``, ``"messages"``, ``"tool_calls"``, ``"compactions"`` or ``"sessions"``.
    files_per_partition, partition_bytes, npartitions:
        How files are grouped (:func:`partition_files`).
    errors:
        A file that is not a Pi session: ``"warn"`` (default) leaves it out with a
        warning, ``"skip"`` leaves it out silently, ``"raise"`` raises
        :class:`~pinb.errors.SessionFileError` naming it. Checked before any task runs.
    client:
        A ``dask.distributed`` client, or a scheduler address (``"tcp://host:8786"``;
        the client made for it is reused). The files are then listed and their headers
        checked on the cluster's workers, so only the workers need to see them. The
        collection computes wherever dask computes: on the default client, or pass
        ``scheduler=client`` to ``compute()``.
    storage_options:
        Passed to the fsspec file system of a URL (credentials, endpoint, ...).

    Examples
    --------
    >>> bag = read_bag("sessions/*/*.jsonl", "tool_calls")  # doctest: +SKIP
    >>> bag.pluck("tool_name").frequencies().compute()  # doctest: +SKIP
    """
    import dask.bag as dbag

    _check_kind(kind)
    options = _Options(
        files_per_partition, partition_bytes, npartitions, errors, client, storage_options
    )
    groups = _groups(source, options, caller_depth=2)
    bag = dbag.from_sequence(groups, npartitions=len(groups))  # type: ignore[no-untyped-call]
    rows = functools.partial(_partition_rows, kind, errors)
    return cast("db.Bag", bag.map_partitions(rows))


def _partition_rows(
    kind: str, errors: str, groups: Iterable[list[FileRef]]
) -> list[dict[str, Any]]:
    return [row for files in groups for row in _group_rows(kind, errors, files)]


def _check_kind(kind: str) -> None:
    if kind not in _COLUMNS:
        raise UsageError(f"unknown kind {kind!r}; use one of {', '.join(_COLUMNS)}")


def _read_frame(kind: str, source: Any, options: _Options) -> dd.DataFrame:
    import dask.dataframe as ddf

    _check_kind(kind)
    groups = _groups(source, options, caller_depth=3)
    meta = to_frame([], _COLUMNS[kind])
    loader = functools.partial(_group_frame, kind, options.errors)
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
    client: Any = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """Entries of many files as a dask DataFrame with the columns of ``entries_frame``.

    Each task opens its own group of files where they live (a local path or an fsspec
    URL), so only file names travel to the workers. Parameters as in :func:`read_bag`.

    Examples
    --------
    >>> df = read_entries("sessions/*/*.jsonl")  # doctest: +SKIP
    >>> df.groupby("model").cost.sum().compute()  # doctest: +SKIP
    >>> df = read_entries("s3://team-logs/pi/**/*.jsonl", client="tcp://sched:8786")  # doctest: +SKIP
    """
    options = _Options(
        files_per_partition, partition_bytes, npartitions, errors, client, storage_options
    )
    return _read_frame("entries", source, options)


def read_messages(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
    client: Any = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """Messages (every branch) with the columns of ``messages_frame``."""
    options = _Options(
        files_per_partition, partition_bytes, npartitions, errors, client, storage_options
    )
    return _read_frame("messages", source, options)


def read_tool_calls(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
    client: Any = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """Tool calls with their results, the columns of ``tool_calls_frame``."""
    options = _Options(
        files_per_partition, partition_bytes, npartitions, errors, client, storage_options
    )
    return _read_frame("tool_calls", source, options)


def read_compactions(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
    client: Any = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """Compaction entries with the columns of ``compactions_frame``."""
    options = _Options(
        files_per_partition, partition_bytes, npartitions, errors, client, storage_options
    )
    return _read_frame("compactions", source, options)


def read_sessions(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
    client: Any = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """One row per session with the columns of ``sessions_frame`` (unsorted).

    Files that are not sessions follow ``errors``, as in every reader of this module.
    """
    options = _Options(
        files_per_partition, partition_bytes, npartitions, errors, client, storage_options
    )
    return _read_frame("sessions", source, options)


def to_parquet(
    kind: Kind,
    source: Any,
    path: str | os.PathLike[str],
    *,
    files_per_partition: int | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    npartitions: int | None = None,
    errors: Errors = "warn",
    client: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> str:
    """Write the dask frame of ``kind`` as a folder of Parquet files, one per partition.

    The columns keep the pandas frames' types, so ``pd.read_parquet(path)`` (or
    ``dask.dataframe.read_parquet``) gives the rows back as the pandas frame would have
    them. Reader parameters as in :func:`read_bag`; ``storage_options`` also serve the
    target (``path`` may be an fsspec URL); ``options`` go to
    :meth:`dask.dataframe.DataFrame.to_parquet`. With ``client``, the files are written
    by the cluster.

    Raises
    ------
    MissingExtraError
        pyarrow is not installed (``pip install 'pinb[parquet]'``).

    Examples
    --------
    >>> to_parquet("entries", "s3://logs/pi/**/*.jsonl", "s3://logs/pi-entries/")  # doctest: +SKIP
    """
    from .parquet import require

    require("pyarrow", "parquet", "Writing Parquet")
    options_ = _Options(
        files_per_partition, partition_bytes, npartitions, errors, client, storage_options
    )
    frame = _read_frame(kind, source, options_)
    target = os.fspath(path)
    if client is not None:
        options.setdefault("compute_kwargs", {"scheduler": _resolve_client(client)})
    frame.to_parquet(  # type: ignore[no-untyped-call]
        target, write_index=False, storage_options=dict(storage_options or {}), **options
    )
    return target
