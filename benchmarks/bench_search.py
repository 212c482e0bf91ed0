"""Measure the citable search index and fork-aware usage totals over 1,000 sessions.

Run: ``.venv/bin/python benchmarks/bench_search.py [--sessions 1000] [--runs 5]``. The
sessions (story sessions of varying seeds, generated branchy sessions, and forks and
clones of some of them) are written once into ``benchmarks/data/search-<n>/`` (gitignored)
and reused; ``PI_CODING_AGENT_DIR`` points there, nothing of the real home is touched.
Prints Markdown tables (medians of the runs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: Bumped when the recipe below changes, so a cached data set is written again.
RECIPE = 1
_MODELS = ("anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5", "openai/gpt-4.1-mini")


def timed(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def generate(agent: Path, count: int) -> dict[str, int]:
    """``count`` session files: ~60% stories, ~25% generated sessions, ~15% forks of stories."""
    from pinb.core.forks import clone_session, fork_session
    from pinb.core.paths import sessions_dir_for
    from pinb.testing import SessionShape, generate_session
    from pinb.testing.story import write_story_session

    kinds = {"story": 0, "generated": 0, "fork": 0}
    shape = SessionShape(entries=160, main_depth=110, tool_result_chars=600,
                         compaction_every=0, branch_every=40)  # fmt: skip
    base = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    written = 0
    i = 0
    while written < count:
        project = f"/home/dev/project-{i % 20}"
        folder = sessions_dir_for(project)
        if i % 4 == 3:
            generate_session(folder / f"generated-{i:05d}.jsonl",
                             SessionShape(**{**shape.__dict__, "cwd": project}), seed=i)  # fmt: skip
            kinds["generated"] += 1
            written += 1
        else:
            story = write_story_session(
                folder, seed=i, cwd=project, model=_MODELS[i % 3],
                start=base + timedelta(hours=7 * i), context_window=40_000 if i % 5 == 0 else None,
            )  # fmt: skip
            kinds["story"] += 1
            written += 1
            if i % 4 == 1 and written < count:
                users = [e.id for e in story.entries if e.role == "user"]
                forked, _ = fork_session(story, users[len(users) // 2])
                forked.append_message({"role": "user", "timestamp": 0,
                                       "content": [{"type": "text", "text": "try it another way"}]})  # fmt: skip
                kinds["fork"] += 1
                written += 1
            elif i % 8 == 2 and written < count:
                clone_session(story)
                kinds["fork"] += 1
                written += 1
        i += 1
    return kinds


def ensure_data(count: int) -> Path:
    """The agent folder of the data set, written on first use."""
    agent = HERE / "data" / f"search-{count}"
    marker = agent / f"recipe-{RECIPE}"
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    if not marker.exists():
        shutil.rmtree(agent, ignore_errors=True)
        agent.mkdir(parents=True)
        start = time.perf_counter()
        kinds = generate(agent, count)
        print(f"generated {kinds} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        marker.write_text(repr(kinds))
    return agent


def bench_search(agent: Path, runs: int) -> None:
    from pinb.analysis.index import SessionCatalog, default_index_path, search

    root = agent / "sessions"
    files = sorted(root.glob("*/*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    rows: list[tuple[str, float, str]] = []

    def cold() -> Any:
        for suffix in ("", "-wal", "-shm"):
            Path(str(default_index_path()) + suffix).unlink(missing_ok=True)
        with SessionCatalog() as catalog:
            return catalog.refresh()

    build, stats = timed(cold, 1)
    entries = _count("SELECT count(*) FROM entries")
    rows.append(("index: build from nothing (every entry)", build,
                 f"{stats.updated} files, {entries:,} entries, "
                 f"{default_index_path().stat().st_size / 1e6:.0f} MB"))  # fmt: skip
    with SessionCatalog() as catalog:
        warm, _ = timed(catalog.refresh, runs)
    rows.append(("index: refresh when nothing changed (stat every file)", warm, ""))
    queries = [
        ("one word", "median"),
        ("two words", "median empty"),
        ("common word", "the"),
        ("phrase", '"empty list"'),
        ("prefix", "summar*"),
        ("word, excluded word", "median -test"),
        ("word + role filter", "median role:user"),
        ("word + tool filter", "test tool:bash"),
        ("file filter only", "file:core.py"),
        ("filters only", "tool:bash role:toolResult"),
        ("word + session + dates", "median after:2026-02-01 before:2026-06-01"),
    ]
    for name, query in queries:
        seconds, hits = timed(lambda q=query: search(q, limit=20), runs)
        copies = sum(len(h.copies) for h in hits)
        rows.append((f"search: {name} `{query}`", seconds,
                     f"{len(hits)} hits, {copies:,} copies folded"))  # fmt: skip
    seconds, hits = timed(lambda: search("median", limit=20, fold=False), runs)
    rows.append(("search: one word, not folded", seconds, f"{len(hits)} hits"))
    print(f"\n### Citable search over {len(files)} sessions ({size / 1e6:.0f} MB)\n")
    _table(rows)


def _count(sql: str) -> int:
    import sqlite3

    from pinb.analysis.index import default_index_path

    db = sqlite3.connect(default_index_path())
    try:
        return int(db.execute(sql).fetchone()[0])
    finally:
        db.close()


def bench_totals(agent: Path, runs: int) -> None:
    from pinb.analysis.frames import sessions_frame
    from pinb.analysis.totals import usage_totals

    root = agent / "sessions"
    rows: list[tuple[str, float, str]] = []
    naive, frame = timed(lambda: sessions_frame(root, progress=False), runs)
    rows.append(("`sessions_frame` (per-file sums, for comparison)", naive,
                 f"cost ${frame.cost.sum():,.2f} summed per file"))  # fmt: skip
    for by in ("session", "model", "day", "branch", "root"):
        seconds, totals = timed(lambda by=by: usage_totals(root, by, progress=False), runs)
        rows.append((f"`usage_totals(by={by!r})`", seconds,
                     f"{len(totals)} rows, cost ${totals.cost.sum():,.2f}, "
                     f"{int(totals.copies_skipped.sum()):,} copies skipped"))  # fmt: skip
    seconds, totals = timed(lambda: usage_totals(root, "model", dedupe=False, progress=False), runs)
    rows.append(("`usage_totals(by='model', dedupe=False)`", seconds,
                 f"cost ${totals.cost.sum():,.2f}"))  # fmt: skip
    forks = int((frame.relation != "root").sum())
    print(f"\n### Usage totals over {len(frame)} sessions ({forks} forks among them)\n")
    _table(rows)


def _table(rows: list[tuple[str, float, str]]) -> None:
    print("| operation | median time | note |")
    print("|---|---:|---|")
    for name, seconds, note in rows:
        print(f"| {name} | {seconds * 1000:,.1f} ms | {note} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))  # the checkout's pinb, not an installed one
    agent = ensure_data(args.sessions)
    bench_search(agent, args.runs)
    bench_totals(agent, max(1, args.runs // 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
