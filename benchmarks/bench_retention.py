"""Benchmark the retention report: every compaction of a 100k-entry session, and a corpus.

Run: ``.venv/bin/python benchmarks/bench_retention.py [--runs 3] [--skip-corpus]
[--baseline DIR] [--floor]``.

- **one big session, two shapes**, each of 100,000 entries (main line 60,000 deep, a
  compaction every 5,000 main-line entries, a side branch every 60), opened once; then
  :func:`pinb.analysis.retention.report.session_retention` (every compaction scored), split into
  the core's part (the context before and after each compaction, the span, the chars/4
  figures), extracting the facts, and judging them. Medians of ``--runs``; "cold" is the
  first run after the open, which also decodes the lines the contexts read.

  - *synthetic*: ``bench_core.py``'s generated session. Its text is random words from a
    39-word vocabulary: every fact shares most of its words with every summary, the worst
    case for the word-overlap rule (no fact is rejected by the quick test, so every window
    is compared), and every user message and final text is a fact.
  - *realistic*: the same tree with realistic text (:func:`realistic_session`): prose from
    pinb's documentation in the requests and replies, pinb's own source files as read
    results, test and lint logs as bash output (failures among them), real paths, commands
    and code names, and Pi-format summaries written from each span.

- **a corpus**: 2,000 generated sessions (30 to 500 entries, compactions every 150 or 400
  main-line entries or none; made once into ``benchmarks/data/retention-2000``), the frame
  :func:`pinb.analysis.retention.frame.compaction_retention` over the folder.

``--floor`` measures, instead of the parts, single passes of the cheapest readings over the
spans' conversation text beside the core's walk and the whole scoring: the floor no
extraction in Python gets under.

``--baseline DIR`` measures the big sessions again with the ``pinb`` package found in
``DIR`` (a copy of the tree before a change), each side in a subprocess of its own, one
after the other in one run: before and after on one machine at one time.

``--memory`` measures what the report holds instead: 100,000 tiny user/assistant pairs
(:func:`pair_session`, about 72 MB), once with a compaction every 1,000 pairs and once
with one compaction at the end (its span is the whole file), and the same at 25,000
pairs. For each, ``pinb compactions FILE --json`` as a process (its wall time and peak
resident memory, from ``wait4``) and the peak that ``tracemalloc`` traces while
:func:`~pinb.analysis.retention.report.iter_session_retention` walks an opened session, above
what the open session holds (a walk whose memory is one span's stays level from 25,000
to 100,000 pairs). With ``--baseline DIR``, both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"


def median_time(
    fn: Callable[[], Any], runs: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    times = []
    for _ in range(runs):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def big_session(entries: int = 100_000, depth: int = 60_000) -> Path:
    from pinb.testing.generate import SessionShape, generate_session

    path = DATA / f"synthetic-{entries}.jsonl"
    if not path.exists():
        shape = SessionShape(
            entries=entries, main_depth=depth, compaction_every=5000, branch_every=60
        )
        generate_session(path, shape, seed=1)
    return path


# -- a realistic shape ----------------------------------------------------------------------


class _Texts:
    """Realistic text for a generated session: pinb's docs (prose) and sources (code)."""

    COMMANDS = (
        "uv run pytest -q {test}",
        ".venv/bin/python -m pytest -q {test} -x",
        ".venv/bin/ruff check {path}",
        ".venv/bin/mypy {path}",
        "git diff --stat",
        "grep -rn '{name}' pinb/",
        "cd /home/dev/pinb && npm run check 2>&1 | tail -20",
        "python3 -c 'import pinb; print(pinb.__version__)'",
    )

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        prose: list[str] = []
        for doc in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
            for line in doc.read_text(encoding="utf-8").splitlines():
                line = line.strip().lstrip("-*#> ").strip()
                if len(line) > 40 and not line.startswith(("|", "```", "<")):
                    prose.extend(s.strip() for s in line.split(". ") if len(s.strip()) > 20)
        self.prose = prose
        self.sources: dict[str, list[str]] = {}
        for source in sorted((ROOT / "pinb").rglob("*.py")):
            lines = source.read_text(encoding="utf-8").splitlines()
            if len(lines) > 40:
                self.sources[source.relative_to(ROOT).as_posix()] = lines
        self.paths = sorted(self.sources)
        self.tests = [f"tests/{p.split('/', 1)[1].rsplit('/', 1)[0]}/test_{p.rsplit('/', 1)[1]}"
                      for p in self.paths]  # fmt: skip
        self.names = sorted(
            {w.strip("`(),:") for s in prose for w in s.split() if "_" in w and w.isascii()}
        )

    def sentences(self, low: int, high: int) -> str:
        return " ".join(
            self.rng.choice(self.prose) + "." for _ in range(self.rng.randint(low, high))
        )

    def path(self) -> str:
        return self.rng.choice(self.paths)

    def command(self) -> str:
        return self.rng.choice(self.COMMANDS).format(
            test=self.rng.choice(self.tests), path=self.path(), name=self.rng.choice(self.names)
        )

    def code(self, path: str, chars: int) -> str:
        lines = self.sources.get(path) or self.sources[self.paths[0]]
        start = self.rng.randrange(max(1, len(lines) - 20))
        out: list[str] = []
        size = 0
        for number, line in enumerate(lines[start:], start + 1):
            out.append(f"{number:>5}\t{line}")
            size += len(line) + 7
            if size > chars:
                break
        return "\n".join(out)

    def log(self, failed: bool, command: str) -> str:
        rng = self.rng
        passed = rng.randint(3, 400)
        lines = [f"{rng.choice(self.tests)} " + "." * rng.randint(5, 60) for _ in range(4)]
        if failed:
            test = rng.choice(self.tests)
            name = rng.choice(self.names)
            lines += [
                f"____ test_{name} ____",
                f"    assert {name}(entries) == {rng.randint(2, 99)}",
                f"E   AssertionError: assert {rng.randint(100, 999)} == {rng.randint(2, 99)}",
                f"FAILED {test}::test_{name} - AssertionError",
                f"1 failed, {passed} passed in {rng.randint(1, 90) / 10:.2f}s",
                "",
                "Command exited with code 1",
            ]
        else:
            lines.append(f"{passed} passed in {rng.randint(1, 900) / 100:.2f}s")
        return f"$ {command}\n" + "\n".join(lines)


