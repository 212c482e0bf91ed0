"""The compaction ledger, the chars/4 calibration and the what-if replay, against what the
core builds and plans on its own."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.compaction.calibration import parent_estimates
from pinb.analysis.compaction.ledger import (
    LEDGER_COLUMNS,
    CompactionRecord,
    compaction_ledger,
    usage_calibration,
    what_if,
)
from pinb.analysis.retention.report import retention_report, session_retention
from pinb.analysis.sources import open_session
from pinb.core import (
    CompactionSettings,
    ExtractiveSummarizer,
    Session,
    compact,
    estimate_tokens,
    prepare_compaction,
)
from pinb.core.compaction.reports import CompactionReport
from pinb.core.context.accounting import context_usage
from pinb.display import to_text
from pinb.testing.story import EXTRA_TASKS, SYSTEM_TOKENS, story_tasks, write_story_session
from tests.samples import CASE_FILES, LEGACY, READABLE_CASES, TREES

from ..builders import SCRIPT, assistant, tool_result, user
from ..safe_html import visible_text

WINDOW = 5000


def story(folder: Path, seed: int = 5, window: int = WINDOW) -> Session:
    return write_story_session(
        folder, seed=seed, context_window=window, tasks=story_tasks(extras=EXTRA_TASKS)
    )


def chars4(messages: list[Any]) -> int:
    """chars/4 of a context without system messages, message by message."""
    return sum(estimate_tokens(m) for m in messages)


def tool_turns(s: Session, turns: int, *, start: int = 0) -> None:
    """Turns of a prompt, three read calls with 1,200-char results, and a closing reply."""
    for turn in range(start, start + turns):
        s.append_message(user(f"task {turn}: " + "please look " * 30))
        for step in range(3):
            call = f"c{turn}-{step}"
            s.append_message(
                assistant(f"step {step}", calls=((call, "read", {"path": f"f{turn}{step}.py"}),))
            )
            s.append_message(tool_result(call, "read", "x = 1\n" * 200))
        s.append_message(assistant(f"turn {turn} done"))


def record_of(records: list[CompactionRecord], entry_id: str) -> CompactionRecord:
    return next(r for r in records if r.compaction_id == entry_id)


# -- the ledger ------------------------------------------------------------------------------


def test_after_size_is_the_context_pinb_builds_right_after_the_compaction(
    tmp_path: Path,
) -> None:
    session = story(tmp_path)
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert len(compactions) >= 3
    ledger = compaction_ledger(session.path)  # read from the file, as a user would
    assert [r.compaction_id for r in ledger] == [e.id for e in compactions]
    for entry, record in zip(compactions, ledger, strict=True):
        after = session.build_context(entry.id)
        before = session.build_context(entry.parent_id)
        assert record.after_estimate == chars4(after.messages)
        assert record.before_estimate == chars4(before.messages)
        assert record.after_estimate == context_usage(after).estimated_tokens
        # pinb wrote tokensBefore with Pi's measure; recomputed, it is the same figure.
        assert record.tokens_before == entry.raw["tokensBefore"] == record.before_tokens
        assert record.on_path and record.first_kept_found
        assert record.summary_chars == len(entry.raw["summary"])
        assert record.read_files == len(entry.raw["details"]["readFiles"])


def test_the_next_request_is_the_first_reply_after_it_and_includes_the_unseen_prompt(
    tmp_path: Path,
) -> None:
    session = story(tmp_path)
    path = session.path_to()
    ledger = compaction_ledger(session)
    with_reply = [r for r in ledger if r.next_request_id is not None]
    assert with_reply
    for record in with_reply:
        at = next(i for i, e in enumerate(path) if e.id == record.compaction_id)
        reply = next(e for e in path[at + 1 :] if e.role == "assistant")
        assert record.next_request_id == reply.id
        usage = reply.message["usage"] if reply.message else {}
        assert (
            record.next_request_tokens == usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
        )
        # The story's provider counts its system prompt and tools on top of the context.
        assert record.next_request_tokens - record.next_request_estimate == SYSTEM_TOKENS
    # The story ends on a compaction: nothing was sent after the last one.
    assert ledger.records[-1].next_request_id is None


def test_what_was_summarized_is_what_the_planner_handed_the_summarizer(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path)
    tool_turns(s, 3)
    first = compact(s, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=700))
    tool_turns(s, 3, start=3)
    second = compact(
        s, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=1000)
    )
    ledger = compaction_ledger(s)
    assert len(ledger) == 2
    for report in (first, second):
        assert isinstance(report, CompactionReport) and report.entry is not None
        record = record_of(ledger.records, report.entry.id)
        assert record.summarized_ids == tuple(dict.fromkeys(report.summarized_ids))
        assert record.summarized_messages == len(report.summarized_ids)
        assert record.split_turn == report.is_split_turn
        assert record.first_kept_entry_id == report.first_kept_entry_id
        # The core's own before/after figures (chars/4 on both sides) agree.
        assert record.before_estimate == report.estimated_before
        assert record.after_estimate == report.estimated_after
    assert {first.is_split_turn, second.is_split_turn} == {True, False}
    assert first.entry is not None and second.entry is not None
    second_record = record_of(ledger.records, second.entry.id)
    assert second_record.previous_compaction_id == first.entry.id
    messages = [s[i].message or {} for i in second.summarized_ids]
    results = [m for m in messages if m.get("role") == "toolResult"]
    assert second_record.tool_results == len(results)
    assert second_record.tool_result_chars == sum(len(m["content"][0]["text"]) for m in results)


def test_a_huge_thinking_block_that_survives_a_compaction_is_reported(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path)
    s.append_message(user("first " * 100))
    small = s.append_message(assistant("noted", thinking="hmm " * 500, total=900)).id
    s.append_message(user("second"))
    huge = s.append_message(assistant("here", thinking="z" * 90_000, total=25_000)).id
    s.append_message(user("third"))
    s.append_message(assistant("ok", total=25_100))
    report = compact(s, ExtractiveSummarizer())  # Pi's defaults keep 20k tokens
    assert report.first_kept_entry_id == huge
    (record,) = compaction_ledger(s).records
    assert record.kept_thinking.largest == 90_000
    assert record.kept_thinking.largest_id == huge
    assert (record.summarized_thinking.blocks, record.summarized_thinking.largest) == (1, 2000)
    assert record.summarized_thinking.largest_id == small
    assert record.split_turn  # the kept part starts at a reply: its prompt was summarized
    assert "90,000 chars in " + huge in compaction_ledger(s).to_text()


def test_every_branch_is_listed_and_the_active_path_is_marked(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path / "one")
    tool_turns(s, 2)
    fork_point = s.path_to()[4].id
    settings = CompactionSettings(keep_recent_tokens=500)
    abandoned = compact(s, ExtractiveSummarizer(), settings=settings)
    assert abandoned.entry is not None
    s.branch(fork_point)
    tool_turns(s, 1, start=9)
    # Below the abandoned compaction: an early try, then a later one (the one to follow).
    s.branch(abandoned.entry.id)
    s.append_message(user("first try after it"))
    s.append_message(assistant("first", total=700))
    s.branch(abandoned.entry.id)
    s.append_message(user("second try after it"))
    later = s.append_message(assistant("second", total=800)).id
    s.branch(fork_point)
    tool_turns(s, 2, start=20)
    on_path = compact(s, ExtractiveSummarizer(), settings=settings).entry  # no reply after it
    assert on_path is not None
    records = compaction_ledger(s).records
    assert [r.compaction_id for r in records] == [abandoned.entry.id, on_path.id]
    off = records[0]
    assert not off.on_path and off.next_request_id == later and off.next_request_tokens == 790
    assert records[1].on_path and records[1].next_request_id is None


def test_a_folder_of_sessions_with_an_unreadable_file_and_no_compactions(tmp_path: Path) -> None:
    story(tmp_path / "a", seed=1)
    story(tmp_path / "b", seed=2, window=4096)
    plain = write_story_session(tmp_path / "c", seed=3)  # no window: never compacted
    junk = tmp_path / "c" / "notes.jsonl"
    junk.write_text("not a session\n")
    ledger = compaction_ledger(tmp_path)
    assert ledger.sessions == 3
    assert [s.path for s in ledger.skipped] == [str(junk)]
    compacted = [*(tmp_path / "a").glob("*.jsonl"), *(tmp_path / "b").glob("*.jsonl")]
    expected = sum(e.type == "compaction" for p in compacted for e in open_session(p).entries)
    assert len(ledger) == expected and len({r.session_id for r in ledger}) == 2
    frame = ledger.to_frame()
    assert list(frame.columns) == list(LEDGER_COLUMNS) and len(frame) == expected
    assert (frame.saved_estimate == frame.before_estimate - frame.after_estimate).all()
    assert json.loads(json.dumps(ledger.to_dict()))["sessions"] == 3
    assert "unreadable: " + str(junk) in ledger.to_text()
    globbed = compaction_ledger(str(tmp_path / "*" / "*.jsonl"))
    assert [r.compaction_id for r in globbed] == [r.compaction_id for r in ledger]
    # One session without compactions: an empty ledger that says so.
    empty = compaction_ledger(plain.path)
    assert len(empty) == 0 and empty.sessions == 1
    assert "no compaction entries" in empty.to_text()
    assert list(empty.to_frame().columns) == list(LEDGER_COLUMNS)
    assert compaction_ledger(tmp_path / "nowhere").skipped[0].reason == "no session file there"


def test_odd_files_never_crash_the_ledger_or_the_calibration() -> None:
    files = [*TREES, *CASE_FILES.values(), *LEGACY.values()]
    ledger = compaction_ledger(files)
    calibration = usage_calibration(files)
    unreadable = {str(p) for p in CASE_FILES.values()} - {str(p) for p in READABLE_CASES}
    assert {s.path for s in ledger.skipped} <= unreadable
    assert ledger.sessions + len(ledger.skipped) == len(files)
    assert len(calibration.rows) == ledger.sessions
    # The legacy fixture with two compactions is in the ledger, figures and all.
    legacy = [r for r in ledger if r.session_path == str(LEGACY["before-compaction.jsonl"])]
    assert len(legacy) >= 2 and all(r.after_estimate > 0 for r in legacy)
    for view in (ledger, calibration):
        visible_text(view.to_html())
        assert view.to_text()
        view.to_frame()


# -- calibration -------------------------------------------------------------------------------


def test_calibration_finds_the_storys_unseen_system_prompt(tmp_path: Path) -> None:
    session = story(tmp_path)
    (row,) = usage_calibration(session).rows
    replies = [e for e in session.entries if e.role == "assistant"]
    assert row.n == len(replies) and row.replies_without_usage == 0
    # The story reports the context at chars/4 plus its system prompt and tools.
    assert {p.reported - p.estimated for p in row.points} == {SYSTEM_TOKENS}
    assert row.mean_offset == SYSTEM_TOKENS
    points = usage_calibration(session).points_frame()
    assert len(points) == row.n
    assert (points.reported - points.estimated == SYSTEM_TOKENS).all()
    fit = row.fit()
    assert fit is not None
    assert fit[0] == pytest.approx(1.0) and fit[1] == pytest.approx(SYSTEM_TOKENS)
    assert row.median_ratio == pytest.approx(
        statistics.median((p.estimated + SYSTEM_TOKENS) / p.estimated for p in row.points)
    )


def test_calibration_shows_chars4_undercounting_code(tmp_path: Path) -> None:
    """A provider whose tokenizer gives 1.4 tokens per chars/4 token, on a 900-token prompt."""
    s = Session.create("/p", tmp_path)
    for turn in range(8):
        s.append_message(user(f"refactor module {turn}"))
        estimate = context_usage(s.build_context()).estimated_tokens
        reply = assistant("def f(x):\n    return {x: [x] * 2}\n" * (turn + 1), total=1)
        reply["usage"].update(input=round(1.4 * estimate) + 900, cacheRead=0, cacheWrite=0)
        s.append_message(reply)
    s.append_message(user("and fail"))
    s.append_message(assistant("", stop="error", total=50))  # failed replies do not count
    (row,) = usage_calibration(s).rows
    assert row.n == 8 and row.replies_without_usage == 1
    fit = row.fit()
    assert fit is not None
    assert fit[0] == pytest.approx(1.4, abs=0.01) and fit[1] == pytest.approx(900, abs=5)
    assert row.median_ratio is not None and row.median_ratio > 1.4


def test_the_one_walk_estimates_equal_building_each_context(tmp_path: Path) -> None:
    sessions = [story(tmp_path / "s"), *(open_session(p) for p in [*TREES, *LEGACY.values()])]
    for session in sessions:
        entries = [e for e in session.entries if session.get(e.parent_id) is not None]
        walked = parent_estimates(session, entries)
        for entry in entries:
            built = context_usage(session.build_context(entry.parent_id)).estimated_tokens
            assert walked[id(entry)] == built, (session.path, entry.id)


# -- what-if -----------------------------------------------------------------------------------


def test_what_if_is_the_core_planners_cut_for_each_setting(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path)
    tool_turns(s, 4)
    settings = [CompactionSettings(keep_recent_tokens=k) for k in (300, 1000, 2500)]
    result = what_if(s, settings=settings, current=False)
    assert [r.settings for r in result.rows] == settings
    path = s.path_to()
    for row, setting in zip(result.rows, settings, strict=True):
        planned = prepare_compaction(path, setting, pi=s.pi)
        assert planned is not None and row.nothing is None
        planned_messages = planned.messages_to_summarize + planned.turn_prefix_messages
        summarized = [p.entry.id for p in planned_messages]
        assert row.first_kept_entry_id == planned.first_kept_entry_id
        assert row.split_turn == planned.is_split_turn
        assert row.entries_summarized == len(set(summarized))
        assert row.messages_summarized == len(summarized)
        assert row.entries_kept == len(planned.kept_entries)
        assert row.keep_used == setting.keep_recent_tokens and not row.keep_note
        kept = chars4([e.message for e in planned.kept_entries if e.message])
        assert row.kept_tokens == kept
        assert row.summarized_tokens == chars4(s.build_context().messages) - kept
    assert len({r.first_kept_entry_id for r in result.rows}) == 3  # three different cuts


def test_what_if_at_a_compactions_parent_replays_the_recorded_cut(tmp_path: Path) -> None:
    session = story(tmp_path)
    fitted = CompactionSettings().fit_window(WINDOW)
    ledger = compaction_ledger(session)
    for entry in (e for e in session.entries if e.type == "compaction"):
        # The story compacted with the offline summarizer: the replay writes the same summary.
        summarizer = ExtractiveSummarizer()
        (row,) = what_if(
            session, entry.parent_id, [fitted], summarizer=summarizer, current=False
        ).rows
        assert row.first_kept_entry_id == entry.raw["firstKeptEntryId"]
        assert row.summary == entry.raw["summary"]
        record = record_of(ledger.records, entry.id)
        assert row.after_tokens == record.after_estimate
        assert row.replays == entry.id  # the lab names the compaction it writes again
        # The same span and summary: what the replay's summary kept is what the recorded
        # one kept, fact for fact, in the lab, the ledger and the retention report alike.
        recorded = retention_report(session, entry)
        assert row.retention is not None and recorded.verdicts
        assert row.retention.verdicts == recorded.verdicts
        figures = (recorded.score, len(recorded.verdicts), recorded.kept_count)
        assert (
            row.retention.score,
            len(row.retention.verdicts),
            row.retention.kept_count,
        ) == figures
        assert (record.score, record.facts, record.facts_kept) == figures
        assert (row.retention.estimated_before, row.retention.estimated_after) == (
            recorded.estimated_before,
            recorded.estimated_after,
        )


def test_what_if_with_a_summarizer_writes_nothing_and_counts_the_summary(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path)
    tool_turns(s, 4)
    assert s.path is not None
    before = s.path.read_bytes()
    entries = len(s.entries)
    result = what_if(
        s.path,
        keep_recent_tokens=(400, 1500),
        summarizer=ExtractiveSummarizer(),
        context_window=8000,
    )
    assert s.path.read_bytes() == before and len(Session.open(s.path).entries) == entries
    assert result.summarizer == "offline-extractive"
    for row in result.rows:
        assert row.summary and row.summary_tokens == estimate_tokens(
            {"role": "compactionSummary", "summary": row.summary}
        )
        assert row.after_tokens == row.kept_tokens + row.summary_tokens
        assert row.threshold == 8000 - row.settings.reserve_tokens
        assert row.would_trigger == (result.context.tokens > row.threshold)


def test_what_if_grid_defaults_and_nothing_to_compact(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path)
    tool_turns(s, 2)
    grid = what_if(s, keep_recent_tokens=(500, 900), reserve_tokens=(1000, 2000))
    assert [r.label for r in grid.rows] == ["current settings", "", "", "", ""]
    assert [(r.settings.keep_recent_tokens, r.settings.reserve_tokens) for r in grid.rows[1:]] == [
        (500, 1000), (500, 2000), (900, 1000), (900, 2000),
    ]  # fmt: skip
    defaults = what_if(s, context_window=4000)
    # The settings in force (Pi's defaults fitted to the window), then half and twice the
    # keep, each only where it plans a cut of its own: twice keeps what 1,000 keeps here.
    assert [r.settings.keep_recent_tokens for r in defaults.rows] == [1000, 500]
    assert defaults.folded == [f"keep 2,000 / reserve {defaults.rows[0].settings.reserve_tokens:,}"]
    assert len({r.first_kept_entry_id for r in defaults.rows}) == len(defaults.rows)
    assert "Left out: keep 2,000" in defaults.to_text()
    assert defaults.current is defaults.rows[0]
    tiny = Session.in_memory("/p")
    tiny.append_message(user("hi"))
    (nothing,) = what_if(tiny, settings=[CompactionSettings()], current=False).rows
    assert nothing.nothing is not None and nothing.first_kept_entry_id is None
    # A column with nothing to compact has no figures: no zeros that read as a plan.
    figures = ("entries_kept", "entries_summarized", "messages_kept", "kept_tokens", "keep_used")
    assert all(getattr(nothing, name) is None for name in figures)
    compact(s, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=500))
    at_compaction = what_if(s)
    assert all(r.nothing and "Already compacted" in r.nothing for r in at_compaction.rows)
    text = at_compaction.to_text()
    assert "Already compacted" in text and at_compaction.leaf_is_compaction
    assert f"--leaf {at_compaction.parent_id}" in text
    kept_line = next(line for line in text.splitlines() if line.startswith("entries kept"))
    assert not any(ch.isdigit() for ch in kept_line), kept_line


def test_the_views_escape_session_text(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path)
    tool_turns(s, 2)
    s.append_message(user(f"now {SCRIPT}"))
    s.append_message(assistant(f"fine {SCRIPT}"))
    result = what_if(s, keep_recent_tokens=(10,))
    assert SCRIPT in result.rows[0].first_kept_preview
    for view in (result, compaction_ledger(s), usage_calibration(s)):
        bundle = view._repr_mimebundle_()
        html = bundle["text/html"]
        assert "<script" not in html and "<style" not in html
        visible_text(html)
        assert bundle["text/plain"] == view.to_text()
    assert "&lt;script&gt;" in result.to_html()


def test_one_session_is_one_session_in_every_title(tmp_path: Path) -> None:
    session = story(tmp_path)
    ledger, calibration = compaction_ledger(session), usage_calibration(session)
    titles = [
        (ledger, f"Compaction ledger: {len(ledger.records)} compactions in 1 session"),
        (calibration, "Usage calibration: 1 session"),
    ]
    for view, title in titles:
        bundle = view._repr_mimebundle_()
        assert bundle["text/plain"].splitlines()[0] == title
        assert f"<strong>{title}</strong>" in bundle["text/html"]


def test_the_ledger_shows_what_each_summary_kept_from_the_one_report(tmp_path: Path) -> None:
    session = story(tmp_path)
    ledger = compaction_ledger(session)
    reports = {r.compaction_id: r for r in session_retention(session)}
    frame = ledger.to_frame()
    assert list(frame.columns) == list(LEDGER_COLUMNS)
    assert len(frame) == len(reports) >= 2
    for record, (_, row) in zip(ledger.records, frame.iterrows(), strict=True):
        report = reports[record.compaction_id]
        assert (record.facts, record.facts_kept) == (len(report.verdicts), report.kept_count)
        assert (record.score, record.facts_per_1k, record.recall) == (
            report.score,
            report.facts_per_1k,
            report.recall,
        )
        assert row["score"] == pytest.approx(report.score)
        for kind in ("file", "command", "error", "instruction", "decision", "identifier"):
            if kind in report.recall:
                assert row[f"recall_{kind}"] == pytest.approx(report.recall[kind])
            else:
                assert row[f"recall_{kind}"] != row[f"recall_{kind}"]  # NaN: no such fact
    shown = to_text(ledger)
    for record in ledger.records:
        line = next(line for line in shown.splitlines() if record.compaction_id in line)
        words = line.split()
        at = words.index(f"{record.facts_kept}/{record.facts}")
        assert words[at + 1] == f"{record.score:.0%}"
        # Then what pinb added to the summary and gave back after it, with their tokens.
        added = " ".join(words[at + 2 :])
        if record.kept_facts or record.given_back:
            given = f" ({record.given_back_tokens:,} tok)" if record.given_back else ""
            assert added == (
                f"{record.kept_facts} ({record.kept_facts_tokens:,} tok) / "
                f"{record.given_back}{given}"
            )
        else:
            assert added == "—"
    assert "facts kept: the span's facts its summary kept" in shown


def test_the_ledger_counts_what_pinb_kept_and_gave_back(tmp_path: Path) -> None:
    from pinb.core.compaction.lost import kept_facts_of
    from pinb.core.compaction.uncompact import uncompact
    from pinb.testing.work import write_work_session

    session = write_work_session(tmp_path / "s", turns=30)
    settings = CompactionSettings(keep_recent_tokens=3000, keep_facts_tokens=300)
    report = compact(session, ExtractiveSummarizer(), settings=settings)
    given = uncompact(session)
    assert report.kept_facts is not None and given.entry is not None
    (record,) = compaction_ledger(session).records
    assert (record.kept_facts, record.kept_facts_tokens) == kept_facts_of(report.summary)
    assert record.kept_facts == len(report.kept_facts.facts) > 0
    assert 0 < record.kept_facts_tokens <= 300 < record.summary_tokens
    assert (record.given_back, record.given_back_tokens, record.given_back_entries) == (
        len(given.facts),
        given.tokens,
        1,
    )
    row = compaction_ledger(session).to_frame().iloc[0]
    assert row["given_back_tokens"] == given.tokens and row["kept_facts"] == record.kept_facts
