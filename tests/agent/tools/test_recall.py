"""The ``recall`` tool on its own: what it finds, how it cites, how it is bounded, what it refuses."""

from __future__ import annotations

from pathlib import Path

from pinb.agent.tool import ToolContext
from pinb.agent.tools.recall import RecallTool, recall_offered
from pinb.agent.tools.truncate import DEFAULT_MAX_BYTES
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session, compact
from pinb.core.compaction.masking import plan_masking, write_masks
from pinb.testing.generate import tool_heavy_session


def _ask(session: Session, **arguments: object) -> tuple[str, object, bool]:
    result = RecallTool().execute(dict(arguments), ToolContext(cwd=Path("."), session=session))
    return result.content[0]["text"], result.details, result.is_error


def test_nothing_hidden_is_said_and_recall_is_not_offered(tmp_path: Path) -> None:
    session = Session.open(tool_heavy_session(tmp_path, turns=3, result_chars=300))
    assert not recall_offered(session)
    text, _, error = _ask(session, query="marker-1")
    assert error and text.startswith("Nothing to recall")


def test_an_entry_id_gives_the_whole_original_back_within_pis_limits(tmp_path: Path) -> None:
    # One result far over 50 KB: recall gives back its head, and says what it cut.
    session = Session.open(tool_heavy_session(tmp_path, turns=12, result_chars=120_000))
    plan = write_masks(
        session,
        plan_masking(session, CompactionSettings(keep_recent_tokens=8_000), context_window=None),
    )
    assert recall_offered(session)
    target = plan.masked[0].entry_id
    text, details, error = _ask(session, query=target[:6])  # a prefix, as git takes one
    assert not error and details["entryIds"] == [target] and details["truncated"]  # type: ignore[index]
    assert len(text.encode()) <= DEFAULT_MAX_BYTES + 200
    assert text.splitlines()[0].endswith(
        f"#{target} (read result, masked by edit {plan.masked[0].edit_id})"
    )
    assert "[Showing " in text.splitlines()[-1]


def test_words_find_the_entries_holding_most_of_them(tmp_path: Path) -> None:
    session = Session.open(tool_heavy_session(tmp_path, turns=30, result_chars=2_000))
    compact(session, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=4_000))
    text, details, error = _ask(session, query="marker-4 marker-5", limit=1)
    assert not error and details["matches"] == 2  # type: ignore[index]
    # Two entries hold one word each: the more recent first, the other counted.
    (best,) = details["entryIds"]  # type: ignore[index]
    assert session[best].role == "toolResult" and "marker-5 " in text
    assert "marker-4 " not in text and "(1 more entries match" in text
    text, _, _ = _ask(session, query="MARKER-4")  # any case, a whole word only
    assert "marker-4 " in text and "marker-40" not in text
    text, details, error = _ask(session, query="zzznotthere")
    assert not error and details == {"entryIds": [], "matches": 0} and text.startswith("No match")


def test_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    session = Session.open(tool_heavy_session(tmp_path, turns=3, result_chars=300))
    assert _ask(session, query="  ")[2]
    assert _ask(session, query="x", limit=0)[2]
    result = RecallTool().execute({"query": "x"}, ToolContext(cwd=Path(".")))
    assert result.is_error and "has none" in result.content[0]["text"]
