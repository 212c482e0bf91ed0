"""Mimebundles and content of every view, on the demo session, Pi vectors and Pi's own files."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

import pinb.views
from pinb.core import CompactionSettings, Session, build_session_context, estimate_tokens
from pinb.core.reports import CompactionReport
from pinb.views import (
    CompactionView,
    ContextBreakdown,
    ContextPathView,
    EntryView,
    SessionListView,
    TreeView,
    session_mimebundle,
)
from tests.samples import CASE_FILES, LEGACY, TREES
from tests.views.builders import Demo, demo_session, long_chain_session

PI_FILES = [*CASE_FILES.values(), *TREES, *LEGACY.values()]


def _check_bundle(bundle: dict[str, str]) -> None:
    plain = bundle["text/plain"]
    assert "\n" not in plain and len(plain) < 400
    assert "text/html" in bundle or "image/svg+xml" in bundle
    if "text/html" in bundle:
        assert bundle["text/html"].startswith('<div class="pinb-view')


def test_tree_view(demo: Demo) -> None:
    view = TreeView(demo.session)
    bundle = view._repr_mimebundle_()
    _check_bundle(bundle)
    assert set(bundle) == {"text/plain", "text/html", "image/svg+xml"}
    assert bundle["image/svg+xml"] in bundle["text/html"]
    assert "3 branches" in bundle["text/plain"] and "1 compactions" in bundle["text/plain"]
    assert f'data-id="{demo.ids["a7"]}"' in bundle["image/svg+xml"]
    assert view._repr_mimebundle_(include=["image/svg+xml"]).keys() == {"image/svg+xml"}
    assert len(view) == len(demo.session.entries) - 2  # `leaf` records hidden
    assert len(TreeView(demo.session, show_leaf_entries=True)) == len(demo.session.entries)
    assert view.to_networkx().number_of_nodes() == len(view)
    assert view.figure() is not None
    other = TreeView(demo.session, demo.ids["a4"])
    assert other.graph.leaf_key == demo.ids["a4"]


def test_tree_view_collapses_large_trees() -> None:
    s = long_chain_session(2000, branch_every=400)
    view = TreeView(s)
    assert view.layout.chains >= 5
    assert "chains collapsed" in repr(view)
    assert len(TreeView(s, collapse=False).layout.items) == 2000
    target = s.entries[1000].id
    assert TreeView(s, selected=target).graph.get(target) is not None
    assert 'stroke="#fb8500"' in TreeView(s, selected=target).to_svg()


def test_context_path_view_regions_and_running_totals(demo: Demo) -> None:
    s, ids = demo.session, demo.ids
    view = ContextPathView(
        s, context_window=10_000, settings=CompactionSettings(reserve_tokens=2000)
    )
    context = s.build_context()
    assert view.threshold == 8000 and not view.window_assumed
    assert view.total == sum(estimate_tokens(m) for m in context.messages)
    sent = [r for r in view.context_rows if r.in_context]
    assert [r.key for r in sent] == [str(e.id) for e in context.sources]
    assert sent[0].region == "compaction" and sent[0].key == ids["compaction"]
    assert [r.running for r in sent] == [
        sum(x.tokens for x in sent[: i + 1]) for i in range(len(sent))
    ]
    summarized = {r.key for r in view.summarized_rows}
    assert {ids["u1"], ids["a1"], ids["a5"], ids["bash"]} <= summarized
    kept = [r.key for r in view.context_rows if r.region == "kept"]
    assert kept == [ids["u4"], ids["a6"], ids["r6"]]
    after = [r.key for r in view.context_rows if r.region == "after"]
    assert after == [ids["u5"], ids["a7"]]
    html = view.to_html()
    assert "What the model sees" in html and "summarized by compaction" in html
    assert "threshold 8,000" in html and "(assumed)" not in html
    _check_bundle(view._repr_mimebundle_())
    assert "(assumed)" in ContextPathView(s).to_text()


def test_context_path_view_without_compaction_and_elision(demo: Demo) -> None:
    view = ContextPathView(demo.session, demo.ids["a4"])
    assert view.compaction_key is None and not view.summarized_rows
    assert {r.region for r in view.context_rows} == {"active"}
    metadata = [r for r in view.context_rows if not r.in_context]
    assert {r.kind for r in metadata} == {"model_change", "thinking_level_change"}
    assert all(r.running is None for r in metadata)
    long = ContextPathView(long_chain_session(300), max_rows=50)
    html = long.to_html()
    assert "250 rows not shown" in html
    assert html.count("<tr") < 60
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
    assert "<h4>Goal</h4>" in html  # the summary rendered as Markdown
    assert "☑ read config" in html and "<code>src/new.py</code>" in html
    assert "Try a different approach" in html  # previews of summarized entries
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
    assert "dry run" in view.to_text()
    html = view.to_html()
    assert "saved 900 (90%)" in html and "offline-extractive" in html and "threshold" in html
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
    assert "By tool" in html and "<svg" in html
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
    assert "Demo session" in bundle["text/html"] and "<svg" in bundle["text/html"]
    entry = EntryView(demo.ids["a1"], s)
    html = entry.to_html()
    assert "tool call" in html and "src/config.py" in html and "raw entry JSON" in html
    _check_bundle(entry._repr_mimebundle_())
    assert "label" in EntryView(demo.ids["u3"], s).to_html()
    with pytest.raises(TypeError):
        EntryView(demo.ids["a1"])


@pytest.mark.parametrize("path", PI_FILES, ids=lambda p: p.name)
def test_every_view_renders_pi_files(path: Path) -> None:
    s = Session.open(path, strict=False)
    views: list[object] = [TreeView(s), ContextPathView(s), ContextBreakdown(s)]
    views += [CompactionView(e, s) for e in s.entries if e.type == "compaction"]
    views += [EntryView(e, s) for e in s.entries[:20]]
    for view in views:
        _check_bundle(view._repr_mimebundle_())  # type: ignore[attr-defined]
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
    from pinb.core.listing import list_sessions

    first = demo_session(tmp_path / "s").session
    second = demo_session(tmp_path / "s", text="again").session
    view = SessionListView(list_sessions(tmp_path / "s"))
    assert {row.id for row in view.rows} == {first.id, second.id}
    assert all(row.message_count > 10 for row in view.rows)
    html = view.to_html()
    assert "Demo session again" in html and "Read the config" in html
