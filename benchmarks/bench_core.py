"""Benchmark the session core on a synthetic 100k-entry session and a long legacy session.

Run: ``.venv/bin/python benchmarks/bench_core.py [--entries N]``. Prints a Markdown table
(medians of several runs) that docs/performance.md records. Compare ratios within one run:
the machine is noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinb.core import Session, build_session_context, estimate_context_tokens, estimate_tokens
from pinb.core.format.models import parse_entry
from pinb.testing.generate import SessionShape, generate_session

HERE = Path(__file__).resolve().parent


def median_time(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bare_parse(path: Path) -> list[Any]:
    text = path.read_bytes().decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _legacy_stand_in(data: Path) -> Path:
    """A long version 1 session shaped like Pi's real ``before-compaction.jsonl``."""
    path = data / "legacy-compacted.jsonl"
    if not path.exists():
        # The same file bench_vs_pi.py generates.
        shape = SessionShape(entries=2400, main_depth=2400, branch_every=0, compaction_every=900)
        generate_session(path, shape, seed=1, legacy=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=60_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--fixture",
        type=Path,
        default=os.environ.get("PINB_PI_FIXTURE"),
        help="a real Pi session to time open + context on (default: a generated legacy one)",
    )
    args = parser.parse_args()

    data = HERE / "data"
    data.mkdir(exist_ok=True)
    big = data / f"synthetic-{args.entries}.jsonl"
    if not big.exists():
        shape = SessionShape(
            entries=args.entries, main_depth=args.depth, compaction_every=5000, branch_every=60
        )
        generate_session(big, shape, seed=1)
    rows: list[tuple[str, str]] = []
    size_mb = big.stat().st_size / 1e6

    bare = median_time(lambda: bare_parse(big), args.runs)
    opened = median_time(lambda: Session.open(big), args.runs)
    session = Session.open(big)
    results = sum(1 for e in session.entries if e.role == "toolResult")
    deepest = max(
        session.entries, key=lambda e: len(session.path_to(e.id)) if e is session.entries[-1] else 0
    )
    depth = len(session.path_to(deepest.id))
    leaf = session.entries[-1].id
    # The context function itself (Session.build_context keeps the leaf's context).
    context = median_time(lambda: build_session_context(session.index, leaf), args.runs)
    half = session.path_to(leaf)[depth // 2].id
    context_half = median_time(lambda: build_session_context(session.index, half), args.runs)
    tree = median_time(session.tree, max(2, args.runs // 2))
    messages = session.build_context(leaf).messages
    estimate = median_time(
        lambda: (estimate_context_tokens(messages), [estimate_tokens(m) for m in messages]),
        args.runs,
    )
    eager = median_time(lambda: [parse_entry(e.raw) for e in session.entries], 1)

    rows += [
        (
            "synthetic file",
            f"{args.entries:,} entries, {size_mb:.0f} MB, {results / args.entries:.0%} tool results, path depth {depth:,}",
        ),
        ("bare `json.loads` of every line", f"{bare * 1000:.0f} ms"),
        (
            "`Session.open` (parse, index, problems)",
            f"{opened * 1000:.0f} ms ({opened / bare:.2f}× bare)",
        ),
        (
            "eager pydantic validation of every entry (not done on open)",
            f"{eager * 1000:.0f} ms ({eager / bare:.2f}× bare)",
        ),
        (f"context from the deepest leaf (depth {depth:,})", f"{context * 1000:.1f} ms"),
        (
            f"context at half depth ({depth // 2:,})",
            f"{context_half * 1000:.1f} ms (ratio {context / context_half:.2f} for 2× depth)",
        ),
        ("tree of all entries", f"{tree * 1000:.0f} ms"),
        ("token estimate of every context message", f"{estimate * 1000:.1f} ms"),
    ]

    fixture = args.fixture or _legacy_stand_in(data)
    fixture_time = median_time(lambda: Session.open(fixture).build_context(), args.runs * 2)
    rows.append(
        (
            f"open + context of `{fixture.name}` ({fixture.stat().st_size / 1e6:.1f} MB, v1)",
            f"{fixture_time * 1000:.1f} ms",
        )
    )

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "append.jsonl"
        target.write_bytes(fixture.read_bytes())
        appender = Session.open(target)
        appender.append_message(
            {"role": "user", "content": "warm up (migrates the v1 file)", "timestamp": 1}
        )
        n = 2000
        message = {"role": "user", "content": "x" * 200, "timestamp": 1}
        start = time.perf_counter()
        for _ in range(n):
            appender.append_message(message, validate=False)
        per_append = (time.perf_counter() - start) / n
        start = time.perf_counter()
        for _ in range(n):
            appender.append_message(message)
        per_validated = (time.perf_counter() - start) / n
        rows.append(
            (
                "append one entry (locked, flushed)",
                f"{per_append * 1e3:.3f} ms ({per_validated * 1e3:.3f} ms with validation)",
            )
        )

        watcher = Session.open(target)
        times = []
        for count in (10, 100, 1000):
            for _ in range(count):
                appender.append_message(message, validate=False)
            start = time.perf_counter()
            new = watcher.refresh()
            times.append((count, time.perf_counter() - start, len(new)))
        rows.append(
            (
                "reload after an external append",
                ", ".join(f"{c} entries: {t * 1000:.2f} ms" for c, t, _ in times),
            )
        )

    print("| measurement | result |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
