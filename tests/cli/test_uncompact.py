"""``pinb compact --offline`` keeps what matters and ``pinb uncompact`` gives back what a
compaction lost: the command line as a real process, on a long Pi-shaped session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.retention.report import retention_report
from pinb.core import Session
from pinb.core.compaction.lost import KEPT_FACTS_HEADING, LOST_KINDS
from pinb.core.compaction.uncompact import UNCOMPACT_BUDGET, UNCOMPACT_TYPE
from pinb.testing.work import write_work_session

MUST_KEEP_KINDS = ("file", "command", "error", "instruction")


def _pinb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pinb.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _ok(*args: str) -> str:
    result = _pinb(*args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def _session(tmp_path: Path, name: str = "s", seed: int = 0) -> Path:
    return write_work_session(tmp_path / name, turns=60, seed=seed).require_path()


def _kept(path: Path) -> tuple[float, int]:
    session = Session.open(path)
    compaction = [e for e in session.entries if e.type == "compaction"][-1]
    report = retention_report(session, compaction)
    facts = [v for v in report.verdicts if v.fact.kind in MUST_KEEP_KINDS]
    return sum(v.kept or v.kept_messages for v in facts) / len(facts), report.summary_tokens


@pytest.mark.parametrize("seed", [0, 2])
def test_compact_offline_keeps_95_percent_for_at_most_2500_more_tokens(
    tmp_path: Path, seed: int
) -> None:
    plain = _session(tmp_path, "plain", seed)
    kept = _session(tmp_path, "kept", seed)
    out = _ok("compact", str(plain), "--offline", "--no-keep-facts")
    assert "pinb kept" not in out
    out = _ok("compact", str(kept), "--offline")
    assert "pinb kept " in out and "the summary lost" in out
    again = _session(tmp_path, "json", seed)
    done = json.loads(_ok("compact", str(again), "--offline", "--json"))
    section = done["summary"][done["summary"].index(KEPT_FACTS_HEADING) :]
    assert done["keptFacts"]["facts"] and done["keptFacts"]["tokens"] <= 2500
    assert all(f"{f['line']}#{f['entryId']}]" in section for f in done["keptFacts"]["facts"])
    plain_json = json.loads(
        _ok(
            "compact", str(_session(tmp_path, "pj", seed)), "--offline", "--json", "--no-keep-facts"
        )
    )
    assert plain_json["keptFacts"] is None
    (without, plain_tokens), (with_facts, tokens) = _kept(plain), _kept(kept)
    assert without < 0.9 and with_facts >= 0.95
    assert 0 < tokens - plain_tokens <= 2500
    last = json.loads(plain.read_text().splitlines()[-1])
    assert last["type"] == "compaction" and KEPT_FACTS_HEADING not in last["summary"]


def test_uncompact_gives_back_what_was_lost_once(tmp_path: Path) -> None:
    path = _session(tmp_path)
    _ok("compact", str(path), "--offline", "--no-keep-facts")
    before = path.read_bytes()
    dry = json.loads(_ok("uncompact", str(path), "--dry-run", "--json"))
    assert path.read_bytes() == before  # a dry run writes nothing
    compaction = json.loads(before.decode().splitlines()[-1])["id"]
    assert list(dry) == ["compactionId", "entryId", "tokens", "budget", "facts", "omitted"]
    assert dry["compactionId"] == compaction and dry["entryId"] is None
    assert dry["budget"] == UNCOMPACT_BUDGET and 0 < dry["tokens"] <= UNCOMPACT_BUDGET
    assert dry["facts"] and all(
        list(f) == ["kind", "text", "entryId", "line"] for f in dry["facts"]
    )
    assert {f["kind"] for f in dry["facts"]} <= {"file", "command", "error", "instruction"}
    lines = before.decode().splitlines()
    for fact in dry["facts"]:  # each cites its entry's own line
        assert json.loads(lines[fact["line"] - 1])["id"] == fact["entryId"]
    done = json.loads(_ok("uncompact", str(path), "--json"))
    assert {k: v for k, v in done.items() if k != "entryId"} == {
        k: v for k, v in dry.items() if k != "entryId"
    }
    text = path.read_bytes()
    assert text.startswith(before)  # the file only grew
    entry = json.loads(text.decode().splitlines()[-1])
    assert entry["type"] == "custom_message" and entry["id"] == done["entryId"]
    assert entry["customType"] == UNCOMPACT_TYPE and entry["display"] is True
    assert entry["parentId"] == compaction
    assert entry["details"]["compactionId"] == compaction
    assert entry["details"]["facts"] == done["facts"]
    for fact in done["facts"]:
        assert f"{fact['line']}#{fact['entryId']}]" in entry["content"]
    # The retention report still says what the summary lost; the context now has it all.
    session = Session.open(path)
    report = retention_report(session, session[compaction])
    carried = "\n".join(str(m.get("content")) for m in session.build_context().messages)
    given = {(f["kind"], f["text"]) for f in done["facts"]}
    lost = [v for v in report.lost if not v.kept_messages and v.fact.kind in MUST_KEEP_KINDS]
    assert {(v.fact.kind, v.fact.text) for v in lost} == given
    assert all(text in carried for _, text in given if len(text) < 150)
    # Twice: only what is still lost, which is nothing; no entry is written.
    again = _pinb("uncompact", str(path))
    assert again.returncode == 0 and again.stdout.startswith("nothing to give back")
    assert path.read_bytes() == text


def test_uncompact_options_and_refusals(tmp_path: Path) -> None:
    path = _session(tmp_path)
    nothing = _pinb("uncompact", str(path))
    assert nothing.returncode == 2
    assert nothing.stderr.strip().endswith(
        "no compaction on the current path: there is nothing to give back "
        "(`pinb compactions FILE` lists every compaction of the file)"
    )
    _ok("compact", str(path), "--offline", "--no-keep-facts")
    errors = json.loads(_ok("uncompact", str(path), "--dry-run", "--json", "--kinds", "errors"))
    assert errors["facts"] and {f["kind"] for f in errors["facts"]} == {"error"}
    small = json.loads(_ok("uncompact", str(path), "--dry-run", "--json", "--budget", "120"))
    whole = json.loads(_ok("uncompact", str(path), "--dry-run", "--json"))
    assert small["tokens"] <= 120 and small["omitted"] == len(whole["facts"]) - len(small["facts"])
    # In rank order; a fact that does not fit is skipped, and a shorter one after it may fit.
    ranked = iter(whole["facts"])
    assert small["facts"] and all(fact in ranked for fact in small["facts"])
    assert small["facts"][0] == whole["facts"][0]
    bad = _pinb("uncompact", str(path), "--kinds", "vibes")
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1
    assert "'vibes' is not a kind of fact" in bad.stderr
    assert len(LOST_KINDS) == 8
    first = json.loads(path.read_text().splitlines()[1])["id"]
    not_compaction = _pinb("uncompact", str(path), "--id", first)
    assert "is a 'message' entry, not a compaction" in not_compaction.stderr
    missing = _pinb("uncompact", str(path), "--id", "nope")
    assert f"{path}: no entry with id 'nope'" in missing.stderr


def test_a_compaction_off_the_path_is_refused(tmp_path: Path) -> None:
    path = _session(tmp_path)
    _ok("compact", str(path), "--offline")
    session = Session.open(path)
    compaction = session.leaf_id
    parent = session[compaction].parent_id
    _ok("goto", str(path), str(parent))
    result = _pinb("uncompact", str(path), "--id", str(compaction))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"compaction {compaction} is not on the current path" in result.stderr


def _first(items: list[Any]) -> Any:
    return items[0]


def test_compactions_shows_what_pinb_kept_and_gave_back(tmp_path: Path) -> None:
    path = _session(tmp_path)
    _ok("compact", str(path), "--offline")
    kept = json.loads(_ok("compactions", str(path), "--json"))
    added = _first(kept)["pinb"]
    assert added["keptFacts"]["facts"] > 0 and 0 < added["keptFacts"]["tokens"] <= 2500
    assert added["givenBack"] == []
    # The report tells what pinb's section kept: the section is its evidence's heading.
    by_pinb = [f for f in _first(kept)["facts"] if f["section"] == KEPT_FACTS_HEADING]
    summary = json.loads(path.read_text().splitlines()[-1])["summary"]
    section = summary[summary.index(KEPT_FACTS_HEADING) :]
    assert by_pinb and all(f["summary"] != "lost" for f in by_pinb)
    assert all(f["evidence"].splitlines()[0] in section for f in by_pinb)
    text = _ok("compactions", str(path), "--rows", "1")
    assert f"pinb kept {added['keptFacts']['facts']} facts the summary lost" in text