def _realistic_values(shape: Any, seed: int) -> Iterator[dict[str, Any]]:
    """The generated session's entries with realistic text (same tree, same ids)."""
    from pinb.testing.generate import iter_session_lines

    rng = random.Random(seed)
    texts = _Texts(rng)
    calls: dict[str, tuple[str, str]] = {}  # call id -> (tool, path or command)
    span: dict[str, deque[str]] = {
        k: deque(maxlen=40) for k in ("asked", "said", "read", "changed", "ran", "failed")
    }
    for value in iter_session_lines(shape, seed):
        kind = value.get("type")
        message = value.get("message")
        if kind == "message" and isinstance(message, dict):
            role = message.get("role")
            if role == "user":
                text = texts.sentences(1, 4)
                if rng.random() < 0.3:
                    text += f" Look at {texts.path()} first; don't change the public API."
                message["content"] = [{"type": "text", "text": text}]
                span["asked"].append(text)
            elif role == "assistant":
                content = []
                for block in message["content"]:
                    if block["type"] == "thinking":
                        block["thinking"] = texts.sentences(2, 6)
                    elif block["type"] == "text":
                        block["text"] = texts.sentences(1, 3)
                        if rng.random() < 0.3:
                            block["text"] += (
                                f" `{rng.choice(texts.names)}` now takes {rng.randint(2, 900)} ms;"
                                f" {rng.randint(3, 400)} tests pass."
                            )
                        span["said"].append(block["text"])
                    elif block["type"] == "toolCall":
                        name = block["name"]
                        path = texts.path()
                        if name == "bash":
                            command = texts.command()
                            block["arguments"] = {"command": command}
                            calls[block["id"]] = (name, command)
                            span["ran"].append(command)
                        elif name == "grep":
                            pattern = rng.choice(texts.names)
                            block["arguments"] = {"pattern": pattern, "path": "pinb"}
                            calls[block["id"]] = (name, pattern)
                        else:
                            if name == "edit":
                                old = texts.code(path, 120)
                                block["arguments"] = {
                                    "path": path,
                                    "oldText": old,
                                    "newText": old.replace("return", "return  "),
                                }
                            elif name == "write":
                                block["arguments"] = {
                                    "path": path,
                                    "content": texts.code(path, 900),
                                }
                            else:
                                block["arguments"] = {"path": path}
                            calls[block["id"]] = (name, path)
                            span["read" if name == "read" else "changed"].append(path)
                    content.append(block)
                message["content"] = content
            elif role == "toolResult":
                tool, what = calls.pop(message.get("toolCallId"), ("read", texts.path()))
                failed = bool(message.get("isError"))
                size = len(message["content"][0]["text"])
                if tool == "bash":
                    text = texts.log(failed, what)
                    if failed:
                        span["failed"].append(what)
                elif tool == "grep":
                    text = "\n".join(
                        f"{texts.path()}:{rng.randint(1, 600)}:    {what}(value)" for _ in range(12)
                    )
                elif failed:
                    text = f"Error: ENOENT: no such file or directory, open '{what}'"
                elif tool == "read":
                    text = texts.code(what, size)
                else:
                    text = f"Successfully replaced text in {what}."
                message["content"] = [{"type": "text", "text": text}]
        elif kind == "compaction":
            value["summary"] = _summary(rng, span)
            for found in span.values():
                found.clear()
        yield value


