"""The what-if's "current settings" column is the compaction pinb carries out: one planner.

``%pi compact`` and the what-if plan with :func:`pinb.core.compaction.operations.plan_to_fit`; the
agent's own compactions go through :func:`pinb.agent.compact.compact_to_fit`. For the same
session, settings and window, all three must cut at the same entry with the same keep.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pinb.agent.compact import compact_to_fit
from pinb.analysis.compaction.whatif import scratch_copy, what_if
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.core.compaction.operations import compact, plan_to_fit
from pinb.errors import NothingToCompactError
from pinb.llm.limits import limit_margin

from ..conftest import assistant, tool_result, user


def _session(tmp_path: Path, *, system: int = 0, turns: int = 3) -> Session:
    s = Session.create("/p", tmp_path)
    if system:  # Pi 1.x records the system prompt in the session
        s.append_message(
            {"role": "system", "content": "rules " * (system * 4 // 6), "timestamp": 1}
        )
    for turn in range(turns):
        s.append_message(user(f"task {turn}: " + "look " * 40))
        call = f"c{turn}"
        s.append_message(assistant(f"step {turn}", calls=((call, "read", {"path": "f.py"}),)))
        s.append_message(tool_result(call, "read", "x = 1\n" * 120))
        s.append_message(assistant(f"turn {turn} done " + "ok " * 30))
    return s


CASES = [
    # (window, system prompt tokens, keep, reserve, how the keep is chosen): Pi's plan as
    # it is; a keep that keeps everything (made smaller); a small window whose system
    # prompt leaves less room than the keep (fitted).
    (None, 0, 300, 16_384, "the setting"),
    (None, 0, 20_000, 16_384, "keeps everything"),
    (32_000, 0, 8_000, 8_000, "keeps everything"),
    (6_000, 1_800, 2_000, 1_500, "fitted"),
    (4_000, 1_200, 1_500, 1_000, "fitted"),
]


@pytest.mark.parametrize(("window", "system", "keep", "reserve", "how"), CASES)
def test_the_current_column_is_the_compaction_the_agent_and_the_magics_carry_out(
    tmp_path: Path, window: int | None, system: int, keep: int, reserve: int, how: str
) -> None:
    session = _session(tmp_path, system=system, turns=12)
    settings = CompactionSettings(reserve_tokens=reserve, keep_recent_tokens=keep)
    result = what_if(session, context_window=window, current=settings)
    current = result.current
    assert current is not None and current.nothing is None, current
    # The agent's compaction (its own copy of the fitting) on a copy of the session.
    agent_copy = scratch_copy(session)
    done = compact_to_fit(agent_copy, ExtractiveSummarizer(), None, settings, context_window=window)
    assert done.first_kept_entry_id == current.first_kept_entry_id
    assert done.keep_recent_tokens == current.keep_used
    assert len(done.summarized_ids) == current.messages_summarized
    assert len(done.kept_ids) == current.entries_kept
    # `%pi compact`'s way: the plan, then Pi's compaction with the keep the plan used.
    plan = plan_to_fit(
        session, settings, context_window=window, margin=limit_margin(window) if window else 0
    )
    magics_copy = scratch_copy(session)
    report = compact(magics_copy, ExtractiveSummarizer(), settings=plan.used)
    assert report.first_kept_entry_id == current.first_kept_entry_id
    assert report.keep_recent_tokens == plan.keep_recent_tokens == current.keep_used
    assert (current.keep_used != keep) == bool(current.keep_note)
    assert how in (current.keep_note or "the setting"), current.keep_note
    assert str(current.keep_used) in result.to_text().replace(",", "")


def test_a_keep_that_keeps_everything_is_made_smaller_and_says_so(tmp_path: Path) -> None:
    session = _session(tmp_path)
    settings = CompactionSettings(keep_recent_tokens=20_000)
    plan = plan_to_fit(session, settings)
    assert plan.report is not None and plan.keep_recent_tokens < 20_000
    assert "20,000 keeps everything" in plan.keep_note
    assert "keepRecentTokens" in plan.describe_keep()
    # An automatic compaction below the threshold is left alone, as the agent leaves it.
    waiting = plan_to_fit(session, settings, context_window=200_000, reason="threshold")
    assert waiting.report is None and waiting.nothing and "Nothing to compact" in waiting.nothing
    with pytest.raises(NothingToCompactError):
        compact_to_fit(
            scratch_copy(session),
            ExtractiveSummarizer(),
            None,
            settings,
            reason="threshold",
            context_window=200_000,
        )


def test_pi_s_own_plan_takes_the_settings_as_they_are(tmp_path: Path) -> None:
    session = _session(tmp_path)
    settings = CompactionSettings(keep_recent_tokens=20_000)
    plan = plan_to_fit(session, settings, context_window=32_000, fit=False)
    assert plan.report is None and plan.nothing and "session too small" in plan.nothing
    result = what_if(session, context_window=32_000, current=settings, fit=False)
    assert result.current is not None and result.current.nothing == plan.nothing


def test_after_a_compaction_every_column_says_so_and_shows_no_figures(tmp_path: Path) -> None:
    session = _session(tmp_path)
    compact(session, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=100))
    result = what_if(session, keep_recent_tokens=(50, 400))
    frame: list[dict[str, Any]] = [r.to_dict() for r in result.rows]
    assert all(row["nothing"] and "Already compacted" in row["nothing"] for row in frame)
    assert all(row["entries_kept"] is None and row["kept_tokens"] is None for row in frame)
    leaf = session[session.leaf_id]
    assert result.parent_id == leaf.parent_id
    again = what_if(session, result.parent_id, keep_recent_tokens=(100,))
    assert again.rows[1].first_kept_entry_id == leaf.raw["firstKeptEntryId"]
    assert dataclasses.asdict(again.rows[1].settings)["keep_recent_tokens"] == 100


def _pi_written(pi16: Any, folder: Path) -> Session:
    """A session the real Pi 1.6.0's SessionManager wrote: a system prompt, twelve tool
    turns, and a compaction of Pi's own after the fourth."""
    steps: list[dict[str, Any]] = [
        {
            "method": "appendMessage",
            "args": [{"role": "system", "content": "rules " * 300, "timestamp": 1}],
        }
    ]
    for turn in range(12):
        call = f"c{turn}"
        for message in (
            user(f"task {turn}: " + "look " * 40),
            assistant(f"step {turn}", calls=((call, "read", {"path": "f.py"}),)),
            tool_result(call, "read", "x = 1\n" * 120),
            assistant(f"turn {turn} done " + "ok " * 30),
        ):
            steps.append({"method": "appendMessage", "args": [message]})
        if turn == 3:  # keep from the third turn's user message (step 9)
            steps.append(
                {"method": "appendCompaction", "args": ["Turns 0 and 1 done.", {"$ref": 9}, 2_000]}
            )
    built = pi16.build(steps, dir=str(folder), cwd="/home/dev/proj")
    return Session.open(built["file"])


