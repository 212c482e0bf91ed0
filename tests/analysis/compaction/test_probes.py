"""Model probes of a compaction: questions from its facts, answered twice, judged."""

from __future__ import annotations

from pathlib import Path

from pinb.analysis.compaction.probes import PROBE_KINDS, make_probes, run_probes
from pinb.analysis.retention.report import retention_report, span_messages
from pinb.llm import get_model
from pinb.llm.config.registry import ModelRegistry
from pinb.testing import ScriptedLLM
from pinb.testing.llm_server import LLMServer
from tests.analysis.retention_story import write_story


def _first(tmp_path: Path) -> tuple[object, list[object], list[object]]:
    session, ids = write_story(tmp_path)
    report = retention_report(session, ids["c1"])
    entry = session[ids["c1"]]
    summarized, kept, _ = span_messages(session.build_context(entry.raw["parentId"]), ids["u3"])
    span = [m for _, messages in summarized for m in messages]
    return report, span, kept


def test_probes_cover_the_four_kinds_in_turn(tmp_path: Path) -> None:
    report, _, _ = _first(tmp_path)
    probes = make_probes(report, limit=8)  # type: ignore[arg-type]
    assert [p.kind for p in probes[:4]] == list(PROBE_KINDS)
    assert len(probes) == 8 and probes == make_probes(report, limit=8)  # type: ignore[arg-type]
    artifact = next(p for p in probes if p.kind == "artifact")
    assert artifact.expected == "src/cart/pricing.py" and "'pricing.py'" in artifact.question


def test_scripted_model_answers_and_judges(tmp_path: Path) -> None:
    report, span, kept = _first(tmp_path)
    probes = make_probes(report, limit=2)  # type: ignore[arg-type]
    model = ScriptedLLM()
    for verdict in ("FAIL PASS", "PASS PASS"):
        model.reply("unknown").reply("the answer").reply(verdict)
    result = run_probes(report, model, span=span, kept=kept, probes=probes)  # type: ignore[arg-type]
    assert [a.compacted_pass for a in result.answers] == [False, True]
    assert result.score == 0.5 and result.full_score == 1.0
    assert "answered and judged by" in result.method and result.model in result.method
    # The compacted context is the summary and the kept messages; the full one the span.
    first, second = model.calls[0], model.calls[1]
    assert "## Goal" in str(first.messages) and "PERCENT_10" not in str(first.messages)
    assert "PERCENT_10" in str(second.messages)
    assert result.to_dict()["probes"][0]["expected"] == probes[0].expected


def test_probes_over_http_against_the_loopback_server(tmp_path: Path) -> None:
    report, span, kept = _first(tmp_path)
    probes = make_probes(report, limit=1)  # type: ignore[arg-type]
    with LLMServer() as server:
        server.reply(text="src/cart/pricing.py, edited").reply(text="src/cart/pricing.py").reply(
            text="PASS PASS"
        )
        model = get_model("openai/gpt-4o", base_url=server.openai_base_url, api_key="k",
                          registry=ModelRegistry(False))  # fmt: skip
        result = run_probes(report, model, span=span, kept=kept, probes=probes)  # type: ignore[arg-type]
        assert len(server.requests) == 3
    assert result.score == 1.0 and result.answers[0].compacted == "src/cart/pricing.py, edited"
