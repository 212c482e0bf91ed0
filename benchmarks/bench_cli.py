"""How fast pinb starts: `pinb --help`, `pinb context` and `%load_ext pinb`.

Run: ``.venv/bin/python benchmarks/bench_cli.py [--runs N] [--file SESSION] [--importtime]``.
Wall time of whole processes (start, imports, work, exit), medians of ``--runs``; the
column that matters is the time above a bare ``python -c pass``, which is the same on
every machine only as a ratio. ``--file`` defaults to a generated 1 MB legacy session (the
size of Pi's ``large-session.jsonl`` fixture). ``%load_ext pinb`` is timed inside an
interpreter that already has IPython loaded (a kernel's state when a notebook starts).
``--importtime`` adds the 20 slowest imports of each (``python -X importtime``, cumulative).
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


#: `%load_ext pinb` in a warm interpreter: IPython is loaded first, the load is timed alone.
LOAD_EXT = """
import sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
sys.stderr.write("LOAD_EXT\\n")
start = time.perf_counter()
shell.run_line_magic("load_ext", "pinb")
print((time.perf_counter() - start) * 1000)
"""


def load_ext_ms(runs: int) -> float:
    """Median of ``%load_ext pinb`` timed inside fresh interpreters."""
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", LOAD_EXT], check=True, capture_output=True, text=True
        )
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def import_table(command: list[str], after: str | None = None, top: int = 20) -> str:
    """The ``top`` imports of ``command`` by cumulative time (``after``: from that line on)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command], capture_output=True, text=True
    )
    lines = done.stderr.splitlines()
    if after is not None:
        lines = lines[max(i for i, line in enumerate(lines) if after in line) + 1 :]
    rows = []
    for line in lines:
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, total, name = (part.strip() for part in line[len("import time:") :].split("|"))
        rows.append((int(total), int(own), name))
    rows.sort(reverse=True)
    out = [
        f"{len(rows)} modules imported\n",
        "| module | cumulative ms | self ms |",
        "|---|---:|---:|",
    ]
    out += [
        f"| `{name}` | {total / 1000:.1f} | {own / 1000:.1f} |" for total, own, name in rows[:top]
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--file", type=Path, default=None)
    parser.add_argument("--importtime", action="store_true", help="add import-time tables")
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
    print(
        f"| `%load_ext pinb`, IPython already loaded (timed inside) | {load_ext_ms(args.runs):.0f} | |"
    )
    print(f"\nPython {sys.version.split()[0]}, medians of {args.runs}")
    if args.importtime:
        for label, command, after in (
            ("`pinb --help`", ["-m", "pinb", "--help"], None),
            ("`pinb context`", ["-m", "pinb", "context", str(session)], None),
            ("`%load_ext pinb` (after IPython)", ["-c", LOAD_EXT], "LOAD_EXT"),
        ):
            print(f"\n### {label}\n\n{import_table(command, after)}")


if __name__ == "__main__":
    main()
