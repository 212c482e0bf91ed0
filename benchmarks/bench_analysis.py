"""Benchmark the compaction ledger, the usage calibration, what-if and branch comparison.

Run: ``.venv/bin/python benchmarks/bench_analysis.py [--sessions 1000] [--runs 3]``.
Sessions are the demo story (:func:`pinb.testing.story.write_story_session`: a wrong turn
with a branch summary, compactions on small windows) under varying seeds, task lists,
windows and models, and one in twenty a bigger generated session
(:func:`pinb.testing.generate_session`). They are written once into
``benchmarks/data/analysis-<count>/`` (git-ignored) and reused. Prints a Markdown table of
medians of ``--runs`` runs. Compare ratios within one run: the machine is noisy.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinb.analysis.compaction.ledger import compaction_ledger, usage_calibration, what_if
from pinb.analysis.compare import compare_branches
from pinb.analysis.frames import open_session
from pinb.core import Session
from pinb.testing.generate import SessionShape, generate_session
from pinb.testing.story import EXTRA_TASKS, story_tasks, write_story_session

HERE = Path(__file__).resolve().parent
#: Bumped when the generated data changes, so an old cache is not reused.
DATA_VERSION = 1
WINDOWS = (None, 4096, 5000, 8000, 16000)
#: Kept tokens tried by what-if (the story's contexts are a few thousand tokens).
KEEP = (500, 1_000, 2_000)
MODELS = ("anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5", "openai/gpt-4.1-mini")


def _tasks(rng: random.Random) -> Any:
    extras = EXTRA_TASKS[: rng.randint(0, len(EXTRA_TASKS))]
    return story_tasks(wrong_turn=rng.random() < 0.85, extras=extras)


def generate(folder: Path, count: int) -> list[Path]:
    """``count`` sessions in ``folder`` (reused when a complete set is already there)."""
    marker = folder / f"complete-v{DATA_VERSION}"
    if marker.exists():
        return sorted(folder.rglob("*.jsonl"))
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.rglob("*.jsonl"):
        stale.unlink()
    rng = random.Random(17)
    for i in range(count):
        project = folder / f"project-{i % 25:02d}"
        if i % 20 == 19:
            entries = rng.choice((1_000, 2_000, 4_000))
            shape = SessionShape(entries=entries, main_depth=entries * 3 // 5)
            generate_session(project / f"generated-{i:04d}.jsonl", shape, seed=i)
            continue
        write_story_session(
            project,
            seed=i,
            tasks=_tasks(rng),
            model=rng.choice(MODELS),
            thinking=rng.random() < 0.7,
            context_window=rng.choice(WINDOWS),
        )
    marker.write_text(f"{count} sessions\n")
    return sorted(folder.rglob("*.jsonl"))


def two_leaves(session: Session) -> tuple[str, str]:
    """The wrong turn's leaf (a branch summary's ``fromId``) or another leaf, and the leaf."""
    leaf = session.leaf_id
    for entry in session.entries:
        if entry.type == "branch_summary" and isinstance(entry.raw.get("fromId"), str):
            return entry.raw["fromId"], leaf
    leaves = [
        e.id
        for e in session.entries
        if isinstance(e.id, str) and not e.is_navigation and not session.children(e.id)
    ]
    others = [x for x in leaves if x != leaf]
    return (others[-1] if others else leaf), leaf


def replay_leaf(session: Session) -> Any:
    """The leaf, or the parent of a compaction the path ends with (nothing to cut there)."""
    leaf = session.leaf
    if leaf is not None and leaf.type == "compaction":
        return leaf.parent_id
    return session.leaf_id


def timed(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None, help="where sessions are cached")
    args = parser.parse_args(argv)
    folder = args.data or HERE / "data" / f"analysis-{args.sessions}"
    with tempfile.TemporaryDirectory() as agent:
        os.environ["PI_CODING_AGENT_DIR"] = agent  # nothing of the real home is read
        start = time.perf_counter()
        paths = generate(folder, args.sessions)
        made = time.perf_counter() - start
        print(f"{len(paths)} sessions ready in {made:.1f} s ({folder})", file=sys.stderr)
        return run(paths, args.runs)


def run(paths: list[Path], runs: int) -> int:
    n = len(paths)
    size = sum(p.stat().st_size for p in paths)
    entries = 0
    rows: list[tuple[str, float, str]] = []

    opened_s, sessions = timed(lambda: [open_session(p) for p in paths], runs)
    entries = sum(len(s.entries) for s in sessions)
    rows.append(("open every session (baseline, included below where files are read)", opened_s, f"{entries:,} entries"))  # fmt: skip

    ledger_s, ledger = timed(lambda: compaction_ledger(paths), runs)
    rows.append(("`compaction_ledger` over the files", ledger_s, f"{len(ledger):,} compactions"))
    in_memory_s, _ = timed(lambda: compaction_ledger(sessions), runs)
    rows.append(("`compaction_ledger` over open sessions", in_memory_s, ""))
    view_s, _ = timed(lambda: (ledger.to_text(), ledger.to_html(), ledger.to_frame()), runs)
    rows.append(("ledger text + HTML + frame", view_s, ""))

    calibration_s, calibration = timed(lambda: usage_calibration(sessions), runs)
    points = sum(r.n for r in calibration.rows)
    rows.append(("`usage_calibration` over open sessions", calibration_s, f"{points:,} replies"))

    pairs = [(s, *two_leaves(s)) for s in sessions]
    compare_s, compared = timed(lambda: [compare_branches(s, a, b) for s, a, b in pairs], runs)
    calls = sum(len(c.a.tool_calls) + len(c.b.tool_calls) for c in compared)
    rows.append(("`compare` wrong turn vs active leaf, every session", compare_s, f"{calls:,} tool calls diffed"))  # fmt: skip
    render_s, _ = timed(lambda: [(c.to_text(), c.to_html()) for c in compared], runs)
    rows.append(("comparison text + HTML, every session", render_s, ""))

    what_s, results = timed(
        lambda: [what_if(s, replay_leaf(s), keep_recent_tokens=KEEP) for s in sessions], runs
    )
    plans = sum(1 for w in results for r in w.rows if r.nothing is None)
    rows.append(("`what_if`, keep 500/1,000/2,000, at the leaf (before a final compaction)", what_s, f"{plans:,} cuts planned"))  # fmt: skip

    print(f"\n### Analysis of {n:,} sessions ({size / 1e6:.1f} MB, {entries:,} entries)\n")
    print("| operation | median total | per session | note |")
    print("|---|---:|---:|---|")
    for name, seconds, note in rows:
        print(f"| {name} | {seconds:.2f} s | {seconds / n * 1000:.2f} ms | {note} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
