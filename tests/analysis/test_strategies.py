"""Compaction strategies replayed at a leaf: tokens after and what each kept."""

from __future__ import annotations

from pathlib import Path

from pinb.analysis.strategies import MASK, compare_strategies, mask_message
from pinb.core.tokens import CompactionSettings
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
