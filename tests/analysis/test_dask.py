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
from pinb.analysis.frames import (
    compactions_frame,
    entries_frame,
    sessions_frame,
    tool_calls_frame,
)
from pinb.errors import SessionFileError, UsageError

from .builders import CASES, PI_FIXTURES, build_demo


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
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


def test_found_files_are_file_refs_and_the_old_name_warns(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"x" * 7)
    (found,) = pdask.find_session_files(tmp_path)
    assert type(found) is pdask.FileRef
    assert (found.name, found.path, found.size, found.fs) == (str(path), str(path), 7, None)
    assert pdask.find_session_files(found) == [found]  # a reference is a source as it is
    # The old name, shared with pinb.core.file.write.SessionFile, still imports, with a warning.
    with pytest.warns(
        DeprecationWarning, match=r"pinb\.analysis\.dask\.SessionFile is now FileRef"
    ):
        old = pdask.SessionFile
    assert old is pdask.FileRef
    assert "SessionFile" not in pdask.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        pdask.Nothing  # noqa: B018 - an unknown name is still an AttributeError


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


# -- files where they live: fsspec URLs and explicit clients ----------------------------------


@pytest.fixture
def memory_sessions(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[Path]]]:
    """The sample sessions copied into fsspec's in-memory file system, plus a stray file."""
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/pinb-test-{request.node.name}"
    files = _files()
    for i, path in enumerate(files):
        fs.pipe(f"{root}/project-{i % 2}/{i:02d}-{path.name}", path.read_bytes())
    fs.pipe(f"{root}/project-0/notes.jsonl", b'{"not": "a session"}\n')
    fs.pipe(f"{root}/project-0/readme.txt", b"not jsonl at all")
    try:
        yield f"memory://{root}", files
    finally:
        fs.rm(root, recursive=True)


def _by_url(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["session_id", "line"]).reset_index(drop=True)


def test_a_memory_url_reads_like_the_local_files(memory_sessions: tuple[str, list[Path]]) -> None:
    url, files = memory_sessions
    with pytest.warns(UserWarning, match=r"1 file\(s\) left out, e\.g\. memory://.*notes\.jsonl"):
        remote = pdask.read_entries(url, npartitions=3)
    local = pd.concat([entries_frame(p) for p in files], ignore_index=True)
    result = remote.compute(scheduler="sync")
    # Version 1 files draw their ids from the file's name, and a session is its own root
    # (named by its URL there), so compare everything else.
    names = ("id", "parent_id", "compaction_id", "root_session")
    columns = [c for c in local.columns if c not in names]
    pd.testing.assert_frame_equal(
        _by_url(result)[columns], _by_url(local)[columns], check_like=True
    )
    assert len(result) == len(local)
    assert result.root_session.str.startswith(url + "/").all()


def test_sessions_behind_a_url_keep_their_url_and_listing_facts(
    memory_sessions: tuple[str, list[Path]],
) -> None:
    url, files = memory_sessions
    sessions = pdask.read_sessions(f"{url}/project-1/*.jsonl").compute(scheduler="sync")
    expected = sessions_frame(files[1::2], progress=False)
    assert sorted(sessions.path) == sorted(
        f"{url}/project-1/{i:02d}-{p.name}" for i, p in enumerate(files) if i % 2
    )
    for column in ("id", "name", "message_count", "first_message", "entries", "cost"):
        assert sorted(sessions[column].dropna().tolist()) == sorted(
            expected[column].dropna().tolist()
        ), column


def test_an_explicit_client_that_is_not_the_default(
    memory_sessions: tuple[str, list[Path]],
) -> None:
    url, files = memory_sessions
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster, set_as_default=False)
    try:
        assert _default_client() is not client  # plain compute() would not pick it up
        tools = pdask.read_tool_calls(url, client=client, errors="skip")
        # The listing and header checks ran as tasks on this cluster.
        assert {"find_session_files", "check_group"} <= _task_prefixes(client)
        result = tools.compute(scheduler=client)
        expected = pd.concat([tool_calls_frame(p) for p in files], ignore_index=True)
        assert len(result) == len(expected)
        assert sorted(result.tool_name) == sorted(expected.tool_name)
    finally:
        client.close()
        cluster.close()


def _default_client() -> distributed.Client | None:
    try:
        return distributed.default_client()
    except ValueError:
        return None


def _task_prefixes(client: distributed.Client) -> set[str]:
    """The kinds of task the cluster's scheduler has seen (``_check_group`` as ``check_group``)."""

    def prefixes(dask_scheduler: Any) -> list[str]:
        return [str(name) for name in dask_scheduler.task_prefixes]

    return set(client.run_on_scheduler(prefixes))


def test_a_scheduler_address_makes_one_client(
    memory_sessions: tuple[str, list[Path]],
) -> None:
    url, files = memory_sessions
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    try:
        first = pdask.read_compactions(url, client=cluster.scheduler_address, errors="skip")
        second = pdask.read_bag(url, "sessions", client=cluster.scheduler_address, errors="skip")
        made = pdask._clients[cluster.scheduler_address]
        assert distributed.default_client() is made
        expected = pd.concat([compactions_frame(p) for p in files], ignore_index=True)
        assert len(first.compute()) == len(expected)
        assert second.count().compute() == len(files)
        assert len(pdask._clients) == 1
    finally:
        made = pdask._clients.pop(cluster.scheduler_address)
        made.close()
        cluster.close()


def test_a_url_that_finds_nothing_or_a_bad_client(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no session files found for 'memory://nowhere"):
        pdask.read_entries("memory://nowhere/at/all")
    with pytest.raises(UsageError, match="client must be"):
        pdask.read_entries(tmp_path, client=42)


def test_worker_processes_read_file_urls(tmp_path: Path) -> None:
    # Separate worker processes: only the file names travel, each worker opens the files.
    files = []
    for i, path in enumerate(_files()):
        copy = tmp_path / "shared" / f"{i:02d}-{path.name}"
        copy.parent.mkdir(exist_ok=True)
        copy.write_bytes(path.read_bytes())
        files.append(copy)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        url = (tmp_path / "shared").as_uri()
        sessions = pdask.read_sessions(url, client=client).compute(scheduler=client)
    expected = sessions_frame(files, progress=False)
    assert sorted(sessions.path) == sorted(p.as_uri() for p in files)
    for column in ("id", "entries", "leaves", "context_tokens", "cost", "modified"):
        assert sessions.sort_values("id")[column].tolist() == (
            expected.sort_values("id")[column].tolist()
        ), column
