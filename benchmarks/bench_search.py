"""Search beside ripgrep on 2,000 sessions, and the citable index and fork-aware totals.

Run: ``.venv/bin/python benchmarks/bench_search.py [--rounds 5]`` for the first table, and
``--story [--sessions 1000] [--runs 5]`` for the older ones.

**First search beside rg** (the default): the 2,000-session corpus of ``bench_vs_pi.py``
(about 475 MB, 573k entries), copied into ``benchmarks/data/search-first-2000`` with a rare
word planted in 24 entries (:func:`planted_corpus`). In interleaved rounds, with the files
in the page cache: ``rg -i -F WORD`` over the sessions folder (Debian's ``ripgrep``; the
table says so when it is missing), beside the first ``pinb search WORD --all`` of a folder
with no index (a process: the time to its first hit on standard output and to its exit;
the index builder it leaves behind is stopped after each round), and the same first
search inside a process that is already running (a kernel: ``search()``, the time to the
first ``on_hit`` and to the answer). Then the index is built, and a search of it is timed
as a warm ``search()`` call and as a ``pinb search`` process, beside rg again.

**Story tables** (``--story``): the citable search index and fork-aware usage totals over
1,000 story sessions (story sessions of varying seeds, generated branchy sessions, and
forks and clones of some of them), written once into ``benchmarks/data/search-<n>/``.

**Before and after** (``--baseline DIR``, ``DIR`` a copy of the tree before a change): the
first search of the 2,000-session corpus (no index: the files scanned), with the ``pinb``
of ``DIR`` and with this one, in alternating rounds: ``search(..., using="scan")`` in a
running process (the time to the first hit and to the answer) and the ``pinb search
--all`` process (to its first line and its exit). Words: the rare one, a common pair, an
accented word (its plain letters, and every other spelling looked for) and a Cyrillic
one (nowhere in the corpus: only the bytes that could spell it are looked for).

``PI_CODING_AGENT_DIR`` points into ``benchmarks/data``; nothing of the real home is
touched. Prints Markdown tables (medians).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: Bumped when the recipe below changes, so a cached data set is written again.
RECIPE = 1
#: The rare word planted in the 2,000-session corpus, and in how many entries.
RARE = "zyzzyva"
PLANTED = 24
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
    from pinb.core.file.paths import sessions_dir_for
    from pinb.core.forks import clone_session, fork_session
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


def planted_corpus() -> Path:
    """The agent folder of the 2,000-session corpus of ``bench_vs_pi.py`` (generated once,
    seeded: about 475 MB and 573k entries over 20 projects), copied, with :data:`RARE`
    planted in :data:`PLANTED` entries of as many sessions: user, assistant and tool-result
    texts and a tool call's command, written ``zyzzyva``, ``Zyzzyva`` or ``ZYZZYVA``."""
    import random

    from pinb.core.file.write import serialize_line
    from pinb.core.js.wire import loads_line

    sys.path.insert(0, str(HERE))
    from bench_vs_pi import listing_corpus

    agent = HERE / "data" / "search-first-2000"
    done = agent / f".planted-{PLANTED}"
    if done.exists():
        return agent
    source = listing_corpus()
    shutil.rmtree(agent, ignore_errors=True)
    shutil.copytree(source / "sessions", agent / "sessions")
    rng = random.Random(29)
    files = sorted((agent / "sessions").glob("*/*.jsonl"))
    forms = (RARE, RARE.capitalize(), RARE.upper())
    kinds = ("user", "assistant", "toolResult", "command")
    for n, path in enumerate(rng.sample(files, PLANTED)):
        lines = path.read_bytes().split(b"\n")
        kind, form = kinds[n % len(kinds)], forms[n % len(forms)]
        for i in rng.sample(range(1, len(lines) - 1), len(lines) - 2):
            value = loads_line(lines[i])
            message = value.get("message") if value.get("type") == "message" else None
            if not isinstance(message, dict):
                continue
            role = message.get("role")
            blocks = message.get("content") if isinstance(message.get("content"), list) else []
            if kind == "command":
                target = [b for b in blocks if b.get("type") == "toolCall"]
                if role != "assistant" or not target or "command" not in target[0]["arguments"]:
                    continue
                args = target[0]["arguments"]
                args["command"] = f"{args['command']} --{form}"
            else:
                target = [b for b in blocks if b.get("type") == "text"]
                if role != kind or not target:
                    continue
                words = target[0]["text"].split(" ")
                words.insert(rng.randrange(len(words) + 1), form)
                target[0]["text"] = " ".join(words)
            lines[i] = serialize_line(value).rstrip(b"\n")
            break
        else:
            raise RuntimeError(f"nowhere to plant a {kind} in {path}")
        stat = path.stat()
        path.write_bytes(b"\n".join(lines))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    done.write_text("")
    return agent


def bench_search(agent: Path, runs: int) -> None:
    from pinb.analysis.searching.index import SessionCatalog, default_index_path, search

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

    from pinb.analysis.searching.index import default_index_path

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


# -- the first search beside ripgrep ----------------------------------------------------------


