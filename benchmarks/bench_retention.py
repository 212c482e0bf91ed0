"""Benchmark the retention report: every compaction of a 100k-entry session, and a corpus.

Run: ``.venv/bin/python benchmarks/bench_retention.py [--runs 3] [--skip-corpus]``.

- **one big session**: the generated 100,000-entry session of ``bench_core.py`` (main line
  60,000 deep, a compaction every 5,000 main-line entries, a side branch every 60), opened
  once; then :func:`pinb.analysis.retention.session_retention` (every compaction scored),
  split into the core's part (the context before and after each compaction, the span, the
  chars/4 figures), extracting the facts, and judging them. Medians of ``--runs``.
- **a corpus**: 2,000 generated sessions (30 to 500 entries, compactions every 150 or 400
  main-line entries or none; made once into ``benchmarks/data/retention-2000``), the frame
  :func:`pinb.analysis.retention_frame.compaction_retention` over the folder.

The generated text is random words from a 39-word vocabulary: every fact shares most of its
words with every summary, the worst case for the word-overlap rule (no fact is rejected by
the quick test, so every window is compared).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinb.analysis.facts import extract_facts
from pinb.analysis.retention import retention_of_text, session_retention, span_messages
from pinb.core import Session
from pinb.core.accounting import estimated_by_role
from pinb.testing.generate import SessionShape, generate_session

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


def median_time(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def big_session(entries: int = 100_000, depth: int = 60_000) -> Path:
    path = DATA / f"synthetic-{entries}.jsonl"
    if not path.exists():
        shape = SessionShape(
            entries=entries, main_depth=depth, compaction_every=5000, branch_every=60
        )
        generate_session(path, shape, seed=1)
    return path


def corpus(count: int = 2_000) -> Path:
    folder = DATA / f"retention-{count}"
    done = folder / ".complete"
    if done.exists():
        return folder
    rng = random.Random(43)
    for i in range(count):
        entries = rng.randint(30, 500)
        shape = SessionShape(
            entries=entries,
            main_depth=max(10, entries * 3 // 5),
            compaction_every=rng.choice((0, 150, 400)),
            branch_every=rng.choice((0, 40, 60)),
        )
        target = folder / f"project-{i % 20}" / f"session-{i:04d}.jsonl"
        if not target.exists():
            generate_session(target, shape, seed=2000 + i)
    done.write_text("")
    return folder


def parts(session: Session) -> tuple[float, float, float, int]:
    """Seconds in the core, in extracting facts, in judging them; and the facts found."""
    start = time.perf_counter()
    spans = []
    for entry in (e for e in session.entries if e.type == "compaction"):
        before = session.build_context(entry.raw["parentId"])
        after = session.build_context(entry.id)
        summarized, kept, _ = span_messages(before, entry.raw.get("firstKeptEntryId"))
        sum(estimated_by_role(before).values()), sum(estimated_by_role(after).values())
        spans.append((summarized, kept, entry.raw.get("summary") or ""))
    core = time.perf_counter()
    facts = [extract_facts(summarized) for summarized, _, _ in spans]
    extracted = time.perf_counter()
    for found, (_, kept, summary) in zip(facts, spans, strict=True):
        retention_of_text(found, summary, kept)
    judged = time.perf_counter()
    return core - start, extracted - core, judged - extracted, sum(map(len, facts))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-corpus", action="store_true")
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)

    path = big_session()
    session = Session.open(path)
    compactions = sum(1 for e in session.entries if e.type == "compaction")
    session_retention(session)  # the first run decodes the entries the contexts need
    total = median_time(lambda: session_retention(session), args.runs)
    split = [parts(session) for _ in range(args.runs)]
    core, extract, judge = (statistics.median(s[i] for s in split) for i in range(3))
    facts = split[0][3]
    rows = [
        ("session", f"{len(session.entries):,} entries, {path.stat().st_size / 1e6:.0f} MB, "
                    f"{compactions} compactions, {facts:,} facts"),
        ("`session_retention` (every compaction scored; open excluded)", f"{total * 1000:.0f} ms"),
        ("  of which the core: contexts before/after, the span, chars/4", f"{core * 1000:.0f} ms"),
        ("  extracting the facts", f"{extract * 1000:.0f} ms"),
        ("  judging them (summary and kept messages)", f"{judge * 1000:.0f} ms"),
    ]  # fmt: skip
    if not args.skip_corpus:
        from pinb.analysis.retention_frame import compaction_retention

        folder = corpus()
        files = sum(1 for _ in folder.rglob("*.jsonl"))
        start = time.perf_counter()
        frame = compaction_retention(folder, progress=False)
        seconds = time.perf_counter() - start
        rows.append((f"`compaction_retention` frame over {files:,} sessions",
                     f"{seconds:.1f} s ({len(frame):,} compactions, "
                     f"{seconds / max(1, len(frame)) * 1000:.1f} ms each, files opened included)"))  # fmt: skip
    print("| what | time |\n|---|---|")
    for what, value in rows:
        print(f"| {what} | {value} |")


if __name__ == "__main__":
    main()
