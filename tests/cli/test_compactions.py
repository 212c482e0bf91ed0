"""``pinb compactions FILE [--json]``: every compaction's retention, one documented JSON shape."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pinb.cli.analysis import add_parser
from pinb.errors import PinbError
from tests.analysis.retention_story import write_story

FACT_KEYS = {"kind", "text", "detail", "entryId", "line", "cite", "summary", "keptMessages",
             "evidence", "section", "rule"}  # fmt: skip
KEYS = {"id", "kind", "firstKeptEntryId", "tokensBefore", "estimatedBefore", "estimatedAfter",
        "summaryTokens", "summarizedEntries", "summarizer", "facts", "recall", "score",
        "weights", "factsPer1kSummaryTokens", "note", "pinb"}  # fmt: skip


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pinb")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_json_lists_every_compaction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session, ids = write_story(tmp_path)
    assert _run(["compactions", str(session.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in data] == [ids["c1"], ids["c2"]]
    first = data[0]
    assert set(first) == KEYS
    assert set(first["pinb"]) == {"keptFacts", "givenBack"}  # what pinb added to it
    assert first["firstKeptEntryId"] == ids["u3"] and first["tokensBefore"] == 9000
    assert all(set(f) == FACT_KEYS for f in first["facts"])
    assert {f["summary"] for f in first["facts"]} == {"verbatim", "paraphrased", "lost"}
    failing = next(
        f for f in first["facts"] if f["text"] == "uv run pytest -q tests/test_pricing.py"
    )
    assert failing["summary"] == "lost" and failing["detail"] == "failed"
    assert failing["entryId"] == ids["a2"] and failing["cite"].endswith(
        f":{failing['line']}#{ids['a2']}"
    )
    assert first["recall"]["file"] == 1.0 and first["score"] == pytest.approx(0.7)
    assert sum(first["weights"].values()) == pytest.approx(1.0)
    assert first["summarizedEntries"] == 20  # u1 … a10: the entries before u3


def test_text_lists_lost_facts_with_citations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session, ids = write_story(tmp_path)
    assert _run(["compactions", str(session.path), "--rows", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("(recorded): score") == 2
    assert f"#{ids['a2']}" in out and "… and 4 more" in out


def test_a_file_without_compactions_and_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pinb.core import Session

    s = Session.create("/w", tmp_path)
    s.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert _run(["compactions", str(s.path)]) == 0
    assert "no compactions" in capsys.readouterr().out
    assert _run(["compactions", str(s.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    with pytest.raises(PinbError):
        _run(["compactions", str(tmp_path / "missing.jsonl")])
