"""Every writer on one session, long: the stress run of ``tests/test_many_writers.py`` at length.

Run: ``.venv/bin/python benchmarks/bench_writers.py [--steps N] [--seed S]``. A real IPython
shell with ``%load_ext pinb`` (built-in cells and ``--engine pi`` cells), the real ``pi -p``
CLI and ``python -m pinb.cli`` compact/rm/restore, and ``%pi fork``, interleaved by a seeded
choice on one session (``tests/writers_stress.py``), with the invariants checked after
every step: no byte lost, every file opened by pinb and by Pi 1.6.0 with the same context,
and one unbranched conversation. Prints what ran, how long a step took on average, and
stops at the first broken invariant with its step.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from IPython.core.interactiveshell import InteractiveShell

from pinb.testing.llm_server import LLMServer
from tests.pi.loop import PiLoop, configure, engine_env
from tests.pi.reference import PiReference, ensure_installed
from tests.writers_stress import WritersRun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    home = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        project = Path(tmp) / "project"
        agent.mkdir()
        project.mkdir()
        os.environ["PI_CODING_AGENT_DIR"] = str(agent)
        os.chdir(project)
        with PiReference("1.6.0", ensure_installed()) as pi, LLMServer() as server:
            configure(agent, server)
            os.environ.update(engine_env(pi, agent))
            loop = PiLoop(server, agent, pi)
            os.environ["PINB_PI_COMMAND"] = loop.command_line
            shell = InteractiveShell.instance()
            shell.run_line_magic("load_ext", "pinb")
            shell.magics_manager.registry["PiMagics"].renderer = "terminal"
            run = WritersRun(shell, loop, pi, project, seed=args.seed)
            started = time.perf_counter()
            with open(os.devnull, "w") as quiet:
                stdout, sys.stdout = sys.stdout, quiet
                try:
                    done = run.run(args.steps)
                finally:
                    sys.stdout = stdout
                    shell.magics_manager.registry["PiMagics"].pi_engine.close()
                    os.chdir(home)
            took = time.perf_counter() - started
    total = sum(done.values())
    print(f"{args.steps} steps (seed {args.seed}), every invariant held after each one")
    print("| writer | steps |")
    print("|---|---:|")
    for kind, count in sorted(done.items(), key=lambda kv: -kv[1]):
        print(f"| {kind} | {count} |")
    print(f"{took:.1f} s in all, {took / max(total, 1) * 1000:.0f} ms a step on average")
    print(f"prompts in the one conversation: {len(run.prompts)}; forks made: {len(run.forks)}")


if __name__ == "__main__":
    main()