def _rg(words: list[str], folder: Path) -> tuple[float, float]:
    """``rg -i -F`` of ``words`` over ``folder``: seconds to its first line and to its exit."""
    command = ["rg", "-i", "-F", *(a for w in words for a in ("-e", w)), str(folder)]
    return _process(command, None)


def _pinb(words: list[str], agent: Path) -> tuple[float, float]:
    """``pinb search WORDS --all``: seconds to its first line of output and to its exit."""
    command = [sys.executable, "-m", "pinb", "search", *words, "--all", "--limit", "50"]
    return _process(command, {**os.environ, "PI_CODING_AGENT_DIR": str(agent)})


def _process(
    command: list[str], env: dict[str, str] | None, cwd: Path = HERE.parent
) -> tuple[float, float]:
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    first_at = time.perf_counter() - start
    process.stdout.read()
    process.wait()
    total = time.perf_counter() - start
    return (first_at if first else total), total


def _forget_index(agent: Path) -> None:
    """Stop the index builder a first search left behind (it named itself in the lock
    file), and remove the index."""
    from pinb.analysis.searching.building import is_building, lock_path

    cache = agent / "pinb-cache"
    lock = lock_path(cache / "index.sqlite")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (
        lock.exists() and is_building(cache / "index.sqlite")
    ):
        time.sleep(0.02)  # the builder starts a moment after the search ends
    if lock.exists() and is_building(cache / "index.sqlite"):
        pid = int(lock.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)  # the builder this benchmark's search started
        while is_building(cache / "index.sqlite"):
            time.sleep(0.02)
    shutil.rmtree(cache, ignore_errors=True)


def _in_process(text: str, *, index: bool) -> tuple[float, float, int]:
    """A ``search()`` in this process: seconds to the first hit and to the answer, hits.
    ``index=False``: with no index (the first search), and no builder left behind."""
    from pinb.analysis.searching.index import SessionCatalog, search

    first: list[float] = []
    start = time.perf_counter()

    def seen(_: Any) -> None:
        if not first:
            first.append(time.perf_counter() - start)

    if index:
        hits = search(text, limit=50)
    else:
        with SessionCatalog(build=None) as catalog:
            hits = catalog.search(text, limit=50, on_hit=seen)
    total = time.perf_counter() - start
    return (first[0] if first else total), total, len(hits)


