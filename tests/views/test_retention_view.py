"""``RetentionView``: lost facts first, linked to their entries; untrusted text stays text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pinb.analysis.retention.report import session_retention
from pinb.core import Session
from pinb.display import to_html, to_text
from pinb.views import RetentionView
from tests.analysis.builders import assistant, tool_result, user
from tests.analysis.retention_story import write_story
from tests.views.sanitizers import check_html_survives, parse
from tests.views.test_xss import PAYLOADS, TEXT


def _hostile(folder: Path) -> Session:
    s = Session.create("/w", folder)
    first = s.append_message(user(f"You must never run {TEXT} please")).id
    s.append_message(assistant(calls=(("c1", "bash", {"command": f"echo '{PAYLOADS[0]}'"}),
                                      ("c2", "read", {"path": f"src/{PAYLOADS[1]}.py"}))))  # fmt: skip
    s.append_message(tool_result("c1", "bash", f"Error: {PAYLOADS[2]}", error=True))
    s.append_message(tool_result("c2", "read", "x"))
    s.append_message(assistant(f"Decided {TEXT} and done"))
    kept = s.append_message(user("next")).id
    s.append_message(assistant("ok"))
    s.append_compaction(
        f"## Goal\n{TEXT}\n<read-files>\nsrc/{PAYLOADS[1]}.py\n</read-files>", kept, 10
    )
    assert first
    return s


def test_untrusted_facts_and_evidence_stay_text(tmp_path: Path) -> None:
    session = _hostile(tmp_path)
    (report,) = session_retention(session)
    assert {v.fact.kind for v in report.verdicts} >= {"file", "command", "error", "instruction"}
    html = RetentionView(report).to_html()
    check_html_survives(html)
    found = parse(html)
    assert not {"script", "img", "svg", "iframe", "style"} & set(found.tags)
    assert "window.__pinb_xss=2" in "".join(found.text)
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(h.startswith("file:///") for h in hrefs)
    assert "<script>" not in html and "<img" not in html


def test_lost_first_with_links_to_the_entries(tmp_path: Path) -> None:
    session, ids = write_story(tmp_path)
    first, second = session_retention(session)
    html = to_html(first)  # the registered renderer
    check_html_survives(html)
    lost_at = html.index("Lost: ")
    kept_at = html.index("Kept by the summary: ")
    assert lost_at < kept_at
    # A lost fact links to its file, titled with its citation.
    failing = next(v for v in first.lost if v.fact.text == "uv run pytest -q tests/test_pricing.py")
    assert html.index("uv run pytest -q tests/test_pricing.py") < kept_at
    assert f'title="{first.cite(failing.fact)}"' in html and 'href="file:///' in html
    text = to_text(first)
    assert text.startswith(f"Compaction {ids['c1']} (recorded): score 70%, 11 of 18 facts kept")
    assert text.index("lost (7;") < text.index("kept (11)")
    both = RetentionView([first, second])
    assert "2 compactions: what each summary kept" in both.to_html()
    bundle = both._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"} and ids["c2"] in bundle["text/plain"]
    assert RetentionView([]).to_text() == "<RetentionView: no compactions>"


def test_the_compaction_view_shows_what_the_summary_kept(tmp_path: Path) -> None:
    # The one report (retention_report), shown in the compaction's own view: the score line,
    # recall by kind, the first lost facts linked to their entries, and where all of them are.
    from pinb.analysis.retention.report import retention_report
    from pinb.views import CompactionView
    from pinb.views.compaction.retention import recall_text, score_text

    session, ids = write_story(tmp_path)
    report = retention_report(session, ids["c1"])
    view = CompactionView(ids["c1"], session)
    assert view.retention is not None and view.retention.to_dict() == report.to_dict()
    text = view.to_text()
    assert "\n" not in text and text.endswith("20 entries summarized, 4 kept>")
    assert (
        "what the summary kept: score 70%, 11 of 18 facts kept by the summary; "
        "7 lost (0 still in the kept messages);" in text
    )
    html = view.to_html()
    check_html_survives(html)
    shown = " ".join(parse(html).text)
    assert score_text(report) in shown and recall_text(report) in shown
    assert "recall: files 100% (2/2) · commands 33% (1/3)" in shown
    at = html.index("What the summary kept")
    assert at < html.index("Summarized: ") and at > html.index("By role")
    lost = report.lost
    section = html[at : html.index("Summarized: ")]
    cells = [
        [" ".join(parse(cell).text) for cell in row.split('<span style="display:none"> │ </span>')]
        for row in re.findall(r'<div class="pinb-tr"[^>]*>(.*?)</div>', section)
    ]
    assert cells[0][:2] == ["kind", "fact"]
    # The lost facts in the report's order: those the kept messages do not carry first.
    assert [(c[0], c[1]) for c in cells[1:]] == [(v.fact.kind, v.fact.text) for v in lost[:5]]
    for verdict in lost[:5]:
        assert (
            f'title="{report.cite(verdict.fact)}" data-pinb-entry="{verdict.fact.entry_id}"' in html
        )
    assert (
        f"… and 2 more. Every fact, with the text that matched: %pi compactions --id {ids['c1']}"
        in shown
    )


def test_a_dry_run_says_what_its_summary_must_keep(tmp_path: Path) -> None:
    from pinb.core import CompactionSettings, plan_compaction
    from pinb.views import CompactionView

    session, ids = write_story(tmp_path)
    session.branch(ids["a17"], persist=False)
    planned = plan_compaction(session, CompactionSettings(keep_recent_tokens=60))
    view = CompactionView(planned, session)
    assert view.retention is not None and view.retention.kind == "plan"
    text = view.to_text()
    assert "what a summary must keep: 7 facts in the span: 1 still in the kept messages, " in text
    html = view.to_html()
    check_html_survives(html)
    assert "What a summary of this cut must keep" in html
    shown = " ".join(parse(html).text)
    section = shown.split("What a summary of this cut must keep", 1)[1].split("Summarized:", 1)[0]
    assert not re.search(r"\bscore \d", section)  # nothing is scored without a summary
    assert "%pi whatif" in html and "lost unless the summary keeps them" in html
    # Planned elsewhere than at the leaf: the span is the plan's.
    moved = CompactionView(planned, session, leaf_id=ids["a17"])
    assert moved.retention is not None
    assert moved.retention.to_dict() == view.retention.to_dict()
    # No session, no retention: the view says nothing about it.
    bare = CompactionView(planned)
    assert bare.retention is None and "summary must keep" not in bare.to_text()


def test_the_explorer_shows_a_compactions_score_and_selects_a_lost_facts_entry(
    tmp_path: Path, comms: list[Any]
) -> None:
    from pinb.analysis.retention.report import retention_report
    from pinb.views import TreeWidget
    from pinb.views.compaction.retention import score_text
    from tests.views.builders import frontend_update
    from tests.views.test_widgets import action

    session, ids = write_story(tmp_path)
    widget = TreeWidget(session)
    widget.select(ids["a17"])
    assert widget.compaction_label == "Compaction here"
    widget.select(ids["c1"])
    assert widget.compaction_label == "This compaction"
    frontend_update(widget, tab="compaction_html")
    html = widget.compaction_html
    check_html_survives(html)
    report = retention_report(session, ids["c1"])
    assert "This compaction as recorded" in html and score_text(report) in " ".join(
        parse(html).text
    )
    first = report.lost[0].fact
    assert f'data-pinb-entry="{first.entry_id}"' in html
    action(widget, action="select", id=first.entry_id)  # a click on the fact's entry
    assert widget.selected_id == first.entry_id and widget.status_tone == "info"
    assert widget.compaction_label == "Compaction here"
    action(widget, action="select", id="no-such-entry")
    assert widget.selected_id == first.entry_id and widget.status_tone == "error"
    assert "No entry 'no-such-entry'" in widget.status
    # A dry run's panel plans the cut and leaves the scoring to %pi whatif (each click
    # would judge every fact of the span); a recorded compaction's is always scored.
    widget.select(ids["a17"])
    dry = widget.compaction_html
    assert "A dry run" in dry and f"%pi whatif --leaf {ids['a17']}" in dry
    assert "What a summary of this cut must keep" not in dry


def test_hostile_facts_stay_text_in_the_compaction_view_the_explorer_and_the_lab(
    tmp_path: Path, comms: list[Any]
) -> None:
    from pinb.analysis.compaction.ledger import compaction_ledger, what_if
    from pinb.views import CompactionView, TreeWidget
    from tests.views.builders import frontend_update
    from tests.views.test_xss import check_html

    session = _hostile(tmp_path)
    (compaction,) = [e for e in session.entries if e.type == "compaction"]
    widget = TreeWidget(session)
    widget.select(compaction.id)
    frontend_update(widget, tab="compaction_html")
    lab = what_if(session, compaction.raw["parentId"], keep_recent_tokens=[10, 50])
    assert lab.strategies is not None and lab.strategies.scored()
    # The three views of the facts show the hostile fact as text; the ledger lists the
    # compactions without the facts' words.
    for html, shows_facts in (
        (CompactionView(compaction, session).to_html(), True),
        (widget.compaction_html, True),
        (to_html(lab), True),
        (to_html(compaction_ledger(session)), False),
    ):
        check_html_survives(html)
        seen = check_html(html)
        assert "<script>" not in html and "<img" not in html
        assert ("window.__pinb_xss" in html, "window.__pinb_xss=2" in seen) == (
            shows_facts,
            shows_facts,
        )
    assert to_text(lab).count("Strategies at this cut") == 1


def test_with_its_session_each_compaction_says_what_pinb_kept_and_gave_back(
    tmp_path: Path,
) -> None:
    from pinb.core import CompactionSettings, ExtractiveSummarizer, compact, uncompact
    from pinb.core.compaction.lost import KEPT_FACTS_HEADING
    from pinb.core.describe import plural
    from pinb.testing.work import write_work_session
    from pinb.views.compaction.given_back import kept_facts_brief
    from tests.views.sanitizers import check_bundle

    session = write_work_session(tmp_path / "s", turns=20)
    settings = CompactionSettings(keep_recent_tokens=3000, keep_facts_tokens=300)
    kept = compact(session, ExtractiveSummarizer(), settings=settings)
    assert kept.entry is not None and kept.kept_facts is not None and kept.kept_facts.omitted
    given = uncompact(session)  # what the section had no room for
    assert given.entry is not None and given.facts
    (report,) = session_retention(session)
    brief = kept_facts_brief(kept.summary)
    assert brief.startswith(f"pinb kept {len(kept.kept_facts.facts)} facts the summary lost (")

    bare = RetentionView(report)  # without the session: nothing of pinb's said
    assert "given back" not in bare.to_text() and "pinb kept" not in bare.to_text()
    view = RetentionView(report, session=session)
    text = view.to_text()
    assert f"  {brief}" in text
    assert (
        f"  given back in {given.entry.id}: {plural(len(given.facts), 'fact')} "
        f"({given.tokens:,} tokens" in text
    )
    # Each fact given back is marked so where the report calls it lost.
    lost = text.split("  lost (", 1)[1].split("  kept (", 1)[0]
    for fact in given.facts:
        line = next(row for row in lost.splitlines() if f"#{fact.fact.entry_id}" in row
                    and fact.fact.text[:40] in row)  # fmt: skip
        assert line.strip().startswith(f"given back in {given.entry.id} · ")
    # Facts matched under pinb's heading are counted as pinb's.
    by_pinb = [v for v in report.verdicts if v.kept and v.summary.section == KEPT_FACTS_HEADING]
    assert by_pinb
    assert (
        f"{len(by_pinb):,} of the {report.kept_count:,} kept matched in pinb's kept-facts section"
        in text
    )
    assert f"{len(given.facts):,} of the {len(report.lost):,} lost given back since" in text

    bundle = view._repr_mimebundle_()
    check_bundle(bundle, picture=False)
    html = bundle["text/html"]
    # The headline first: the score, then what pinb kept and gave back, then the tables.
    assert (
        html.index("score <b>") < html.index("What pinb kept and gave back") < html.index("Lost: ")
    )
    assert escape_text(brief) in html and f"given back in {given.entry.id}" in html
    assert html.count(f"given back in {given.entry.id}") == 1 + len(given.facts)
    assert html.count("kept by pinb&#x27;s section") + html.count("kept by pinb's section") >= len(
        by_pinb
    )


def escape_text(text: str) -> str:
    from pinb.render.html import escape

    return escape(text)


def test_a_share_of_all_says_all() -> None:
    from pinb.views.compaction.retention import share

    assert share(3, 7, "lost") == "3 of the 7 lost"
    assert share(1, 1, "lost") == "the one lost fact"
    assert share(2, 2, "kept") == "both kept facts"
    assert share(7, 7, "lost") == "all 7 lost facts"
