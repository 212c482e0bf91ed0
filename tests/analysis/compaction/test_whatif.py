"""The what-if lab: its columns, and the strategies it scores at their cut.

The "current settings" column is the compaction pinb carries out, by one planner: ``%pi
compact`` and the what-if plan with :func:`pinb.core.compaction.operations.plan_to_fit`; the
agent's own compactions go through :func:`pinb.agent.compact.compact_to_fit`. For the same
session, settings and window, all three must cut at the same entry with the same keep.
Beside the columns, the strategies (:func:`compare_strategies`: Pi's plan under other keeps,
Pi's prompt, observation masking) are replayed at that cut: tokens after and what each kept.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pinb.agent.compact import compact_to_fit
from pinb.analysis.compaction.whatif import compare_strategies, scratch_copy, what_if
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.core.compaction.operations import compact, plan_to_fit
from pinb.errors import NothingToCompactError
from pinb.llm.limits import limit_margin
from pinb.testing import ScriptedLLM
from tests.analysis.retention_story import write_story

from ..builders import assistant, tool_result, user


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


@pytest.mark.parametrize(
    ("turns", "keep", "halves_repeat"),
    # A small session: any keep from 10,000 up is fitted to the same cut. A longer one: half
    # and twice the keep already cut elsewhere, and are the columns shown.
    [(3, 20_000, True), (12, 300, False)],
)
def test_the_default_columns_each_plan_a_different_compaction(
    tmp_path: Path, turns: int, keep: int, halves_repeat: bool
) -> None:
    session = _session(tmp_path, turns=turns)
    current = CompactionSettings(keep_recent_tokens=keep)
    result = what_if(session, current=current, score=False)
    outcomes = [(r.nothing, r.first_kept_entry_id, r.keep_used) for r in result.rows]
    assert len(result.rows) >= 2 and len(set(outcomes)) == len(outcomes), outcomes
    keeps = [r.settings.keep_recent_tokens for r in result.rows]
    assert keeps[0] == keep and all(k != keep for k in keeps[1:])
    halves = what_if(session, current=current, keep_recent_tokens=(keep // 2, keep * 2))
    cuts = [r.first_kept_entry_id for r in halves.rows]
    assert (len(set(cuts)) < len(cuts)) == halves_repeat, cuts
    if not halves_repeat:
        assert keeps == [keep, keep // 2, keep * 2]


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


#: The retention story's settings: a small keep, so its span holds every kind of fact.
STORY_SETTINGS = CompactionSettings(keep_recent_tokens=60)


def test_offline_plans_and_masking_side_by_side(tmp_path: Path) -> None:
    session, ids = write_story(tmp_path)
    before = session.path.read_bytes() if session.path else b""
    found = compare_strategies(
        session, ids["a17"], current=STORY_SETTINGS, keep_recent_tokens=[400]
    )
    names = [r.name for r in found.rows]
    assert names == [
        "pi plan, current settings",
        "pi plan + pinb kept facts, current settings",
        "pi plan + pinb kept facts, keep 400",
        "mask-first (a summary is needed)",
        "observation masking (current cut)",
    ]
    _, offline, wider, _, masked = found.rows
    assert {r.summarizer for r in found.rows[:3]} == {"offline-extractive"}
    assert offline.retention is not None and masked.retention is not None
    assert wider.retention is not None
    # The same cut for the current plan and for masking; a bigger keep summarizes less.
    assert masked.retention.first_kept_entry_id == offline.retention.first_kept_entry_id
    assert wider.retention.summarized_entries < offline.retention.summarized_entries
    # Masking keeps what was said and hides what tools printed: the requests survive word
    # for word; the mypy error is only paraphrased, by the assistant's own words about it.
    kept = {(v.fact.kind, v.verdict) for v in masked.retention.verdicts}
    assert ("instruction", "verbatim") in kept
    assert "Found 1 error" not in masked.retention.summary
    assert "[tool output hidden to save context: bash, " in masked.retention.summary
    (error,) = masked.retention.of_kind("error")
    assert error.verdict == "paraphrased" and error.summary.evidence.startswith("[tool output")
    assert masked.retention.estimated_after < masked.retention.estimated_before
    # On this short story the tool results are small: the offline summary costs more than
    # the masked span it would replace (real sessions' tool results are what masking saves).
    assert offline.retention.summary_tokens > masked.retention.summary_tokens
    frame = found.to_frame()
    assert list(frame["name"]) == names and frame["score"].notna().all()
    assert (session.path.read_bytes() if session.path else b"") == before  # nothing written


def test_pi_prompt_when_a_model_is_given(tmp_path: Path) -> None:
    session, ids = write_story(tmp_path)
    model = ScriptedLLM()
    model.reply(
        "## Goal\nConfigurable free-shipping threshold via SHOP_FREE_SHIPPING; ran `uv run mypy src`."
    )
    model.reply("The turn so far: mypy flagged a str; parsing with int().")  # the split turn
    found = compare_strategies(
        session, ids["a17"], current=STORY_SETTINGS, model=model, extractive=False, masking=False
    )
    (row,) = found.rows
    assert row.method == "summary" and "Pi's prompt" in row.name
    assert row.retention is not None and row.retention.summary.startswith("## Goal")
    verdicts = {v.fact.text: v.verdict for v in row.retention.verdicts}
    assert verdicts["uv run mypy src"] == "verbatim"
    assert len(model.calls) == 2 and "summar" in str(model.calls[0].system_prompt).lower()


def test_the_lab_scores_every_column_on_tokens_and_retention(tmp_path: Path) -> None:
    # what_if plans the columns; each writes an offline summary on a copy and is scored by
    # the one retention report; its comparison is compare_strategies', figure for figure.
    from pinb.display import to_html, to_text

    session, ids = write_story(tmp_path)
    lab = what_if(session, ids["a17"], current=STORY_SETTINGS, keep_recent_tokens=[400])
    assert lab.summarizer == "offline-extractive" and lab.strategies is not None
    compared = compare_strategies(
        session, ids["a17"], current=STORY_SETTINGS, keep_recent_tokens=[400]
    )
    assert [r.to_dict() for r in lab.strategies.rows] == [r.to_dict() for r in compared.rows]
    # Pi's exact text first, then each column's own summary (pinb's kept facts added).
    for column, row in zip(lab.rows, lab.strategies.rows[1:], strict=False):
        assert column.retention is row.retention and column.retention is not None
        assert column.summary == row.retention.summary
        assert column.summary_tokens == row.retention.summary_tokens
        assert column.after_tokens == row.retention.estimated_after
        assert column.to_dict()["score"] == row.retention.score
    masked = lab.strategies.rows[-1]
    assert masked.method == "masking" and masked.retention is not None
    assert masked.retention.first_kept_entry_id == lab.rows[0].first_kept_entry_id
    # Which keeps most per token, and which scores highest, named from the same figures.
    best = lab.strategies.best("facts_per_1k")
    assert best is not None and best.retention is not None
    assert best.retention.facts_per_1k == max(
        r.retention.facts_per_1k or 0 for r in lab.strategies.scored() if r.retention
    )
    text = to_text(lab)
    assert f"Most facts kept per 1,000 summary tokens: {best.name} " in text
    html = to_html(lab)
    assert "Strategies at this cut" in html and "Recall by kind, Pi" in html
    for row in lab.strategies.scored():
        assert row.retention is not None and row.name in text and row.name in html
    # Tokens only: nothing written, nothing scored.
    plain = what_if(session, ids["a17"], current=STORY_SETTINGS, score=False)
    assert plain.strategies is None and all(r.retention is None for r in plain.rows)
    assert "Strategies at this cut" not in to_text(plain)


def test_a_model_that_cannot_summarize_is_a_row_that_says_why(tmp_path: Path) -> None:
    session, ids = write_story(tmp_path)
    model = ScriptedLLM()  # nothing queued: the request fails
    found = compare_strategies(
        session, ids["a17"], current=STORY_SETTINGS, model=model, masking=False
    )
    names = [r.name for r in found.rows]
    assert names[-1].endswith("(Pi's prompt)") and len(model.calls) == 1
    failed = found.rows[-1]
    assert failed.retention is None and failed.nothing and "wrote no summary" in failed.nothing
    assert all(r.retention is not None for r in found.rows[:-1])


# -- Pi's plan, pinb's kept facts and mask-first, against what pinb compact writes ----------

#: The window both the lab and ``pinb compact`` are given.
WINDOW = 32_000


def _story_at(tmp_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    """The retention story's file up to ``a17`` (its lines before the second compaction), so
    the file's leaf is where the lab replays; a real file, written by pinb's appends."""
    session, ids = write_story(tmp_path / "story")
    assert session.path is not None
    lines = session.path.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if ids["a17"].encode() in line.split(b",")[1])
    path = tmp_path / name / session.path.name
    path.parent.mkdir()
    path.write_bytes(b"".join(lines[: at + 1]))
    assert Session.open(path).leaf_id == ids["a17"]
    return path, ids


def _copy(path: Path, folder: Path) -> Path:
    """``path`` copied under the same name (so the kept facts cite the same file name)."""
    folder.mkdir()
    copy = folder / path.name
    copy.write_bytes(path.read_bytes())
    return copy


def test_kept_facts_row_is_pi_s_summary_plus_the_section_pinb_compact_writes(
    tmp_path: Path,
) -> None:
    import json

    from pinb.core.compaction.lost import KEPT_FACTS_HEADING, kept_facts_of, without_kept_facts
    from tests.odd_lines import run_cli

    path, _ = _story_at(tmp_path, "lab")
    before = path.read_bytes()
    lab = what_if(path, context_window=WINDOW)
    assert lab.strategies is not None and path.read_bytes() == before
    pi, ours = lab.strategies.rows[:2]
    assert (pi.name, ours.name) == (
        "pi plan, current settings",
        "pi plan + pinb kept facts, current settings",
    )
    assert pi.retention is not None and ours.retention is not None
    # Pi's summary lost facts on this story; pinb's section gives some back: it keeps more.
    assert pi.retention.kept_count < len(pi.retention.verdicts)
    assert ours.retention.kept_count > pi.retention.kept_count
    assert ours.retention.score is not None and pi.retention.score is not None
    assert ours.retention.score >= pi.retention.score
    # The same cut, the same summary: pinb's row is Pi's text and the section after it.
    assert ours.retention.first_kept_entry_id == pi.retention.first_kept_entry_id
    assert pi.added_tokens is None and KEPT_FACTS_HEADING not in pi.retention.summary
    assert without_kept_facts(ours.retention.summary) == pi.retention.summary

    # What the real `pinb compact` writes on the same file, with and without the section.
    done: dict[str, dict[str, object]] = {}
    for flags in ((), ("--no-keep-facts",)):
        copy = _copy(path, tmp_path / f"cli{len(flags)}")
        code, out, err = run_cli(
            "compact", str(copy), "--offline", "--window", str(WINDOW), "--json", *flags
        )
        assert code == 0, err
        done[flags[0] if flags else "keep"] = json.loads(out)
    written, plain = done["keep"], done["--no-keep-facts"]
    assert written["firstKeptEntryId"] == ours.retention.first_kept_entry_id
    assert written["summary"] == ours.retention.summary
    assert plain["summary"] == pi.retention.summary and plain["keptFacts"] is None
    section_tokens = kept_facts_of(str(written["summary"]))[1]
    assert section_tokens > 0 and ours.added_tokens == section_tokens
    assert ours.to_dict()["added_tokens"] == section_tokens
    # Shown as pinb's, with what it adds, in the table and its notes.
    text = lab.to_text()
    assert f"({section_tokens:,} pinb's)" in text
    assert "Kept facts (added by pinb, not Pi's summarizer)" in text
    assert lab.to_dict()["strategies"]["rows"][1]["added_tokens"] == section_tokens


def _tool_heavy(tmp_path: Path, case: str) -> Path:
    from pinb.testing.generate import tool_heavy_session

    if case == "nothing to mask":  # the story's tool results are shorter than a placeholder
        return _story_at(tmp_path, "src")[0]
    folder = tmp_path / "src"
    folder.mkdir()
    if case == "falls short":
        # Everything recent is kept and the threshold sits under it: masking cannot get there.
        (folder / ".pi").mkdir()
        (folder / ".pi" / "settings.json").write_text(
            '{"compaction": {"keepRecentTokens": 30000},'
            ' "pinb": {"compaction": {"thresholdPercent": 40}}}'
        )
    return tool_heavy_session(folder, turns=40, result_chars=6_000)


@pytest.mark.parametrize("case", ["reaches", "falls short", "nothing to mask"])
def test_mask_first_row_says_what_pinb_compact_mask_does_on_the_file(
    tmp_path: Path, case: str
) -> None:
    import json

    from tests.odd_lines import run_cli

    path = _tool_heavy(tmp_path, case)
    window = 64_000 if case != "nothing to mask" else WINDOW
    lab = what_if(path, context_window=window)
    assert lab.strategies is not None
    (row,) = [r for r in lab.strategies.rows if r.method == "mask-first"]

    copy = _copy(path, tmp_path / "cli")
    before = copy.read_bytes()
    code, out, err = run_cli("compact", str(copy), "--mask", "--window", str(window), "--json")
    appended = [json.loads(line) for line in copy.read_bytes()[len(before) :].splitlines()]
    # pinb compact --mask writes masks only when no summary is needed; else it says why and
    # writes nothing (a summary needs --offline).
    assert row.summary_needed is (code != 0)
    if row.summary_needed:
        assert appended == [] and "nothing was written" in err
        # The same reason: nothing to mask, or masks that fall short of the threshold.
        assert ("Nothing to mask" in row.note) == ("Nothing to mask" in err)
        assert ("not enough" in row.note) == ("masking is not enough" in err)
        assert row.summary_calls == 1 and row.masked == 0
        assert row.name == "mask-first (a summary is needed)"
        # Its figures are the compaction pinb writes instead: the current column's.
        current = lab.current
        assert current is not None and row.retention is current.retention
    else:
        report = json.loads(out)
        assert {e["type"] for e in appended} == {"context_edit"}
        assert row.masked == len(appended) == len(report["masked"])
        assert row.context_after == report["tokensAfter"] <= (row.threshold or 0)
        assert row.summary_calls == 0 and "1 summary call avoided" in row.note
        assert row.note.startswith("would mask") and lab.masking is not None
        assert not lab.masking.written  # the lab's plan stays a plan
        # Scored on a copy with the masks written: every fact of a masked span is still
        # there in the words the conversation said, or in a placeholder.
        assert row.retention is not None and row.retention.verdicts
        figures = row.to_dict()
        assert (figures["masked"], figures["summary_needed"]) == (row.masked, False)
        assert "no summary · 0 summary calls (1 avoided)" in lab.to_text()