def _summary(rng: random.Random, span: dict[str, deque[str]]) -> str:
    """A Pi-format summary of a span: some of what was asked, said, read, changed and run."""

    def some(key: str, count: int) -> list[str]:
        found = list(dict.fromkeys(span[key]))
        return rng.sample(found, min(count, len(found)))

    lines = ["## Goal", *some("asked", 1), "", "## Constraints & Preferences"]
    lines += [f"- {t}" for t in some("asked", 2)]
    lines += ["", "## Progress", "### Done"] + [f"- [x] {t}" for t in some("said", 5)]
    lines += ["", "### Blocked"] + [f"- `{c}` failed" for c in some("failed", 2)]
    lines += ["", "## Key Decisions"] + [f"- {t}" for t in some("said", 3)]
    lines += ["", "## Next Steps"] + [f"1. run `{c}`" for c in some("ran", 2)]
    lines += ["", "<read-files>", *some("read", 8), "</read-files>"]
    lines += ["", "<modified-files>", *some("changed", 6), "</modified-files>"]
    return "\n".join(lines)


def realistic_session(entries: int = 100_000, depth: int = 60_000) -> Path:
    """The big session's tree with realistic text (made once into ``benchmarks/data``)."""
    from pinb.core.file.write import serialize_line
    from pinb.testing.generate import SessionShape

    path = DATA / f"realistic-{entries}.jsonl"
    if not path.exists():
        shape = SessionShape(
            entries=entries, main_depth=depth, compaction_every=5000, branch_every=60
        )
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as handle:
            for value in _realistic_values(shape, seed=1):
                handle.write(serialize_line(value))
        partial.rename(path)
    return path


def corpus(count: int = 2_000) -> Path:
    from pinb.testing.generate import SessionShape, generate_session

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


# -- measuring --------------------------------------------------------------------------------


