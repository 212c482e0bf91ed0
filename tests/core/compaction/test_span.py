"""One count of what a compaction summarized and kept: planned, appended and read back alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinb.core import CompactionSettings, ExtractiveSummarizer, Session, compact, plan_compaction
from pinb.core.compaction.span import compaction_span
from pinb.core.format.target import Pi
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


def _every_sample() -> list[Path]:
    from tests.samples import LEGACY, READABLE_CASES, TREES

    return [*READABLE_CASES, *TREES, *LEGACY.values()]


@pytest.mark.parametrize("pi", [Pi.V1_6, Pi.V0_58])
def test_reading_every_compaction_back_is_the_one_count(pi: Pi) -> None:
    # compaction_splits walks each context once; its split is split_at_cut's, entry for
    # entry, with the messages each entry sent, and the chars/4 figures every view shows.
    from pinb.core.compaction.span import compaction_splits, split_at_cut
    from pinb.core.context.accounting import estimated_by_role

    seen = 0
    for path in _every_sample():
        session = Session.open(path, pi=pi)
        splits = list(compaction_splits(session))
        compactions = [e for e in session.entries if e.type == "compaction"]
        assert [s.entry for s in splits] == compactions, path.name
        for split in splits:
            entry = split.entry
            expected = compaction_span(session, entry)
            assert split.span == expected, (path.name, entry.id)
            assert split_at_cut(split.before, entry.raw.get("firstKeptEntryId")) == expected
            sent = {id(p.entry): p.messages for p in split.before.entries}
            for entries, messages in (
                (expected.summarized, split.summarized_messages),
                (expected.kept, split.kept_messages),
            ):
                assert len(entries) == len(messages)
                for found, said in zip(entries, messages, strict=True):
                    wanted = [
                        m
                        for m in sent[id(found)]
                        if not (isinstance(m, dict) and m.get("role") == "system")
                    ]
                    assert list(said) == wanted and said
            parent = entry.raw.get("parentId")
            before = session.build_context(parent) if parent else None
            after = session.build_context(entry.id)
            assert split.estimated_before == (
                sum(estimated_by_role(before).values()) if before is not None else 0
            )
            assert split.estimated_after == sum(estimated_by_role(after).values())
            seen += 1
    assert seen >= 10
    # Only the entries asked for are read back.
    session = Session.open(CASE_FILES["compactions"], pi=pi)
    last = [e for e in session.entries if e.type == "compaction"][-1]
    (only,) = compaction_splits(session, [session.entries[0], last])
    assert only.entry is last
    if pi < Pi.V1_6:  # v0.58.3 loses what the previous compaction kept
        assert only.span.lost
