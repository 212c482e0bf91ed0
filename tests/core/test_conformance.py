"""Every public conformance case of shared/spec/conformance agrees with Pi v0.58.3 exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.testing.conformance import answer
from tests.conftest import SHARED

CASES = sorted((SHARED / "spec" / "conformance" / "cases").glob("*.query.json"))


def _normalise(value: Any) -> Any:
    # The expected files went through JSON; so does our answer (tuples -> lists etc.).
    return json.loads(json.dumps(value))


def _differences(ours: Any, expected: Any, where: str = "$") -> list[str]:
    if isinstance(ours, dict) and isinstance(expected, dict):
        found = []
        for key in sorted(set(ours) | set(expected)):
            if key not in ours:
                found.append(f"{where}.{key}: missing")
            elif key not in expected:
                found.append(f"{where}.{key}: unexpected")
            else:
                found += _differences(ours[key], expected[key], f"{where}.{key}")
        return found
    if isinstance(ours, list) and isinstance(expected, list):
        found = (
            [f"{where}: {len(ours)} items, expected {len(expected)}"]
            if len(ours) != len(expected)
            else []
        )
        for i, (a, b) in enumerate(zip(ours, expected, strict=False)):
            found += _differences(a, b, f"{where}[{i}]")
        return found
    if ours != expected or (type(ours) is bool and type(expected) is not bool):
        return [f"{where}: {ours!r:.120} != {expected!r:.120}"]
    return []


@pytest.mark.parametrize("query_path", CASES, ids=lambda p: p.name.split(".")[0])
def test_case_matches_pi(query_path: Path) -> None:
    query = json.loads(query_path.read_text(encoding="utf-8"))
    case = query["case"]
    source = query.get("input")
    session_path = SHARED.parent / source if source else query_path.parent / f"{case}.jsonl"
    expected = json.loads(
        (SHARED / "spec" / "conformance" / "expected" / f"{case}.json").read_text()
    )
    ours = _normalise(answer(query, session_path))
    differences = _differences(ours, expected)
    assert not differences, "\n".join(differences[:20])


def test_public_cases_are_present() -> None:
    # Guards against the glob silently matching nothing (which would pass vacuously).
    assert len(CASES) >= 7


ODD_FILES = {
    "header-only": '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n',
    "no-header": '{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}\n',
    "version-4-kind": '{"kind":"header","version":4,"id":"x","createdAt":1,"cwd":"/"}\n{"kind":"entry","seq":1}\n',
    "version-4-typed": '{"type":"session","version":4,"id":"x","timestamp":"t","cwd":"/"}\n{"kind":"entry","seq":1}\n{"kind":"entry","seq":2}\n',
    "odd-fields": (
        '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"message","id":"a","parentId":5,"timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"x","timestamp":1}}\n'
        '{"type":"message","id":"b","parentId":"","timestamp":"","message":{"role":"user","content":"y","timestamp":1}}\n'
        '{"type":"message","id":"c","timestamp":"bad","message":{"role":"assistant","content":[],"stopReason":"stop","timestamp":1}}\n'
        '{"type":"label","id":"l","parentId":"c","timestamp":"2025","targetId":"a","label":7}\n'
        '{"id":"notype","parentId":"a"}\n'
        '{"type":"compaction","id":"k","parentId":false,"timestamp":"2025-01-01","summary":"S","firstKeptEntryId":"k","tokensBefore":1}\n'
        '{"type":"message","parentId":"k","timestamp":"2025-01-02","message":{"role":"user","content":"no id","timestamp":1}}\n'
    ),
}


@pytest.mark.parametrize("name", sorted(ODD_FILES))
def test_odd_files_answer_as_json(name: str, tmp_path: Path) -> None:
    """Hand-shaped edge files: the harness answers every query with plain JSON values."""
    path = tmp_path / f"{name}.jsonl"
    path.write_text(ODD_FILES[name])
    query = {
        "leaves": [{"key": "@default"}, {"key": "@null", "leaf": None}, {"key": "a", "leaf": "a"}],
        "branches": [{"from": "c", "to": "a"}, {"from": None, "to": "a"}],
        "plans": ["tiny"],
        "planPresets": {"tiny": {"reserve": 100, "keep": 150, "window": 1000}},
        "budgets": [0, 300],
        "tree": "nested",
    }
    result = answer(query, path)
    assert json.loads(json.dumps(result)) == result
    if name in ("no-header", "version-4-kind"):
        assert result["@file"]["entryCount"] == 0 and result["@file"]["migrate"]["fileEntries"] == 0
    if name == "odd-fields":
        tree = result["@file"]["tree"]
        assert "type" not in tree[-1] or tree[-1]["id"] != "notype"
        assert any(node.get("label") == 7 for node in tree)
