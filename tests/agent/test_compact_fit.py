"""Compaction around Pi's planner for small windows: a plan that finds work, requests that fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pinb.agent.compact import FittedSummarizer, compact_to_fit
from pinb.core import CompactionSettings, ExtractiveSummarizer, ModelSummarizer, Session
from pinb.core.operations import compact
from pinb.errors import NothingToCompactError
from pinb.testing import ScriptedLLM


def _session(tmp_path: Path, sizes: list[int]) -> tuple[Session, list[Any]]:
    session = Session.create(tmp_path, tmp_path / "s")
    users = []
    for n, size in enumerate(sizes):
        users.append(
            session.append_message(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"q{n} " + "q" * size}],
                    "timestamp": 1,
                }
            )
        )
        session.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"a{n} " + "a" * size}],
                "api": "openai-completions",
                "provider": "x",
                "model": "y",
                "usage": {
                    "input": 0,
                    "output": 0,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 0,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "stopReason": "stop",
                "timestamp": 2,
            }
        )
    return session, users


def test_over_the_window_a_plan_that_keeps_everything_summarizes_before_the_last_turn(
    tmp_path: Path,
) -> None:
    # settings planned for a large window (keep 20,000) on a context of ~6,000 tokens
    session, users = _session(tmp_path, [8000, 8000, 8000])
    settings = CompactionSettings()
    with pytest.raises(NothingToCompactError):
        compact(session, ExtractiveSummarizer(), None, settings)
    with pytest.raises(NothingToCompactError):  # not asked, and under the threshold
        compact_to_fit(
            session,
            ExtractiveSummarizer(),
            None,
            settings,
            reason="threshold",
            context_window=200_000,
        )
    report = compact_to_fit(
        session, ExtractiveSummarizer(), None, settings, reason="threshold", context_window=4096
    )
    assert report.first_kept_entry_id == users[-1].id  # the last user turn, kept whole
    assert not report.is_split_turn


def test_a_summary_too_large_for_the_window_is_written_in_fitting_passes(tmp_path: Path) -> None:
    session, _ = _session(tmp_path, [1500] * 5)
    llm = ScriptedLLM(context_window=4096)
    for _ in range(12):
        llm.reply("## Goal\nkeep going")
    summarizer = FittedSummarizer(ModelSummarizer(llm), 4096)
    compact(session, summarizer, None, CompactionSettings().fit_window(4096))
    assert any(mode.startswith("passes:") for mode in summarizer.modes)
    for request in llm.calls:
        sent = sum(len(str(m)) for m in request.messages) + len(request.system_prompt or "")
        assert sent / 4 + request.max_tokens <= 4096
        assert request.max_tokens <= 1024


def test_when_no_pass_can_fit_the_extractive_summarizer_writes_it_and_says_so(
    tmp_path: Path,
) -> None:
    session, _ = _session(tmp_path, [3000] * 6)
    llm = ScriptedLLM(context_window=4096)
    summarizer = FittedSummarizer(ModelSummarizer(llm), 4096, max_passes=1)
    report = compact(session, summarizer, None, CompactionSettings().fit_window(4096))
    assert llm.calls == [] and summarizer.modes == ["extractive"]
    assert report.summary.startswith("(Written by pinb's extractive summarizer")
