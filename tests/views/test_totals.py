"""``UsageTotalsView``: the fork-aware usage totals as a table captioned with their rule."""

from __future__ import annotations

from pathlib import Path

from pinb.analysis.totals import DEDUPE_RULE, usage_totals
from pinb.core import Session
from pinb.render.html import escape
from pinb.views.totals import UsageTotalsView
from tests.analysis.builders import assistant, user
from tests.views.sanitizers import check_html_survives


def test_the_totals_view_shows_the_rule_and_escapes_text(tmp_path: Path) -> None:
    session = Session.create("<script>alert(1)</script>", tmp_path)
    session.append_message(user("hi"))
    session.append_message(assistant("hello", total=10, cost=0.01))
    view = UsageTotalsView(usage_totals(tmp_path, "project"))
    bundle = view._repr_mimebundle_()
    html = bundle["text/html"]
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<style" not in html and "<svg" not in html
    assert escape(DEDUPE_RULE) in html and DEDUPE_RULE in bundle["text/plain"]
    assert "Usage by project" in view.caption()
    check_html_survives(html)


def test_the_old_import_path_is_the_same_class() -> None:
    import pinb.analysis

    assert pinb.analysis.UsageTotalsView is UsageTotalsView
