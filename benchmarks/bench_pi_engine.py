"""``%%pi --engine pi`` beside the built-in agent: first streamed token and per-cell overhead.

Run: ``.venv/bin/python benchmarks/bench_pi_engine.py [--cells N]``. Both engines run real
``%%pi`` cells in an IPython shell against the same loopback server (pinb's
``LLMServer``, named in the ``models.json`` both read), which answers at once with a
40-chunk reply, so what is timed is each engine's own work: for the Pi engine the real
Pi 1.6.0 (Node 22, from ``tests/pi``) through ``pi --mode rpc``, for the built-in agent
pinb's loop. Medians over ``--cells``; the Pi process is started once per session, so its
start is reported on its own line, not in the per-cell figures. Prints the Markdown table
docs/performance.md records.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.llm.types import TextDelta
from pinb.notebook import live
from pinb.testing.llm_server import LLMServer
from tests.pi.reference import PiReference, ensure_installed

REPLY = "word " * 160  # 800 characters: 40 chunks of 20


class FirstToken:
    """Records when the cell's live display first receives streamed text."""

    def __init__(self) -> None:
        self.at: float | None = None
        original = live.LiveRun.add

        def add(run: Any, event: Any) -> None:
            inner = getattr(event, "event", None)
            if self.at is None and isinstance(inner, TextDelta):
                self.at = time.perf_counter()
            original(run, event)

        live.LiveRun.add = add  # type: ignore[method-assign]


def cell(
    shell: InteractiveShell, probe: FirstToken, server: LLMServer, engine: str, n: int
) -> tuple[float, float]:
    server.reply(text=REPLY, chunk_size=20)
    probe.at = None
    started = time.perf_counter()
    with capture_output():
        result = shell.run_cell(f"%%pi --engine {engine}\nquestion {n}")
    ended = time.perf_counter()
    if result.error_in_exec is not None:
        raise result.error_in_exec
    assert probe.at is not None
    return (probe.at - started) * 1000, (ended - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=10)
    opts = parser.parse_args()
    root = ensure_installed()
    pi = PiReference("1.6.0", root)
    work = Path(tempfile.mkdtemp(prefix="pinb-bench-pi-engine-"))
    agent = work / "agent"
    agent.mkdir()
    project = work / "project"
    project.mkdir()
    os.chdir(project)
    with LLMServer() as server:
        (agent / "models.json").write_text(json.dumps({"providers": {"loop": {
            "baseUrl": server.openai_base_url, "api": "openai-completions", "apiKey": "bench",
            "models": [{"id": "loop-model", "contextWindow": 128000, "maxTokens": 1000}],
        }}}))  # fmt: skip
        os.environ.update(pi.environment())
        os.environ.update(PI_CODING_AGENT_DIR=str(agent), PINB_PI_COMMAND=shlex.join(pi.cli_argv()))
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "pinb")
        shell.run_line_magic("config", 'PiMagics.model = "loop/loop-model"')
        shell.run_line_magic("config", 'PiMagics.renderer = "jupyter"')
        probe = FirstToken()
        magics = shell.magics_manager.registry["PiMagics"]

        cell(shell, probe, server, "pinb", 0)  # warm pinb's imports and the session file
        started = time.perf_counter()
        process_start = None
        first_pi = cell(shell, probe, server, "pi", 1)
        process = magics.pi_engine.process
        assert process is not None
        process_start = (time.perf_counter() - started) * 1000
        results: dict[str, list[tuple[float, float]]] = {"pinb": [], "pi": [], "pi after pinb": []}
        for n in range(opts.cells):
            results["pi"].append(cell(shell, probe, server, "pi", 2 + 3 * n))
            results["pinb"].append(cell(shell, probe, server, "pinb", 3 + 3 * n))
            results["pi after pinb"].append(cell(shell, probe, server, "pi", 4 + 3 * n))
        assert magics.pi_engine.process is process, "Pi was restarted between cells"
        magics.pi_engine.close()
        entries = len(magics.session.entries)

    def med(rows: list[tuple[float, float]], i: int) -> float:
        return statistics.median(r[i] for r in rows)

    print(f"Pi 1.6.0 (Node 22) vs pinb's agent, {opts.cells} cells each, loopback server, "
          f"session of {entries} entries at the end\n")  # fmt: skip
    print("| engine | first streamed token | whole cell |")
    print("|---|---:|---:|")
    for name in ("pinb", "pi", "pi after pinb"):
        label = {"pinb": "built-in agent", "pi": "Pi engine (Pi cell after a Pi cell)",
                 "pi after pinb": "Pi engine (after a built-in cell: Pi reloads the file)"}[name]  # fmt: skip
        print(f"| {label} | {med(results[name], 0):.0f} ms | {med(results[name], 1):.0f} ms |")
    print(f"| Pi engine, first cell of a session (starts Pi) | {first_pi[0]:.0f} ms | "
          f"{process_start:.0f} ms |")  # fmt: skip


if __name__ == "__main__":
    main()
