"""docs/retention.md says what the retention report does: its rules, weights and JSON are
the code's own (read from the modules and from a real ``pinb compactions --json`` run)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from pinb.analysis.retention.report import KIND_LABELS, WEIGHTS
from pinb.core.compaction.facts import FACT_KINDS
from pinb.core.compaction.matching import MIN_SHARED_WORDS, PARAPHRASE_OVERLAP, RULES, WINDOW
from tests.analysis.retention_story import write_story

DOC = Path(__file__).resolve().parents[1] / "docs" / "retention.md"


def _flat(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def test_every_kind_and_rule_is_the_codes() -> None:
    doc = _flat(DOC.read_text())
    for kind in FACT_KINDS:
        assert f"| {kind} |" in doc, kind  # the table of kinds
    for kind in ("file", "command", "identifier", "number"):
        assert _flat(RULES[kind]) in doc, kind
    overlap = (
        f"one window of {WINDOW} passages (lines, long lines cut into sentences) holds at "
        f"least {PARAPHRASE_OVERLAP:.0%} of its content words (at least {MIN_SHARED_WORDS})"
    )
    assert overlap in doc
    for kind in ("error", "instruction", "decision"):
        assert RULES[kind].endswith(
            f"holds at least {PARAPHRASE_OVERLAP:.0%} of its content words "
            f"(at least {MIN_SHARED_WORDS})"
        )


def test_the_weights_are_the_codes() -> None:
    doc = _flat(DOC.read_text())
    stated = dict(re.findall(r"(\w+) (0\.\d\d)", doc.split("**score**", 1)[1]))
    assert {label: float(w) for label, w in stated.items()} == {
        KIND_LABELS[kind]: weight for kind, weight in WEIGHTS.items()
    }


def test_the_json_shape_is_what_the_command_prints(tmp_path: Path) -> None:
    session, _ = write_story(tmp_path)
    printed = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "compactions", str(session.path), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,  # a hang guard only
    ).stdout
    reports = json.loads(printed)
    assert reports and all(r["kind"] == "recorded" for r in reports)
    example_text = DOC.read_text().split("```json", 1)[1].split("```", 1)[0]
    example = json.loads(example_text.replace("…", ""))
    documented = example[0]
    assert set(documented) == set(reports[0])
    fact = next(r["facts"][0] for r in reports if r["facts"])
    assert set(documented["facts"][0]) == set(fact)
    assert {f["summary"] for r in reports for f in r["facts"]} <= {
        "verbatim",
        "paraphrased",
        "lost",
    }
