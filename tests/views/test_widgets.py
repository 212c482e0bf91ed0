"""The tree widget driven as the browser drives it, through a recording comm (no kernel)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.errors import EntryNotFoundError
from pinb.views import SessionExplorer, TreeView, TreeWidget
from pinb.views.tree_widget import WIDGET_MAX_ROWS
from tests.samples import CASE_FILES
from tests.views.builders import Demo, assistant, frontend_update, long_chain_session, user
from tests.views.sanitizers import check_bundle


def action(widget: TreeWidget, **content: Any) -> None:
    """A custom message from the ES module (a button press)."""
    widget._handle_msg(
        {"content": {"data": {"method": "custom", "content": content}}, "buffers": []}
    )


def row_of(widget: TreeWidget, key: str) -> dict[str, Any]:
    return next(row for row in widget.rows if row["key"] == key)


def test_widget_opens_on_the_leaf(demo: Demo, comms: list[Any]) -> None:
    widget = SessionExplorer(demo.session)
    assert isinstance(widget, TreeWidget)
    assert comms, "the widget opened a comm to the (dummy) frontend"
    ids = demo.ids
    assert widget.selected_id == ids["a7"] == widget.leaf
    assert len(widget.rows) == len(demo.session.entries) - 2  # no navigation markers
    leaf = row_of(widget, ids["a7"])
    assert leaf["isLeaf"] and ["◀ leaf", "leaf"] in leaf["tags"] and leaf["lane"] == 0
    assert row_of(widget, ids["u3"])["label"] == "alternative"
    assert row_of(widget, ids["compaction"])["glyph"] == "square"
    assert row_of(widget, ids["branch_summary"])["glyph"] == "diamond"
    assert row_of(widget, ids["u2"])["lane"] == 1  # a branch off the path
    assert all(len(edge) == 6 for edge in widget.edges)
    assert ids["a7"] in widget.details
    assert widget.context_html == ""  # computed when its tab is shown
    frontend_update(widget, tab="context_html")
    assert f"Context at leaf {ids['a7']}" in widget.context_html
    frontend_update(widget, tab="compaction_html")
    assert "compaction" in widget.compaction_html.lower()
    assert widget.title == "Session tree · Demo session"
    assert "3 branches" in widget.summary
    assert ["dot", "#afb8c1"] in [item[:2] for item in widget.legend]  # bookkeeping entries


def test_clicking_a_row_updates_the_panels(demo: Demo, comms: list[Any]) -> None:
    widget = SessionExplorer(demo.session)
    target = demo.ids["a1"]
    sent_before = sum(len(c.messages) for c in comms)
    frontend_update(widget, selected_id=target)
    assert widget.selected_id == target
    assert target in widget.details and "src/config.py" in widget.details
    frontend_update(widget, tab="context_html")
    # "leaf" is said of the session's leaf only: a1 is another entry.
    assert f"Context from {target} (not the leaf" in widget.context_html
    assert "Context at leaf" not in widget.context_html
    frontend_update(widget, tab="compaction_html")
    # The plan %pi compact would carry out here, with the keep it would use.
    assert "A dry run" in widget.compaction_html
    assert "keepRecentTokens used" in widget.compaction_html
    frontend_update(widget, selected_id=demo.ids["a2"])  # the shown tab follows the selection
    assert "A dry run" in widget.compaction_html and demo.ids["a2"] in widget.compaction_html
    assert sum(len(c.messages) for c in comms) > sent_before  # panels synced to the browser
    assert widget.timings["select"] < 2


def test_compaction_preview_at_a_long_leaf(comms: list[Any]) -> None:
    s = long_chain_session(120)
    settings = CompactionSettings(reserve_tokens=500, keep_recent_tokens=100)
    widget = TreeWidget(s, context_window=4000, settings=settings)
    frontend_update(widget, tab="compaction_html")
    html = widget.compaction_html
    assert "A dry run" in html and "Summarized:" in html and "Kept verbatim:" in html
    assert "share of a 4,000-token window (setting)" in html


def test_continue_label_fork_from_the_widget(demo: Demo, comms: list[Any]) -> None:
    s, ids = demo.session, demo.ids
    widget = SessionExplorer(s)
    count = len(s.entries)
    action(widget, action="continue", id=ids["a4"])
    assert s.leaf_id == ids["a4"] and widget.leaf == ids["a4"]
    assert len(s.entries) == count + 1 and s.entries[-1].is_navigation  # persisted for Pi
    assert row_of(widget, ids["a4"])["isLeaf"] and row_of(widget, ids["a4"])["lane"] == 0
    assert f"Leaf moved to {ids['a4']}" in widget.status
    assert Session.open(s.path).leaf_id == ids["a4"]  # type: ignore[arg-type]
    action(widget, action="label", id=ids["u2"], text="first try")
    assert s.label(ids["u2"]) == "first try" and row_of(widget, ids["u2"])["label"] == "first try"
    action(widget, action="label", id=ids["u2"], text="")
    assert s.label(ids["u2"]) is None and "cleared" in widget.status
    # Forking at a user message ends before it, as Pi's /fork and %pi fork do.
    frontend_update(widget, selected_id=ids["a4"])
    assert widget.fork_hint[0] == "Copy the path to here into a new file"
    frontend_update(widget, selected_id=ids["u2"])
    assert widget.fork_hint[0] == "Fork before this message"
    action(widget, action="fork", id=ids["u2"])
    copies = [p for p in s.path.parent.glob("*.jsonl") if p != s.path]  # type: ignore[union-attr]
    assert len(copies) == 1
    copy = Session.open(copies[0])
    assert ids["u2"] not in copy and copy.leaf_id == ids["a2"]
    assert copy.parent_session == str(s.path)
    assert str(copies[0]) in widget.status and widget.editor_text == "Also run the tests "
    assert f"after %pi open {copies[0]}" in widget.editor_note
    action(widget, action="label", id=ids["u2"], text="")  # another action: the text goes
    assert widget.editor_text == "" and widget.editor_note == ""


def test_branch_summary_from_the_widget(demo: Demo, comms: list[Any]) -> None:
    s, ids = demo.session, demo.ids
    # Constructed as notebook 02 does, with no model: the offline summarizer, said so.
    widget = SessionExplorer(s)
    action(widget, action="summarize", id=ids["a4"])
    leaf = s.leaf
    assert leaf is not None and leaf.type == "branch_summary", widget.status
    assert leaf.parent_id == ids["a4"] and widget.status_tone == "info"
    assert row_of(widget, str(leaf.id))["isLeaf"]
    assert widget.status == (
        f"Leaf moved to {leaf.id} with branch summary {leaf.id}, written by pinb's offline "
        "extractive summarizer (no model: it quotes, it does not write)."
    )
    assert "(Extractive" in str(leaf.raw["summary"])  # the summary says how it was made
    # With a summarizer (``%pi explore`` passes the model's), that one writes it.
    widget.summarizer = ExtractiveSummarizer()
    action(widget, action="summarize", id=ids["a2"])
    assert s.leaf is not None and s.leaf.type == "branch_summary" and s.leaf.parent_id == ids["a2"]
    assert widget.status.endswith(f"written by {ExtractiveSummarizer.name}.")


def test_navigate_callable_is_used(demo: Demo, comms: list[Any]) -> None:
    calls: list[tuple[str, bool]] = []

    def navigate(session: Session, target: str, summarize: bool) -> Any:
        calls.append((target, summarize))
        session.branch(target)
        return type("Report", (), {"editor_text": "edit me"})()

    widget = SessionExplorer(demo.session, navigate=navigate)
    action(widget, action="summarize", id=demo.ids["a4"])
    action(widget, action="continue", id=demo.ids["a2"])
    assert calls == [(demo.ids["a4"], True), (demo.ids["a2"], False)]
    assert widget.editor_text == "edit me"  # offered in its box, not buried in the status
    assert widget.status == (
        f"Leaf moved to {demo.ids['a2']}; the text it gave back is below to edit."
    )


def test_archive_and_unarchive_from_the_widget(demo: Demo, comms: list[Any]) -> None:
    s, ids = demo.session, demo.ids
    widget = SessionExplorer(s)
    rows = len(widget.rows)
    action(widget, action="archive", id=ids["a7"])  # the active path cannot be archived away
    assert "active path" in widget.status and not s.archived
    action(widget, action="archive", id=ids["u2"])
    assert ids["u2"] in s.archived
    assert len(widget.rows) == rows - 4
    assert widget.archived_list == [[ids["u2"], 4, ""]]
    assert "1 archived branch hidden (4 entries)" in widget.summary
    frontend_update(widget, show_archived=True)
    assert row_of(widget, ids["u2"])["tags"][-1] == ["archived", "archived"]
    frontend_update(widget, show_archived=False)
    action(widget, action="unarchive", target=ids["u2"])
    assert not s.archived and len(widget.rows) == rows
    assert any(e.raw.get("customType") == "pinb.archive" for e in s.entries)  # still recorded
    action(widget, action="unarchive", target=ids["u2"])
    assert "not archived" in widget.status


def test_the_leaf_the_explorer_names_agrees_with_session_leaf_id(
    demo: Demo, comms: list[Any]
) -> None:
    s, ids = demo.session, demo.ids
    widget = SessionExplorer(s)
    action(widget, action="archive", id=ids["u2"])
    reopened = Session.open(s.require_path())
    marker = reopened.entries[-1]
    assert marker.raw.get("customType") == "pinb.archive" and reopened.leaf_id == marker.id
    # The picture hides the marker: the leaf it names is the conversation's last entry,
    # and it says which entry Session.leaf_id is.
    assert widget.leaf == ids["a7"]
    assert f"leaf {ids['a7']} (the conversation's last entry" in widget.summary
    assert f"Session.leaf_id is {marker.id}" in widget.summary
    assert f"Session.leaf_id is {marker.id}" in TreeView(reopened).summary()


def test_search_by_id_and_text_pins_hits(comms: list[Any]) -> None:
    s = long_chain_session(3000, branch_every=500)
    widget = TreeWidget(s)
    deep = s.entries[1234]
    assert all(row["key"] != deep.id for row in widget.rows)  # inside a chain
    frontend_update(widget, query="question 1234")
    assert widget.matches == [deep.id]
    assert row_of(widget, deep.id)["row"] == "entry"  # its chain opened around it
    assert widget.match_note == "1 match"
    frontend_update(widget, query=str(s.entries[42].id)[:8])
    assert s.entries[42].id in widget.matches
    frontend_update(widget, query="no such text")
    assert widget.matches == [] and widget.match_note == "no match"
    frontend_update(widget, query="")
    assert widget.match_note == ""


def test_chains_open_when_clicked(comms: list[Any]) -> None:
    s = long_chain_session(2000, branch_every=400)
    widget = TreeWidget(s)
    chain = next(row for row in widget.rows if row["row"] == "chain")
    before = len(widget.rows)
    frontend_update(widget, expanded=[chain["key"]], selected_id=chain["key"])
    assert len(widget.rows) > before
    assert row_of(widget, chain["key"])["row"] == "entry"


def test_errors_are_shown_not_raised(demo: Demo, comms: list[Any]) -> None:
    def failing(session: Session, target: str, summarize: bool) -> Any:
        raise EntryNotFoundError("gone")

    widget = SessionExplorer(demo.session, navigate=failing)
    action(widget, action="continue", id=demo.ids["u2"])
    assert "EntryNotFoundError" in widget.status and widget.status_tone == "error"
    widget.selected_id = None
    widget.continue_here()
    assert "Select an entry" in widget.status
    with pytest.raises(KeyError):
        widget.select("nope")
    action(widget, action="no such action")
    widget._handle_msg({"content": {"data": {"method": "custom", "content": 7}}, "buffers": []})


def test_refresh_and_polling_see_another_writer(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    widget = SessionExplorer(s)
    other = Session.open(s.path)  # type: ignore[arg-type]  # e.g. Pi itself
    other.append_message(user("written by someone else"))
    other.append_message(assistant("and answered there"))
    assert not any("someone else" in row["text"] for row in widget.rows)
    assert len(widget.refresh()) == 2
    assert any("someone else" in row["text"] for row in widget.rows)
    action(widget, action="refresh")
    with pytest.raises(RuntimeError, match="event loop"):
        widget.start_polling(0.05)

    async def scenario() -> None:
        widget.start_polling(0.02)
        assert widget.polling
        Session.open(s.path).append_message(user("polled in"))  # type: ignore[arg-type]
        for _ in range(100):
            await asyncio.sleep(0.02)
            if any("polled in" in row["text"] for row in widget.rows):
                break
        widget.close()
        assert not widget.polling

    asyncio.run(scenario())
    assert any("polled in" in row["text"] for row in widget.rows)


def test_ten_thousand_entries_stay_small(comms: list[Any]) -> None:
    s = long_chain_session(10_000, branch_every=1000)
    widget = TreeWidget(s)  # its speed is benchmarks/bench_widget.py's to measure
    assert len(widget.rows) < 200
    assert len(json.dumps(widget.rows)) < 200_000
    deep = s.entries[5555].id
    widget.select(deep)  # an entry inside a collapsed chain opens it (its time: bench_render)
    assert row_of(widget, deep)["row"] == "entry"
    assert len(widget.rows) <= WIDGET_MAX_ROWS


def test_static_fallback_is_the_same_layout(demo: Demo, comms: list[Any]) -> None:
    widget = SessionExplorer(demo.session)
    data, metadata = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert check_bundle((data, metadata), picture=True) == "image/png"  # untrusted
    assert data["text/plain"].startswith("Session tree · Demo session")
    assert f'data-id="{demo.ids["u2"]}"' in data["image/svg+xml"]
    g = widget.to_networkx()
    assert g.number_of_nodes() == len(widget.rows)


def test_a_leaf_on_a_parent_loop_opens(tmp_path: Path, comms: list[Any]) -> None:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "s",
            "timestamp": "2025-01-01T00:00:00Z",
            "cwd": "/",
        },
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01Z",
            "message": {"role": "user", "content": "root", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "x",
            "parentId": "z",
            "timestamp": "2025-01-01T00:00:02Z",
            "message": {"role": "user", "content": "loop x", "timestamp": 2},
        },
        {
            "type": "message",
            "id": "y",
            "parentId": "x",
            "timestamp": "2025-01-01T00:00:03Z",
            "message": {"role": "assistant", "content": [], "timestamp": 3},
        },
        {
            "type": "message",
            "id": "z",
            "parentId": "y",
            "timestamp": "2025-01-01T00:00:04Z",
            "message": {"role": "user", "content": 42, "timestamp": 4},
        },
    ]
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    s = Session.open(path)
    widget = SessionExplorer(s)  # the leaf z lies on the 3-cycle x → y → z → x
    keys = {row["key"] for row in widget.rows}
    assert {"a", "x", "y", "z"} <= keys  # the cycle's entries stay visible
    assert all(["parent loop", "problem"] in row_of(widget, k)["tags"] for k in "xyz")
    assert widget.selected_id == "z" and "z" in widget.details
    tree = TreeView(s)  # the static view keeps them too (it once said "0 entries")
    assert len(tree) == 4 and "3 entries on a parent loop" in tree.summary()
    for name in ("cycles", "duplicate-ids", "odd-fields"):
        other = SessionExplorer(Session.open(CASE_FILES[name]))
        for row in other.rows:
            frontend_update(other, selected_id=row["key"])  # ids that are no string too
        other.close()


def test_a_label_after_continue_here_moves_nothing_and_the_file_agrees(
    demo: Demo, comms: list[Any]
) -> None:
    s, ids = demo.session, demo.ids
    widget = SessionExplorer(s)
    action(widget, action="continue", id=ids["a4"])
    assert widget.graph is not None
    branches = widget.graph.branch_count
    action(widget, action="label", id=ids["u2"], text="worth keeping")
    assert widget.status == f"Label of {ids['u2']} set to “worth keeping”."
    assert widget.graph.branch_count == branches  # the label starts no branch
    # The conversation still continues at a4: the label is bookkeeping after it.
    continues = [r for r in widget.rows if r["isLeaf"]]
    assert [r["key"] for r in continues] == [ids["a4"]]
    assert ["◀ continues here", "leaf"] in continues[0]["tags"]
    assert s.build_context().messages == s.build_context(ids["a4"]).messages
    # The widget and the reopened file agree: same leaf, the same entries counted.
    reopened = Session.open(s.require_path())
    assert reopened.leaf_id == s.leaf_id == widget.leaf
    assert f"({len(reopened.entries)} entries in the file)" in widget.summary
    assert reopened.label(ids["u2"]) == "worth keeping"


def test_the_archive_list_is_the_same_with_archived_branches_shown(
    demo: Demo, comms: list[Any]
) -> None:
    widget = SessionExplorer(demo.session)
    off_path = next(r["key"] for r in widget.rows if r["row"] == "entry" and not r["onPath"])
    action(widget, action="archive", id=off_path)
    hidden = [list(item) for item in widget.archived_list]
    assert len(hidden) == 1 and hidden[0][0] == off_path and hidden[0][1] > 0
    widget.show_archived = True
    assert [list(item) for item in widget.archived_list] == hidden
    widget.show_archived = False
    assert [list(item) for item in widget.archived_list] == hidden


def test_give_back_from_the_widget(demo: Demo, comms: list[Any]) -> None:
    from pinb.core.compaction.uncompact import UNCOMPACT_TYPE

    s, ids = demo.session, demo.ids
    widget = SessionExplorer(s)
    action(widget, action="uncompact", id=ids["u2"])  # not a compaction
    assert widget.status_tone == "error" and "Select a compaction entry" in widget.status
    entries = len(s.entries)
    action(widget, action="uncompact", id=ids["compaction"])
    assert widget.status_tone == "info", widget.status
    given = [e for e in s.entries if e.raw.get("customType") == UNCOMPACT_TYPE]
    assert len(given) == 1 and len(s.entries) == entries + 1
    entry = given[0]
    assert widget.status.startswith("gave back ") and f"in entry {entry.id}" in widget.status
    assert row_of(widget, entry.id)["onPath"]  # the new message, drawn at the leaf
    assert (
        entry.parent_id == ids["a7"] and entry.raw["details"]["compactionId"] == ids["compaction"]
    )
    # The compaction's panel now says what was given back, and what it cost.
    action(widget, action="select", id=ids["compaction"])
    frontend_update(widget, tab="compaction_html")
    assert f"given back in {entry.id}" in widget.compaction_html
    action(widget, action="uncompact", id=ids["compaction"])  # again: nothing is still lost
    assert widget.status.startswith("nothing to give back") and len(s.entries) == entries + 1
    action(widget, action="continue", id=ids["a4"])  # the compaction leaves the path
    action(widget, action="uncompact", id=ids["compaction"])
    assert widget.status_tone == "error" and "is not on the current path" in widget.status
