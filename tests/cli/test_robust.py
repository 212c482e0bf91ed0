"""The ``pinb`` command line on hostile input: odd text, closed pipes, files that are not sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pinb
from pinb.cli import main
from tests.samples import CASE_FILES

_HEADER = {"type": "session", "version": 3, "id": "s-robust", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/tmp"}  # fmt: skip


def _session(path: Path, messages: list[dict[str, Any]]) -> Path:
    lines = [json.dumps(_HEADER)]
    parent = None
    for number, message in enumerate(messages):
        entry = {"type": "message", "id": f"e{number:07d}", "parentId": parent,
                 "timestamp": "2025-01-01T00:00:01.000Z", "message": message}  # fmt: skip
        lines.append(json.dumps(entry))
        parent = entry["id"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _pinb(*args: str, timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pinb.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def test_a_lone_surrogate_prints_as_an_escape_everywhere(tmp_path: Path) -> None:
    # "\ud83d" is valid JSON but no encoder takes it: it used to crash with a traceback.
    path = _session(tmp_path / "s.jsonl", [_user("hi \ud83d there")])
    assert "\\ud83d" in path.read_text()
    for command in (["tree"], ["context"], ["context", "--llm"], ["export", "--md", "-o", "-"]):
        result = _pinb(command[0], str(path), *command[1:])
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert "hi \\ud83d there" in result.stdout or "hi \ufffd there" in result.stdout
    # JSON output stays valid JSON and gives back the very same string.
    result = _pinb("context", str(path), "--json")
    assert json.loads(result.stdout)["messages"][0]["content"] == "hi \ud83d there"


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    path = _session(tmp_path / "big.jsonl", [_user(f"message number {i}") for i in range(4000)])
    with subprocess.Popen(
        [sys.executable, "-m", "pinb.cli", "tree", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # what `| head -1` does
        err = process.stderr.read()
        code = process.wait(timeout=60)
    assert first.startswith("Session tree")
    assert err == "" and code == 0


def test_version() -> None:
    result = _pinb("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"pinb {pinb.__version__}"


def test_compact_plan_with_nothing_to_compact_is_an_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _session(tmp_path / "small.jsonl", [_user("hi")])
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
        result = _pinb("tree", str(target), timeout=30)  # reading the FIFO would block forever
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert str(target) in result.stderr


def test_cut_tool_arguments_end_with_an_ellipsis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_path = "/home/dev/project/" + "deeply/nested/" * 8 + "file.py"
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": long_path}}
    assistant = {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2}
    path = _session(tmp_path / "s.jsonl", [_user("read it"), assistant])
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


def test_an_unexpected_error_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pinb.cli.sessions

    def broken(args: Any) -> int:
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(pinb.cli.sessions, "_cmd_tree", broken)
    path = _session(tmp_path / "s.jsonl", [_user("hi")])
    assert main(["tree", str(path)]) == 3
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "TypeError" in err and "PINB_DEBUG" in err
