"""Frames of one session and of many, checked against hand-built and real Pi files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pinb.analysis.frames import (
    COMPACTION_COLUMNS,
    ENTRY_COLUMNS,
    SESSION_COLUMNS,
    compactions_frame,
    entries_frame,
    messages_frame,
    session_paths,
    sessions_frame,
    tool_calls_frame,
)
from pinb.core import Session, build_session_context, estimate_tokens

from .builders import CASES, PI_FIXTURES, build_demo


def test_entries_frame_marks_path_context_depth_and_usage(
    demo: tuple[Path, dict[str, str]],
) -> None:
    path, ids = demo
    df = entries_frame(path).set_index("id")
    assert list(entries_frame(path).columns) == list(ENTRY_COLUMNS)
    # The leaf is on the second branch: u1 -> a1 -> u3 -> a4 (-> session_info).
    on_path = set(df.index[df.on_path])
    assert {ids["u1"], ids["a1"], ids["u3"], ids["a4"]} <= on_path
    assert ids["a2"] not in on_path and ids["c1"] not in on_path
    assert (
        df.loc[ids["a1"], "children"] == 2
    )  # r1 and u3; the navigation `leaf` entry is not a branch
    assert df.loc[ids["u3"], "depth"] == 2
    assert df.loc[ids["a1"], "tool_name"] == "read,bash"
    assert df.loc[ids["a1"], "tool_calls"] == 2
    assert bool(df.loc[ids["r2"], "is_error"]) is True
    assert df.loc[ids["a2"], "label"] == "checkpoint"
    assert df.loc[ids["a1"], "context_tokens"] == 1000
    assert df.loc[ids["a4"], "cost"] == pytest.approx(0.03)
    # Entries below the compaction belong to its epoch; the branch above it does not.
    assert df.loc[ids["u2"], "compaction_id"] == ids["c1"]
    assert pd.isna(df.loc[ids["u3"], "compaction_id"])
    assert df.loc[ids["u1"], "tokens_est"] == estimate_tokens(Session.open(path)[ids["u1"]].message)
    assert df.timestamp.dtype == "datetime64[ms, UTC]"


def test_entries_frame_at_another_leaf_sees_the_compaction(
    demo: tuple[Path, dict[str, str]],
) -> None:
    path, ids = demo
    df = entries_frame(path, leaf=ids["a3"]).set_index("id")
    # After the compaction only a2 (first kept) and what follows are in context.
    in_context = set(df.index[df.in_context])
    assert in_context == {ids["c1"], ids["a2"], ids["u2"], ids["a3"]}
    assert bool(df.loc[ids["u1"], "on_path"]) and not bool(df.loc[ids["u1"], "in_context"])
    assert df.is_current_leaf.sum() == 1 and bool(df.loc[ids["a3"], "is_current_leaf"])


def test_messages_and_context_messages(demo: tuple[Path, dict[str, str]]) -> None:
    path, ids = demo
    everything = messages_frame(path)
    # 9 message entries plus the compaction (as a summary message).
    assert len(everything) == 10
    ctx = messages_frame(path, leaf=ids["a3"], context=True)
    assert list(ctx.role) == ["compactionSummary", "assistant", "user", "assistant"]
    assert ctx.text.iloc[0].startswith("Summary <script>")
    assert list(ctx.position) == [0, 1, 2, 3]
    expected = build_session_context(Session.open(path).index, ids["a3"]).messages
    assert list(ctx.tokens_est) == [estimate_tokens(m) for m in expected]


def test_tool_calls_are_paired_with_results(demo: tuple[Path, dict[str, str]]) -> None:
    path, ids = demo
    calls = tool_calls_frame(path).set_index("call_id")
    assert calls.loc["call-1", "result_entry_id"] == ids["r1"]
    assert calls.loc["call-1", "path"] == "a.py"
    assert calls.loc["call-2", "command"] == "ls"
    assert bool(calls.loc["call-2", "is_error"]) is True
    assert calls.loc["call-2", "duration_s"] == pytest.approx(3.0)
    assert calls.loc["call-1", "result_chars"] == len("print('<b>hi</b>')")


def test_compactions_frame(demo: tuple[Path, dict[str, str]]) -> None:
    path, ids = demo
    frame = compactions_frame(path)
    assert list(frame.columns) == list(COMPACTION_COLUMNS)
    row = frame.iloc[0]
    assert row["id"] == ids["c1"] and row["tokens_before"] == 1500
    assert row["messages_before"] == 5 and row["messages_after"] == 2
    assert row["entries_summarized"] == 4
    assert bool(row["first_kept_on_path"]) and not bool(row["on_path"])
    # The estimate after compaction ignores the stale usage of the kept assistant message.
    assert 0 < row["tokens_after"] < 1500


def test_real_fixture_compactions_drop_the_context() -> None:
    fixture = next(p for p in PI_FIXTURES if p.name == "before-compaction.jsonl")
    frame = compactions_frame(fixture)
    assert len(frame) == 2
    assert (frame.tokens_after < frame.tokens_before).all()
    assert (frame.entries_summarized > 0).all()
    entries = entries_frame(fixture)
    assert entries.on_path.all()  # a single branch
    assert entries.compaction_id.nunique() == 2


def test_sessions_frame_over_a_folder_with_progress(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--p--"
    first, _ = build_demo(folder)
    second = Session.create("/p", folder)
    second.append_message({"role": "user", "content": "only one", "timestamp": 5})
    from .builders import assistant

    second.append_message(assistant("fine", total=50, cost=0.5, ts=6))
    (folder / "not-a-session.jsonl").write_text('{"hello": 1}\n')
    calls: list[tuple[int, int]] = []
    with pytest.warns(UserWarning, match="1 file"):
        frame = sessions_frame(tmp_path / "sessions", progress=lambda d, t, p: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert list(frame.columns) == list(SESSION_COLUMNS)
    assert len(frame) == 2 and len(frame.attrs["skipped"]) == 1
    demo_row = frame.set_index("path").loc[str(first)]
    assert demo_row["name"] == "demo session"
    assert demo_row["leaves"] == 2 and demo_row["branch_points"] == 1
    assert demo_row["compactions"] == 1 and demo_row["labels"] == 1
    assert demo_row["tool_calls"] == 2 and demo_row["tool_errors"] == 1
    assert demo_row["cost"] == pytest.approx(0.01 + 0.02 + 0.005 + 0.03)
    assert demo_row["message_count"] == 9
    assert frame.modified.is_monotonic_decreasing


def test_sessions_frame_of_the_conformance_cases() -> None:
    frame = sessions_frame(CASES, progress=False)
    assert len(frame) == len(CASES)
    for path in CASES:
        session = Session.open(path)
        row = frame.set_index("path").loc[str(path)]
        assert row["entries"] == len(session.entries)
        assert row["compactions"] == sum(e.type == "compaction" for e in session.entries)
        leaves = sum(
            1 for e in session.entries if not session.children(e.id) and not e.is_navigation
        )
        assert row["leaves"] == leaves


def test_session_paths_accepts_globs_and_lists(tmp_path: Path) -> None:
    build_demo(tmp_path / "a")
    build_demo(tmp_path / "b")
    assert len(session_paths(str(tmp_path / "*" / "*.jsonl"))) == 2
    assert len(session_paths([tmp_path / "a", tmp_path / "b"])) == 2
    assert session_paths(tmp_path / "missing") == []


def test_a_failing_check_run_is_an_exit_code_not_a_tool_failure(tmp_path: Path) -> None:
    from pinb.testing.story import write_story_session

    story = write_story_session(tmp_path)
    calls = tool_calls_frame(story)
    bash = calls[calls.tool_name == "bash"]
    # The story's check runs fail before the fixes: Pi flags them isError, exit code 1.
    failing = bash[bash.is_error.astype(bool)]
    assert len(failing) > 0 and set(failing.exit_code) == {1}
    assert not failing.tool_failed.astype(bool).any()
    assert set(bash[~bash.is_error.astype(bool)].exit_code) == {0}
    others = calls[calls.tool_name != "bash"]
    assert others.exit_code.isna().all()
    assert (others.tool_failed.astype(bool) == others.is_error.astype(bool)).all()