def parts(
    session: Any, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, float, float, int]:
    """Seconds in the core, in extracting facts, in judging them; and the facts found.

    The steps :func:`~pinb.analysis.retention.report.session_retention` takes, timed apart: with
    this tree's own steps (a tree before ``compaction_splits`` builds and splits each
    context as its retention did).
    """
    from pinb.analysis.retention.report import retention_of_text, span_messages
    from pinb.core.compaction import facts as facts_module
    from pinb.core.compaction import span as compaction_span
    from pinb.core.context.accounting import estimated_by_role

    start = clock()
    spans = []
    splits = getattr(compaction_span, "compaction_splits", None)
    if splits is not None:
        for split in splits(session):
            summarized = list(zip(split.span.summarized, split.summarized_messages, strict=True))
            kept = [m for sent in split.kept_messages for m in sent]
            spans.append((summarized, kept, split.entry.raw.get("summary") or ""))
    else:
        for entry in (e for e in session.entries if e.type == "compaction"):
            before = session.build_context(entry.raw["parentId"])
            after = session.build_context(entry.id)
            summarized, kept, _ = span_messages(before, entry.raw.get("firstKeptEntryId"))
            sum(estimated_by_role(before).values()), sum(estimated_by_role(after).values())
            spans.append((summarized, kept, entry.raw.get("summary") or ""))
    core = clock()
    cache = getattr(facts_module, "FactCache", None)
    if cache is not None:
        shared = cache()
        facts = [facts_module.extract_facts(found, cache=shared) for found, _, _ in spans]
    else:
        facts = [facts_module.extract_facts(found) for found, _, _ in spans]
    extracted = clock()
    for found, (_, kept, summary) in zip(facts, spans, strict=True):
        retention_of_text(found, summary, kept)
    judged = clock()
    return core - start, extracted - core, judged - extracted, sum(map(len, facts))


def measure(path: Path, runs: int) -> dict[str, Any]:
    """Open ``path``, score every compaction cold then ``runs`` times warm, and split it.

    Wall times, and the process's CPU time of the warm runs (``cpu``: what the run costs
    when other processes share the machine; the parts are CPU times).
    """
    import gc

    from pinb.analysis.retention.report import session_retention
    from pinb.core import Session

    session = Session.open(path)
    compactions = sum(1 for e in session.entries if e.type == "compaction")
    start = time.perf_counter()
    reports = session_retention(session)  # decodes the lines the contexts read
    cold = time.perf_counter() - start
    total = median_time(lambda: session_retention(session), runs)
    cpu = median_time(lambda: session_retention(session), runs, time.process_time)
    paused = getattr(sys.modules["pinb.analysis.retention.report"], "gc_paused", None)
    split = []
    for _ in range(runs):
        if paused is None:
            split.append(parts(session, time.process_time))
        else:
            with paused():
                split.append(parts(session, time.process_time))
        gc.collect()
    core, extract, judge = (statistics.median(s[i] for s in split) for i in range(3))
    return {
        "entries": len(session.entries),
        "megabytes": path.stat().st_size / 1e6,
        "compactions": compactions,
        "facts": sum(len(r.verdicts) for r in reports),
        "cold": cold,
        "warm": total,
        "cpu": cpu,
        "core": core,
        "extract": extract,
        "judge": judge,
    }


def _measure_elsewhere(folder: Path, path: Path, runs: int) -> dict[str, Any]:
    """:func:`measure` in a subprocess that imports the ``pinb`` of ``folder``."""
    code = (
        "import importlib.util, json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
        "spec = importlib.util.spec_from_file_location('bench', sys.argv[2]);"
        "b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b);"
        "import pinb; found = b.measure(Path(sys.argv[3]), int(sys.argv[4]));"
        "print(json.dumps({**found, 'pinb': pinb.__file__}))"
    )
    env = {**os.environ, "PYTHONPATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", code, str(folder), __file__, str(path), str(runs)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
    ).stdout
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert Path(found["pinb"]).resolve().is_relative_to(folder.resolve()), found["pinb"]
    return found


def _rows(name: str, found: dict[str, Any]) -> list[tuple[str, str]]:
    ms = {
        k: f"{found[k] * 1000:,.0f} ms" for k in ("cold", "warm", "cpu", "core", "extract", "judge")
    }
    return [
        (f"{name}: session", f"{found['entries']:,} entries, {found['megabytes']:.0f} MB, "
                             f"{found['compactions']} compactions, {found['facts']:,} facts"),
        (f"{name}: `session_retention`, cold (first after the open: lines decoded)", ms["cold"]),
        (f"{name}: `session_retention`, warm (every compaction scored)", ms["warm"]),
        (f"{name}: `session_retention`, warm, CPU time of the process", ms["cpu"]),
        ("  of which the core, CPU: contexts before/after, the span, chars/4", ms["core"]),
        ("  extracting the facts, CPU", ms["extract"]),
        ("  judging them (summary and kept messages), CPU", ms["judge"]),
    ]  # fmt: skip


