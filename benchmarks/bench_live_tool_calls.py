"""The live displays of a ``%%pi`` cell against the number of tool calls in one reply.

Run: ``.venv/bin/python benchmarks/bench_live_tool_calls.py [--before REV] [--budget S]``.

A reply asks for 1,000, 4,000 and 20,000 calls; the events are what the built-in agent
yields: each call streams (start, two argument deltas, end), then read-only calls start
together and end together ("batch"), or one call at a time ("one by one", as writing
tools run). `LiveRun` runs as a notebook has it (0.1 s throttle, tool starts and ends
shown at once) into a display that renders what it is given, as the frontend's publisher
does; `TerminalRun` prints into a counting sink. The table gives events per second, the
display's updates and the HTML they published.

``--before REV`` runs the same events, in the same process, through ``live.py`` and
``terminal.py`` as they were at git revision ``REV`` (e.g. ``HEAD``); a run that passes
``--budget`` seconds (default 120) stops there and reports the rate it had reached.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pinb.agent.events import AgentEnd, ModelEvent, ToolEnd, ToolStart, TurnStart
from pinb.agent.tool import ToolResult
from pinb.llm import TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from pinb.notebook import live, terminal

ROOT = Path(__file__).resolve().parents[1]
CALLS = (1_000, 4_000, 20_000)


class _Sink:
    """A display that renders what it is given, as the notebook frontend's publisher does."""

    def __call__(self, obj: Any, display_id: bool = False) -> Any:
        obj._repr_mimebundle_()
        return self

    def update(self, obj: Any) -> None:
        obj._repr_mimebundle_()


class _Out:
    """A terminal that counts what is printed."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, text: str) -> int:
        self.chars += len(text)
        return len(text)

    def flush(self) -> None:
        pass


def _events(calls: int, batch: bool) -> list[Any]:
    events: list[Any] = [TurnStart(1), ModelEvent(TextDelta(0, "Listing them all."))]
    for n in range(calls):
        events += [
            ModelEvent(ToolCallStart(n, f"c{n}", "ls")),
            ModelEvent(ToolCallDelta(n, f"c{n}", '{"path": ')),
            ModelEvent(ToolCallDelta(n, f"c{n}", f'"dir{n}"}}')),
            ModelEvent(ToolCallEnd(n, f"c{n}", "ls", {"path": f"dir{n}"})),
        ]
    starts = [ToolStart(f"c{n}", "ls", {"path": f"dir{n}"}) for n in range(calls)]
    ends = [
        ToolEnd(f"c{n}", "ls", ToolResult.text("\n".join(f"file{n}_{k}.py" for k in range(8))))
        for n in range(calls)
    ]
    if batch:
        events += starts + ends
    else:
        events += [event for pair in zip(starts, ends, strict=True) for event in pair]
    events += [TurnStart(2), ModelEvent(TextDelta(0, "Done.")), AgentEnd("stop", [])]
    return events


def _module_at(rev: str, name: str) -> types.ModuleType:
    """``pinb/notebook/<name>.py`` as it was at ``rev``, importable beside today's."""
    source = subprocess.run(
        ["git", "show", f"{rev}:pinb/notebook/{name}.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType(f"pinb.notebook._{name}_at_{rev}")
    module.__package__ = "pinb.notebook"  # its relative imports find today's package
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:pinb/notebook/{name}.py", "exec"), module.__dict__)
    return module


def _run(display: Any, events: list[Any], budget: float) -> tuple[int, float]:
    """Events fed before ``budget`` seconds passed, and the seconds they took."""
    started = time.perf_counter()
    fed = 0
    for event in events:
        display.add(event)
        fed += 1
        if fed % 256 == 0 and time.perf_counter() - started > budget:
            break
    if fed == len(events):
        display.finish()
    return fed, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", metavar="REV", help="also run the displays of git REV")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds a run may take")
    opts = parser.parse_args()
    versions: list[tuple[str, types.ModuleType, types.ModuleType]] = []
    if opts.before:
        versions.append(
            (opts.before, _module_at(opts.before, "live"), _module_at(opts.before, "terminal"))
        )
    versions.append(("now", live, terminal))
    print("| display | code | order | tool calls | events | seconds | events/s | updates | HTML |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for kind in ("LiveRun", "TerminalRun"):
        for batch in (True, False):
            for calls in CALLS:
                events = _events(calls, batch)
                for label, live_code, terminal_code in versions:
                    if kind == "LiveRun":
                        display: Any = live_code.LiveRun(_Sink())
                    else:
                        display = terminal_code.TerminalRun(_Out())
                    fed, took = _run(display, events, opts.budget)
                    stopped = "" if fed == len(events) else f" (stopped at {fed:,})"
                    updates = f"{display.updates:,}" if kind == "LiveRun" else "—"
                    html = f"{display.published_chars / 1e6:.1f} MB" if kind == "LiveRun" else "—"
                    print(
                        f"| {kind} | {label} | {'batch' if batch else 'one by one'} | {calls:,} "
                        f"| {len(events):,} | {took:.2f}{stopped} | {fed / took:,.0f} "
                        f"| {updates} | {html} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
