"""Plots draw what the frames say, on Figure objects, never through pyplot."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.text import Annotation

from pinb.analysis.frames import sessions_frame, tool_calls_frame
from pinb.analysis.plots import (
    plot_branches,
    plot_cost,
    plot_tokens,
    plot_tool_use,
    token_series,
    tree_layout,
)
from pinb.core import Session
from pinb.testing import messages

from .builders import CASES, PI_FIXTURES, build_demo


@pytest.fixture(autouse=True)
def _quiet_fonts() -> None:
    warnings.filterwarnings("ignore", message="Glyph .* missing from font")


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def test_tokens_plot_shows_every_turn_and_each_compaction_drop() -> None:
    fixture = next(p for p in PI_FIXTURES if p.name == "before-compaction.jsonl")
    data = token_series(fixture)
    assert len(data["compaction_turn"]) == 2
    assert all(b > a for b, a in zip(data["tokens_before"], data["tokens_after"], strict=True))
    figure = plot_tokens(fixture, context_window=200_000)
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    # The turns' line, in runs a compaction breaks; each starts right after a drop.
    drawn = {
        (x, y) for line in ax.lines for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
    }
    assert set(zip(data["turn"], data["tokens"], strict=True)) <= drawn
    after = set(zip(data["compaction_turn"], data["tokens_after"], strict=True))
    assert after <= drawn
    # Each drop is an arrow from the recorded tokensBefore down to the figure after it.
    drops = [(a.xy, a.xyann) for a in ax.texts if isinstance(a, Annotation)]
    assert drops == [
        ((x, low), (x, high))
        for x, high, low in zip(
            data["compaction_turn"], data["tokens_before"], data["tokens_after"], strict=True
        )
    ]
    assert 200_000 in {line.get_ydata()[0] for line in ax.lines if len(set(line.get_ydata())) == 1}
    assert _png(figure).startswith(b"\x89PNG")


def test_plots_never_touch_pyplot() -> None:
    fixture = next(p for p in PI_FIXTURES if p.name == "before-compaction.jsonl")
    code = (
        "import sys\n"
        "from pinb.analysis.plots import plot_tokens\n"
        f"plot_tokens({str(fixture)!r}).savefig(__import__('io').BytesIO())\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)  # fmt: skip
    assert result.stdout.strip() == "False"


def test_plots_draw_into_given_axes(tmp_path: Path) -> None:
    path, _ = build_demo(tmp_path)
    figure = Figure()
    left, right = figure.subplots(1, 2)
    assert plot_tokens(path, ax=left) is figure
    assert plot_branches(path, ax=right) is figure
    assert len(figure.axes) == 2


def _failing_test_run(folder: Path) -> Path:
    """A session whose bash call exits 1 (a test run expected to fail): isError, no failure."""
    session = Session.create(cwd=folder, sessions_dir=folder)
    session.append_message(messages.user("run the tests before the fix"))
    session.append_message(messages.assistant(calls=[("c1", "bash", {"command": "pytest"})]))
    session.append_message(
        messages.tool_result("c1", "bash", "1 failed\n\nCommand exited with code 1", error=True)
    )
    session.append_message(messages.assistant("As expected, it fails."))
    return session.require_path()


def test_cost_and_tool_use_bars_match_the_frames(tmp_path: Path) -> None:
    sessions = sessions_frame(CASES, progress=False)
    figure = plot_cost(sessions, top=3)
    bars = figure.axes[0].patches
    widths = sorted((b.get_width() for b in bars), reverse=True)
    assert widths == pytest.approx(sorted(sessions.cost, reverse=True)[:3])
    files = [*CASES, _failing_test_run(tmp_path)]
    calls = pd.concat([tool_calls_frame(p) for p in files], ignore_index=True)
    figure = plot_tool_use(calls)
    patches = figure.axes[0].patches
    tools = calls.tool_name.nunique()
    ok, exits, failed = patches[:tools], patches[tools : 2 * tools], patches[2 * tools :]
    assert len(failed) == tools

    def width(bars: list[Any]) -> float:
        return sum(p.get_width() for p in bars)

    assert width(ok) + width(exits) + width(failed) == len(calls)
    flagged = calls.is_error.fillna(False).astype(bool)
    broke = calls.tool_failed.fillna(False).astype(bool)
    # A non-zero exit (isError on bash) is drawn apart from a tool that failed.
    assert width(exits) == int((flagged & ~broke).sum()) > 0
    assert width(failed) == int(broke.sum()) > 0
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == [
        "ok",
        "non-zero exit (isError, not a failure)",
        "tool failed",
    ]
    _png(figure)


def test_branch_layout_and_plots(tmp_path: Path) -> None:
    path, ids = build_demo(tmp_path)
    session = Session.open(path)
    positions = tree_layout(session)
    index = {e.id: i for i, e in enumerate(session.entries)}
    # The second answer to a1 opens a new lane; depth is the x coordinate.
    assert positions[index[ids["u3"]]] == (2.0, 1.0)
    assert positions[index[ids["r1"]]] == (2.0, 0.0)
    figure = plot_branches(path)
    points = sum(
        len(c.get_offsets()) for c in figure.axes[0].collections if isinstance(c, PathCollection)
    )
    assert points == sum(
        1
        for e in session.entries
        if e.role in ("user", "assistant", "toolResult") or e.type == "compaction"
    )
    summary = plot_branches(sessions_frame(CASES, progress=False))
    scatter = next(c for c in summary.axes[0].collections if isinstance(c, PathCollection))
    assert len(scatter.get_offsets()) == len(CASES)


def test_cost_labels_of_sessions_that_start_alike_stay_apart() -> None:
    prompt = "Please fix the failing test in the parser module and explain the change " * 2
    sessions = pd.DataFrame(
        {
            "id": ["aaaa1111-x", "bbbb2222-y", "cccc3333-z"],
            "name": [None, None, None],
            "first_message": [prompt, prompt, "short"],
            "cost": [3.0, 2.0, 1.0],
        }
    )
    figure = plot_cost(sessions, top=3)
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert len(set(labels)) == 3 and "short" in labels
    assert any(label.endswith("· aaaa1111") for label in labels)
