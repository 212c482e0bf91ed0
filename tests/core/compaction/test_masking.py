"""Masking old tool results: which are old, the placeholder, the stop, the file, the figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinb.core import CompactionSettings, Session, load_compaction_settings
from pinb.core.compaction.hidden import hidden_originals, holds_hidden
from pinb.core.compaction.masking import (
    MASK_PREFIX,
    is_mask_text,
    masked_results,
    plan_masking,
    write_masks,
)
from pinb.core.context.tokens import estimate_projected_tokens, should_compact
from pinb.errors import NothingToCompactError, UsageError
from pinb.testing.generate import tool_heavy_session

WINDOW = 64_000
SETTINGS = CompactionSettings(keep_recent_tokens=8_000)


@pytest.fixture
def heavy(tmp_path: Path) -> Path:
    # 40 turns of ~1,500-token results: ~61k tokens, over the 47,616 threshold of 64k.
    return tool_heavy_session(tmp_path, turns=40, result_chars=6_000)


def _tool_results(session: Session) -> list[str]:
    return [str(e.id) for e in session.path_to() if e.role == "toolResult"]


def test_old_results_are_masked_oldest_first_until_under_the_threshold(heavy: Path) -> None:
    session = Session.open(heavy)
    before_lines = heavy.read_bytes().count(b"\n")
    plan = plan_masking(session, SETTINGS, context_window=WINDOW, reason="threshold")
    threshold = int(SETTINGS.threshold(WINDOW))
    assert plan.tokens_before > threshold and plan.threshold == threshold
    masked = [m.entry_id for m in plan.masked]
    assert masked == _tool_results(session)[: len(masked)]  # the oldest, in order
    assert 0 < len(masked) < plan.candidates  # it stopped once under the threshold
    assert plan.reaches and plan.tokens_after <= threshold
    assert heavy.read_bytes().count(b"\n") == before_lines  # a plan writes nothing

    done = write_masks(session, plan)
    lines = heavy.read_bytes().splitlines()[before_lines:]
    appended = [json.loads(line) for line in lines]
    assert [e["type"] for e in appended] == ["context_edit"] * len(masked)
    assert [e["targetId"] for e in appended] == masked
    reopened = Session.open(heavy)
    figure = estimate_projected_tokens(reopened.build_context()).tokens
    assert figure == done.tokens_after  # the plan's figure is the file's
    assert not should_compact(figure, WINDOW, SETTINGS)  # the trigger agrees
    # One mask fewer would not have been enough.
    last = plan.masked[-1]
    assert max(done.tokens_after, done.expected_after) + last.saved > threshold


def test_a_placeholder_names_the_tool_its_arguments_the_size_and_the_way_back(
    heavy: Path,
) -> None:
    session = Session.open(heavy)
    plan = write_masks(session, plan_masking(session, SETTINGS, context_window=WINDOW))
    first = plan.masked[0]
    original = session[first.entry_id].message
    assert original is not None
    sent = next(
        m
        for m, source in zip(
            session.build_context().messages, session.build_context().sources, strict=True
        )
        if source.id == first.entry_id
    )
    text = sent["content"][0]["text"]
    assert text.startswith(MASK_PREFIX) and "\n" not in text and is_mask_text(sent["content"])
    assert f'read {{"path":"{first.arguments[9:-2]}"}}' in text
    assert f"{len(original['content'][0]['text']):,} characters" in text
    assert f'recall("{first.entry_id}")' in text and f"%pi goto {first.entry_id}" in text
    # Role, call id and the rest of the message are the original's (only content changes).
    assert {k: v for k, v in sent.items() if k != "content"} == {
        k: v for k, v in original.items() if k != "content"
    }


def test_the_current_turn_and_the_kept_budget_are_never_masked(heavy: Path) -> None:
    session = Session.open(heavy)
    plan = write_masks(
        session, plan_masking(session, SETTINGS, context_window=WINDOW, reason="manual")
    )
    ids = [str(e.id) for e in session.path_to()]
    protected_at = ids.index(str(plan.protected_from))
    assert all(ids.index(m.entry_id) < protected_at for m in plan.masked)
    # The tail from the protected entry holds at least keepRecentTokens, verbatim.
    context = session.build_context()
    tail = [p for p in context.entries if ids.index(str(p.entry.id)) >= protected_at]
    assert not any(p.edit for p in tail)
    from pinb.core.context.tokens import estimate_tokens

    held = sum(estimate_tokens(m) for p in tail for m in p.messages)
    assert held >= SETTINGS.keep_recent_tokens


def test_a_manual_mask_under_the_threshold_masks_every_old_result(heavy: Path) -> None:
    session = Session.open(heavy)
    plan = plan_masking(session, SETTINGS, context_window=200_000, reason="manual")
    assert plan.tokens_before < (plan.threshold or 0)
    assert len(plan.masked) == plan.candidates and "already under" in plan.note
    # Automatic masking under the threshold has nothing to do.
    with pytest.raises(NothingToCompactError, match="under the threshold"):
        plan_masking(session, SETTINGS, context_window=200_000, reason="threshold")
    write_masks(session, plan)
    with pytest.raises(NothingToCompactError, match="no tool result older"):
        plan_masking(session, SETTINGS, context_window=200_000, reason="manual")


def test_masking_stops_on_the_reported_usage_as_well_as_on_chars4(tmp_path: Path) -> None:
    heavy = tool_heavy_session(tmp_path, turns=40, result_chars=6_000)
    session = Session.open(heavy)
    # A server that counts far more than chars/4: the projected figure after any edit is
    # chars/4, so one small mask would "fix" it; the plan masks what the usage needs.
    session.append_message({"role": "user", "content": "and now?", "timestamp": 1})
    session.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "api": "x",
            "provider": "x",
            "model": "x",
            "usage": {"input": 90_000, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                      "totalTokens": 90_001},
            "stopReason": "stop",
            "timestamp": 2,
        }
    )  # fmt: skip
    plan = plan_masking(session, SETTINGS, context_window=WINDOW, reason="threshold")
    threshold = int(SETTINGS.threshold(WINDOW))
    assert plan.tokens_before == 90_001
    assert plan.tokens_after < threshold  # chars/4 would stop far earlier ...
    assert plan.expected_after == 90_001 - sum(m.saved for m in plan.masked)
    # ... the plan went on until the usage less what it masked is under too.
    assert plan.reaches and plan.expected_after <= threshold
    assert plan.expected_after + plan.masked[-1].saved > threshold  # and not one further
    # chars/4 alone (the projected figure after the first edit) needed fewer masks.
    chars4 = plan.tokens_after + sum(m.saved for m in plan.masked)
    needed = next(
        k
        for k in range(1, len(plan.masked) + 1)
        if chars4 - sum(m.saved for m in plan.masked[:k]) <= threshold
    )
    assert needed < len(plan.masked)


def test_masking_that_cannot_get_under_the_threshold_says_so(heavy: Path) -> None:
    session = Session.open(heavy)
    small = CompactionSettings(keep_recent_tokens=40_000, reserve_tokens=30_000)
    plan = plan_masking(session, small, context_window=WINDOW, reason="threshold")
    assert not plan.reaches and len(plan.masked) == plan.candidates
    assert "a summary is needed" in plan.describe()


def test_no_old_result_is_nothing_to_mask(tmp_path: Path) -> None:
    heavy = tool_heavy_session(tmp_path, turns=2, result_chars=400)
    with pytest.raises(NothingToCompactError, match="Nothing to mask"):
        plan_masking(Session.open(heavy), SETTINGS, context_window=WINDOW)


def test_a_pi_058_session_cannot_be_masked(heavy: Path) -> None:
    with pytest.raises(NothingToCompactError, match="context edits"):
        plan_masking(Session.open(heavy, pi="0.58"), SETTINGS, context_window=WINDOW)


def test_masks_and_compacted_spans_are_read_back(heavy: Path) -> None:
    from pinb.core import ExtractiveSummarizer, compact

    session = Session.open(heavy)
    assert not holds_hidden(session.build_context())
    plan = write_masks(session, plan_masking(session, SETTINGS, context_window=WINDOW))
    context = session.build_context()
    assert holds_hidden(context)
    back = masked_results(context)
    assert [(m.entry_id, m.edit_id, m.saved) for m in back] == [
        (m.entry_id, m.edit_id, m.saved) for m in plan.masked
    ]
    assert [h.entry.id for h in hidden_originals(context)] == [m.entry_id for m in plan.masked]
    compact(session, ExtractiveSummarizer(), settings=SETTINGS)
    after = session.build_context()
    hidden = list(hidden_originals(after))
    compacted = [h for h in hidden if h.how == "compacted"]
    assert compacted and all(h.by == str(session.leaf_id) for h in compacted)
    first_kept = session.leaf.raw["firstKeptEntryId"]  # type: ignore[union-attr]
    ids = [str(e.id) for e in session.path_to()]
    assert all(ids.index(str(h.entry.id)) < ids.index(first_kept) for h in compacted)


def test_the_strategy_setting_lives_in_pinbs_part_of_pis_settings(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".pi").mkdir(parents=True)
    settings = project / ".pi" / "settings.json"
    assert load_compaction_settings(project).strategy == "pi"
    settings.write_text(json.dumps({"pinb": {"compaction": {"strategy": "mask-first"}}}))
    assert load_compaction_settings(project).strategy == "mask-first"
    settings.write_text(json.dumps({"pinb": {"compaction": {"strategy": "masks"}}}))
    with pytest.raises(UsageError, match=r"'masks'.*'pi' or 'mask-first'"):
        load_compaction_settings(project)