def pair_session(pairs: int, every: int) -> Path:
    """A session of ``pairs`` tiny user/assistant message pairs, a compaction after every
    ``every`` pairs (``0``: one at the end, whose span is the whole file); made once."""
    path = DATA / f"pairs-{pairs}-every-{every}.jsonl"
    if path.exists():
        return path
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}  # fmt: skip
    ids: list[str] = []
    lines = [{"type": "session", "version": 3, "id": "00000000-0000-4000-8000-000000000001",
              "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/home/dev/pairs"}]  # fmt: skip

    def add(value: dict[str, Any]) -> None:
        value |= {"id": f"e{len(ids) + 1:08d}", "parentId": ids[-1] if ids else None,
                  "timestamp": "2025-01-01T00:00:01.000Z"}  # fmt: skip
        ids.append(value["id"])
        lines.append(value)

    def text(words: str) -> list[dict[str, str]]:
        return [{"type": "text", "text": words}]

    for i in range(pairs):
        asked = text(f"please fix the parser bug number {i} in src/app.py")
        said = text(f"I fixed parser_bug {i} and ran 3 tests in 340 ms")
        add({"type": "message", "message": {"role": "user", "timestamp": 1, "content": asked}})
        reply = {"role": "assistant", "timestamp": 2, "content": said, "api": "x",
                 "provider": "p", "model": "m", "usage": usage, "stopReason": "stop"}  # fmt: skip
        add({"type": "message", "message": reply})
        if (every and (i + 1) % every == 0) or (not every and i == pairs - 1):
            add({"type": "compaction", "summary": f"## Goal\nfix parser bugs up to {i}",
                 "firstKeptEntryId": ids[-2], "tokensBefore": 1000})  # fmt: skip
    scratch = path.with_suffix(".tmp")
    scratch.write_text("".join(json.dumps(v) + "\n" for v in lines), encoding="utf-8")
    scratch.rename(path)
    return path


_TRACED = """
import sys, tracemalloc
sys.path.insert(0, sys.argv[1])
import pinb
from pinb.core import Session
from pinb.analysis import retention
walk = getattr(retention, "iter_session_retention", None) or retention.session_retention
session = Session.open(sys.argv[2])
tracemalloc.start()
held = tracemalloc.get_traced_memory()[0]
for report in walk(session):
    pass
print(tracemalloc.get_traced_memory()[1] - held, pinb.__file__)
"""


