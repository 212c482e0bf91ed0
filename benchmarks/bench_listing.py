"""Measure listing and search of many sessions (with and without the index) and dask partitioning.

Run: ``.venv/bin/python benchmarks/bench_listing.py [--sessions 1000] [--runs 5]``. Sessions
are generated into a temporary agent directory (``PI_CODING_AGENT_DIR`` is pointed there,
nothing of the real home is touched). Prints Markdown tables (medians of the runs) for
docs/performance.md, and exits non-zero when the warm indexed listing of the sessions takes
more than 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

_VOCABULARY = (
    "parser compaction branch session token leaf context model tool bash read write edit "
    "refactor test flaky retry cache index query sqlite migration timeout network proxy "
    "render widget notebook kernel frame plot cost usage summary label tree path"
)
WORDS = _VOCABULARY.split()
LIMIT_S = 0.5


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _session_lines(rng: random.Random, cwd: str, start: datetime) -> list[bytes]:
    from pinb.core.file.write import serialize_line

    def iso(t: datetime) -> str:
        return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    header = {"type": "session", "version": 3, "id": str(uuid.UUID(int=rng.getrandbits(128))),
              "timestamp": iso(start), "cwd": cwd}  # fmt: skip
    lines = [serialize_line(header)]
    parent: str | None = None
    now = start
    for turn in range(rng.randint(3, 15)):
        for message in _turn(rng, turn, now):
            now += timedelta(seconds=rng.randint(1, 30))
            entry_id = f"{rng.getrandbits(32):08x}"
            lines.append(serialize_line({"type": "message", "id": entry_id, "parentId": parent,
                                         "timestamp": iso(now), "message": message}))  # fmt: skip
            parent = entry_id
    return lines


def _turn(rng: random.Random, turn: int, now: datetime) -> list[dict[str, Any]]:
    ms = int(now.timestamp() * 1000)
    usage = {"input": 1000 * (turn + 1), "output": 200, "cacheRead": 0, "cacheWrite": 0,
             "totalTokens": 1000 * (turn + 1) + 200,
             "cost": {"input": 0.003, "output": 0.003, "cacheRead": 0, "cacheWrite": 0, "total": 0.006}}  # fmt: skip
    call = {"type": "toolCall", "id": f"call_{turn}", "name": rng.choice(["read", "bash", "edit"]),
            "arguments": {"path": f"src/{rng.choice(WORDS)}.py"}}  # fmt: skip
    return [
        {"role": "user", "content": [{"type": "text", "text": _text(rng, 30)}], "timestamp": ms},
        {"role": "assistant", "content": [{"type": "text", "text": _text(rng, 60)}, call],
         "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
         "usage": usage, "stopReason": "toolUse", "timestamp": ms + 1},
        {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
         "content": [{"type": "text", "text": _text(rng, 200)}], "isError": False,
         "timestamp": ms + 2},
    ]  # fmt: skip


def generate(root: Path, count: int, projects: int = 20) -> list[Path]:
    """``count`` sessions spread over ``projects`` project folders under ``root``."""
    from pinb.core.file.paths import encode_cwd, session_file_name
    from pinb.core.file.write import atomic_write_lines

    rng = random.Random(8)
    base = datetime(2025, 1, 1, tzinfo=UTC)
    paths = []
    for i in range(count):
        cwd = f"/home/dev/project-{i % projects}"
        start = base + timedelta(minutes=37 * i)
        lines = _session_lines(rng, cwd, start)
        header_id = lines[0].split(b'"id":"')[1].split(b'"')[0].decode()
        stamp = start.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        path = root / encode_cwd(cwd) / session_file_name(stamp, header_id)
        atomic_write_lines(path, lines, exclusive=True)
        paths.append(path)
    return paths


def timed(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def bench_listing(root: Path, count: int, runs: int) -> float:
    from pinb.analysis.searching.index import (
        SessionCatalog,
        default_index_path,
        list_indexed,
        search,
    )
    from pinb.core.file import listing

    size = sum(p.stat().st_size for p in root.glob("*/*.jsonl"))
    rows: list[tuple[str, float, str]] = []
    listing._cache.clear()
    cold_core, infos = timed(lambda: listing.list_all_sessions(root), 1)
    rows.append(
        (
            "core `list_all_sessions`, first call (reads every file)",
            cold_core,
            f"{len(infos)} sessions",
        )
    )
    warm_core, _ = timed(lambda: listing.list_all_sessions(root), runs)
    rows.append(("core `list_all_sessions`, same process again (in-memory cache)", warm_core, ""))

    def fresh_core() -> list[Any]:
        listing._cache.clear()  # a new process: nothing cached
        return listing.list_all_sessions(root)

    new_core, _ = timed(fresh_core, max(1, runs // 2))
    rows.append(("core listing in a new process (no cache)", new_core, ""))

    def cold_index() -> Any:
        for suffix in ("", "-wal", "-shm"):
            Path(str(default_index_path()) + suffix).unlink(missing_ok=True)
        listing._cache.clear()
        with SessionCatalog(root=root) as catalog:
            return catalog.refresh()

    build, stats = timed(cold_index, 1)
    rows.append(("index: listing rows from nothing", build, f"{stats.updated} files read"))

    def search_index() -> Any:
        with SessionCatalog(root=root) as catalog:
            return catalog.refresh_search()

    built, stats = timed(search_index, 1)
    rows.append(("index: full-text entries, built for a first search", built, ""))
    warm, listed = timed(lambda: list_indexed(root=root), runs)
    rows.append(
        (
            "**index: warm listing (new connection, stat every file)**",
            warm,
            f"{len(listed)} sessions",
        )
    )
    with_text, _ = timed(lambda: list_indexed(root=root, with_text=True), runs)
    rows.append(("index: warm listing with `all_messages_text`", with_text, ""))
    one = root / "--home-dev-project-3--"
    folder, listed_one = timed(lambda: list_indexed(one, root=root), runs)
    rows.append(
        ("index: warm listing of one project folder", folder, f"{len(listed_one)} sessions")
    )
    found, hits = timed(lambda: search("flaky migration", root=root, limit=20), runs)
    rows.append(("index: warm search, two words, 20 hits", found, f"{len(hits)} hits"))
    touched = sorted(root.glob("*/*.jsonl"))[:10]
    for path in touched:
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    listing._cache.clear()
    refresh, _ = timed(lambda: list_indexed(root=root), 1)
    rows.append(("index: listing after 10 files changed (re-reads those)", refresh, ""))

    print(
        f"\n### Listing {count} sessions ({size / 1e6:.1f} MB, {len(list(root.iterdir()))} projects)\n"
    )
    print("| operation | median time | note |")
    print("|---|---:|---|")
    for name, seconds, note in rows:
        print(f"| {name} | {seconds * 1000:.1f} ms | {note} |")
    return warm


def bench_dask(root: Path, runs: int) -> None:
    import dask
    import distributed

    from pinb.analysis import dask as pdask

    files = sorted(root.glob("*/*.jsonl"))

    def run(frame: Any) -> Any:
        return frame.groupby("type").size().compute()

    results = []
    configs = [("one file per partition", {"files_per_partition": 1}),
               ("grouped (default: ~16 MiB per partition)", {}),
               ("grouped into 8 partitions", {"npartitions": 8})]  # fmt: skip
    with dask.config.set(scheduler="threads"):
        for name, options in configs:
            frame = pdask.read_entries(files, **options)
            seconds, _ = timed(lambda frame=frame: run(frame), runs)
            results.append(("threads (local)", name, frame.npartitions, seconds))
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 dashboard_address=None, silence_logs=40) as cluster,
        distributed.Client(cluster),
    ):  # fmt: skip
        for name, options in configs:
            frame = pdask.read_entries(files, **options)
            seconds, _ = timed(lambda frame=frame: run(frame), runs)
            results.append(("LocalCluster (2 processes)", name, frame.npartitions, seconds))
    print(f"\n### Dask: entries of {len(files)} files, `groupby('type').size()`\n")
    print("| scheduler | partitioning | partitions | median time | vs one file per partition |")
    print("|---|---|---:|---:|---:|")
    baseline: dict[str, float] = {}
    for scheduler, name, parts, seconds in results:
        baseline.setdefault(scheduler, seconds)
        ratio = baseline[scheduler] / seconds
        print(f"| {scheduler} | {name} | {parts} | {seconds:.2f} s | {ratio:.1f}× faster |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PI_CODING_AGENT_DIR"] = tmp
        root = Path(tmp) / "sessions"
        start = time.perf_counter()
        generate(root, args.sessions)
        print(
            f"generated {args.sessions} sessions in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
        warm = bench_listing(root, args.sessions, args.runs)
        if not args.no_dask:
            bench_dask(root, max(1, args.runs // 2))
    if warm > LIMIT_S:
        print(f"\nFAIL: warm indexed listing took {warm:.3f} s > {LIMIT_S} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
