"""How fast the command line starts: `pinb --help` and `pinb context` against a bare interpreter.

Run: ``.venv/bin/python benchmarks/bench_cli.py [--runs N] [--file SESSION]``. Wall time of
whole processes (start, imports, work, exit), medians of ``--runs``; the column that
matters is the time above a bare ``python -c pass``, which is the same on every machine
only as a ratio. ``--file`` defaults to a generated 1 MB legacy session (the size of Pi's
``large-session.jsonl`` fixture).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pinb.testing.generate import SessionShape, generate_session

HERE = Path(__file__).resolve().parent


def wall_ms(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def one_megabyte_session() -> Path:
    path = HERE / "data" / "legacy-long.jsonl"  # the same file bench_vs_pi.py generates
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        shape = SessionShape(entries=1100, main_depth=1100, branch_every=0, compaction_every=0)
        generate_session(path, shape, seed=1, legacy=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--file", type=Path, default=None)
    args = parser.parse_args()
    session = args.file or one_megabyte_session()
    python = sys.executable
    pinb = [python, "-m", "pinb"]
    commands = {
        "bare interpreter (`python -c pass`)": [python, "-c", "pass"],
        "`import pinb`": [python, "-c", "import pinb"],
        "`pinb --help`": [*pinb, "--help"],
        f"`pinb context` of `{session.name}` ({session.stat().st_size / 1e6:.1f} MB)": [
            *pinb,
            "context",
            str(session),
        ],
        f"`pinb tokens` of `{session.name}`": [*pinb, "tokens", str(session)],
    }
    for command in commands.values():  # warm the file cache and .pyc files
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bare = None
    print("| command | wall ms | above bare |\n|---|---:|---:|")
    for label, command in commands.items():
        ms = wall_ms(command, args.runs)
        bare = ms if bare is None else bare
        above = "" if ms is bare else f"{ms - bare:.0f} ms"
        print(f"| {label} | {ms:.0f} | {above} |")
    print(f"\nPython {sys.version.split()[0]}, medians of {args.runs}")


if __name__ == "__main__":
    main()
