"""Mimebundles and content of every view, on the demo session, Pi vectors and Pi's own files."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import pinb.views
from pinb.core import CompactionSettings, Session, build_session_context, estimate_tokens
from pinb.core.compaction.reports import CompactionReport
from pinb.core.context.accounting import context_usage, estimated_by_role
from pinb.llm.config.registry import default_registry
from pinb.views import (
    CompactionView,
    ContextBreakdown,
    ContextPathView,
    EntryView,
    SessionListView,
    TreeView,
    session_mimebundle,
)
from pinb.views.accounting import resolve_window
from tests.samples import CASE_FILES, LEGACY, TREES
from tests.views.builders import Demo, demo_session, long_chain_session
from tests.views.sanitizers import check_bundle, check_html_survives, displayed, visible_text

PI_FILES = [*CASE_FILES.values(), *TREES, *LEGACY.values()]


def _check_bundle(bundle: Any, *, picture: bool = False, svg: bool = False) -> dict[str, Any]:
    """``svg``: the view is drawn as an SVG picture, else it is HTML (never both)."""
    data: dict[str, Any] = bundle[0] if isinstance(bundle, tuple) else bundle
    plain = data["text/plain"]
    if "text/html" in data:  # a view's one-line summary (pictures carry their text form)
        assert "\n" not in plain and len(plain) < 600
    assert ("image/svg+xml" in data, "text/html" in data) == (svg, not svg)
    if "text/html" in data:
        assert data["text/html"].startswith('<div class="pinb-view')
    check_bundle(bundle, picture=picture)
    return data


def test_tree_view(demo: Demo) -> None:
    view = TreeView(demo.session)
    bundle = displayed(view)  # what a kernel sends: _repr_mimebundle_ and _repr_png_
    data = _check_bundle(bundle, picture=True, svg=True)
    assert set(data) == {"text/plain", "image/svg+xml", "image/png"}
    assert bundle[1]["image/png"]["width"] > 500  # shown at its size, sharp at 2x
    assert set(view._repr_mimebundle_()) == {"text/plain", "image/svg+xml"}
    assert data["text/plain"].startswith("Session tree · Demo session")
    assert "3 branches" in view.summary() and "1 compaction" in view.summary()
    assert "1 compactions" not in view.summary()
    assert f'data-id="{demo.ids["a7"]}"' in data["image/svg+xml"]
    assert view._repr_mimebundle_(include=["image/svg+xml"]).keys() == {"image/svg+xml"}
    assert len(view) == len(demo.session.entries) - 2  # navigation markers hidden
    assert len(TreeView(demo.session, show_leaf_entries=True)) == len(demo.session.entries)
    g = view.to_networkx()
    assert g.number_of_nodes() == len(view)
    assert g.nodes[demo.ids["a7"]]["pos"] == (0.0, -float(g.nodes[demo.ids["a7"]]["row"]))
    assert view.figure() is not None
    other = TreeView(demo.session, demo.ids["a4"])
    assert other.graph.leaf_key == demo.ids["a4"]
    html = view.to_html()
    check_html_survives(html)
    assert "Also run the tests" in html and "<svg" not in html
    assert "image/png" not in displayed(TreeView(demo.session, png=False))[0]


def test_tree_view_of_an_empty_session() -> None:
    view = TreeView(Session.in_memory("/x"))
    assert "empty session: no entries yet" in view.to_text()
    assert "leaf None" not in view.to_text()
    _check_bundle(displayed(view), picture=True, svg=True)
    assert "Nothing to draw yet" in view.to_html()


def test_tree_view_collapses_large_trees() -> None:
    s = long_chain_session(2000, branch_every=400)
    view = TreeView(s, png=False)
    assert view.layout.chains
    assert "chains collapsed" in repr(view)
    assert len(TreeView(s, collapse=False, max_rows=None, png=False).layout.rows) == 2000
    target = s.entries[1000].id
    selected = TreeView(s, selected=target, png=False)
    assert selected.layout.row_for(target) is not None
    assert selected.layout.rows[selected.layout.row_for(target)].kind == "entry"  # type: ignore[index]
    assert 'fill="#ffe8cc"' in selected.to_svg()


def test_context_path_view_regions_and_running_totals(demo: Demo) -> None:
    s, ids = demo.session, demo.ids
    view = ContextPathView(
        s, context_window=10_000, settings=CompactionSettings(reserve_tokens=2000)
    )
    context = s.build_context()
    usage = context_usage(context, window=10_000, settings=CompactionSettings(reserve_tokens=2000))
    assert view.threshold == 8000 and view.window_source == "setting"
    assert view.usage == usage  # the core's account, nothing of its own
    assert view.total == usage.estimated_tokens == sum(usage.by_role.values())
    sent = [r for r in view.context_rows if r.in_context]
    assert [r.key for r in sent] == list(dict.fromkeys(str(e.id) for e in context.sources))
    assert sent[0].region == "compaction" and sent[0].key == ids["compaction"]
    assert [r.running for r in sent] == [
        sum(x.tokens for x in sent[: i + 1]) for i in range(len(sent))
    ]
    summarized = {r.key for r in view.summarized_rows}
    assert {ids["u1"], ids["a1"], ids["a5"], ids["bash"]} <= summarized
    kept = [r.key for r in view.context_rows if r.region == "kept" and r.in_context]
    assert kept == [ids["u4"], ids["a6"], ids["r6"]]
    after = [r.key for r in view.context_rows if r.region == "after"]
    assert after == [ids["u5"], ids["a7"]]
    html = view.to_html()
    assert "What the model sees" in html and "summarized by compaction" in html
    assert "threshold 8,000" in html and "of a 10,000-token window" in html
    assert f"{usage.share:.1%}" in html and "(setting)" in html
    assert usage.measure_label in html
    _check_bundle(view._repr_mimebundle_())
    assert f"{usage.tokens:,} tokens ({usage.measure_label})" in view.to_text()
    assert "threshold 8,000" in view.to_text() and f"{usage.share:.1%}" in view.to_text()


def test_every_view_uses_one_window_for_one_model(demo: Demo) -> None:
    s = demo.session
    context = s.build_context()
    window, source = resolve_window(context)
    # claude-test is not in the registry: the provider's default window, labelled as such.
    info = default_registry().info("anthropic/claude-test")
    assert source == "provider default" and not info.known
    assert window == info.context_window
    path = ContextPathView(s)
    compaction = CompactionView(demo.ids["compaction"], s)
    explorer_window = resolve_window(s.build_context(demo.ids["a4"]))
    assert path.context_window == compaction.context_window == explorer_window[0] == window
    assert f"{window:,}-token window" in path.to_html()
    # No model: the window is unknown, never assumed.
    bare = Session.in_memory("/x")
    bare.append_message({"role": "user", "content": "hi", "timestamp": 1})
    unknown = ContextPathView(bare)
    assert unknown.context_window is None and "window unknown" in unknown.to_text()
    assert "window unknown" in unknown.to_html()


def test_context_path_view_shows_context_edits() -> None:
    s = Session.open(CASE_FILES["context-edits"])
    view = ContextPathView(s)
    rows = {r.key: r for r in view.context_rows}
    tool = rows["e0000003"]
    assert tool.edit == "replaced" and tool.edit_key == "e0000006"
    assert tool.replacement == "[redacted tool output]"
    assert tool.status == "content replaced by context edit e0000006"
    assert rows["e0000006"].status == "not sent: edits another entry"
    html = view.to_html()
    assert "was: read: secret token = 1234" in html
    assert "model sees: [redacted tool output]" in html
    assert "4 context edits in effect" in html
    latest = ContextPathView(Session.open(CASE_FILES["edits-latest-wins"]))
    omitted = {r.key: r for r in latest.context_rows}["e0000004"]
    assert omitted.edit == "omitted" and not omitted.in_context
    assert omitted.status == "omitted by context edit e0000011"
    assert "omitted from the context" in latest.to_html()


def test_context_path_view_system_messages_and_usage_entries() -> None:
    s = Session.open(CASE_FILES["system-messages"])
    view = ContextPathView(s)
    assert view.total == view.usage.estimated_tokens  # the system prompt counted once
    compaction = next(r for r in view.context_rows if r.region == "compaction")
    assert compaction.status.startswith("sent: system checkpoint + summary")
    assert compaction.messages == 2
    assert any("system checkpoint" in r.status for r in view.summarized_rows)
    usage = ContextPathView(Session.open(CASE_FILES["usage-entries"]))
    statuses = {r.kind: r.status for r in usage.context_rows}
    assert statuses["usage"] in ("not sent: usage bookkeeping", "omitted by context edit e0000007")
    assert "usage bookkeeping" in usage.to_html()


def test_context_path_view_without_compaction_and_elision(demo: Demo) -> None:
    view = ContextPathView(demo.session, demo.ids["a4"])
    assert view.compaction_key is None and not view.summarized_rows
    assert {r.region for r in view.context_rows} == {"active"}
    metadata = [r for r in view.context_rows if not r.in_context]
    assert {r.kind for r in metadata} == {"model_change", "thinking_level_change"}
    assert all(r.running is None for r in metadata)
    long = ContextPathView(long_chain_session(300), max_rows=50)
    html = long.to_html()
    assert "250 more rows" in html
    assert html.count("<tr") < 70
    assert ContextPathView(demo.session, None).message_count == 0


def test_compaction_view_from_entry(demo: Demo) -> None:
    s, ids = demo.session, demo.ids
    view = CompactionView(ids["compaction"], s, context_window=200_000)
    report = view.report
    assert report.entry is not None and report.entry.id == ids["compaction"]
    assert report.tokens_before == 3100
    assert report.first_kept_entry_id == ids["u4"]
    assert report.kept_ids == [ids["u4"], ids["a6"], ids["r6"]]
    assert ids["u1"] in report.summarized_ids and ids["a5"] in report.summarized_ids
    assert ids["u4"] not in report.summarized_ids
    assert report.after_ids == [ids["u5"], ids["a7"]]
    before = build_session_context(s.index, s[ids["compaction"]].parent_id).messages
    assert sum(report.before_by_role.values()) == sum(estimate_tokens(m) for m in before)
    assert report.after_by_role["compactionSummary"] > 0
    assert report.read_files == ["src/config.py"] and report.modified_files == ["src/new.py"]
    html = view.to_html()
    assert "<b>Goal</b>" in html  # the summary rendered as Markdown
    assert "☑ read config" in html and "<code>src/new.py</code>" in html
    assert "Try a different approach" in html  # previews of summarized entries
    # One measure on both sides; Pi's recorded figure shown as recorded.
    assert f"<b>{report.estimated_before:,}</b> tokens before" in html
    assert f"<b>{report.estimated_after:,}</b> after" in html
    assert "Pi recorded tokensBefore = 3,100" in html
    assert "share of a 200,000-token window (setting)" in html
    _check_bundle(view._repr_mimebundle_())
    assert view.figure() is not None
    assert CompactionView(s[ids["compaction"]], s).report.kept_ids == report.kept_ids


def test_compaction_view_from_report_and_errors(demo: Demo) -> None:
    report = CompactionReport(
        entry=None,
        summary="# Sum",
        first_kept_entry_id="k",
        tokens_before=1000,
        before_by_role={"user": 600, "assistant": 400},
        after_by_role={"compactionSummary": 100},
        summarized_ids=["a", "b"],
        kept_ids=["k"],
        read_files=["r.py"],
        summarizer="offline-extractive",
        reason="threshold",
    )
    view = CompactionView(report)
    assert "dry run" in view.to_text() and "saved 900 (90%)" in view.to_text()
    html = view.to_html()
    assert "saved <b>900 (90%)</b>" in html and "offline-extractive" in html
    assert "threshold" in html and "window unknown" in html
    bundle = report._repr_mimebundle_()  # the core's report displays through this view
    assert bundle["text/html"] == html
    with pytest.raises(TypeError):
        CompactionView(demo.ids["compaction"])
    with pytest.raises(ValueError, match="not a compaction"):
        CompactionView(demo.ids["u1"], demo.session)


def test_context_breakdown(demo: Demo) -> None:
    s = demo.session
    view = ContextBreakdown(s, demo.ids["a4"])
    roles = {r.role: r for r in view.by_role}
    assert roles["user"].messages == 2 and roles["toolResult"].messages == 2
    assert view.total == sum(r.tokens for r in view.by_role)
    tools = {t.tool: t for t in view.by_tool}
    assert tools["bash"].calls == 1 and tools["bash"].results == 1
    assert tools["read"].call_tokens > 0 and tools["read"].result_tokens > 0
    assert view.by_role == ContextBreakdown(s.build_context(demo.ids["a4"])).by_role
    assert view.by_tool == ContextBreakdown(s.build_context(demo.ids["a4"]).messages).by_tool
    html = view.to_html()
    assert "By tool" in html and "<svg" not in html and "█" in html
    assert view.total == sum(estimated_by_role(s.build_context(demo.ids["a4"])).values())
    _check_bundle(view._repr_mimebundle_())
    assert view.figure() is not None and view.figure(by="tool") is not None
    empty = ContextBreakdown([])
    assert empty.total == 0 and "no tool calls" in empty.to_html()


def test_session_list_view_sorts_any_row_shape() -> None:
    rows = [
        {
            "path": "/s/a.jsonl",
            "id": "a",
            "cwd": "/p",
            "name": "Alpha",
            "created": "2025-01-01T00:00:00.000Z",
            "modified": dt.datetime(2025, 1, 3, tzinfo=dt.UTC),
            "messageCount": 3,
            "firstMessage": "hi",
        },
        SimpleNamespace(
            path="/s/b.jsonl",
            id="b",
            cwd="/p",
            name=None,
            parent_session_path="/s/a.jsonl",
            created=None,
            modified=dt.datetime(2025, 1, 5),
            message_count=10,
            first_message="second",
        ),
        {
            "path": "/s/c.jsonl",
            "id": "c",
            "cwd": "/q",
            "name": "charlie",
            "modified": None,
            "message_count": 1,
            "first_message": "third",
        },
    ]
    view = SessionListView(rows)
    assert [r.id for r in view.rows] == ["b", "a", "c"]  # newest first, unknown last
    assert view[1].message_count == 3 and view[1].first_message == "hi"
    assert view[0].parent_session_path == "/s/a.jsonl"
    assert [r.id for r in view.sorted("name", descending=False)] == ["a", "c", "b"]
    assert [r.id for r in view.sorted("message_count")] == ["b", "a", "c"]
    html = view.to_html()
    assert "modified ▼" in html and "2025-01-05 00:00" in html
    _check_bundle(view._repr_mimebundle_())
    with pytest.raises(ValueError, match="cannot sort"):
        SessionListView(rows, sort_by="size")
    assert len(SessionListView([])) == 0


def test_session_and_entry_display(demo: Demo) -> None:
    s = demo.session
    bundle = s._repr_mimebundle_()
    assert bundle == session_mimebundle(s)
    assert bundle["text/plain"] == repr(s)
    assert "Demo session" in bundle["text/html"] and "<svg" not in bundle["text/html"]
    assert "Also run the tests" in bundle["text/html"]  # the tree, as a safe table
    check_html_survives(bundle["text/html"])
    entry = EntryView(demo.ids["a1"], s)
    html = entry.to_html()
    assert "tool call" in html and "src/config.py" in html and "Raw entry JSON" in html
    _check_bundle(entry._repr_mimebundle_())
    assert "label" in EntryView(demo.ids["u3"], s).to_html()
    with pytest.raises(TypeError):
        EntryView(demo.ids["a1"])


@pytest.mark.parametrize("path", PI_FILES, ids=lambda p: p.name)
def test_every_view_renders_pi_files(path: Path) -> None:
    s = Session.open(path, strict=False)
    views: list[object] = [ContextPathView(s), ContextBreakdown(s)]
    views += [CompactionView(e, s) for e in s.entries if e.type == "compaction"]
    views += [EntryView(e, s) for e in s.entries[:20]]
    for view in views:
        _check_bundle(view._repr_mimebundle_())  # type: ignore[attr-defined]
    _check_bundle(TreeView(s, png=False)._repr_mimebundle_(), svg=True)
    _check_bundle(session_mimebundle(s))


def test_lazy_exports() -> None:
    with pytest.raises(AttributeError):
        pinb.views.NoSuchView  # noqa: B018
    if importlib.util.find_spec("pinb.views.memory") is None:
        with pytest.raises(ModuleNotFoundError):
            pinb.views.MemoryView  # noqa: B018
    else:
        assert pinb.views.MemoryView.__name__ == "MemoryView"
    assert pinb.views.SessionExplorer.__name__ == "SessionExplorer"
    assert sorted(pinb.views.__all__) == pinb.views.__all__


def test_session_list_view_of_a_real_listing(tmp_path: Path) -> None:
    from pinb.core.file.listing import list_sessions

    first = demo_session(tmp_path / "s").session
    second = demo_session(tmp_path / "s", text="again").session
    view = SessionListView(list_sessions(tmp_path / "s"))
    assert {row.id for row in view.rows} == {first.id, second.id}
    assert all(row.message_count > 10 for row in view.rows)
    html = view.to_html()
    assert "Demo session again" in html and "Read the config" in html


def test_views_count_what_a_compaction_summarized_alike(tmp_path: Path) -> None:
    # An agent run (system messages on the path) that compacts on its own: the context
    # view, the compaction view of the report and that of the entry count the same set.
    from pinb.agent import Agent, AgentConfig
    from pinb.agent.events import CompactionDone
    from pinb.agent.tools import default_tools
    from pinb.core import ExtractiveSummarizer
    from pinb.testing.story import prompts, story_model, story_tasks, write_project

    project = write_project(tmp_path / "project")
    session = Session.create(project, tmp_path / "sessions")
    tasks = story_tasks(wrong_turn=False)[:5]
    settings = CompactionSettings(reserve_tokens=1_500, keep_recent_tokens=600)
    agent = Agent(
        session,
        story_model(tasks, context_window=6_000),
        default_tools(project),
        config=AgentConfig(compaction=settings),
        summarizer=ExtractiveSummarizer(),
    )
    reports = [
        event.report
        for prompt in prompts(tasks)
        for event in agent.run(prompt)
        if isinstance(event, CompactionDone)
    ]
    assert reports and reports[0].entry is not None
    report = reports[0]
    assert any(e.role == "system" for e in session.path_to(report.entry.parent_id))
    from_entry = CompactionView(report.entry.id, session)
    assert from_entry.report.summarized_ids == report.summarized_ids
    text = ContextPathView(session, report.entry.id).to_text()
    assert f"summarized {len(report.summarized_ids)} entries" in text
    assert f"{len(report.summarized_ids)} entries summarized" in repr(
        CompactionView(report, session)
    )


def test_a_note_every_row_shares_is_said_once(tmp_path: Path) -> None:
    from itertools import groupby

    from pinb.testing.story import EXTRA_TASKS, story_tasks, write_story_session

    # A table whose rows all share one note says it once, above the table.
    chain = ContextPathView(long_chain_session(60), max_rows=None)
    assert {r.status for r in chain.context_rows} == {"sent"}
    chain_text = visible_text(chain.to_html())
    assert "Status of all 60 rows: sent" in chain_text
    assert "id │ kind │ content │" in chain_text  # and no status column under it
    # A section mixing notes (what this compaction summarized, what an earlier one covers,
    # bookkeeping) says each note once per run of rows that share it.
    story = write_story_session(
        tmp_path, tasks=story_tasks(extras=EXTRA_TASKS), context_window=5_000
    )
    view = ContextPathView(story)
    statuses = [r.status for r in view.summarized_rows]
    covered = "not sent: an earlier compaction's summary covers it"
    status = "summarized: sent only as part of the compaction's summary"
    assert statuses.count(covered) > 3 and status in statuses
    runs = [key for key, _ in groupby(statuses)]
    everything = visible_text(ContextPathView(story, max_rows=None).to_html())
    for note in (covered, status):
        assert everything.count(note) == runs.count(note)
    assert runs.count(covered) < statuses.count(covered)  # runs of them were said once
    html = view.to_html()
    # Rows whose status repeats the row above say "as above" instead.
    sent = [r for r in view.context_rows if r.status == "sent"]
    assert len(sent) > 3 and html.count(">sent<") < len(sent) and ">as above<" in html
    # Long sections page: the first rows, those nearest the leaf, and how many more.
    everything = ContextPathView(story, max_rows=None).to_html()
    assert "more rows" not in everything
    short = ContextPathView(story, max_rows=6).to_html()
    hidden = len(view.context_rows) - 6
    assert f"… {hidden:,} more rows" in short
    assert view.context_rows[-1].key in short and view.context_rows[0].key in short
