"""A newcomer's first Pi cells say in one line what is wrong and what to do.

A Node older than Pi's ``engines.node`` is named before Pi starts (else Pi 1.6 dies with a
``SyntaxError`` about ``enableCompileCache``), with the Node Pi needs and where to get it;
``--model offline`` with ``--engine pi`` says the demo model is pinb's own; ``%pi compact``
with no model names ``--offline``. The Node that is too old is a stand-in ``node`` that
prints ``v20.20.2`` (the Node of Debian 12 and of this machine's ``/usr/bin``), in front of
the real Pi 1.6.0 install (``tests/pi``) and its ``package.json``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.agent.pi.rpc import PiNodeTooOldError, PiProcess, check_node
from pinb.errors import UsageError
from pinb.notebook.models import NoModelConfiguredError
from pinb.testing.story import write_story_session
from tests.pi.loop import MODEL, PiLoop
from tests.pi.reference import node_binary
from tests.shells import pi_shell

PI_PACKAGE = Path("node_modules") / "@earendil-works" / "pi-coding-agent"


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    with pi_shell("terminal") as ip:
        yield ip


def _run(shell: InteractiveShell, source: str) -> tuple[Any, str]:
    with capture_output() as captured:
        result = shell.run_cell(source)
    return result, captured.stdout + captured.stderr


@pytest.fixture()
def old_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``node`` first on PATH that is v20.20.2, and logs how it was called."""
    folder = tmp_path / "old-node" / "bin"
    folder.mkdir(parents=True)
    node = folder / "node"
    node.write_text(
        f'#!/bin/sh\necho "$@" >> {shlex.quote(str(tmp_path / "calls"))}\necho v20.20.2\n'
    )
    node.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return node


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls"
    return log.read_text().splitlines() if log.exists() else []


def _cli(root: Path) -> Path:
    import json

    manifest = json.loads((root / PI_PACKAGE / "package.json").read_text())
    return root / PI_PACKAGE / manifest["bin"]["pi"]


def test_pi_on_path_with_an_old_node_is_not_started(
    pi_install: Path, old_node: Path, tmp_path: Path
) -> None:
    """``pi`` (a link to Pi's script, ``#!/usr/bin/env node``) on a Node 20."""
    pi = pi_install / "node_modules" / ".bin" / "pi"
    process = PiProcess([str(pi)], session_file=tmp_path / "s.jsonl", cwd=tmp_path)
    with pytest.raises(PiNodeTooOldError) as raised:
        process.start()
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"Pi 1.6.0 needs Node >=22.19.0, but {old_node} is v20.20.2: ")
    # The Node 22 that tests/pi's install put beside Pi, and the command line that uses it.
    beside = node_binary(pi_install)
    assert f"a Node that fits is installed beside Pi ({beside})" in message
    assert f"$PINB_PI_COMMAND='{beside} {_cli(pi_install)}'" in message
    assert _calls(tmp_path) == ["--version"]  # asked its version; Pi itself never ran
    assert not process.alive and not (tmp_path / "s.jsonl").exists()


def test_without_a_node_beside_pi_it_says_where_to_get_one(
    pi_install: Path, old_node: Path, tmp_path: Path
) -> None:
    """A global npm install (no Node package beside it): the real package.json, the
    script's own first line, run as ``node cli.js``."""
    root = tmp_path / "global"
    package = root / PI_PACKAGE
    cli = _cli(pi_install)
    copy = package / cli.relative_to(pi_install / PI_PACKAGE)
    copy.parent.mkdir(parents=True)
    shutil.copy(pi_install / PI_PACKAGE / "package.json", package / "package.json")
    copy.write_text(cli.read_text(encoding="utf-8").splitlines()[0] + "\n")
    for command in ([str(copy)], ["node", str(copy)]):
        copy.chmod(0o755)
        with pytest.raises(PiNodeTooOldError) as raised:
            check_node(command)
        message = str(raised.value)
        assert f"but {old_node} is v20.20.2: install Node 22.19 or newer" in message
        assert "(`npm install -g node@22`, nvm or nodejs.org)" in message
        assert f"$PINB_PI_COMMAND='/path/to/that/node {copy}'" in message


def test_the_node_pi_needs_passes(pi_install: Path) -> None:
    node = node_binary(pi_install)
    found = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    major, minor = (int(n) for n in found.stdout.strip().lstrip("v").split(".")[:2])
    assert (major, minor) >= (22, 19)
    check_node([str(node), str(_cli(pi_install))])  # no error: the real Pi starts on it


def test_a_pi_cell_on_an_old_node_says_so_in_one_line(
    shell: InteractiveShell,
    pi_install: Path,
    old_node: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PINB_PI_COMMAND", shlex.join(["node", str(_cli(pi_install))]))
    result, said = _run(shell, "%%pi --engine pi\nhello")
    assert isinstance(result.error_in_exec, PiNodeTooOldError)
    lines = [line for line in said.strip().splitlines() if line.strip()]
    assert lines[-1].startswith("PiNodeTooOldError: Pi 1.6.0 needs Node >=22.19.0, but ")
    assert "Traceback" not in said and "SyntaxError" not in said
    assert _calls(tmp_path) == ["--version"]


def test_the_offline_model_is_pinb_s_own(shell: InteractiveShell, pi_loop: PiLoop) -> None:
    """``--model offline`` with ``--engine pi``: no "Model not found: offline/" from Pi."""
    result, said = _run(shell, "%%pi --engine pi --model offline\nhello")
    assert isinstance(result.error_in_exec, UsageError)
    message = str(result.error_in_exec)
    assert "\n" not in message and "pinb's own scripted demo model" in message
    assert "`--engine pinb`" in message and "`--model provider/model-id`" in message
    magics = shell.magics_manager.registry["PiMagics"]
    assert magics.pi_engine.process is None  # Pi was not started for a model it cannot have
    # The demo used by the built-in engine before is not handed to Pi: Pi keeps its model.
    result, said = _run(shell, "%%pi --model offline\nhello")
    assert result.error_in_exec is None, said
    pi_loop.server.reply(text="hello from Pi")
    result, said = _run(shell, "%%pi --engine pi\nhi")
    assert result.error_in_exec is None and "hello from Pi" in said, said
    assert magics.pi_engine.process is not None
    info = magics.pi_engine.process.state.get("model") or {}
    assert f"{info.get('provider')}/{info.get('id')}" == MODEL


def test_compact_without_a_model_names_offline(shell: InteractiveShell, tmp_path: Path) -> None:
    """A fresh kernel, a session opened, no key: ``%pi compact`` says how to go on without."""
    story = write_story_session(tmp_path / "sessions")
    result, said = _run(shell, f"%pi open {story.path}\n%pi compact")
    assert isinstance(result.error_in_exec, NoModelConfiguredError)
    message = str(result.error_in_exec)
    assert "`%pi compact --offline`" in message and "`%%pi --model offline`" in message
    assert said.strip().splitlines()[-1].startswith("NoModelConfiguredError: no model configured")
    result, said = _run(shell, "%pi compact --offline")
    assert result.error_in_exec is None, said
    assert any(
        e.type == "compaction" for e in shell.magics_manager.registry["PiMagics"].session.entries
    )