def memory(folder: Path, path: Path) -> dict[str, Any]:
    """``pinb compactions --json`` of the ``pinb`` in ``folder`` as a process (seconds, peak
    resident bytes), and the traced peak of a walk above the open session (bytes)."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "pinb.cli", "compactions", str(path), "--json"],
        stdout=subprocess.DEVNULL, env=env, cwd=folder,
    )  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    assert status == 0, f"pinb compactions failed ({status})"
    out = subprocess.run(
        [sys.executable, "-c", _TRACED, str(folder), str(path)],
        check=True, capture_output=True, text=True, env=env, cwd=folder,
    ).stdout.split()  # fmt: skip
    assert Path(out[1]).resolve().is_relative_to(folder.resolve()), out[1]
    return {"seconds": seconds, "rss": usage.ru_maxrss * 1024, "traced": int(out[0])}


def memory_rows(baseline: Path | None) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    sides = [("before", baseline.resolve()), ("after", ROOT)] if baseline else [("", ROOT)]
    for every in (1_000, 0):
        shape = f"a compaction every {every:,} pairs" if every else "one compaction (the file)"
        for pairs in (25_000, 100_000):
            path = pair_session(pairs, every)
            for side, folder in sides:
                found = memory(folder, path)
                label = f"{pairs:,} pairs, {shape}" + (f", {side}" if side else "")
                rows.append((
                    f"{label}: `pinb compactions --json` ({path.stat().st_size / 1e6:.0f} MB)",
                    f"{found['seconds']:.1f} s, peak RSS {found['rss'] / 1e6:,.0f} MB; walk's "
                    f"traced peak above the open session {found['traced'] / 1e6:,.1f} MB",
                ))  # fmt: skip
    return rows


def floor(path: Path, runs: int) -> list[tuple[str, str]]:
    """Single passes of the cheapest readings over the spans' conversation text (``--floor``).

    The text is what the facts are read from: the user's and the assistant's text and the
    tool calls' arguments of every message the compactions replaced. Medians of ``runs``
    CPU seconds, beside the core's walk (``compaction_splits``) and the whole scoring.
    """
    import re

    from pinb.analysis.retention.report import session_retention
    from pinb.core import Session
    from pinb.core.compaction import facts, words
    from pinb.core.compaction.span import compaction_splits
    from pinb.core.gc import gc_paused

    session = Session.open(path)
    session_retention(session)  # decodes the lines the contexts read
    splits = list(compaction_splits(session))
    messages = [m for split in splits for sent in split.summarized_messages for m in sent]
    texts: list[str] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role in ("user", "assistant"):
            texts.append(facts._texts(message.get("content")))
        if role == "assistant":
            texts += (facts._argument_text(c.get("arguments")) for c in facts._calls(message))
    text = "\n\n".join(texts)
    word = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    passes: list[tuple[str, Callable[[], Any]]] = [
        ("the core alone (`compaction_splits`)", lambda: list(compaction_splits(session))),
        ("`str.lower`", text.lower),
        ("cut into words (`translate` + `split`)",
         lambda: text.lower().translate(words._SEPARATORS).split()),
        ("one trivial expression (`[A-Za-z_][A-Za-z0-9_]*`, `findall`)",
         lambda: word.findall(text)),
        ("the numbers-with-units expression, the whole text at once",
         lambda: words._NUMBER.findall(text)),
        ("the whole scoring (`session_retention`)", lambda: session_retention(session)),
    ]  # fmt: skip
    rows = [(f"spans' conversation text ({len(messages):,} messages)",
             f"{len(text) / 1e6:.1f} MB")]  # fmt: skip
    with gc_paused():
        for what, fn in passes:
            rows.append((what, f"{median_time(fn, runs, time.process_time):.2f} s CPU"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-corpus", action="store_true")
    parser.add_argument("--baseline", type=Path, help="a folder holding the pinb to compare")
    parser.add_argument("--only", choices=("synthetic", "realistic"), help="one shape")
    parser.add_argument("--floor", action="store_true", help="single passes over the text")
    parser.add_argument("--memory", action="store_true", help="peak memory of the report")
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    if args.memory:
        print("| what | time and memory |\n|---|---|")
        for what, value in memory_rows(args.baseline):
            print(f"| {what} | {value} |")
        return

    shapes = [("synthetic", big_session), ("realistic", realistic_session)]
    rows: list[tuple[str, str]] = []
    for name, make in shapes:
        if args.only and name != args.only:
            continue
        path = make()
        if args.floor:
            rows += [(f"{name}: {what}", value) for what, value in floor(path, args.runs)]
        elif args.baseline is not None:
            before = _measure_elsewhere(args.baseline.resolve(), path, args.runs)
            after = _measure_elsewhere(ROOT, path, args.runs)
            rows += _rows(f"{name}, before", before) + _rows(f"{name}, after", after)
            for key in ("warm", "cpu"):
                rows.append(
                    (f"{name}: {key} speed-up", f"{before[key] / after[key]:.1f}× "
                                               f"({before[key]:.2f} s → {after[key]:.2f} s)")
                )  # fmt: skip
        else:
            rows += _rows(name, measure(path, args.runs))
    if not args.skip_corpus:
        from pinb.analysis.retention.frame import compaction_retention

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
    sys.path.insert(0, str(ROOT))
    main()
