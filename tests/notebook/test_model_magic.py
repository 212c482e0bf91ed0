"""``%pi model --save`` and ``--fit-pi`` in a real IPython shell on files pinb cannot write: one
line with the system's reason, nothing changed; and on a file that is not JSON, its line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from IPython.utils.capture import capture_output

from tests.shells import pi_shell

REPO = Path(__file__).resolve().parents[2]

_SAVE = "%pi model local/small --save --base-url http://127.0.0.1:9 --window 4096"
_FIT = "%pi model --fit-pi local/small"

_MODELS = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "none",
            "models": [{"id": "small", "contextWindow": 4096, "maxTokens": 512}],
        }
    }
}

#: Run inside a mount namespace of its own, as its root: a tmpfs holding two agent folders,
#: one mounted read-only whole, the other with its two files mounted read-only (the folder
#: stays writable), then both magics in a real shell on each.
_READ_ONLY = """\
import json, os, subprocess, sys
from pathlib import Path
from IPython.utils.capture import capture_output
from tests.shells import pi_shell

disk = Path(sys.argv[1])
models, save, fit = sys.argv[2:]
agents = {"folder": disk / "ro-agent", "file": disk / "rw-agent"}
for agent in agents.values():
    agent.mkdir()
    (agent / "models.json").write_text(models)
    (agent / "settings.json").write_text('{"theme": "dark"}')
def read_only(path):
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)
read_only(agents["folder"])
read_only(agents["file"] / "models.json")
read_only(agents["file"] / "settings.json")
out = {}
for case, agent in agents.items():
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    with pi_shell("terminal") as ip:
        for name, line in (("save", save), ("fit", fit)):
            with capture_output() as captured:
                result = ip.run_cell(line)
            out[f"{case} {name}"] = [type(result.error_in_exec).__name__,
                                     captured.stdout + captured.stderr]
    out[f"{case} left"] = sorted(p.name for p in agent.iterdir())
    out[f"{case} models"] = (agent / "models.json").read_text()
print(json.dumps(out))
"""


def test_a_read_only_agent_folder_or_file_is_one_line_in_a_shell(tmp_path: Path) -> None:
    """On a real read-only mount (a tmpfs in a mount namespace of its own: its root is
    refused a write there as anyone else is)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    script = tmp_path / "scenario.py"
    script.write_text(_READ_ONLY)
    models = json.dumps(_MODELS)
    shell = f'mount -t tmpfs -o size=1m tmpfs {disk} && exec "$0" "$@"'
    scenario = [sys.executable, str(script), str(disk), models, _SAVE, _FIT]
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", shell, *scenario],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "IPYTHONDIR": str(tmp_path / "ipython")},
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.splitlines()[-1])  # after IPython's own notes
    for case, lock in (("folder", "models.json.lock"), ("file", None)):
        agent = disk / ("ro-agent" if case == "folder" else "rw-agent")
        for name, file in (("save", "models.json"), ("fit", "settings.json")):
            error, said = out[f"{case} {name}"]
            assert error == "UserFileError", said
            where = f" ({agent / (file + '.lock')})" if lock else ""
            assert said.strip() == (
                f"UserFileError: {agent / file}: pinb cannot write it: Read-only file system"
                f"{where}; nothing was changed"
            ), said
        assert out[f"{case} left"] == ["models.json", "settings.json"]  # no lock, temp or .bak
        assert json.loads(out[f"{case} models"]) == _MODELS


def _run(shell: Any, source: str) -> tuple[Any, str]:
    with capture_output() as captured:
        result = shell.run_cell(source)
    return result, captured.stdout + captured.stderr


def test_a_models_json_that_is_not_json_is_named_with_its_line_and_left_as_it_is(
    isolated_agent_dir: Path,
) -> None:
    path = isolated_agent_dir / "models.json"
    broken = '{"providers": {\n  "local": {"baseUrl": "x",}\n}}\n'
    path.write_text(broken)
    with pi_shell("terminal") as shell:
        result, said = _run(shell, _SAVE)
    assert type(result.error_in_exec).__name__ == "UserFileError"
    assert said.strip() == (
        f"UserFileError: {path}:2:28: not valid JSON (Expecting property name enclosed in "
        "double quotes); pinb changes nothing in it: fix it by hand first"
    )
    assert path.read_text() == broken
    assert sorted(p.name for p in isolated_agent_dir.iterdir()) == ["models.json"]


def test_save_says_where_the_old_file_is_kept_and_a_second_save_changes_nothing(
    isolated_agent_dir: Path,
) -> None:
    path = isolated_agent_dir / "models.json"
    with pi_shell("terminal") as shell:
        _, first = _run(shell, _SAVE)
        chosen = "local/small · window 4,096 (models.json) · max out 1,024 · http://127.0.0.1:9/v1"
        assert first.splitlines()[0].endswith("both engines use it")  # new: nothing to keep
        assert first.splitlines()[1:] == [chosen]
        path.write_text(json.dumps({"providers": {"other": {"baseUrl": "http://o/v1"}}}))
        _, second = _run(shell, _SAVE)
        assert second.splitlines()[0].endswith(
            "both engines use it; the file as it was is models.json.bak beside it"
        )
        before = path.read_bytes()
        _, third = _run(shell, _SAVE)
    assert third.splitlines() == [
        f"local/small is already in {path} as given (window 4,096): unchanged",
        chosen,
    ]
    assert path.read_bytes() == before
    assert json.loads(path.with_name("models.json.bak").read_text()) == {
        "providers": {"other": {"baseUrl": "http://o/v1"}}
    }
    assert set(json.loads(path.read_text())["providers"]) == {"other", "local"}
