"""Auto-observation: a scripted summarizer proposes notes; failures never reach the conversation."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pinb.core.session import Session
from pinb.memory import MemoryObserver, MemoryStore, observe, parse_notes, project_id

from .helpers import FailingSummarizer, StubSummarizer, assistant, user

CONVERSATION = [
    user("Please always answer in British English."),
    assistant("Understood. I'll also keep the SQLite memory store in WAL mode."),
    {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
     "content": [{"type": "text", "text": "ok"}], "isError": False, "timestamp": 3},
]  # fmt: skip

ANSWER = """Here is what I found:
- [preference] Answer in British English.
- [decision] The memory store runs SQLite in WAL mode.
- Architecture: pinb keeps memory beside the session files.
- none
- [decision] The memory store runs SQLite in WAL mode.
"""


def test_observation_stores_proposals_as_observations(
    store: MemoryStore, project_dirs: tuple[Path, Path]
) -> None:
    cwd = project_dirs[0]
    summarizer = StubSummarizer(ANSWER, ANSWER)
    result = observe(
        CONVERSATION,
        summarizer,
        store=store,
        cwd=cwd,
        session_path="/s/a.jsonl",
        entry_id="e1",
        trigger="pre-compaction",
        max_tokens=300,
    )
    assert result.status == "stored" and result.error is None
    call = summarizer.calls[0]
    assert "[User]: Please always answer in British English." in call["text"]
    assert "[Assistant]: Understood." in call["text"]
    assert call["previous_summary"] is None and call["max_tokens"] == 300
    assert "- [kind] note text" in call["instructions"]
    assert [(r.kind, r.proposed_kind) for r in result.records] == [
        ("observation", "preference"),
        ("observation", "decision"),
        ("observation", "architecture"),
    ]
    first = result.records[0]
    assert first.project == project_id(cwd) and first.tags == ("pre-compaction",)
    assert first.source_session == "/s/a.jsonl" and first.source_entry == "e1"

    again = observe(CONVERSATION, summarizer, store=store, cwd=cwd)
    assert again.status == "nothing" and again.duplicates == 3 and again.records == []

    promoted = store.promote(result.records[1].id)
    assert promoted.kind == "decision"
    store.forget(result.records[0].id, "dropped: not durable")
    assert [r.kind for r in store.records(project_id(cwd))] == ["decision", "observation"]


def test_pi_structured_summaries_are_understood() -> None:
    summary = """## Goal
Build memory.

## Constraints & Preferences
- Use only the standard library for storage

## Progress
### Done
- [x] Wrote the store

## Key Decisions
- **FTS5 over LIKE**: ranking matters
- Decision: keep observations unreviewed until promoted

## Next Steps
1. Write the CLI

## Critical Context
- The memory database lives under the agent dir
- (none)
"""
    assert parse_notes(summary) == [
        parse_notes("- [preference] Use only the standard library for storage")[0],
        parse_notes("- [decision] FTS5 over LIKE: ranking matters")[0],
        parse_notes("- [decision] keep observations unreviewed until promoted")[0],
        parse_notes("- [fact] The memory database lives under the agent dir")[0],
    ]
    assert len(parse_notes("\n".join(f"- note number {i}" for i in range(20)), max_notes=5)) == 5


def test_a_failing_summarizer_never_raises(
    store: MemoryStore, tmp_path: Path, write_session, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_session(str(tmp_path), "fa11-session")
    before = path.read_bytes()
    session = Session.open(path)
    failing = FailingSummarizer()
    observer = MemoryObserver(failing, store=store, cwd=tmp_path)
    with caplog.at_level(logging.WARNING, logger="pinb.memory"):
        result = observer.before_compaction(CONVERSATION, session=session)
    assert result.status == "failed" and "unreachable" in (result.error or "")
    assert failing.calls == 1 and observer.last is result
    assert "auto-observation (pre-compaction) failed" in caplog.text
    assert store.records(project_id(tmp_path)) == []
    # the conversation goes on: the session is untouched and still appendable
    assert path.read_bytes() == before
    session.append_message(user("next prompt", ts=9))
    assert Session.open(path).entries[-1].message == user("next prompt", ts=9)


def test_bad_answers_and_broken_stores_are_reported_not_raised(tmp_path: Path) -> None:
    assert observe(CONVERSATION, lambda *a, **k: 42, store=MemoryStore()).status == "failed"
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not sqlite" * 500)
    result = observe(CONVERSATION, StubSummarizer("- a fact"), store=MemoryStore(broken))
    assert result.status == "failed" and "damaged" in (result.error or "")


def test_observer_hooks_and_opt_out(store: MemoryStore, tmp_path: Path, write_session) -> None:
    session = Session.open(write_session(str(tmp_path), "0b5e-session"))
    summarizer = StubSummarizer("- [fact] The build uses hatch")
    off = MemoryObserver(summarizer, store=store, enabled=False)
    assert off.end_of_run(CONVERSATION, session=session).status == "skipped"
    assert summarizer.calls == []
    on = MemoryObserver(summarizer, store=store)
    result = on.end_of_run(CONVERSATION, session=session)
    assert result.status == "stored"
    record = result.records[0]
    assert record.project == project_id(tmp_path)  # from the session's cwd
    assert record.source_session == str(session.path) and record.source_entry == session.leaf_id
    assert record.tags == ("end-of-run",)
    assert on.end_of_run([], session=session).status == "skipped"


def test_a_callable_summarizer_works_too(store: MemoryStore) -> None:
    def summarize(text: str, *, previous_summary, instructions, max_tokens) -> str:
        return "- [note] callable summarizers are accepted"

    result = observe("[User]: hi", summarize, store=store, project="p")
    assert result.status == "stored" and result.records[0].proposed_kind == "note"
