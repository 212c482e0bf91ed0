"""``CompactionWidget``: the compaction view's give-back button, driven as the browser drives
it (a recording comm, no kernel); the file it grows is read back by pinb and the real Pi."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import CompactionSettings, ExtractiveSummarizer, Session, compact
from pinb.core.compaction.uncompact import UNCOMPACT_TYPE
from pinb.errors import UsageError
from pinb.testing.work import write_work_session
from pinb.views import CompactionView
from pinb.views.compaction_widget import CompactionWidget
from tests.pi.reference import PiReference
from tests.views.sanitizers import check_html_survives, parse
from tests.views.test_xss import TEXT

HINT = "%pi uncompact"


def click(widget: CompactionWidget) -> None:
    """The button's message from the ES module."""
    widget._handle_msg(
        {
            "content": {"data": {"method": "custom", "content": {"action": "uncompact"}}},
            "buffers": [],
        }
    )


def _compacted(tmp_path: Path) -> tuple[Session, Any]:
    """A session whose offline compaction (no kept-facts section) lost must-keep facts."""
    session = write_work_session(tmp_path / "s", turns=20)
    session.append_message({"role": "user", "content": f"Never paste {TEXT} here.", "timestamp": 1})
    settings = CompactionSettings(keep_recent_tokens=3000, keep_facts=False)
    entry = compact(session, ExtractiveSummarizer(), settings=settings).entry
    assert entry is not None
    return session, entry


def test_the_button_appends_one_give_back_says_what_and_redraws(
    tmp_path: Path, comms: list[Any], pi16: PiReference
) -> None:
    session, entry = _compacted(tmp_path)
    path = session.require_path()
    widget = CompactionView(entry, session).widget()
    assert isinstance(widget, CompactionWidget) and comms
    assert widget.can_give_back and "pinb uncompact" in widget.reason
    assert HINT not in widget.html  # the button stands where the command was named
    assert "given back in" not in widget.html
    lines = path.read_text().splitlines()

    click(widget)
    grown = path.read_text().splitlines()
    assert len(grown) == len(lines) + 1 and grown[: len(lines)] == lines  # one line appended
    added = json.loads(grown[-1])
    assert added["type"] == "custom_message" and added["customType"] == UNCOMPACT_TYPE
    assert added["parentId"] == entry.id and added["details"]["compactionId"] == entry.id
    facts = added["details"]["facts"]
    assert facts
    assert widget.status_tone == "info"
    assert widget.status.startswith(f"gave back {len(facts)} facts compaction {entry.id} lost")
    assert f"in entry {added['id']}: {added['details']['tokens']:,} of " in widget.status
    # The view is drawn again from the file: it names the give-back and marks its facts.
    assert f"given back in {added['id']}: {len(facts)} facts" in widget.html
    assert widget.html.count(f"given back in {added['id']}") >= 1 + min(len(facts), 5)
    tags = parse(widget.html)
    assert "script" not in tags.tags and "img" not in tags.tags
    # The real Pi 1.6.0 builds a context that carries the facts, as the next turn is sent.
    opened = pi16.open(path)
    last = opened["context"]["messages"][-1]
    assert last["role"] == "custom" and last["customType"] == UNCOMPACT_TYPE
    for fact in facts:
        assert fact["text"][:60] in last["content"]

    # Again: nothing is still lost, so nothing is written, and it says so.
    click(widget)
    assert path.read_text().splitlines() == grown
    assert widget.status.startswith(f"nothing to give back: compaction {entry.id} lost no fact")


def test_off_the_active_path_the_button_is_greyed_out_and_says_why(
    tmp_path: Path, comms: list[Any]
) -> None:
    session, entry = _compacted(tmp_path)
    session.branch(entry.parent_id)  # the leaf before the compaction: its loss is off path
    widget = CompactionWidget(entry.id, session)
    assert not widget.can_give_back
    assert "not on the active path" in widget.reason
    lines = session.require_path().read_text().splitlines()
    click(widget)  # a stale page may still send it: refused in one line, nothing written
    assert session.require_path().read_text().splitlines() == lines
    assert widget.status_tone == "error" and "not on the current path" in widget.status


def test_the_saved_output_keeps_the_command_where_no_kernel_answers(
    tmp_path: Path, comms: list[Any]
) -> None:
    session, entry = _compacted(tmp_path)
    widget = CompactionWidget(entry, session)
    data, _ = widget._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    check_html_survives(data["text/html"])
    assert HINT in data["text/html"] and data["text/plain"].startswith("<CompactionView ")
    # Outside a kernel (this test, nbconvert) the view itself stays static.
    static = CompactionView(entry, session)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in static
    assert HINT in static["text/html"]


def test_only_a_recorded_compaction_with_its_session_becomes_the_widget(tmp_path: Path) -> None:
    session, entry = _compacted(tmp_path)
    from pinb.views.compaction.view import report_from_entry

    with pytest.raises(UsageError, match="only a recorded compaction with its session"):
        CompactionView(report_from_entry(session, entry)).widget()
    with pytest.raises(ValueError, match="not a compaction"):
        CompactionWidget(session.entries[1].id, session)
