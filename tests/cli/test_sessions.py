"""The ``pinb`` command line: readable text, Pi-shaped JSON, one clear line on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinb.cli import main
from tests.samples import CASE_FILES, LEGACY

from .files import run_pinb, user_message, write_session


def test_context_json_is_pis_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["context", str(CASE_FILES["kept-span-compaction"]), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"messages", "thinkingLevel", "model"}
    assert payload["messages"][0]["role"] == "compactionSummary"


def test_context_llm_and_leaf(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["context", str(CASE_FILES["two-leaves"]), "--leaf", "e0000004", "--llm"]) == 0
    out = capsys.readouterr().out
    assert "Use quicksort" in out and "mergesort done" not in out.lower()


def test_tree_marks_the_active_path(capsys: pytest.CaptureFixture[str]) -> None:
    # The views' text picture: one row per entry, the active lane ●, a side branch ○.
    assert main(["tree", str(CASE_FILES["two-leaves"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    leaf = next(line for line in lines if "◀ leaf" in line)
    assert leaf.lstrip("│ ").startswith("●")
    side = next(line for line in lines if "Use quicksort" in line)
    assert "○" in side.split("Use quicksort")[0] and "●" not in side.split("Use quicksort")[0]
    assert lines[-1].startswith("legend")


def test_tokens_tell_one_story(capsys: pytest.CaptureFixture[str]) -> None:
    """Pi's figure says how it was made; the by-role rows sum to the stated estimate."""
    path = str(LEGACY["large-session.jsonl"])
    assert main(["tokens", path, "--json", "--window", "200000"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tokens"] > 0 and data["measure"] in ("usage+estimate", "estimate")
    assert (
        sum(data["byRole"].values()) == data["estimatedTokens"] and "toolResult" in data["byRole"]
    )
    assert data["window"] == 200000 and data["windowSource"] == "setting"
    assert data["threshold"] == 200000 - 16384 and data["share"] > 0
    assert main(["tokens", path, "--window", "200000"]) == 0
    out = capsys.readouterr().out
    assert f"{data['tokens']:,} tokens (" in out and "of a 200,000 window (setting)" in out
    assert (
        f"chars/4 estimate of all {data['messages']:,} messages: {data['estimatedTokens']:,}" in out
    )


def test_ls(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from pinb.core import Session
    from tests.core.helpers import assistant, user

    session = Session.create(tmp_path)
    session.append_message(user("list me"))
    session.append_message(assistant("ok"))
    assert main(["ls", "--all"]) == 0
    assert "list me" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["context", "/no/such/file.jsonl"], "/no/such/file.jsonl: no such file"),
        (["context", str(CASE_FILES["linear"]), "--leaf", "zzz"], "no entry with id"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_installed_entry_point_runs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"message"}\n')
    result = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "tree", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert str(bad) in result.stderr and "Traceback" not in result.stderr


def test_compact_plan_then_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pinb.testing.generate import SessionShape, generate_session

    path = generate_session(
        tmp_path / "g.jsonl", SessionShape(entries=400, main_depth=300, compaction_every=0), seed=2
    )
    before = path.read_bytes()
    assert main(["compact", str(path), "--plan", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["entryId"] is None and plan["summarizedIds"] and plan["keptIds"]
    assert path.read_bytes() == before  # planning never writes
    assert main(["compact", str(path), "--offline", "--instructions", "the refactor"]) == 0
    assert "appended compaction" in capsys.readouterr().out
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["type"] == "compaction" and last["firstKeptEntryId"] == plan["firstKeptEntryId"]
    assert main(["compact", str(path), "--offline"]) == 2
    assert "Already compacted" in capsys.readouterr().err


def test_goto_with_offline_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    path = tmp_path / "v02.jsonl"
    shutil.copyfile(CASE_FILES["two-leaves"], path)
    assert main(["goto", str(path), "e0000003", "--summarize", "--offline"]) == 0
    out = capsys.readouterr().out
    assert "Use quicksort" in out and "branch summary" in out
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["type"] == "branch_summary" and last["parentId"] == "e0000002"
    assert main(["goto", str(path), "e0000003", "--summarize"]) == 2


def test_compact_says_what_another_program_left_off_the_path_and_goto_brings_it_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pinb's last turns ended at a leaf; `pi --session` appended under an older one since:
    a fresh `pinb compact` reads the turn lock's record and says so, with `pinb goto`."""
    from pinb.core import Session
    from pinb.testing.generate import SessionShape, generate_session

    path = generate_session(
        tmp_path / "g.jsonl", SessionShape(entries=400, main_depth=300, compaction_every=0), seed=2
    )
    session = Session.open(path)
    stale = str(session.leaf_id)
    for text in ("kernel one", "kernel two"):
        with session.turn("pinb's agent", role="cell", who="a notebook cell"):
            session.append_message({"role": "user", "content": text, "timestamp": 1})
            session.append_message(
                {"role": "assistant", "content": [{"type": "text", "text": f"{text}!"}],
                 "api": "openai-completions", "provider": "p", "model": "m",
                 "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                           "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                      "cacheWrite": 0, "total": 0}},
                 "stopReason": "stop", "timestamp": 2}
            )  # fmt: skip
    mine = str(session.leaf_id)
    line = {"type": "message", "id": "pi000001", "parentId": stale,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "from the terminal", "timestamp": 2}}  # fmt: skip
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    assert main(["compact", str(path), "--offline"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "note: another program (not pinb: e.g. pi in a terminal) appended 1 entry under "
        f"{stale}, leaving 2 of your turns (4 entries) off the path (last: {mine}); "
        f"`pinb goto {path} {mine}` goes back to them"
    )
    assert "appended compaction" in out  # of the path that continues: the terminal's
    assert main(["goto", str(path), mine]) == 0
    texts = [e.message["content"] for e in Session.open(path).path_to() if e.role == "user"]
    assert texts[-2:] == ["kernel one", "kernel two"]


# -- input that is no usable session: empty, a FIFO or a folder, legacy, nothing to compact --


def test_compact_plan_with_nothing_to_compact_is_an_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_session(tmp_path / "small.jsonl", [user_message("hi")])
    assert main(["compact", str(path), "--plan"]) == 0
    assert "Nothing to compact" in capsys.readouterr().out
    assert main(["compact", str(path), "--plan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nothingToCompact"] is True


@pytest.mark.parametrize("command", [["tree"], ["context"], ["tokens"], ["export", "--md"]])
def test_an_empty_file_is_refused_naming_it(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main([command[0], str(empty), *command[1:]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{empty}: empty file" in captured.err and len(captured.err.splitlines()) == 1
    assert empty.read_bytes() == b""  # still untouched


def test_a_fifo_or_a_folder_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for target in (fifo, tmp_path):
        result = run_pinb("tree", str(target), timeout=30)  # reading the FIFO would block forever
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert str(target) in result.stderr


def test_cut_tool_arguments_end_with_an_ellipsis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_path = "/home/dev/project/" + "deeply/nested/" * 8 + "file.py"
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": long_path}}
    assistant = {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2}
    path = write_session(tmp_path / "s.jsonl", [user_message("read it"), assistant])
    assert main(["tree", str(path)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "read(" in line)
    assert long_path not in line
    assert "…" in line.split("read(", 1)[1]


@pytest.mark.parametrize(("case", "version"), [("v1-legacy", 1), ("v2-hook-message", 2)])
def test_legacy_files_are_named_as_such(
    case: str, version: int, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("tree", "context"):
        assert main([command, str(CASE_FILES[case])]) == 0
        err = capsys.readouterr().err
        assert f"legacy version {version} session" in err and str(CASE_FILES[case]) in err
    assert main(["tree", str(CASE_FILES["linear"])]) == 0
    assert "legacy" not in capsys.readouterr().err
