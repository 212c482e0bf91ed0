"""What a give-back and pinb's kept facts look like: text, and HTML that keeps hostile text text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinb.core import CompactionSettings, ModelSummarizer, Session, compact, uncompact
from pinb.core.compaction.lost import KEPT_FACTS_HEADING, text_tokens
from pinb.views import CompactionView
from pinb.views.compaction.given_back import given_back_text, kept_facts_brief, pinb_additions_text
from tests.core.helpers import assistant, tool_result, user
from tests.views.sanitizers import check_bundle, parse

HOSTILE = "<img src=x onerror=alert(1)><script>window.__pinb_xss=1</script>"


def _hostile_session(tmp_path: Path) -> Session:
    session = Session.create(tmp_path, tmp_path / "s")
    session.append_message(user(f"Never paste {HOSTILE} into the page."))
    session.append_message(
        assistant("", tool_calls=[("b1", "bash", {"command": f"echo '{HOSTILE}'"})])
    )
    session.append_message(
        {**tool_result("b1", "bash", f"Error: {HOSTILE} failed"), "isError": True}
    )
    for i in range(4):
        session.append_message(user(f"small talk {i}"))
        session.append_message(assistant("fine " * 60))
    return session


class _Terse:
    """A model whose summary keeps none of the span's facts."""

    info = type("Info", (), {"id": "terse", "reasoning": False})()

    def complete(self, messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
        text = [{"type": "text", "text": "## Goal\nKeep going."}]
        return {"role": "assistant", "content": text, "stopReason": "stop"}


def _summarizer() -> ModelSummarizer:
    return ModelSummarizer(_Terse())  # type: ignore[arg-type]


def test_a_give_back_shows_its_facts_as_text_and_cites_them(tmp_path: Path) -> None:
    session = _hostile_session(tmp_path)
    plain = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=300, keep_facts=False)
    compaction = compact(session, _summarizer(), settings=plain).entry
    assert compaction is not None
    given = uncompact(session)
    assert given.entry is not None and given.facts
    text = given_back_text(given)
    assert text.splitlines()[0] == (
        f"gave back {len(given.facts)} facts compaction {compaction.id} lost in entry "
        f"{given.entry.id}: {given.tokens:,} of {given.budget:,} tokens"
    )
    for fact in given.facts:
        assert f"  {fact.body}  {fact.cite}" in text
    bundle = given._repr_mimebundle_()
    check_bundle(bundle, picture=False)
    html = bundle["text/html"]
    tags = parse(html)
    assert "script" not in tags.tags and "img" not in tags.tags
    assert "&lt;script&gt;" in html
    # The compaction's view names the give-back and its cost, beside what pinb kept (none).
    view = CompactionView(compaction, session)
    assert pinb_additions_text(session, compaction) == [
        f"given back in {given.entry.id}: {len(given.facts)} facts ({given.tokens:,} tokens, "
        "`pinb uncompact`)"
    ]
    assert f"given back in {given.entry.id}" in view.to_text()
    shown = view._repr_mimebundle_()
    check_bundle(shown, picture=False)
    assert "What pinb kept and gave back" in shown["text/html"]


def test_kept_facts_are_named_with_their_cost(tmp_path: Path) -> None:
    session = _hostile_session(tmp_path)
    report = compact(
        session,
        _summarizer(),
        settings=CompactionSettings(reserve_tokens=2000, keep_recent_tokens=300),
    )
    assert report.kept_facts is not None and report.entry is not None
    section = report.summary[report.summary.index("\n\n" + KEPT_FACTS_HEADING) :]
    kinds = sorted(f.kind for f in report.kept_facts.facts)
    assert kinds == ["command", "error", "instruction"]  # one of each: the brief names them
    assert kept_facts_brief(report.summary) == (
        f"pinb kept {len(report.kept_facts.facts)} facts the summary lost (1 instruction, "
        f"1 error, 1 command; {text_tokens(section):,} tokens, its own section)"
    )
    assert HOSTILE in section  # the summary is text: kept as written, escaped when shown
    html = CompactionView(report.entry, session).to_html()
    tags = parse(html)
    assert "script" not in tags.tags and "img" not in tags.tags
    assert f"pinb kept {len(report.kept_facts.facts)} facts" in html
