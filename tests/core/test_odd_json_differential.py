"""Odd but valid JSON: what the real Pi 1.6.0 reads, pinb reads the same way.

``JSON.parse`` reads nesting of any depth and integers of any length; Python's parsers
stop at about 1,000 levels and 4,300 digits. The first test puts texts of every odd kind
through both parsers (JavaScript's through ``tests/pi``) and compares what each writes
back; the second opens seeded odd session files (:func:`pinb.testing.fuzz.odd_session_bytes`:
deep values, big integers, odd number forms, unusual escapes, control characters in ids,
values of the wrong type) with Pi and with pinb and compares the answers: contexts at
several leaves, LLM messages, token counts, compaction plans, the tree. Where Pi's token
estimate is NaN (``.length`` of a value of odd type; JSON ``null``) pinb counts 0, and
that number, and a plan it steers, is not compared. Pi's answers come
as ``JSON.stringify`` text (they nest deeper than Python's ``json`` reads) and are compared
without recursion.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.core.js.wire import dumps, loads, loads_line
from pinb.testing.conformance import answer
from pinb.testing.fuzz import odd_session_bytes
from tests.pi.reference import PiError, PiReference

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py

REFUSAL = "Error: Session file is not a valid pi session: <path>"


def _texts() -> list[str]:
    rng = random.Random(7)
    texts = [
        "[" * 3000 + "]" * 3000,
        '{"a":' * 1500 + "1" + "}" * 1500,
        "[" + "1" * 5000 + "]",
        "[-" + "9" * 4301 + ", 1" + "0" * 4400 + ".5]",
        "[1E+2, -0, -0.0, 1e400, -1e400, 0.1e-400, 1.0, 1.50, 2e-7, 9007199254740993]",
        "[123456789012345678901234567890, 0.30000000000000004, 5e-324, 1.7976931348623157e308]",
        r'["\ud83d", "\ude00\ud83d", "\u2028\u2029\u0085", "\/\b\f\n\r\t", "\u0000", "😀"]',
        '{"a": 1, "a": 2, "__proto__": 3, "1": 4, "0": 5}',
        ' \t\n\r {"spaced" : [ 1 , 2 ] } \r\n',
        # Texts JavaScript refuses, which must stay refused.
        "[1,]", "{'a': 1}", "[01]", "[1.]", "[.5]", "NaN", "[Infinity]", '"\t"', "[1] 2",
        "[" * 2000 + "]" * 1999,
    ]  # fmt: skip
    for _ in range(40):  # random nesting of arrays and objects around odd leaves
        depth = rng.randint(900, 2500)
        leaf = rng.choice(['"x"', "1E3", "-0", "1" * 4500, "null", "{}", '"\\u2028"'])
        opened = [rng.choice(("[", '{"k":')) for _ in range(depth)]
        closed = ["]" if o == "[" else "}" for o in reversed(opened)]
        texts.append("".join(opened) + leaf + "".join(closed))
    return texts


def test_pinb_parses_json_as_javascript_does(pi16: PiReference) -> None:
    for text in _texts():
        try:
            expected: str | None = pi16.parse(text)
        except PiError:
            expected = None
        try:
            ours: str | None = dumps(loads(text))
            line_ours: str | None = dumps(loads_line(text.encode("utf-8", "surrogatepass")))
        except ValueError:
            ours = line_ours = None
        assert ours == expected, (
            f"{text[:60]!r}: pinb {str(ours)[:80]!r}, Pi {str(expected)[:80]!r}"
        )
        assert line_ours == ours


def _hang(value: Any) -> bool:
    """A value Pi has no answer for: it loops there, or throws on a value of odd type."""
    return isinstance(value, dict) and set(value) == {"__error__"} and value["__error__"] != REFUSAL


def differences(ours: Any, pi: Any, limit: int = 12) -> list[str]:
    """Where two JSON values differ (values Pi could not give are skipped), iteratively."""
    found: list[str] = []
    stack: list[tuple[Any, Any, str]] = [(ours, pi, "$")]
    while stack and len(found) < limit:
        a, b, where = stack.pop()
        if _hang(b):
            continue
        if (
            b is None
            and isinstance(a, int | float)
            and ("tokens" in where.lower() or ".plan" in where)
        ):
            continue  # Pi's NaN (JSON null): the length of a value of odd type; pinb counts 0
        if isinstance(a, dict) and isinstance(b, dict):
            for key in set(a) | set(b):
                if key not in b:
                    found.append(f"{where}.{key}: only pinb has it")
                elif key not in a:
                    if not _hang(b[key]):
                        found.append(f"{where}.{key}: only Pi has it")
                else:
                    stack.append((a[key], b[key], f"{where}.{key}"))
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                found.append(f"{where}: {len(a)} items, Pi has {len(b)}")
            stack.extend(
                (x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=False))
            )
        elif (
            a != b
            or (type(a) is bool) != (type(b) is bool)
            or isinstance(a, str) != isinstance(b, str)
        ):
            found.append(f"{where}: pinb {dumps(a)[:120]} != Pi {dumps(b)[:120]}")
    return found


def _query(path: Path) -> dict[str, Any]:
    session = Session.open(path, strict=False)
    ids = list(dict.fromkeys(e.id for e in session.entries if isinstance(e.id, str)))
    leaves: list[dict[str, Any]] = [{"key": "@default"}, {"key": "@null", "leaf": None}]
    leaves += [{"key": i, "leaf": i} for i in ids[-6:]]
    return {
        "target": "pi-1.6.0",
        "leaves": leaves,
        "branches": [{"from": ids[-1], "to": ids[0]}] if ids else [],
        "plans": ["small"],
        "planPresets": {"small": {"reserve": 2000, "keep": 1000, "window": 8000}},
        "budgets": [300],
        "tree": "nested",
    }


#: Seeds of the odd files compared with Pi (each about 24 entries).
SEEDS = range(1000, 1060)


def test_every_odd_file_pi_opens_pinb_opens_with_the_same_context(
    pi16: PiReference, tmp_path: Path
) -> None:
    failures: list[str] = []
    compared = deep = 0
    for seed in SEEDS:
        path = tmp_path / f"odd-{seed}.jsonl"
        data = odd_session_bytes(seed, max_depth=2000)
        path.write_bytes(data)
        query = _query(path)
        try:
            pi_answer = loads(pi16.answer_text(query, path))
        except PiError:  # Pi throws on a value of odd type (a session name that is not text)
            continue
        # As JSON.stringify writes them: Infinity (a 5,000-digit integer) is null there.
        ours = loads(dumps(answer(query, path)))
        assert path.read_bytes() == data, f"seed {seed}: reading changed the file"
        if pi_answer["@file"] == {"__error__": REFUSAL}:
            assert ours["@file"] == pi_answer["@file"], f"seed {seed}: Pi refuses, pinb opens"
            continue
        for key, value in pi_answer.items():
            per_message = (
                value.get("tokens", {}).get("perMessage", []) if isinstance(value, dict) else []
            )
            if isinstance(per_message, list) and None in per_message:
                # Pi's estimate is NaN there (the length of a value of odd type), and NaN
                # steers its cut point; pinb counts 0. The plan is not compared.
                value.pop("plan", None)
                ours.get(key, {}).pop("plan", None)
        compared += 1
        deep += b"[[[[[[[[[[[[[[[[[[[[" * 50 in data or b'{"a":{"a":' in data
        found = differences(ours, pi_answer)
        if found:
            failures.append(f"seed {seed}:\n  " + "\n  ".join(found))
    assert not failures, "\n".join(failures[:6])
    assert compared >= 40, f"only {compared} of {len(SEEDS)} files were opened by Pi"
    assert deep >= 10, "the corpus lost its deep values"


def test_lines_python_refused_are_in_pinbs_context(pi16: PiReference, tmp_path: Path) -> None:
    """Reproduction 1: a line nested 1,500 deep and one with a 5,000-digit integer."""
    header = {"type": "session", "version": 3, "id": "odd", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}  # fmt: skip
    deep = "[" * 1500 + '"deep"' + "]" * 1500
    lines = [
        json.dumps(header),
        '{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}',
        '{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z",'
        f'"message":{{"role":"user","content":[{{"type":"text","text":"x","n":{deep}}}],'
        '"timestamp":2}}',
        '{"type":"message","id":"c","parentId":"b","timestamp":"2025-01-01T00:00:03.000Z",'
        f'"message":{{"role":"user","content":"big","timestamp":{"1" * 5000}}}}}',
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session = Session.open(path)
    assert not session.problems
    messages = session.build_context().messages
    assert [m["content"] for m in messages[::2]] == ["hi", "big"]
    assert dumps(messages[1]["content"][0]["n"]) == deep  # == would recurse
    assert messages[2]["timestamp"] == float("inf")  # JavaScript's Infinity
    query = {"target": "pi-1.6.0", "leaves": [{"key": "@default"}]}
    pi = loads(pi16.answer_text(query, path))
    assert len(pi["@default"]["context"]["messages"]) == 3
    assert differences(loads(dumps(answer(query, path))), pi) == []


@pytest.mark.parametrize("version", [1, 2])
def test_an_upgrade_keeps_every_line(version: int, tmp_path: Path) -> None:
    """Reproduction 1, second half: the first append to a v1/v2 file keeps such lines."""
    header: dict[str, Any] = {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}  # fmt: skip
    if version == 2:
        header["version"] = 2
    deep = "[" * 1500 + '"deep"' + "]" * 1500
    ids = ',"id":"a","parentId":null' if version == 2 else ""
    odd = (
        f'{{"type":"message"{ids},"timestamp":"2025-01-01T00:00:01.000Z","message":'
        f'{{"role":"user","content":[{{"type":"text","text":"x","n":{deep}}}],"timestamp":1}}}}'
    )
    big = (
        '{"type":"custom","customType":"n","data":{"big":' + "1" * 5000 + ',"e":1E+2}'
        + (',"id":"b","parentId":"a"' if version == 2 else "")
        + ',"timestamp":"2025-01-01T00:00:02.000Z"}'
    )  # fmt: skip
    broken = '{"type":"message", this line is not JSON'
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join([json.dumps(header), odd, broken, big, "", "42"]) + "\n")
    session = Session.open(path)
    assert len(session.entries) == 3  # the deep message, the custom entry, the 42
    session.append_message({"role": "user", "content": "new", "timestamp": 9})
    lines = path.read_text().split("\n")
    assert len(lines) == 8 and lines[-1] == ""
    assert loads(lines[0])["version"] == 3
    assert "deep" in lines[1] and lines[1].count("[") >= 1500
    assert lines[2] == broken  # kept verbatim: pinb cannot represent it
    if version == 2:
        assert lines[3] == big  # unchanged by the migration: byte for byte
    else:
        # It gained an id, so it is written as Pi writes it: Infinity as null, 1E+2 as 100.
        assert loads(lines[3])["data"] == {"big": None, "e": 100}
    assert lines[4:6] == ["", "42"]
    assert loads(lines[6])["message"]["content"] == "new"
    reopened = Session.open(path)
    assert len(reopened.entries) == 4
    assert [e.line for e in reopened.entries] == [2, 4, 6, 7]
