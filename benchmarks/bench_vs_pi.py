"""pinb and the real Pi side by side: open, context and tree on the same files, in one run.

Run: ``.venv/bin/python benchmarks/bench_vs_pi.py [--runs N] [--fixtures DIR]``. Pi runs
through the harness the test suite uses (``tests/pi``: Pi 1.6.0 and v0.58.3 from npm,
Node 22), timed inside Node so process start is excluded; pinb is timed in this process.
Medians of ``--runs``; compare the ratios (the machine is noisy). Prints the Markdown
table docs/performance.md records.

Files: a synthetic 100,000-entry session (generated once into ``benchmarks/data``), two
long legacy (version 1) sessions generated like Pi's own real fixtures, and, when
``--fixtures`` (or ``$PINB_PI_FIXTURES``) names a folder holding Pi's real fixture files
``before-compaction.jsonl`` and ``large-session.jsonl``, those too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pinb.core import UNSET, Session, build_session_context
from pinb.testing.generate import SessionShape, generate_session
from tests.pi.reference import PiReference, ensure_installed

HERE = Path(__file__).resolve().parent


def median_ms(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def bare_parse_ms(path: Path, runs: int) -> float:
    def parse() -> None:
        for line in path.read_bytes().split(b"\n"):
            if line.strip():
                json.loads(line)

    return median_ms(parse, runs)


def pinb_times(path: Path, pi: str, runs: int) -> dict[str, float]:
    copies = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):  # like Pi's side: every open reads a file of its own
            copy = Path(tmp) / f"{i}-{path.name}"
            shutil.copyfile(path, copy)
            copies.append(copy)
        opened = iter(copies)
        kept: list[Session] = []  # freeing is not opening (Node frees later, too)
        open_ms = median_ms(lambda: kept.append(Session.open(next(opened), pi=pi)), runs)
        kept.clear()
    session = Session.open(path, pi=pi)
    # The context function itself: Session.build_context() keeps the leaf's context, which
    # would time a cache, not a build.
    context_ms = median_ms(lambda: build_session_context(session.index, UNSET, pi=pi), runs)
    tree_ms = median_ms(session.tree, runs)
    return {"open": open_ms, "context": context_ms, "tree": tree_ms}


def files(fixtures: Path | None) -> dict[str, Path]:
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    found: dict[str, Path] = {}
    if fixtures is not None:
        for name in ("before-compaction.jsonl", "large-session.jsonl"):
            if (fixtures / name).exists():
                found[f"Pi's {name}"] = fixtures / name
    made = {
        "legacy, 2 compactions (generated)": (
            "legacy-compacted.jsonl",
            SessionShape(entries=2400, main_depth=2400, branch_every=0, compaction_every=900),
            True,
        ),
        "legacy, long (generated)": (
            "legacy-long.jsonl",
            SessionShape(entries=1100, main_depth=1100, branch_every=0, compaction_every=0),
            True,
        ),
        "synthetic 100k entries": (
            "synthetic-100000.jsonl",
            SessionShape(
                entries=100_000, main_depth=60_000, compaction_every=5000, branch_every=60
            ),
            False,
        ),
    }
    for label, (name, shape, legacy) in made.items():
        path = data / name
        if not path.exists():
            generate_session(path, shape, seed=1, legacy=legacy)
        found[label] = path
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--fixtures", type=Path, default=os.environ.get("PINB_PI_FIXTURES"))
    args = parser.parse_args()
    root = ensure_installed()
    rows = []
    with PiReference("1.6.0", root) as pi16, PiReference("0.58.3", root) as pi058:
        for label, path in files(args.fixtures).items():
            runs = max(3, args.runs // 3) if path.stat().st_size > 20e6 else args.runs
            bare = bare_parse_ms(path, runs)
            for version, reference, target in (("1.6.0", pi16, "1.6"), ("0.58.3", pi058, "0.58")):
                theirs = reference.request("bench", path=str(path), runs=runs)
                ours = pinb_times(path, target, runs)
                rows.append((label, path.stat().st_size, version, bare, theirs, ours))
    print("| file | Pi | operation | Pi ms | pinb ms | pinb/Pi | pinb/bare json.loads |")
    print("|---|---|---|---:|---:|---:|---:|")
    for label, size, version, bare, theirs, ours in rows:
        for operation in ("open", "context", "tree"):
            ratio = ours[operation] / theirs[operation] if theirs[operation] else float("nan")
            vs_bare = f"{ours['open'] / bare:.2f}" if operation == "open" else ""
            print(
                f"| {label} ({size / 1e6:.1f} MB) | {version} | {operation} | "
                f"{theirs[operation]:.1f} | {ours[operation]:.1f} | **{ratio:.2f}** | {vs_bare} |"
            )
    print(f"\nPython {sys.version.split()[0]}, Node 22 from npm, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
