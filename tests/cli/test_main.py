"""``pinb``'s dispatch (:mod:`pinb.cli.main`): its version, an unexpected error in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pinb
from pinb.cli import main

from .files import run_pinb, user_message, write_session


def test_version() -> None:
    result = run_pinb("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"pinb {pinb.__version__}"


def test_an_unexpected_error_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pinb.cli.sessions

    def broken(args: Any) -> int:
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(pinb.cli.sessions, "_cmd_tree", broken)
    path = write_session(tmp_path / "s.jsonl", [user_message("hi")])
    assert main(["tree", str(path)]) == 3
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "TypeError" in err and "PINB_DEBUG" in err
