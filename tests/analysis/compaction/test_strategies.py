"""Compaction strategies replayed at a leaf: tokens after and what each kept."""

from __future__ import annotations

from pathlib import Path

from pinb.analysis.compaction.strategies import MASK, compare_strategies, mask_message
from pinb.core.context.tokens import CompactionSettings
from pinb.testing import ScriptedLLM
from tests.analysis.retention_story import write_story

SETTINGS = CompactionSettings(keep_recent_tokens=60)


def test_offline_plans_and_masking_side_by_side(tmp_path: Path) -> None:
    session, ids = write_story(tmp_path)
    before = session.path.read_bytes() if session.path else b""
    found = compare_strategies(session, ids["a17"], current=SETTINGS, keep_recent_tokens=[400])
    names = [r.name for r in found.rows]
    assert names == [
        "pi plan, current settings + offline-extractive",
        "pi plan, keep 400 + offline-extractive",
        "observation masking (current cut)",
    ]
    offline, wider, masked = found.rows
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
        session, ids["a17"], current=SETTINGS, model=model, extractive=False, masking=False
    )
    (row,) = found.rows
    assert row.method == "summary" and "Pi's prompt" in row.name
    assert row.retention is not None and row.retention.summary.startswith("## Goal")
    verdicts = {v.fact.text: v.verdict for v in row.retention.verdicts}
    assert verdicts["uv run mypy src"] == "verbatim"
    assert len(model.calls) == 2 and "summar" in str(model.calls[0].system_prompt).lower()


def test_mask_message() -> None:
    result = {"role": "toolResult", "toolName": "read", "toolCallId": "c",
              "content": [{"type": "text", "text": "x" * 1234}], "isError": False}  # fmt: skip
    masked = mask_message(result)
    assert masked["content"] == [{"type": "text", "text": MASK.format(tool="read", chars=1234)}]
    assert masked["toolCallId"] == "c" and result["content"][0]["text"] == "x" * 1234
    user = {"role": "user", "content": "hi"}
    assert mask_message(user) is user


def test_the_lab_scores_every_column_on_tokens_and_retention(tmp_path: Path) -> None:
    # what_if plans the columns; each writes an offline summary on a copy and is scored by
    # the one retention report; its comparison is compare_strategies', figure for figure.
    from pinb.analysis.compaction.whatif import what_if
    from pinb.display import to_html, to_text

    session, ids = write_story(tmp_path)
    lab = what_if(session, ids["a17"], current=SETTINGS, keep_recent_tokens=[400])
    assert lab.summarizer == "offline-extractive" and lab.strategies is not None
    compared = compare_strategies(session, ids["a17"], current=SETTINGS, keep_recent_tokens=[400])
    assert [r.to_dict() for r in lab.strategies.rows] == [r.to_dict() for r in compared.rows]
    for column, row in zip(lab.rows, lab.strategies.rows, strict=False):
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
    assert "Strategies at this cut" in html and "recall: decisions" in html
    for row in lab.strategies.scored():
        assert row.retention is not None and row.name in text and row.name in html
    # Tokens only: nothing written, nothing scored.
    plain = what_if(session, ids["a17"], current=SETTINGS, score=False)
    assert plain.strategies is None and all(r.retention is None for r in plain.rows)
    assert "Strategies at this cut" not in to_text(plain)


def test_a_model_that_cannot_summarize_is_a_row_that_says_why(tmp_path: Path) -> None:
    session, ids = write_story(tmp_path)
    model = ScriptedLLM()  # nothing queued: the request fails
    found = compare_strategies(session, ids["a17"], current=SETTINGS, model=model, masking=False)
    names = [r.name for r in found.rows]
    assert names[-1].endswith("(Pi's prompt)") and len(model.calls) == 1
    failed = found.rows[-1]
    assert failed.retention is None and failed.nothing and "wrote no summary" in failed.nothing
    assert all(r.retention is not None for r in found.rows[:-1])
