"""Benchmark keeping what matters: tokens and time per compaction, with and without kept facts.

Run: ``.venv/bin/python benchmarks/bench_keep_facts.py [--runs 3] [FILE ...]``.

Each session is copied and compacted as ``pinb compact FILE --offline`` does (the one plan
fitted to the window its model records, the offline summarizer), once with pinb's
kept-facts section (the default) and once with ``--no-keep-facts`` (Pi's exact text).
For each it reports:

- **must-keep kept**: the share of the span's must-keep facts (files, commands, errors,
  the user's instructions) the continuation still has: the summary keeps them
  (verbatim or paraphrased) or the kept messages carry them; and the summary's share alone;
- **summary tokens** (chars/4) and what the section added;
- **time** of the compaction (median of ``--runs``), and of ``uncompact --dry-run`` on the
  ``--no-keep-facts`` copy, with what it would give back.

The sessions: :func:`pinb.testing.work.write_work_session` (60 and 200 turns of Pi-shaped
coding work), and any ``FILE`` given (your own Pi sessions; they are copied, never written).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pinb.agent.compact import compact_to_fit
from pinb.analysis.retention.report import retention_report
from pinb.core import ExtractiveSummarizer, Session, load_compaction_settings
from pinb.core.compaction.uncompact import uncompact
from pinb.llm.window import resolve_window
from pinb.testing.work import write_work_session

MUST_KEEP = ("file", "command", "error", "instruction")


def _compact(source: Path, keep: bool, folder: Path) -> tuple[Session, object, float]:
    target = folder / source.name
    shutil.copyfile(source, target)
    session = Session.open(target)
    window = resolve_window(context=session.build_context()).tokens
    settings = load_compaction_settings(None).fit_window(window)
    settings = dataclasses.replace(settings, keep_facts=keep)
    started = time.perf_counter()
    with session.turn("the benchmark"):
        report = compact_to_fit(
            session, ExtractiveSummarizer(), None, settings, context_window=window
        )
    return session, report, time.perf_counter() - started


def _shares(session: Session, entry: object) -> tuple[int, float, float, int]:
    report = retention_report(session, entry)  # type: ignore[arg-type]
    facts = [v for v in report.verdicts if v.fact.kind in MUST_KEEP]
    if not facts:
        return 0, 1.0, 1.0, report.summary_tokens
    summary = sum(v.kept for v in facts) / len(facts)
    carried = sum(v.kept or v.kept_messages for v in facts) / len(facts)
    return len(facts), summary, carried, report.summary_tokens


def measure(source: Path, runs: int) -> dict[str, object]:
    result: dict[str, object] = {"file": source.name}
    for keep in (False, True):
        times = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as folder:
                session, report, seconds = _compact(source, keep, Path(folder))
                times.append(seconds)
                facts, summary, carried, tokens = _shares(session, report.entry)  # type: ignore[attr-defined]
                if not keep:
                    started = time.perf_counter()
                    given = uncompact(session, dry_run=True)
                    result["uncompact_s"] = time.perf_counter() - started
                    result["uncompact_facts"] = len(given.facts)
                    result["uncompact_tokens"] = given.tokens
        name = "kept" if keep else "pi"
        result[f"{name}_s"] = statistics.median(times)
        result[f"{name}_summary_share"] = summary
        result[f"{name}_carried_share"] = carried
        result[f"{name}_tokens"] = tokens
        result["facts"] = facts
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as made:
        sources = [
            write_work_session(Path(made) / str(turns), turns=turns).require_path()
            for turns in (60, 200)
        ]
        sources += list(args.files)
        print(
            "session | must-keep facts | kept, Pi's text → with kept facts (summary alone) | "
            "summary tokens Pi's → kept (+added) | compaction s Pi's / kept | uncompact --dry-run"
        )
        for source in sources:
            r = measure(source, args.runs)
            added = int(r["kept_tokens"]) - int(r["pi_tokens"])  # type: ignore[call-overload]
            print(
                f"{r['file'][:40]} | {r['facts']} | {r['pi_carried_share']:.1%} → "
                f"{r['kept_carried_share']:.1%} ({r['pi_summary_share']:.1%} → "
                f"{r['kept_summary_share']:.1%}) | {r['pi_tokens']:,} → {r['kept_tokens']:,} "
                f"(+{added:,}) | {r['pi_s']:.3f} / {r['kept_s']:.3f} | "
                f"{r['uncompact_facts']} facts, {r['uncompact_tokens']:,} tokens, "
                f"{r['uncompact_s']:.3f} s"
            )


if __name__ == "__main__":
    main()
