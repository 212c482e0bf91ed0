"""Retention over many sessions: one row per compaction (pandas or dask), and its plot.

Each row is a :class:`~pinb.analysis.retention.report.RetentionReport` flattened: where the
compaction is, the one token measure (chars/4 before and after, Pi's recorded
``tokensBefore``), the facts of each kind and the share the summary kept, and the score.
:func:`plot_retention` draws each kind's recall against the tokens a compaction summarized
(``estimated_before - estimated_after``), a matplotlib ``Figure`` (no pyplot state).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from ...core.compaction.facts import FACT_KINDS
from ...core.session import Session
from ...errors import PinbError
from ..sources import Progress, SessionSources, collect_rows, warn_skipped
from .report import KIND_LABELS, RetentionReport, iter_session_retention

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..dask import FileRef

__all__ = [
    "RETENTION_COLUMNS",
    "compaction_retention",
    "plot_retention",
    "read_retention",
    "retention_row",
]

#: Columns of :func:`compaction_retention`, in order.
RETENTION_COLUMNS: Final[tuple[str, ...]] = (
    "session_id",
    "session_path",
    "compaction_id",
    "kind",
    "first_kept_entry_id",
    "tokens_before",
    "estimated_before",
    "estimated_after",
    "summarized_tokens",
    "summary_tokens",
    "summarized_entries",
    "facts",
    "kept",
    "kept_messages",
    "score",
    "facts_per_1k",
    *(f"facts_{k}" for k in FACT_KINDS),
    *(f"recall_{k}" for k in FACT_KINDS),
)


def retention_row(report: RetentionReport) -> dict[str, Any]:
    """One flat row of a report (:data:`RETENTION_COLUMNS`); a kind without facts is NaN."""
    recall = report.recall
    row: dict[str, Any] = {
        "session_id": report.session_id,
        "session_path": report.session_path,
        "compaction_id": report.compaction_id,
        "kind": report.kind,
        "first_kept_entry_id": report.first_kept_entry_id,
        "tokens_before": report.tokens_before,
        "estimated_before": report.estimated_before,
        "estimated_after": report.estimated_after,
        "summarized_tokens": report.estimated_before - report.estimated_after,
        "summary_tokens": report.summary_tokens,
        "summarized_entries": report.summarized_entries,
        "facts": len(report.verdicts),
        "kept": report.kept_count,
        "kept_messages": sum(v.kept_messages for v in report.verdicts),
        "score": report.score,
        "facts_per_1k": report.facts_per_1k,
    }
    for kind in FACT_KINDS:
        row[f"facts_{kind}"] = len(report.of_kind(kind))
        row[f"recall_{kind}"] = recall.get(kind, float("nan"))
    return row


def _rows(item: Session | Any) -> list[dict[str, Any]] | None:
    from ..sources import open_session

    session = item if isinstance(item, Session) else open_session(item)
    return [retention_row(r) for r in iter_session_retention(session)]


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(RETENTION_COLUMNS))
    for column in ("tokens_before",):
        frame[column] = frame[column].astype("Int64")
    for column in ("score", "facts_per_1k", *(f"recall_{k}" for k in FACT_KINDS)):
        frame[column] = frame[column].astype("float64")
    return frame


def compaction_retention(
    source: SessionSources, *, progress: bool | Progress | None = None
) -> pd.DataFrame:
    """One row per compaction of every session meant by ``source`` (:func:`retention_row`).

    Parameters
    ----------
    source:
        A session, a file, a folder (searched recursively), a glob, or a list of these.
    progress:
        ``True`` for a bar on stderr, a callable ``(done, total, path)``, or ``None``
        (a bar from 100 files on).

    Files that are not Pi sessions are left out with one warning naming the first.
    """
    rows, skipped = collect_rows(source, _rows, progress)
    warn_skipped(skipped, stacklevel=2)
    return _frame(rows)


def _group_frame(files: Sequence[FileRef]) -> pd.DataFrame:
    from ..sources import open_session_bytes

    rows: list[dict[str, Any]] = []
    for file in files:
        try:
            session = open_session_bytes(file.read(), file.name)
            rows.extend(retention_row(r) for r in iter_session_retention(session))
        except (PinbError, OSError, ValueError):
            continue  # the headers were checked before any task ran
    return _frame(rows)


def read_retention(
    source: Any,
    *,
    files_per_partition: int | None = None,
    partition_bytes: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """:func:`compaction_retention` as a dask dataframe, files grouped into partitions.

    ``source`` as :func:`pinb.analysis.dask.find_session_files` takes it (a folder, glob,
    file or fsspec URL, or a list); files that are not Pi sessions are left out with a
    warning before any task runs. Partitions as :func:`pinb.analysis.dask.partition_files`.
    """
    import warnings

    import dask.dataframe as ddf

    from .. import dask as pinb_dask

    files = pinb_dask.find_session_files(source, storage_options=storage_options)
    checked = [f for f in files if pinb_dask._not_a_session(f) is None]
    if len(checked) < len(files):
        warnings.warn(
            f"{len(files) - len(checked)} file(s) left out: not Pi sessions", stacklevel=2
        )
    by_name = {f.name: f for f in checked}
    size = partition_bytes or pinb_dask.DEFAULT_PARTITION_BYTES
    groups = pinb_dask.partition_files(
        [f.name for f in checked], files_per_partition=files_per_partition, partition_bytes=size
    )
    groups = groups or [[]]
    loader = functools.partial(_group_of_names, by_name)
    frame = ddf.from_map(  # type: ignore[no-untyped-call]
        loader, groups, meta=_frame([]), label="pinb-retention", enforce_metadata=False
    )
    return cast("dd.DataFrame", frame)


def _group_of_names(by_name: dict[str, FileRef], names: Sequence[str]) -> pd.DataFrame:
    return _group_frame([by_name[n] for n in names])


def plot_retention(
    frame: pd.DataFrame,
    *,
    kinds: Sequence[str] = FACT_KINDS,
    ax: Axes | None = None,
) -> Figure:
    """Recall of each kind against the tokens each compaction summarized.

    One marker per compaction and kind (x: ``summarized_tokens``, chars/4 removed from the
    context; y: the share of that kind's facts the summary kept), a kind without facts
    left out. A ``Figure`` of its own, or the figure of ``ax``; never pyplot's state.
    """
    from ..plots import _axes

    figure, axes = _axes(ax, (8.0, 4.5))
    markers = "os^vD<>"
    for i, kind in enumerate(kinds):
        column = f"recall_{kind}"
        if column not in frame:
            continue
        shown = frame[frame[column].notna()]
        if shown.empty:
            continue
        axes.scatter(
            shown["summarized_tokens"],
            shown[column],
            label=f"{KIND_LABELS[kind]} ({len(shown)})",
            marker=markers[i % len(markers)],
            alpha=0.7,
            s=24,
        )
    axes.set_xlabel("tokens summarized (chars/4 estimate, before − after)")
    axes.set_ylabel("share of the span's facts the summary kept")
    axes.set_ylim(-0.05, 1.05)
    axes.set_title("What compactions kept, by kind of fact")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="best", fontsize="small")
    else:
        axes.text(0.5, 0.5, "no compactions with facts", ha="center", transform=axes.transAxes)
    return figure