def bench_first(rounds: int) -> None:
    """The table of the first search (and a search of the built index) beside rg."""
    from pinb.analysis.searching.index import SessionCatalog

    agent = planted_corpus()
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    folder = agent / "sessions"
    files = sorted(folder.glob("*/*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    has_rg = shutil.which("rg") is not None
    subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)  # cached
    queries = [[RARE], ["parser", "cache"]]
    first: dict[str, dict[str, list[tuple[float, ...]]]] = {}
    load = os.getloadavg()[0]
    for words in queries:
        text = " ".join(words)
        runs = first.setdefault(text, {"rg": [], "cli": [], "kernel": []})
        _forget_index(agent)
        _in_process(text, index=False)  # imports and numpy loaded once, as in a kernel
        for r in range(rounds):
            steps = [
                lambda w=words, runs=runs: runs["cli"].append(_pinb(w, agent)),
                lambda t=text, runs=runs: runs["kernel"].append(_in_process(t, index=False)),
            ]
            if has_rg:
                steps.append(lambda w=words, runs=runs: runs["rg"].append(_rg(w, folder)))
            for step in steps if r % 2 == 0 else reversed(steps):
                step()
                _forget_index(agent)
    start = time.perf_counter()
    with SessionCatalog() as catalog:
        catalog.refresh_search()
    build = time.perf_counter() - start
    built: dict[str, dict[str, list[tuple[float, ...]]]] = {}
    for words in queries:
        text = " ".join(words)
        runs = built.setdefault(text, {"rg": [], "cli": [], "kernel": []})
        _in_process(text, index=True)
        for r in range(rounds):
            steps = [
                lambda w=words, runs=runs: runs["cli"].append(_pinb(w, agent)),
                lambda t=text, runs=runs: runs["kernel"].append(_in_process(t, index=True)),
            ]
            if has_rg:
                steps.append(lambda w=words, runs=runs: runs["rg"].append(_rg(w, folder)))
            for step in steps if r % 2 == 0 else reversed(steps):
                step()
    _print_first(len(files), size, first, built, build, has_rg, rounds, load)


def _print_first(
    count: int,
    size: int,
    first: dict[str, dict[str, list[tuple[float, ...]]]],
    built: dict[str, dict[str, list[tuple[float, ...]]]],
    build: float,
    has_rg: bool,
    rounds: int,
    load: float,
) -> None:
    def ms(values: list[tuple[float, ...]], at: int) -> float:
        return statistics.median(v[at] for v in values) * 1000

    print(f"\n### Search beside ripgrep: {count:,} sessions ({size / 1e6:.0f} MB), "
          f"{rounds} interleaved rounds (medians; load average {load:.1f} before)\n")  # fmt: skip
    if not has_rg:
        print("**ripgrep (`rg`) is not installed: no ratios** (`apt-get install ripgrep`).\n")
    print("| search | words | rg ms (first line / exit) | pinb ms (first hit / answer) "
          "| pinb/rg (first / answer) |")  # fmt: skip
    print("|---|---|---:|---:|---:|")
    rows = (
        ("first (no index), `pinb search` process", first, "cli"),
        ("first (no index), `search()` in a kernel", first, "kernel"),
        ("index built, `pinb search` process", built, "cli"),
        ("index built, warm `search()` in a kernel", built, "kernel"),
    )
    for label, table, kind in rows:
        for text, runs in table.items():
            ours, theirs = runs[kind], runs["rg"]
            rg_cell = f"{ms(theirs, 0):.0f} / {ms(theirs, 1):.0f}" if theirs else "—"
            ratio = (
                f"**{ms(ours, 0) / ms(theirs, 0):.2f}** / **{ms(ours, 1) / ms(theirs, 1):.2f}**"
                if theirs
                else "—"
            )
            print(f"| {label} | `{text}` | {rg_cell} | {ms(ours, 0):.0f} / {ms(ours, 1):.0f} "
                  f"| {ratio} |")  # fmt: skip
    print(f"\nThe index was built in {build:.1f} s (in this process, in the foreground).")


_SCAN = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import pinb
from pinb.analysis.searching.index import SessionCatalog
text, runs = sys.argv[2], int(sys.argv[3])
times = []
with SessionCatalog(":memory:", build=None) as catalog:
    catalog.search(text, limit=50, using="scan")  # imports and numpy, once, as in a kernel
    for _ in range(runs):
        first = []
        start = time.perf_counter()
        seen = lambda hit: first or first.append(time.perf_counter() - start)
        hits = catalog.search(text, limit=50, using="scan", on_hit=seen)
        total = time.perf_counter() - start
        times.append([first[0] if first else total, total, len(hits)])
print(json.dumps({"times": times, "pinb": pinb.__file__}))
"""


def bench_baseline(baseline: Path, rounds: int) -> None:
    """The first search (a scan of the files) with the ``pinb`` of ``baseline`` and with
    this one, in alternating rounds (see the module notes)."""
    agent = planted_corpus()
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    folder = agent / "sessions"
    files = sorted(folder.glob("*/*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)  # cached
    sides = {"before": baseline.resolve(), "after": HERE.parent}
    queries = [[RARE], ["parser", "cache"], ["résumé"], ["москва"]]
    kernel: dict[tuple[str, str], list[list[float]]] = {}
    cli: dict[tuple[str, str], list[tuple[float, float]]] = {}
    load = os.getloadavg()[0]
    for r in range(rounds):
        for name in ("before", "after") if r % 2 == 0 else ("after", "before"):
            root = sides[name]
            env = {**os.environ, "PYTHONPATH": str(root)}
            for words in queries:
                text = " ".join(words)
                out = subprocess.run(
                    [sys.executable, "-c", _SCAN, str(root), text, "3"],
                    check=True, capture_output=True, text=True, env=env, cwd=root,
                ).stdout  # fmt: skip
                found = json.loads(out)
                assert Path(found["pinb"]).resolve().is_relative_to(root), found["pinb"]
                kernel.setdefault((name, text), []).extend(found["times"])
                _forget_index(agent)
                command = [sys.executable, "-m", "pinb", "search", *words, "--all", "--limit", "50"]
                cli.setdefault((name, text), []).append(_process(command, env, root))
                _forget_index(agent)

    def ms(values: list[Any], at: int) -> float:
        return statistics.median(v[at] for v in values) * 1000

    print(f"\n### The first search before and after: {len(files):,} sessions "
          f"({size / 1e6:.0f} MB), {rounds} alternating rounds (medians; load average "
          f"{load:.1f} before)\n")  # fmt: skip
    print("| words | hits | `search()` in a process, before → after (first hit / answer, ms) "
          "| `pinb search` process, before → after (first line / exit, ms) |")  # fmt: skip
    print("|---|---:|---:|---:|")
    for words in queries:
        text = " ".join(words)
        k_before, k_after = kernel[("before", text)], kernel[("after", text)]
        c_before, c_after = cli[("before", text)], cli[("after", text)]
        hits = f"{int(k_before[0][2])} → {int(k_after[0][2])}"
        print(f"| `{text}` | {hits} | {ms(k_before, 0):.0f} / {ms(k_before, 1):.0f} → "
              f"{ms(k_after, 0):.0f} / {ms(k_after, 1):.0f} | {ms(c_before, 0):.0f} / "
              f"{ms(c_before, 1):.0f} → {ms(c_after, 0):.0f} / {ms(c_after, 1):.0f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the table beside rg")
    parser.add_argument("--story", action="store_true", help="the older story tables instead")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a copy of the tree to compare with")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))  # the checkout's pinb, not an installed one
    if args.baseline is not None:
        bench_baseline(args.baseline, args.rounds)
        return 0
    if not args.story:
        bench_first(args.rounds)
        return 0
    agent = ensure_data(args.sessions)
    bench_search(agent, args.runs)
    bench_totals(agent, max(1, args.runs // 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
