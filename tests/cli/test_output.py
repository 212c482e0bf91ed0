"""What ``pinb`` prints (:mod:`pinb.cli.output`): a string no encoder takes, a closed pipe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .files import run_pinb, user_message, write_session


def test_a_lone_surrogate_prints_everywhere(tmp_path: Path) -> None:
    # "\ud83d" is valid JSON but no encoder takes it: it used to crash with a traceback.
    path = write_session(tmp_path / "s.jsonl", [user_message("hi \ud83d there")])
    assert "\\ud83d" in path.read_text()
    # What the CLI prints writes it as its escape (pinb.cli.output); an export is a document
    # and holds U+FFFD instead (pinb.analysis.export).
    for command, shown in [
        (["tree"], "hi \\ud83d there"),
        (["context"], "hi \\ud83d there"),
        (["context", "--llm"], "hi \\ud83d there"),
        (["export", "--md", "-o", "-"], "hi \ufffd there"),
    ]:
        result = run_pinb(command[0], str(path), *command[1:])
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert shown in result.stdout, command
    # JSON output stays valid JSON and gives back the very same string.
    result = run_pinb("context", str(path), "--json")
    assert json.loads(result.stdout)["messages"][0]["content"] == "hi \ud83d there"


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "big.jsonl", [user_message(f"message number {i}") for i in range(4000)]
    )
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
