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
