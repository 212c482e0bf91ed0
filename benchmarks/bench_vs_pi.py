"""pinb and the real Pi side by side, in one run: open, first context, tree, listing, memory.

Run: ``.venv/bin/python benchmarks/bench_vs_pi.py [--rounds 7] [--skip-listing]``. Pi 1.6.0
runs in one Node process kept alive (the harness the test suite uses, ``tests/pi``), pinb in
this process; process start is excluded on both sides. Every figure is taken in
interleaved rounds (Pi, then pinb, then the other way round), so a busy machine slows both
alike: compare the ratios, which are medians of the per-round ratios.

- **open / context / tree**: on generated sessions of 1k, 10k and 100k entries of two
  shapes (``pinb.testing.generate``: tool results of about 2 KB, a side branch every 60):
  *compacted* (a compaction every 5,000 main-line entries; the leaf is 60% deep) and
  *long* (no compaction at all and a leaf 63.5% deep — 63,500 entries at 100k — so the
  first context holds the whole path: the shape of files from other generators and of
  sessions run without compaction). Each open reads a fresh copy, with the collector run
  first on both sides; *context* is the first context built after that open (pinb:
  ``build_session_context`` of the file's leaf; Pi: ``buildSessionContext``), *tree* the
  first tree. Memory: the heap Pi's open holds, beside what pinb's open holds (RSS growth)
  and its peak (a fresh interpreter's peak RSS above its baseline).
- **listing**: 2,000 sessions over 20 projects, laid out like Pi's sessions folder
  (generated once, seeded, into ``benchmarks/data/listing-2000``). Pi's
  ``SessionManager.listAll()`` (what ``/resume`` lists) beside what ``pinb ls --all`` calls
  (``list_indexed``): *first ever* (no index, nothing cached), *index kept* (a new process:
  the index on disk, no in-process cache) and *warm* (the same process again). Then the
  first search (it builds the full-text index) and a second one.

Prints the Markdown tables docs/performance.md records. ``--shapes long`` measures one
shape; ``--files`` instead runs the older comparison on fixed files (medians of Pi's own
``bench`` op, Pi 1.6.0 and v0.58.3).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pinb.core import UNSET, Session, build_session_context
from pinb.testing.generate import SessionShape, generate_session
from tests.pi.reference import PiReference, ensure_installed

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SIZES = (1_000, 10_000, 100_000)
LISTING_SESSIONS = 2_000
LISTING_PROJECTS = 20


#: The shapes of generated session measured: name -> (file prefix, leaf depth per entry,
#: compaction every so many main-line entries: 0 for none).
SHAPES = {"compacted": ("synthetic", 0.6, 5000), "long": ("long", 0.635, 0)}


def session_file(entries: int, shape: str = "compacted") -> Path:
    """The generated session of ``entries`` entries of a shape (made once, seeded)."""
    prefix, depth, every = SHAPES[shape]
    path = DATA / f"{prefix}-{entries}.jsonl"
    if not path.exists():
        made = SessionShape(
            entries=entries,
            main_depth=round(entries * depth),
            compaction_every=every,
            branch_every=60,
        )
        generate_session(path, made, seed=1)
    return path


def listing_corpus(count: int = LISTING_SESSIONS, projects: int = LISTING_PROJECTS) -> Path:
    """An agent folder of ``count`` generated sessions over ``projects`` projects (made once).

    Sizes vary from a few dozen entries to about five hundred (mean ≈ 265, so the corpus is
    about 490 MB), each session started at its own time, so the listing's order is real.
    """
    from pinb.core.file.paths import encode_cwd, session_file_name
    from pinb.core.js.wire import loads_line

    agent = DATA / f"listing-{count}"
    done = agent / ".complete"
    if done.exists():
        return agent
    shutil.rmtree(agent, ignore_errors=True)
    rng = random.Random(25)
    base = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(count):
        entries = rng.randint(30, 500)
        cwd = f"/home/dev/project-{i % projects}"
        shape = SessionShape(
            entries=entries,
            main_depth=max(10, entries * 3 // 5),
            compaction_every=rng.choice((0, 150, 400)),
            branch_every=rng.choice((0, 40, 60)),
            cwd=cwd,
            start=base + timedelta(hours=7 * i, minutes=rng.randint(0, 300)),
        )
        scratch = agent / "tmp.jsonl"
        generate_session(scratch, shape, seed=1000 + i)
        with open(scratch, "rb") as handle:
            header = loads_line(handle.readline())
        folder = agent / "sessions" / encode_cwd(cwd)
        folder.mkdir(parents=True, exist_ok=True)
        scratch.rename(folder / session_file_name(header["timestamp"], header["id"]))
    done.write_text("")
    return agent


# -- open, context, tree -------------------------------------------------------------------


def pinb_round(path: Path, scratch: Path) -> dict[str, float]:
    copy = scratch / path.name
    shutil.copyfile(path, copy)
    gc.collect()
    before = _rss()
    times: dict[str, float] = {}
    session: Session | None = None

    def open_it() -> None:
        nonlocal session
        session = Session.open(copy)

    for key, fn in (
        ("open", open_it),
        ("context", lambda: build_session_context(session.index, UNSET)),
        ("tree", lambda: session.tree()),
    ):
        cpu = time.process_time()
        start = time.perf_counter()
        fn()
        times[key] = (time.perf_counter() - start) * 1000
        times[key + "Cpu"] = (time.process_time() - cpu) * 1000
        if key == "open":
            times["held"] = _rss() - before
    copy.unlink()
    return times


def _rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# VmHWM, the peak RSS of this process image (ru_maxrss would carry the parent's over exec).
_PEAK = """
import sys
sys.path.insert(0, {root!r})
def hwm():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
from pinb.core import Session
{prepare}
base = hwm()
kept = {action}
print(hwm() - base)
"""


def peak_rss_mb(action: str, prepare: str = "", env: dict[str, str] | None = None) -> float:
    """Peak RSS (MB) of ``action`` in a fresh interpreter, above its peak before it."""
    script = _PEAK.format(root=str(HERE.parent), prepare=prepare, action=action)
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def bench_open(pi: PiReference, rounds: int, shape: str = "compacted") -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for entries in SIZES:
            path = session_file(entries, shape)
            n = rounds if entries < 100_000 else max(3, rounds - 2)
            ours: list[dict[str, float]] = []
            theirs: list[dict[str, float]] = []
            pi.request("benchRound", path=str(path))  # warm both sides up once
            pinb_round(path, scratch)
            for r in range(n):
                if r % 2:
                    ours.append(pinb_round(path, scratch))
                    theirs.append(pi.request("benchRound", path=str(path)))
                else:
                    theirs.append(pi.request("benchRound", path=str(path)))
                    ours.append(pinb_round(path, scratch))
            peak = peak_rss_mb(f"Session.open({str(path)!r})")
            rows.append(
                {
                    "entries": entries,
                    "mb": path.stat().st_size / 1e6,
                    "ours": ours,
                    "theirs": theirs,
                    "peak": peak,
                    "shape": shape,
                    "depth": _leaf_depth(path),
                }
            )
    return rows


def _leaf_depth(path: Path) -> int:
    session = Session.open(path)
    return len(session.index.path_to(session.leaf_id))


def _ratio(ours: list[dict[str, float]], theirs: list[dict[str, float]], key: str) -> float:
    return statistics.median(o[key] / t[key] for o, t in zip(ours, theirs, strict=True))


def _spread(ours: list[dict[str, float]], theirs: list[dict[str, float]], key: str) -> str:
    ratios = sorted(o[key] / t[key] for o, t in zip(ours, theirs, strict=True))
    return f"{ratios[0]:.2f}–{ratios[-1]:.2f}"


def print_open(rows: list[dict[str, Any]]) -> None:
    if rows:
        depths = ", ".join(f"{row['depth']:,}" for row in rows)
        print(f"\n*{rows[0]['shape']}* sessions (leaf depth {depths}):\n")
    print(
        "| entries (MB) | op | Pi 1.6.0 ms | pinb ms | pinb/Pi wall (median, range) |"
        " pinb/Pi CPU (median, range) |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        ours, theirs = row["ours"], row["theirs"]
        for key in ("open", "context", "tree"):
            pi_ms = statistics.median(t[key] for t in theirs)
            our_ms = statistics.median(o[key] for o in ours)
            label = f"{row['entries']:,} ({row['mb']:.1f})" if key == "open" else ""
            cpu = key + "Cpu"
            print(
                f"| {label} | {key} | {pi_ms:.1f} | {our_ms:.1f} | "
                f"**{_ratio(ours, theirs, key):.2f}** ({_spread(ours, theirs, key)}) | "
                f"{_ratio(ours, theirs, cpu):.2f} ({_spread(ours, theirs, cpu)}) |"
            )
    print()
    print(
        "| entries | Pi heap held after open MB | Pi RSS growth MB | pinb RSS growth MB | pinb peak RSS MB |"
    )
    print("|---:|---:|---:|---:|---:|")
    for row in rows:
        heap = statistics.median(t["heap"] for t in row["theirs"]) / 1e6
        rss = statistics.median(t["rss"] for t in row["theirs"]) / 1e6
        held = statistics.median(o["held"] for o in row["ours"]) / 1e6
        print(f"| {row['entries']:,} | {heap:.0f} | {rss:.0f} | {held:.0f} | {row['peak']:.0f} |")


# -- listing ---------------------------------------------------------------------------------


def _forget_index(agent: Path) -> None:
    from pinb.core.file import listing

    shutil.rmtree(agent / "pinb-cache", ignore_errors=True)
    listing._cache.clear()


def _timed(fn: Callable[[], Any]) -> tuple[float, Any, float]:
    """Wall milliseconds, the result, CPU milliseconds."""
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000, result, (time.process_time() - cpu) * 1000


def bench_listing(pi: PiReference, rounds: int) -> dict[str, Any]:
    from pinb.analysis.searching.index import SessionCatalog, list_indexed, search
    from pinb.core.file import listing

    agent = listing_corpus()
    files = list((agent / "sessions").glob("*/*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    result: dict[str, Any] = {"files": len(files), "mb": size / 1e6}
    pi_ms, cold, kept, warm = [], [], [], []
    for r in range(rounds):
        _forget_index(agent)
        steps = [
            lambda: pi_ms.append(pi.request("benchList", agentDir=str(agent))),
            lambda: cold.append(_timed(list_indexed)),
        ]
        for step in steps if r % 2 == 0 else reversed(steps):
            step()
        listing._cache.clear()  # a new process: the index on disk, nothing in memory
        kept.append(_timed(list_indexed))
        warm.append(_timed(list_indexed))
    count = len(cold[-1][1])
    cold = [(t, len(rows), cpu) for t, rows, cpu in cold]
    assert count == pi_ms[-1]["count"], (count, pi_ms[-1]["count"])
    result.update(pi=pi_ms, cold=cold, kept=kept, warm=warm, count=count)
    # The first search answers from a scan of the files (no builder left behind here);
    # the index is then built (with progress), and searched.
    with SessionCatalog(build=None) as catalog:
        scanned, _, _ = _timed(lambda: catalog.search("parser cache"))
    shown: list[tuple[str, int, int]] = []
    first, hits, _ = _timed(
        lambda: search("parser cache", progress=lambda *a: shown.append(a), using="index")
    )
    again, _, _ = _timed(lambda: search("parser cache"))
    result.update(first_search=first, search=again, hits=len(hits), progress_calls=len(shown),
                  scanned=scanned)  # fmt: skip
    result["queries"] = _query_times(agent)
    index = agent / "pinb-cache" / "index.sqlite"
    result["index_mb"] = (
        sum(
            Path(str(index) + s).stat().st_size
            for s in ("", "-wal")
            if Path(str(index) + s).exists()
        )
        / 1e6
    )
    result["text_mb"] = _text_mb(files)
    listing._cache.clear()
    result["peak_cold"] = peak_rss_mb(
        "list_indexed()",
        prepare="import shutil; from pinb.analysis.searching.index import list_indexed\n"
        f"shutil.rmtree({str(agent / 'pinb-cache')!r}, ignore_errors=True)",
        env={"PI_CODING_AGENT_DIR": str(agent)},
    )
    return result


#: Searches of every kind on the built index: words, a phrase, an exclusion, filters
#: alone and with words, one project's folder.
QUERIES = (
    ("parser cache", False),
    ("parser cache", True),
    ('"parser cache" role:assistant', False),
    ("parser -cache", False),
    ("parser session:a", False),
    ("cache tool:bash", False),
    ("role:user", False),
    ("session:a", False),
    ("tool:bash", True),
)


def _query_times(agent: Path, runs: int = 3) -> list[tuple[str, float, int]]:
    """``(query, median ms, hits)`` of each of :data:`QUERIES` (``True``: one project)."""
    from pinb.analysis.searching.index import search
    from pinb.core.file.paths import encode_cwd

    project = agent / "sessions" / encode_cwd("/home/dev/project-3")
    rows = []
    for text, in_project in QUERIES:
        folder = project if in_project else None
        times = [_timed(lambda: search(text, folder)) for _ in range(runs)]  # noqa: B023
        label = f"`{text}`" + (" (one project)" if in_project else "")
        rows.append((label, statistics.median(t for t, _, _ in times), len(times[-1][1])))
    return rows


def _text_mb(files: list[Path]) -> float:
    """What the index holds: the searchable text of every entry (MB of UTF-8)."""
    from pinb.analysis.searching.cite import indexed_entries

    total = 0
    for path in files:
        total += sum(
            len(e.body.encode("utf-8", "replace")) for e in indexed_entries(Session.open(path))
        )
    return total / 1e6


def print_listing(result: dict[str, Any]) -> None:
    pi = [p["ms"] for p in result["pi"]]
    pi_ms = statistics.median(pi)
    print(
        f"\nListing {result['files']:,} sessions over {LISTING_PROJECTS} projects "
        f"({result['mb']:.0f} MB), {len(pi)} interleaved rounds:\n"
    )
    pi_cpu = [p["msCpu"] for p in result["pi"]]
    print(
        "| listing | Pi 1.6.0 `listAll()` ms | pinb ms | pinb/Pi wall (median, range) |"
        " pinb/Pi CPU (median, range) |"
    )
    print("|---|---:|---:|---:|---:|")
    for label, key in (("first ever (no index)", "cold"), ("index kept (new process)", "kept"),
                       ("warm (same process)", "warm")):  # fmt: skip
        ours = [t for t, _, _ in result[key]]
        ratios = sorted(o / p for o, p in zip(ours, pi, strict=True))
        cpus = sorted(c / p for (_, _, c), p in zip(result[key], pi_cpu, strict=True))
        print(
            f"| {label} | {pi_ms:.0f} | {statistics.median(ours):.0f} | "
            f"**{statistics.median(ratios):.3f}** ({ratios[0]:.3f}–{ratios[-1]:.3f}) | "
            f"{statistics.median(cpus):.3f} ({cpus[0]:.3f}–{cpus[-1]:.3f}) |"
        )
    heap = statistics.median(p["heap"] for p in result["pi"]) / 1e6
    rss = statistics.median(p["rss"] for p in result["pi"]) / 1e6
    print(
        f"\nRows: {result['count']:,} on both sides. Memory of a listing: Pi's heap grows "
        f"{heap:.0f} MB (RSS {rss:.0f} MB); pinb's first listing peaks "
        f"{result['peak_cold']:.0f} MB above a fresh interpreter."
    )
    print(
        f"First search (no index: a scan of the files, the index built in the background): "
        f"{result['scanned']:.0f} ms. Building the index in the foreground "
        f"({result['progress_calls']} progress reports) and searching: "
        f"{result['first_search'] / 1000:.1f} s; the next search {result['search']:.0f} ms "
        f"({result['hits']} hits). Index {result['index_mb']:.0f} MB for "
        f"{result['text_mb']:.0f} MB of indexed text."
    )
    print("\n| search on the built index | median ms | hits |\n|---|---:|---:|")
    for label, ms, hits in result["queries"]:
        print(f"| {label} | {ms:.0f} | {hits} |")


# -- the older comparison on fixed files ---------------------------------------------------


def median_ms(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _pinb_medians(path: Path, target: str, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        copies = iter([Path(tmp) / f"{i}.jsonl" for i in range(runs)])
        for i in range(runs):
            shutil.copyfile(path, Path(tmp) / f"{i}.jsonl")
        kept: list[Session] = []  # freeing is not opening (Node frees later, too)
        ours = {"open": median_ms(lambda: kept.append(Session.open(next(copies), pi=target)), runs)}
    session = Session.open(path, pi=target)
    ours["context"] = median_ms(
        lambda: build_session_context(session.index, UNSET, pi=target), runs
    )
    ours["tree"] = median_ms(session.tree, runs)
    return ours


def files_comparison(runs: int) -> None:
    made = {
        "legacy, 2 compactions (generated)": (
            "legacy-compacted.jsonl",
            SessionShape(entries=2400, main_depth=2400, branch_every=0, compaction_every=900),
        ),
        "legacy, long (generated)": (
            "legacy-long.jsonl",
            SessionShape(entries=1100, main_depth=1100, branch_every=0, compaction_every=0),
        ),
    }
    root = ensure_installed()
    print("| file | Pi | operation | Pi ms | pinb ms | pinb/Pi |")
    print("|---|---|---|---:|---:|---:|")
    with PiReference("1.6.0", root) as pi16, PiReference("0.58.3", root) as pi058:
        for label, (name, shape) in made.items():
            path = DATA / name
            if not path.exists():
                generate_session(path, shape, seed=1, legacy=True)
            for version, reference, target in (("1.6.0", pi16, "1.6"), ("0.58.3", pi058, "0.58")):
                theirs = reference.request("bench", path=str(path), runs=runs)
                ours = _pinb_medians(path, target, runs)
                for op in ("open", "context", "tree"):
                    print(f"| {label} | {version} | {op} | {theirs[op]:.1f} | {ours[op]:.1f} | "
                          f"**{ours[op] / theirs[op]:.2f}** |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--listing-rounds", type=int, default=3)
    parser.add_argument("--skip-listing", action="store_true")
    parser.add_argument(
        "--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES), metavar="SHAPE"
    )
    parser.add_argument("--files", action="store_true", help="the older fixed-file comparison")
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    if args.files:
        files_comparison(args.rounds)
        return
    root = ensure_installed()
    load = os.getloadavg()
    with PiReference("1.6.0", root, timeout=600) as pi:
        tables = [bench_open(pi, args.rounds, shape) for shape in args.shapes]
        listed = None if args.skip_listing else bench_listing(pi, args.listing_rounds)
    for rows in tables:
        print_open(rows)
    if listed is not None:
        print_listing(listed)
    after = os.getloadavg()
    print(
        f"\nPython {sys.version.split()[0]}, Node 22 from npm, {os.cpu_count()} cores; load "
        f"average {load[0]:.1f} before, {after[0]:.1f} after; peak RSS of this process "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
