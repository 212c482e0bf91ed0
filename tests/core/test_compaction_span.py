"""One count of what a compaction summarized and kept: planned, appended and read back alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinb.core import CompactionSettings, ExtractiveSummarizer, Session, compact, plan_compaction
from pinb.core.compaction_span import compaction_span
from pinb.core.target import Pi
from pinb.testing.story import write_story_session
from tests.samples import CASE_FILES


@pytest.mark.parametrize(("pi", "window"), [(Pi.V1_6, 5_000), (Pi.V1_6, None), (Pi.V0_58, None)])
def test_plan_compact_and_the_entry_count_the_same_entries(
    tmp_path: Path, pi: Pi, window: int | None
) -> None:
    # With a window the story has compacted already: the new one starts at the old kept part.
    story = write_story_session(tmp_path / "a", context_window=window, seed=3)
    session = Session.open(story.require_path(), pi=pi)
    settings = CompactionSettings(reserve_tokens=1_200, keep_recent_tokens=700)
    plan = plan_compaction(session, settings)
    report = compact(session, ExtractiveSummarizer(), settings=settings)
    assert report.entry is not None
    span = compaction_span(Session.open(story.require_path(), pi=pi), report.entry.id)
    assert plan.summarized_ids == report.summarized_ids == span.summarized_ids
    assert plan.kept_ids == report.kept_ids == span.kept_ids
    assert span.summarized and span.kept
    # Nothing summarized is a system message or bookkeeping, nothing is counted twice.
    assert all(e.type != "compaction" and e.role != "system" for e in span.summarized)
    assert len(set(span.summarized_ids)) == len(span.summarized_ids)


def test_every_compaction_of_the_story_and_of_odd_files() -> None:
    for name in ("compactions", "kept-span-compaction", "system-messages", "retain-none"):
        session = Session.open(CASE_FILES[name])
        for entry in session.entries:
            if entry.type != "compaction":
                continue
            span = compaction_span(session, entry)
            assert not {id(e) for e in span.summarized} & {id(e) for e in span.kept}
            assert all(e.role != "system" for e in (*span.summarized, *span.kept))
    # Pi v0.58.3 summarizes from the previous compaction on: what that one kept is lost.
    old = Session.open(CASE_FILES["compactions"], pi=Pi.V0_58)
    second = [e for e in old.entries if e.type == "compaction"][1]
    span = compaction_span(old, second)
    assert span.lost and not {id(e) for e in span.lost} & {id(e) for e in span.summarized}
    assert compaction_span(Session.open(CASE_FILES["compactions"]), second.id).lost == ()
    retain_none = Session.open(CASE_FILES["retain-none"])
    last = [e for e in retain_none.entries if e.type == "compaction"][-1]
    assert compaction_span(retain_none, last).kept == ()
    with pytest.raises(ValueError, match="not a compaction"):
        compaction_span(retain_none, retain_none.entries[0])
