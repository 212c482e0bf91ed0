"""``pinb memory ...`` and ``pinb rm`` through argparse, as the lead wires them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pinb.cli.memory import add_parser, memory_command
from pinb.memory import MemoryStore, project_id


def _pinb(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pinb")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_memory_commands_round_trip(
    project_dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = str(project_dirs[0])
    assert _pinb(["memory", "--cwd", cwd, "save", "Use", "nox", "--kind", "decision"]) == 0
    assert capsys.readouterr().out.strip() == "saved #1 (decision)"
    assert _pinb(["memory", "--cwd", cwd]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#1") and "decision" in out and "Use nox" in out
    assert _pinb(["memory", "--cwd", cwd, "recall", "nox", "--json"]) == 0
    [found] = json.loads(capsys.readouterr().out)
    assert found["id"] == 1 and found["project"] == project_id(cwd) and found["score"] > 0
    assert _pinb(["memory", "--cwd", str(project_dirs[1]), "recall", "nox"]) == 0
    assert capsys.readouterr().out.strip() == "(no memories)"
    assert _pinb(["memory", "--cwd", cwd, "forget", "1", "--reason", "back to tox"]) == 0
    assert "forgot #1" in capsys.readouterr().out
    assert _pinb(["memory", "--cwd", cwd, "list", "--forgotten"]) == 0
    assert "forgotten: back to tox" in capsys.readouterr().out


def test_inject_and_promote(project_dirs: tuple[Path, Path], capsys) -> None:
    cwd = str(project_dirs[0])
    store = MemoryStore()
    obs = store.save("the CI is slow", project=store.ensure_project(cwd), kind="observation",
                     proposed_kind="fact")  # fmt: skip
    assert memory_command(["--cwd", cwd, "inject"]) == 0
    assert "off" in capsys.readouterr().out
    assert memory_command(["--cwd", cwd, "inject", "on", "--limit", "4"]) == 0
    assert capsys.readouterr().out.strip() == (
        "memory injection is on for this project, up to 4 notes"
    )
    assert store.injection(project_id(cwd)).enabled
    assert memory_command(["--cwd", cwd, "promote", str(obs.id)]) == 0
    assert capsys.readouterr().out.strip() == f"promoted #{obs.id} to fact"
    assert memory_command(["--cwd", cwd, "inject", "preview"]) == 0
    assert "the CI is slow" in capsys.readouterr().out


def test_errors_are_one_line(project_dirs: tuple[Path, Path], capsys) -> None:
    assert memory_command(["--cwd", str(project_dirs[0]), "forget", "42", "--reason", "x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pinb: ") and "no memory #42" in err and "Traceback" not in err
    assert memory_command(["forget", "42"]) == 2  # --reason is required
    assert memory_command(["save", "x", "--kind", "gossip"]) == 2


def test_rm_moves_to_trash(write_session, capsys) -> None:
    parent = write_session("/home/dev/proj", "aaaa-root")
    child = write_session("/home/dev/proj", "bbbb-child", parent=parent)
    assert _pinb(["rm", str(parent), "--dry-run"]) == 0
    assert f"fork {child} would still name it" in capsys.readouterr().out and parent.exists()
    assert _pinb(["rm", str(parent)]) == 0
    out = capsys.readouterr().out
    assert "Moved" in out and not parent.exists()
    assert _pinb(["rm", str(parent)]) == 1
    assert "no such session file" in capsys.readouterr().err


def test_saving_twice_says_it_is_already_saved(
    project_dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = str(project_dirs[0])
    assert _pinb(["memory", "--cwd", cwd, "save", "Use", "nox"]) == 0
    assert capsys.readouterr().out.strip() == "saved #1 (note)"
    assert _pinb(["memory", "--cwd", cwd, "save", "use", "NOX"]) == 0
    assert capsys.readouterr().out.strip() == "already saved as #1 (note)"
    assert _pinb(["memory", "--cwd", cwd, "list", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [1]