@pytest.mark.parametrize(
    ("window", "keep", "reserve"), [(None, 300, 16_384), (6_000, 2_000, 1_500)]
)
def test_on_a_file_pi_wrote_the_current_column_is_what_compact_does(
    pi16: Any, tmp_path: Path, window: int | None, keep: int, reserve: int
) -> None:
    session = _pi_written(pi16, tmp_path / "s")
    assert [e.type for e in session.entries].count("compaction") == 1 and not session.problems
    settings = CompactionSettings(reserve_tokens=reserve, keep_recent_tokens=keep)
    current = what_if(session, context_window=window, current=settings).current
    assert current is not None and current.nothing is None, current
    plan = plan_to_fit(
        session, settings, context_window=window, margin=limit_margin(window) if window else 0
    )
    copy = scratch_copy(session)
    report = compact(copy, ExtractiveSummarizer(), settings=plan.used)
    assert report.first_kept_entry_id == current.first_kept_entry_id
    assert report.keep_recent_tokens == current.keep_used
    assert len(report.summarized_ids) == current.messages_summarized
    assert len(report.kept_ids) == current.entries_kept
    # The span starts at Pi's own compaction's kept start, as Pi 1.6 summarizes it.
    first_kept = next(e for e in session.entries if e.type == "compaction").raw["firstKeptEntryId"]
    assert report.summarized_ids[0] == first_kept
