"""Dask frames and bags equal the pandas frames, locally and on a real LocalCluster."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed
import pandas as pd
import pytest

from pinb.analysis import dask as pdask
from pinb.analysis.frames import entries_frame, sessions_frame, tool_calls_frame
from pinb.errors import SessionFileError, UsageError

from .conftest import CASES, PI_FIXTURES, build_demo


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _files() -> list[Path]:
    return [*CASES, *PI_FIXTURES]


def test_partition_files_groups_by_count_bytes_and_number(tmp_path: Path) -> None:
    files = []
    for i, size in enumerate([10, 10, 30, 5, 50]):
        path = tmp_path / f"{i}.jsonl"
        path.write_bytes(b"x" * size)
        files.append(path)
    names = [str(p) for p in files]
    assert pdask.partition_files(files, files_per_partition=2) == [names[:2], names[2:4], names[4:]]
    assert pdask.partition_files(files, partition_bytes=25) == [
        names[:2],
        names[2:3],
        names[3:4],
        names[4:],
    ]
    assert pdask.partition_files(files, npartitions=1) == [names]
    groups = pdask.partition_files(files, npartitions=5)
    assert [name for group in groups for name in group] == names and all(groups)
    assert pdask.partition_files([]) == []
    with pytest.raises(UsageError):
        pdask.partition_files(files, files_per_partition=0)


def test_entries_dataframe_equals_pandas_on_the_local_scheduler() -> None:
    files = _files()
    ddf = pdask.read_entries(files, files_per_partition=3)
    assert ddf.npartitions == 3
    result = ddf.compute(scheduler="sync").reset_index(drop=True)
    expected = pd.concat([entries_frame(p) for p in files], ignore_index=True)
    pd.testing.assert_frame_equal(result, expected)


def test_dataframes_on_a_local_cluster(client: distributed.Client) -> None:
    files = _files()
    tools = pdask.read_tool_calls(files, npartitions=2)
    assert tools.npartitions == 2
    result = tools.compute().reset_index(drop=True)
    expected = pd.concat([tool_calls_frame(p) for p in files], ignore_index=True)
    pd.testing.assert_frame_equal(result, expected)
    # A real aggregation runs on the workers.
    counts = tools.groupby("tool_name").call_id.count().compute()
    assert counts.to_dict() == expected.groupby("tool_name").call_id.count().to_dict()
    sessions = pdask.read_sessions(files).compute()
    local = sessions_frame(files, progress=False)
    key = ["path"]
    pd.testing.assert_frame_equal(
        sessions.sort_values(key).reset_index(drop=True),
        local.sort_values(key).reset_index(drop=True),
    )


def test_bag_of_rows_on_a_local_cluster(client: distributed.Client) -> None:
    bag = pdask.read_bag(CASES, "messages", files_per_partition=2)
    roles = dict(bag.pluck("role").frequencies().compute())
    frames = pd.concat([entries_frame(p) for p in CASES])
    # Every message-like entry is one message row (compactions and summaries included).
    assert sum(roles.values()) == int(frames.role.notna().sum())
    assert roles["assistant"] == int((frames.role == "assistant").sum())


@pytest.mark.parametrize(
    "reader",
    [
        pdask.read_entries,
        pdask.read_messages,
        pdask.read_tool_calls,
        pdask.read_compactions,
        pdask.read_sessions,
        lambda source, **kw: pdask.read_bag(source, "entries", **kw),
    ],
)
def test_every_reader_treats_a_stray_file_alike(tmp_path: Path, reader: Any) -> None:
    # One non-session file used to stop read_entries but vanish silently from read_sessions.
    good, _ = build_demo(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a session"}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.warns(UserWarning, match="2 file\\(s\\) left out"):
        warned = reader(tmp_path).compute(scheduler="sync")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skipped = reader(tmp_path, errors="skip").compute(scheduler="sync")
    alone = reader(good).compute(scheduler="sync")
    assert len(warned) == len(skipped) == len(alone) > 0
    with pytest.raises(SessionFileError, match=r"bad\.jsonl: not a Pi session"):
        reader([good, bad], errors="raise")  # before any task runs


def test_no_session_at_all_or_bad_arguments(tmp_path: Path) -> None:
    good, _ = build_demo(tmp_path / "ok")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a session"}\n')
    with pytest.raises(UsageError, match="no session files"):
        pdask.read_entries(tmp_path / "nothing-here")
    with pytest.raises(UsageError, match="none of the 1 file"):
        pdask.read_entries(bad, errors="skip")
    with pytest.raises(UsageError, match="errors must be"):
        pdask.read_entries(good, errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown kind"):
        pdask.read_bag(good, "bogus")  # type: ignore[arg-type]
