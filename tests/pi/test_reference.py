"""The Pi reference harness works end to end, against values stated here independently.

No shared/ data: a small hand-written session (tests/pi/data/small.jsonl) and files the
tests write themselves. Each check runs against both Pi versions where they agree.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.pi.reference import HarnessError, PiError, PiReference

SMALL = Path(__file__).parent / "data" / "small.jsonl"
VERSIONS = ["pi16", "pi058"]
PRESETS = {"default": {"reserve": 16384, "keep": 20000, "window": 200000}}
NOT_A_SESSION = "Error: Session file is not a valid pi session: <path>"


@pytest.fixture(params=VERSIONS)
def pi(request: pytest.FixtureRequest) -> PiReference:
    reference: PiReference = request.getfixturevalue(request.param)
    return reference


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _query(**fields: Any) -> dict[str, Any]:
    query: dict[str, Any] = {
        "leaves": [],
        "branches": [],
        "plans": ["default"],
        "planPresets": PRESETS,
        "budgets": [0],
        "tree": "nested",
    }
    query.update(fields)
    return query


def _write(path: Path, *lines: dict[str, Any], prefix: str = "") -> Path:
    path.write_text(prefix + "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


HEADER = {
    "type": "session",
    "version": 3,
    "id": "s1",
    "timestamp": "2025-01-01T00:00:00.000Z",
    "cwd": "/p",
}


def _user(entry_id: str, parent: str | None, text: str, second: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2025-01-01T00:00:{second:02d}.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1735689600000 + second * 1000},
    }


def test_small_session_answer(pi: PiReference) -> None:
    entries = {e.get("id"): e for e in _lines(SMALL)}
    before = SMALL.read_bytes()
    query = _query(
        leaves=[
            {"key": "@default"},
            {"key": "e0000004", "leaf": "e0000004"},
            {"key": "@null", "leaf": None},
        ],
        branches=[{"from": "e0000006", "to": "e0000004"}],
    )
    result = pi.answer(query, SMALL)
    assert SMALL.read_bytes() == before, "answer must work on a copy"

    leaf = result["e0000004"]
    path_messages = [entries[i]["message"] for i in ("e0000002", "e0000003", "e0000004")]
    model = {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    assert leaf["context"] == {"messages": path_messages, "thinkingLevel": "off", "model": model}
    assert leaf["llm"] == path_messages
    # chars / 4, rounded up: "Hello, Pi" 9, "Hi! How can I help?" 19, "Read the README" 15.
    assert leaf["tokens"]["perMessage"] == [3, 5, 4]
    # The assistant's usage (30) counts, plus the estimate of what follows it.
    assert leaf["tokens"]["estimate"] == {
        "tokens": 34,
        "usageTokens": 30,
        "trailingTokens": 4,
        "lastUsageIndex": 1,
    }
    assert leaf["serialize"] == (
        "[User]: Hello, Pi\n\n[Assistant]: Hi! How can I help?\n\n[User]: Read the README"
    )
    plan = leaf["plan"]["default"]
    assert (plan["pathLength"], plan["pathLastId"], plan["contextTokens"]) == (4, "e0000004", 34)
    assert plan["shouldCompact"] is False
    assert plan["cutPoint"]["boundaryStart"] == 0

    default = result["@default"]["context"]["messages"]
    assert [m["content"] for m in default[::2]] == ["Hello, Pi", "Something else"]
    assert result["@null"]["context"] == {"messages": [], "thinkingLevel": "off", "model": None}

    file = result["@file"]
    assert (file["entryCount"], file["leafId"]) == (6, "e0000006")
    root = file["tree"][0]
    assert (root["id"], root["children"][0]["label"]) == ("e0000001", "greeting")
    assert [c["id"] for c in root["children"][0]["children"][0]["children"]] == [
        "e0000004",
        "e0000006",
    ]
    branch = file["branch"][0]
    assert (branch["commonAncestorId"], branch["entryIds"]) == ("e0000003", ["e0000006"])
    assert branch["prepare"][0]["messages"] == [{"id": "e0000006", "index": 0, "role": "user"}]
    assert [m["parent"] for m in file["migrate"]["entries"]] == [None, 0, 1, 2, 3, 2]


def test_version_specific_fields(pi16: PiReference, pi058: PiReference) -> None:
    new = pi16.answer(_query(), SMALL)["@file"]
    old = pi058.answer(_query(), SMALL)["@file"]
    labelled = new["tree"][0]["children"][0]
    assert labelled["labelTimestamp"] == "2025-03-01T10:00:05.000Z"
    assert new["sessionName"] is None
    assert "labelTimestamp" not in old["tree"][0]["children"][0]
    assert "sessionName" not in old


@pytest.mark.parametrize("length", range(10))
def test_estimate_tokens_is_a_quarter_of_the_length(pi: PiReference, length: int) -> None:
    message = {"role": "user", "content": "x" * length, "timestamp": 0}
    assert pi.call("estimateTokens", message) == math.ceil(length / 4)


def test_build_then_open_reads_the_same_session(pi: PiReference, tmp_path: Path) -> None:
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Done."}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
        "stopReason": "stop",
        "timestamp": 2,
    }
    steps = [
        {"method": "appendThinkingLevelChange", "args": ["high"]},
        {
            "method": "appendMessage",
            "args": [{"role": "user", "content": "Fix the bug", "timestamp": 1}],
        },
        {"method": "appendMessage", "args": [assistant]},
        {"method": "appendLabelChange", "args": [{"$ref": 1}, "task"]},
        {"method": "branch", "args": [{"$ref": 1}]},
        {
            "method": "appendMessage",
            "args": [{"role": "user", "content": "Another way", "timestamp": 3}],
        },
    ]
    built = pi.build(
        steps, tmp_path, "/work/proj", clock={"start": "2025-01-01T00:00:00Z", "stepMs": 1000}
    )
    file = Path(built["file"])
    assert file.parent == tmp_path
    written = _lines(file)
    assert written[0]["type"] == "session" and written[0]["cwd"] == "/work/proj"
    assert [e["id"] for e in written[1:]] == [r for r in built["results"] if r is not None]
    assert built["leafId"] == built["results"][5]

    before = file.read_bytes()
    opened = pi.open(file)
    assert file.read_bytes() == before
    assert opened["leafId"] == built["leafId"]
    assert opened["entries"] == written[1:]
    assert opened["context"]["thinkingLevel"] == "high"
    assert [m["content"] for m in opened["context"]["messages"]] == ["Fix the bug", "Another way"]
    on_main = pi.open(file, leaf=built["results"][2])["context"]["messages"]
    assert on_main[1] == assistant
    assert pi.open(file, leaf=None)["context"]["messages"] == []


def test_pi_errors_carry_the_failing_step(pi: PiReference, tmp_path: Path) -> None:
    with pytest.raises(PiError) as caught:
        pi.build(
            [
                {"method": "appendModelChange", "args": ["a", "b"]},
                {"method": "branch", "args": ["nope"]},
            ],
            tmp_path,
        )
    assert (caught.value.step, caught.value.text) == (1, "Error: Entry nope not found")


def test_bom_before_header(pi16: PiReference, pi058: PiReference, tmp_path: Path) -> None:
    """1.6.0 reads line by line and refuses the file; v0.58.3 trims the BOM away."""
    path = _write(tmp_path / "bom.jsonl", HEADER, _user("u1", None, "hi", 1), prefix="\ufeff")
    query = _query(leaves=[{"key": "@default"}])
    assert pi16.answer(query, path) == {
        "@default": {"__error__": NOT_A_SESSION},
        "@file": {"__error__": NOT_A_SESSION},
    }
    with pytest.raises(PiError, match="not a valid pi session"):
        pi16.open(path)
    old = pi058.answer(query, path)
    assert [m["content"] for m in old["@default"]["context"]["messages"]] == ["hi"]
    assert old["@file"]["entryCount"] == 1


def test_migration_ids_are_positional(pi: PiReference, tmp_path: Path) -> None:
    v1 = {"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/p"}
    lines = [v1] + [
        {
            "type": "message",
            "timestamp": f"2024-01-01T00:00:0{i}.000Z",
            "message": {"role": "user", "content": f"m{i}", "timestamp": i},
        }
        for i in range(3)
    ]
    path = _write(tmp_path / "v1.jsonl", *lines)
    result = pi.answer(_query(leaves=[{"key": "@default"}], tree="flat"), path)
    assert [n["id"] for n in result["@file"]["treeFlat"]] == ["00000000", "00000001", "00000002"]
    migrate = result["@file"]["migrate"]
    assert (migrate["headerVersionBefore"], migrate["headerVersion"]) == (None, 3)
    assert [e["parent"] for e in migrate["entries"]] == [None, 0, 1]
    assert _lines(path) == lines, "answer must not migrate the original"


def test_parent_cycle_is_refused_not_hung(pi: PiReference, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "cycle.jsonl", HEADER, _user("a", "b", "x", 1), _user("b", "a", "y", 2)
    )
    query = _query(leaves=[{"key": "@default"}], branches=[{"from": "a", "to": "b"}])
    result = pi.answer(query, path)
    hang = {"__error__": "Hang: parent cycle"}
    assert result["@default"] == dict.fromkeys(
        ("context", "llm", "tokens", "serialize", "plan"), hang
    )
    assert result["@file"]["branch"] == [hang]
    assert result["@file"]["tree"] == []


def test_restarts_after_a_crash(pi_install: Path) -> None:
    with PiReference("0.58.3", pi_install) as reference:
        assert (
            reference.call("estimateTokens", {"role": "user", "content": "abcd", "timestamp": 0})
            == 1
        )
        first = reference._process
        assert first is not None
        first.kill()
        first.wait()
        assert reference.request("ping")["pi"] == "0.58.3"
        assert reference._process is not None and reference._process.pid != first.pid


def test_timeout_kills_and_reports(pi_install: Path) -> None:
    with PiReference("1.6.0", pi_install, timeout=0.01) as reference:
        with pytest.raises(HarnessError, match="no answer to start-up within"):
            reference.request("ping")
        assert reference._process is None


def test_cli_argv_runs_pi(pi16: PiReference) -> None:
    result = subprocess.run(
        [*pi16.cli_argv(), "--version"],
        env=pi16.environment(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    assert result.stdout.strip() == "1.6.0"
