"""pinb answers every conformance question exactly as Pi's own code does, for both releases.

The questions are those of Pi's conformance data (context, LLM messages, tokens,
serialization and compaction plans at every leaf; tree, migration, branch collection,
counts and name of the file). The files are this project's hand-written cases
(``tests/sessions.py``) and random trees (``pinb.testing.fuzz``); the answers come from
the real Pi 1.6.0 and v0.58.3 packages through ``tests/pi`` and from
:func:`pinb.testing.conformance.answer`. Where Pi never returns (a parent loop), Pi has
no answer to compare with; where Pi throws on a value it cannot read (a content that is
not a list, say), pinb answers instead of failing, so those values are not compared
either. pinb's own behaviour there is tested in test_odd_files_and_failing_disks. Pi's one intended error,
refusing a file that is not a session, is compared like any value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.testing.conformance import answer
from pinb.testing.fuzz import random_session_bytes
from tests.pi.reference import PiReference
from tests.sessions import CASES

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py

PRESETS = {
    "default": {"reserve": 16384, "keep": 20000, "window": 200000},
    "small": {"reserve": 2000, "keep": 1000, "window": 8000},
    "tiny": {"reserve": 100, "keep": 150, "window": 1000},
}
TARGETS = {"1.6.0": "pi16", "0.58.3": "pi058"}


def query_for(path: Path, target: str, *, max_leaves: int = 40) -> dict[str, Any]:
    """Every leaf worth asking about: default, null, an unknown id, and entry ids."""
    session = Session.open(path, pi="0.58", strict=False)
    ids = [e.id for e in session.entries if isinstance(e.id, str)][:max_leaves]
    leaves: list[dict[str, Any]] = [
        {"key": "@default"},
        {"key": "@null", "leaf": None},
        {"key": "fffffff0", "leaf": "fffffff0"},
    ]
    leaves += [{"key": i, "leaf": i} for i in dict.fromkeys(ids)]
    branches = []
    if ids:
        branches = [
            {"from": ids[-1], "to": ids[0]},
            {"from": ids[len(ids) // 2], "to": ids[-1]},
            {"from": None, "to": ids[-1]},
        ]
    query: dict[str, Any] = {
        "leaves": leaves,
        "branches": branches,
        "plans": list(PRESETS),
        "planPresets": PRESETS,
        "budgets": [0, 300],
        "tree": "nested",
    }
    if target != "0.58.3":
        query["target"] = f"pi-{target}"
    return query


REFUSAL = "Error: Session file is not a valid pi session: <path>"


def _hang(value: Any) -> bool:
    """A value Pi has no answer for: it loops forever there, or throws on odd data."""
    if not isinstance(value, dict) or set(value) != {"__error__"}:
        return False
    return value["__error__"] != REFUSAL


def _without_hangs(ours: Any, pi: Any) -> tuple[Any, Any]:
    """Drop the values Pi could not give, from both answers."""
    if isinstance(pi, dict) and isinstance(ours, dict):
        keys = [k for k in pi if not _hang(pi[k])]
        pairs = {k: _without_hangs(ours.get(k), pi[k]) for k in keys}
        return (
            {k: v[0] for k, v in pairs.items() if k in ours},
            {k: v[1] for k, v in pairs.items()},
        )
    if isinstance(pi, list) and isinstance(ours, list) and len(pi) == len(ours):
        kept = [(a, b) for a, b in zip(ours, pi, strict=True) if not _hang(b)]
        pairs = [_without_hangs(a, b) for a, b in kept]
        return [a for a, _ in pairs], [b for _, b in pairs]
    return ours, pi


def differences(ours: Any, expected: Any, where: str = "$") -> list[str]:
    if isinstance(ours, dict) and isinstance(expected, dict):
        found = []
        for key in sorted(set(ours) | set(expected), key=str):
            if key not in ours:
                found.append(f"{where}.{key}: missing")
            elif key not in expected:
                found.append(f"{where}.{key}: unexpected")
            else:
                found += differences(ours[key], expected[key], f"{where}.{key}")
        return found
    if isinstance(ours, list) and isinstance(expected, list):
        found = (
            [f"{where}: {len(ours)} items, Pi has {len(expected)}"]
            if len(ours) != len(expected)
            else []
        )
        for i, (a, b) in enumerate(zip(ours, expected, strict=False)):
            found += differences(a, b, f"{where}[{i}]")
        return found
    if ours != expected or (type(ours) is bool) != (type(expected) is bool):
        return [f"{where}: pinb {ours!r:.150} != Pi {expected!r:.150}"]
    return []


def compare(path: Path, target: str, reference: PiReference) -> list[str]:
    query = query_for(path, target)
    pi_answer = reference.answer(query, path)
    ours = json.loads(json.dumps(answer(query, path)))
    ours, pi_answer = _without_hangs(ours, pi_answer)
    return differences(ours, pi_answer)


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_written_case(
    case: str, target: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reference: PiReference = request.getfixturevalue(TARGETS[target])
    path = tmp_path / f"{case}.jsonl"
    path.write_bytes(CASES[case]())
    found = compare(path, target, reference)
    assert not found, f"{case} ({target}): " + "\n".join(found[:25])


#: (seed range, entries, Pi 1.x kinds, odd values, header version) per random family.
FAMILIES = {
    "v3": (range(0, 24), 40, True, False, 3),
    "v3-odd": (range(100, 124), 40, True, True, 3),
    "v3-old-kinds": (range(200, 212), 40, False, True, 3),
    "v1": (range(300, 312), 30, False, False, 1),
    "v2": (range(400, 406), 30, True, False, 2),
    "deep": (range(500, 503), 400, True, False, 3),
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_random_trees(
    family: str, target: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reference: PiReference = request.getfixturevalue(TARGETS[target])
    seeds, size, newer, odd, version = FAMILIES[family]
    failures = []
    for seed in seeds:
        path = tmp_path / f"{family}-{seed}.jsonl"
        path.write_bytes(random_session_bytes(seed, size, newer=newer, odd=odd, version=version))
        found = compare(path, target, reference)
        if found:
            failures.append(f"seed {seed}: " + "\n  ".join(found[:8]))
    assert not failures, f"{family} ({target}):\n" + "\n".join(failures[:5])
