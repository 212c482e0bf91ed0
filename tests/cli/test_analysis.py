"""``pinb search``, ``export`` and ``import`` through their argparse wiring."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinb.cli.analysis import add_parser
from pinb.core import Session
from pinb.core.file.paths import sessions_dir_for
from pinb.errors import PinbError
from tests.analysis.builders import build_demo
from tests.analysis.test_importers import CLAUDE, _write


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pinb")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_search_this_folder_or_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    here, _ = build_demo(sessions_dir_for(work))
    other, _ = build_demo(sessions_dir_for(tmp_path / "other"))
    assert _run(["search", "other way", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["path"] for h in hits] == [str(here)]
    assert hits[0]["name"] == "demo session" and "«other»" in hits[0]["snippet"]
    assert hits[0]["cite"] == f"{here}:{hits[0]['line']}#{hits[0]['entryId']}"
    assert hits[0]["role"] == "user" and hits[0]["copies"] == []
    # The same message in both projects folds into one hit; --no-fold lists both.
    assert _run(["search", "other", "way", "--all", "--json"]) == 0
    [folded] = json.loads(capsys.readouterr().out)
    assert {folded["path"], *(c.split(":")[0] for c in folded["copies"])} == {
        str(here),
        str(other),
    }
    assert _run(["search", "other way", "--all", "--no-fold", "--json"]) == 0
    assert {h["path"] for h in json.loads(capsys.readouterr().out)} == {str(here), str(other)}
    assert _run(["search", "no-such-words-anywhere"]) == 1
    assert "try --all" in capsys.readouterr().out
    assert _run(["search", "continue"]) == 0
    out = capsys.readouterr().out
    assert f"{here}:" in out and "#" in out


def test_export_to_stdout_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, ids = build_demo(tmp_path / "s")
    assert _run(["export", str(path), "--md", "--leaf", ids["a3"], "-o", "-"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# demo session") and "continue" in text and "other way" not in text
    out = tmp_path / "demo.html"
    assert _run(["export", str(path), "--html", "--tree", "-o", str(out)]) == 0
    assert "other way" in out.read_text() and "continue" in out.read_text()
    with pytest.raises(PinbError):
        _run(["export", str(path), "--ipynb", "--leaf", "missing"])
    with pytest.raises(SystemExit):
        _run(["export", str(path)])  # a format is required


def test_export_writes_a_short_name_into_exports_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = build_demo(tmp_path / "s")
    Session.open(path).set_name("Fix the failing checks!")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PinbError):
        _run(["export", str(path), "--html", "--leaf", "missing"])
    assert not (tmp_path / "exports").exists()  # a failed export makes no folder
    assert _run(["export", str(path), "--html"]) == 0
    out = capsys.readouterr()
    written = tmp_path / "exports" / "fix-the-failing-checks.html"
    assert out.out.strip() == "wrote exports/fix-the-failing-checks.html" and "<html" not in out.out
    assert written.read_text().startswith("<!DOCTYPE html>")
    # Never over an earlier file: the next export gets a number.
    assert _run(["export", str(path), "--html"]) == 0
    assert capsys.readouterr().out.strip() == "wrote exports/fix-the-failing-checks-2.html"
    assert written.read_text() == (written.parent / "fix-the-failing-checks-2.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports", "s"]


def test_html_to_a_terminal_is_refused_with_a_hint(tmp_path: Path) -> None:
    import pty

    path, _ = build_demo(tmp_path / "s")
    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pinb.cli", "export", str(path), "--html", "-o", "-"],
            stdout=follower, stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
    finally:
        os.close(follower)
        os.close(leader)
    assert result.returncode == 2
    assert "refused" in result.stderr and "leave out -o to write a file" in result.stderr
    assert "Traceback" not in result.stderr and not list(tmp_path.glob("*.html"))


def test_import_claude_prints_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(tmp_path / "t.jsonl", CLAUDE)
    out = tmp_path / "out"
    assert _run(["import", "claude", str(src), "-o", str(out), "--cwd", "/p"]) == 0
    printed = capsys.readouterr().out
    assert "imported" in printed and "1 sidechain" in printed
    [written] = out.glob("*.jsonl")
    assert Session.open(written).cwd == "/p"
    assert _run(["import", "claude", str(src), "-o", str(out), "--cwd", "/p"]) == 0
    assert "already imported" in capsys.readouterr().out
    with pytest.raises(PinbError, match="no such file"):
        _run(["import", "codex", str(tmp_path / "nothing")])


def test_cli_module_imports_no_heavy_packages() -> None:
    code = (
        "import sys, pinb.analysis, pinb.cli.analysis, pinb.analysis.searching.index,"
        " pinb.analysis.export, pinb.analysis.importers\n"
        "heavy = {'pandas', 'matplotlib', 'dask', 'distributed', 'IPython'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
