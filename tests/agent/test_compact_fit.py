"""Compaction around Pi's planner for small windows: a plan that finds work, requests that fit."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pinb.agent.compact import FittedSummarizer, compact_to_fit
from pinb.core import CompactionSettings, ExtractiveSummarizer, ModelSummarizer, Session
from pinb.core.compaction.operations import compact
from pinb.errors import NothingToCompactError
from pinb.llm.limits import limit_margin
from pinb.testing import ScriptedLLM


def _assistant(text: str) -> dict[str, Any]:
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-completions",
        "provider": "x",
        "model": "y",
        "usage": {**zero, "totalTokens": 0, "cost": {**zero, "total": 0}},
        "stopReason": "stop",
        "timestamp": 2,
    }


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
        session.append_message(_assistant(f"a{n} " + "a" * size))
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


def test_a_summary_cut_by_its_limit_is_written_by_the_extractive_summarizer(
    tmp_path: Path,
) -> None:
    # A small model writes until its limit; Pi writes no compaction from a cut summary.
    session, _ = _session(tmp_path, [1500] * 3)
    llm = ScriptedLLM(context_window=4096)
    for _ in range(2):  # the history, and the prefix of a split turn
        llm.reply("## Goal\nand then and then and then", stop_reason="length")
    summarizer = FittedSummarizer(ModelSummarizer(llm), 4096)
    report = compact(session, summarizer, None, CompactionSettings().fit_window(4096))
    assert llm.calls and "extractive" in summarizer.modes
    limit = llm.calls[0].max_tokens
    assert report.summary.startswith(
        f"(Written by pinb's extractive summarizer: the model's summary ran past its "
        f"{limit:,}-token limit.)"
    )
    assert "and then and then" not in report.summary
    assert session.leaf is not None and session.leaf.type == "compaction"


def _system_message(tokens: int) -> dict[str, Any]:
    return {
        "role": "system",
        "sections": {"base": "s" * (tokens * 4)},
        "toolsAdded": [],
        "toolsRemoved": [],
        "timestamp": 1,
    }


def test_on_a_small_window_the_compaction_ends_below_the_threshold_beside_the_system_prompt(
    tmp_path: Path,
) -> None:
    from pinb.core.compaction.operations import fit_budget
    from pinb.core.context.tokens import estimate_tokens

    session = Session.create(tmp_path, tmp_path / "s")
    session.append_message(_system_message(1800))  # a system prompt and tools of ~1,800
    for n in range(4):
        session.append_message({"role": "user", "content": f"q{n} " + "q" * 800, "timestamp": 1})
        session.append_message(_assistant(f"a{n} " + "a" * 1600))
    settings = CompactionSettings().fit_window(4096)
    threshold = settings.threshold(4096)

    def tokens() -> int:
        context = session.current_context()
        return sum(estimate_tokens(m, pi=context.pi) for m in context.messages)

    assert tokens() > threshold
    margin = limit_margin(4096)
    fitted, summary_cap, note = fit_budget(session.current_context(), settings, 4096, margin)
    assert summary_cap is not None and summary_cap < 4096 // 4
    assert fitted.keep_recent_tokens < settings.keep_recent_tokens and "fitted" in note
    # a large window keeps Pi's own settings
    context = session.current_context()
    assert fit_budget(context, CompactionSettings(), 200_000) == (CompactionSettings(), None, "")

    llm = ScriptedLLM(context_window=4096)
    for _ in range(2):
        llm.reply("## Goal\nwrite the story")
    report = compact_to_fit(
        session, ModelSummarizer(llm), None, settings, reason="threshold", context_window=4096
    )
    assert llm.calls[0].max_tokens == summary_cap
    assert report.tokens_after <= threshold < report.tokens_before
    assert tokens() <= threshold


def test_a_summary_is_never_asked_to_be_longer_than_what_it_replaces(tmp_path: Path) -> None:
    session, _ = _session(tmp_path, [300, 300, 300])  # a short span on a 4,096 window
    llm = ScriptedLLM(context_window=4096)
    for _ in range(2):
        llm.reply("## Goal\nshort")
    summarizer = FittedSummarizer(ModelSummarizer(llm), 4096)
    settings = dataclasses.replace(CompactionSettings().fit_window(4096), keep_recent_tokens=100)
    report = compact(session, summarizer, None, settings)
    for call in llm.calls:
        prompt = call.messages[-1]["content"][0]["text"]
        span = prompt.split("<conversation>", 1)[1].split("</conversation>", 1)[0]
        assert call.max_tokens <= max(64, -(-len(span) // 4) + 8)
    assert report.tokens_after < report.tokens_before
