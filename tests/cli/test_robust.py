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
    # The views show it as the escape; an export, a file for others to read, as U+FFFD.
    shown = "hi \\ud83d there"
    for command, text in (
        (["tree"], shown),
        (["context"], shown),
        (["context", "--llm"], shown),
        (["export", "--md", "-o", "-"], "hi \ufffd there"),
    ):
        result = _pinb(command[0], str(path), *command[1:])
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert text in result.stdout, command
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


# -- what lies under the sessions root that is no readable session file --------------------


def _projects(tmp_path: Path) -> tuple[Path, Path]:
    """Two projects with sessions that hold "parser"; their session folders."""
    from pinb.core.file.paths import sessions_dir_for
    from pinb.testing.generate import SessionShape, generate_session

    folders = []
    for n, name in enumerate(("mine", "theirs")):
        project = tmp_path / name
        project.mkdir()
        folder = sessions_dir_for(project)
        for i in range(2):
            shape = SessionShape(entries=60, main_depth=40, cwd=str(project))
            generate_session(folder / f"s{i}.jsonl", shape, seed=10 * n + i)
        folders.append(folder)
    return folders[0], folders[1]


def _runs(project: Path, prefix: tuple[str, ...] = ()) -> list[subprocess.CompletedProcess[str]]:
    """``pinb search parser`` (this project), ``search --all parser`` and ``ls --all``, each
    a first run (no index yet: the scan) and a second (the index)."""
    runs = []
    for args in (("search", "parser"), ("search", "--all", "parser"), ("ls", "--all")):
        for _ in range(2):
            command = [*prefix, sys.executable, "-m", "pinb.cli", *args]
            # The timeout only guards a hang (a FIFO opened for reading would block).
            runs.append(subprocess.run(command, capture_output=True, text=True, timeout=120,
                                       cwd=project))  # fmt: skip
            assert "Traceback" not in runs[-1].stderr, runs[-1].stderr
        _forget_index()
    return runs


def _forget_index() -> None:
    """Stop the index build a first search started and remove the index: the next search
    scans again."""
    import shutil
    import time

    from pinb.analysis.searching.building import is_building
    from pinb.analysis.searching.index import default_index_path

    index = default_index_path()
    deadline = time.monotonic() + 60
    while is_building(index) and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(index.parent, ignore_errors=True)


def _notes(run: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The notes of a run's standard error, by the path each names."""
    notes = {}
    for line in run.stderr.splitlines():
        assert line.startswith("note: ") and line.endswith("; left out of listings and searches")
        path, reason = line.removeprefix("note: ").split(": ", 1)
        notes[path] = reason.removesuffix("; left out of listings and searches")
    return notes


def test_a_looping_link_in_another_projects_folder_is_a_note(tmp_path: Path) -> None:
    _, theirs = _projects(tmp_path)
    clean = _runs(tmp_path / "mine")
    assert all(run.returncode == 0 and not run.stderr for run in clean)
    assert "parser" in clean[0].stdout and "s1.jsonl" in clean[-1].stdout
    (theirs / "a.jsonl").symlink_to(theirs / "b.jsonl")
    (theirs / "b.jsonl").symlink_to(theirs / "a.jsonl")
    looped = _runs(tmp_path / "mine")
    for run, before in zip(looped, clean, strict=True):
        assert run.returncode == 0
        assert run.stdout == before.stdout  # the same hits and rows, in the same format
        assert _notes(run) == {
            str(theirs / "a.jsonl"): "a symbolic link that loops",
            str(theirs / "b.jsonl"): "a symbolic link that loops",
        }


def test_broken_links_fifos_devices_and_unreadable_files_are_notes(tmp_path: Path) -> None:
    mine, theirs = _projects(tmp_path)
    clean = _runs(tmp_path / "mine")
    root = mine.parent
    (theirs / "dangling.jsonl").symlink_to(theirs / "nowhere.jsonl")
    os.mkfifo(theirs / "pipe.jsonl")
    (theirs / "to-pipe.jsonl").symlink_to(theirs / "pipe.jsonl")
    (theirs / "zero.jsonl").symlink_to("/dev/zero")
    (theirs / "folder.jsonl").mkdir()
    (theirs / "inner").mkdir()
    (theirs / "inner" / "loop").symlink_to("..")  # a link to a folder that loops
    (root / "up").symlink_to("..")  # a project folder that is the agent folder
    (root / "gone").symlink_to(root / "nothing")
    locked = theirs / "locked.jsonl"
    locked.write_bytes((theirs / "s0.jsonl").read_bytes())
    locked.chmod(0)
    # Root reads a file of mode 0; in a user namespace of its own it is a user whose mode
    # bits count (files it owns, but no capability over them), as any user is.
    prefix = ("unshare", "--user") if os.geteuid() == 0 else ()
    odd = _runs(tmp_path / "mine", prefix)
    expected = {
        str(theirs / "dangling.jsonl"): f"a broken symbolic link (to {theirs / 'nowhere.jsonl'})",
        str(theirs / "pipe.jsonl"): "a FIFO, not a session file",
        str(theirs / "to-pipe.jsonl"): "a FIFO (through a symbolic link), not a session file",
        str(theirs / "zero.jsonl"): "a device (through a symbolic link), not a session file",
        str(theirs / "folder.jsonl"): "a folder, not a session file",
        str(root / "up"): "a link to a folder above it (a loop)",
        str(root / "gone"): f"a broken symbolic link (to {root / 'nothing'})",
        str(locked): "cannot be read (permission denied)",
    }
    for run, before in zip(odd, clean, strict=True):
        assert run.returncode == 0 and run.stdout == before.stdout
        assert _notes(run) == expected
    locked.chmod(0o644)  # readable again: listed and searched again
    again = _runs(tmp_path / "mine", prefix)
    assert str(locked) in again[-1].stdout and str(locked) not in _notes(again[-1])
