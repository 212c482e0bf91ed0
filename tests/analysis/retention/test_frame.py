"""Retention over many sessions: the frame, its dask twin and the plot."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from pinb.analysis.retention.frame import (
    RETENTION_COLUMNS,
    compaction_retention,
    plot_retention,
    read_retention,
)
from tests.analysis.builders import PI_FIXTURES
from tests.analysis.retention_story import write_story


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_story(tmp_path / "sessions" / "--shop--")
    for fixture in PI_FIXTURES:
        (tmp_path / "sessions" / "--legacy--").mkdir(parents=True, exist_ok=True)
        (tmp_path / "sessions" / "--legacy--" / fixture.name).write_bytes(fixture.read_bytes())
    (tmp_path / "sessions" / "stray.jsonl").write_text("not json\n")
    return tmp_path / "sessions"


def test_one_row_per_compaction(folder: Path) -> None:
    with pytest.warns(UserWarning, match="1 file"):
        frame = compaction_retention(folder)
    assert list(frame.columns) == list(RETENTION_COLUMNS)
    shop = frame[frame.session_path.str.contains("--shop--")]
    assert len(shop) == 2 and list(shop.facts) == [18, 10]
    assert shop.recall_file.tolist() == [1.0, 1.0]
    assert (frame.summarized_tokens == frame.estimated_before - frame.estimated_after).all()
    assert len(frame) == 2 + 2  # the story's two and the legacy sample's two


def test_dask_reads_the_same_rows(folder: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = compaction_retention(folder)
        lazy = read_retention(folder, files_per_partition=1)
    got = lazy.compute()
    key = ["compaction_id"]
    left = expected.sort_values(key).reset_index(drop=True)
    right = got.sort_values(key).reset_index(drop=True)
    columns = ["compaction_id", "facts", "kept", "score", "estimated_after"]
    assert left[columns].values.tolist() == right[columns].values.tolist()


def test_plot_draws_each_kind_on_its_own_figure(folder: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = compaction_retention(folder)
    figure = plot_retention(frame)
    assert isinstance(figure, Figure)
    (axes,) = figure.axes
    labels = axes.get_legend_handles_labels()[1]
    assert any(label.startswith("files (") for label in labels)
    empty = plot_retention(frame.iloc[0:0])
    assert "no compactions" in empty.axes[0].texts[0].get_text()
