"""``RetentionView``: lost facts first, linked to their entries; untrusted text stays text."""

from __future__ import annotations

import re
from pathlib import Path

from pinb.analysis.retention import session_retention
from pinb.core import Session
from pinb.display import to_html, to_text
from pinb.views import RetentionView
from tests.analysis.conftest import assistant, tool_result, user
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
