"""What starting pinb loads: `pinb --help` only the parsers, `%load_ext pinb` only the magics.

Each check runs in a fresh interpreter and reads its ``sys.modules``, so what another
test imported cannot hide a heavy import (docs/performance.md, "Command line").
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pinb.testing.generate import SessionShape, generate_session

#: What the parsers of `pinb` may load of pinb: the base, and the CLI's own modules.
BASE = {"pinb", "pinb._version", "pinb.errors"}
CLI = "pinb.cli"
#: What `%load_ext pinb` may load of pinb: the base, and the magics.
MAGICS = "pinb.notebook.magics"
MAGICS_ALSO = {"pinb.notebook", "pinb.notebook.interpolate"}
#: Libraries that load with the first command needing them, never at start.
HEAVY = ("pandas", "matplotlib", "networkx", "ipywidgets", "numpy", "httpx", "pydantic")


def _loaded(code: str) -> list[str]:
    """The modules a fresh interpreter holds after ``code`` (which may exit)."""
    script = textwrap.dedent(
        """
        import atexit, json, sys
        atexit.register(lambda: sys.__stderr__.write("MODULES" + json.dumps(sorted(sys.modules))))
        """
    ) + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert "MODULES" in done.stderr, done.stderr
    return list(json.loads(done.stderr.rsplit("MODULES", 1)[1]))


def _outside(modules: list[str], package: str, also: set[str]) -> list[str]:
    """pinb's modules in ``modules`` that are neither in ``package`` nor named in ``also``."""
    return [
        m
        for m in modules
        if m.startswith("pinb")
        and m not in also
        and m != package
        and not m.startswith(package + ".")
    ]


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["memory", "--help"], ["context"], ["no-such-command"], ["--version"]],
    ids=["help", "group-help", "missing-argument", "unknown-command", "version"],
)
def test_the_command_line_parses_without_session_code(argv: list[str]) -> None:
    modules = _loaded(f"from pinb.cli import main\nmain({argv!r})")
    assert _outside(modules, CLI, BASE) == []
    assert _heavy(modules) == []


def test_a_command_loads_what_it_uses_and_nothing_of_the_other_commands(tmp_path: Path) -> None:
    path = generate_session(tmp_path / "s.jsonl", SessionShape(entries=40, main_depth=30), seed=1)
    modules = _loaded(f"from pinb.cli import main\nmain(['context', {str(path)!r}])")
    assert "pinb.core.session" in modules and "pinb.core.context.build" in modules
    others = ("pinb.memory.store", "pinb.analysis", "pinb.views", "pinb.llm", "pinb.agent")
    assert [m for m in modules if m.startswith(others)] == []
    assert _heavy(modules) == []


def test_load_ext_loads_only_the_magics() -> None:
    modules = _loaded(
        """
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "pinb")
        assert "PiMagics" in shell.magics_manager.registry
        shell.run_line_magic("pi", "help")
        """
    )
    assert "pinb.notebook.magics.magic" in modules  # it did load
    assert _outside(modules, MAGICS, BASE | MAGICS_ALSO) == []
    assert _heavy(modules) == []


def test_the_magics_name_the_engines_the_engine_knows() -> None:
    from pinb.agent.pi.engine import ENGINES
    from pinb.notebook.magics.settings import ENGINES as SETTING

    assert SETTING == ENGINES
