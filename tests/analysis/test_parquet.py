"""Every frame written to Parquet reads back equal: timestamps, nullable ints, text, attrs."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from pinb.analysis import dask as pdask
from pinb.analysis.frames import entries_frame
from pinb.analysis.parquet import (
    FRAME_KINDS,
    MissingExtraError,
    frame_of,
    to_parquet,
    write_parquet,
)
from pinb.analysis.totals import usage_totals
from pinb.cli.analysis import FRAME_KINDS as CLI_KINDS
from pinb.cli.analysis import add_parser
from pinb.core.forks import clone_session
from pinb.errors import PinbError, UsageError
from pinb.testing.story import write_story_session

from .builders import CASES, build_demo


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A demo session, a story and a clone of it, and the sample trees (v1 and v2 too)."""
    root = tmp_path / "sessions"
    build_demo(root / "demo")
    clone_session(write_story_session(root / "story", seed=4, context_window=12_000))
    (root / "cases").mkdir()
    for case in CASES:
        shutil.copy(case, root / "cases" / case.name)
    return root


@pytest.mark.parametrize("kind", FRAME_KINDS)
def test_every_frame_round_trips(folder: Path, tmp_path: Path, kind: str) -> None:
    path = write_parquet(kind, folder, tmp_path / "out" / f"{kind}.parquet")
    expected = frame_of(kind, folder)
    assert len(expected) > 0
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, expected)


def test_types_and_missing_values_survive(folder: Path, tmp_path: Path) -> None:
    expected = frame_of("entries", folder)
    back = pd.read_parquet(to_parquet(expected, tmp_path / "e.parquet"))
    assert str(back.timestamp.dtype) == "datetime64[ms, UTC]"
    assert back.input.dtype == "Int64" and back.input.isna().any()  # no usage: <NA>, not 0
    assert back.is_error.dtype == "boolean" and back.is_error.isna().any()
    assert back.label.dtype == "string" and back.label.isna().any()
    assert back.copied.any() and back.copied.dtype == "boolean"


def test_empty_frames_and_attrs_round_trip(tmp_path: Path) -> None:
    build_demo(tmp_path / "s")
    empty = frame_of("compactions", tmp_path / "s").iloc[0:0]
    pd.testing.assert_frame_equal(pd.read_parquet(to_parquet(empty, tmp_path / "c.parquet")), empty)
    totals = usage_totals(tmp_path / "s", "model")
    back = pd.read_parquet(to_parquet(totals, tmp_path / "t.parquet"))
    pd.testing.assert_frame_equal(back, totals)
    assert back.attrs["rule"] == totals.attrs["rule"]


def test_a_missing_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_demo(tmp_path / "s")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes `import pyarrow` fail
    with pytest.raises(MissingExtraError, match=r"pip install 'pinb\[parquet\]'") as caught:
        write_parquet("entries", tmp_path / "s", tmp_path / "e.parquet")
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, PinbError)
    with pytest.raises(MissingExtraError):
        pdask.to_parquet("entries", tmp_path / "s", tmp_path / "dir")
    assert not (tmp_path / "e.parquet").exists()


def test_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown frame kind 'turns'"):
        write_parquet("turns", tmp_path, tmp_path / "x.parquet")


def test_dask_readers_write_parquet_that_reads_back(folder: Path, tmp_path: Path) -> None:
    files = sorted(folder.rglob("*.jsonl"))
    target = pdask.to_parquet("entries", files, tmp_path / "entries", npartitions=3)
    parts = sorted(Path(target).glob("*.parquet"))
    # One file per partition: npartitions=3 splits the files by bytes and drops empty
    # slices, so 2 or 3 here (1 would mean the partitions were not written apart).
    assert 1 < len(parts) <= 3
    back = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    expected = pd.concat([entries_frame(p) for p in files], ignore_index=True)
    pd.testing.assert_frame_equal(back, expected)


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pinb")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_pinb_frames_writes_parquet(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert CLI_KINDS == FRAME_KINDS
    out = tmp_path / "m.parquet"
    assert _run(["frames", "messages", str(folder), "--parquet", str(out)]) == 0
    said = capsys.readouterr().out
    expected = frame_of("messages", folder)
    assert f"wrote {len(expected):,} messages row(s) of" in said and str(out) in said
    pd.testing.assert_frame_equal(pd.read_parquet(out), expected)
    assert (
        _run(["frames", "sessions", str(folder), "--parquet", str(tmp_path / "d"), "--dask"]) == 0
    )
    assert "one file per partition" in capsys.readouterr().out
    assert len(pd.concat(pd.read_parquet(p) for p in (tmp_path / "d").glob("*.parquet"))) == len(
        frame_of("sessions", folder)
    )
    with pytest.raises(UsageError):
        _run(["frames", "usage", str(folder), "--parquet", str(tmp_path / "u"), "--dask"])


def test_duckdb_reads_the_file(folder: Path, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = write_parquet("usage", folder, tmp_path / "usage.parquet")
    frame = frame_of("usage", folder)
    cost, sessions, kind = duckdb.sql(
        f"SELECT sum(cost), count(DISTINCT session), typeof(any_value(timestamp))"
        f" FROM read_parquet('{path}') WHERE NOT copied"
    ).fetchall()[0]
    assert cost == pytest.approx(frame[~frame.copied].cost.sum())
    assert sessions == frame[~frame.copied].session.nunique()
    assert kind == "TIMESTAMP WITH TIME ZONE"
