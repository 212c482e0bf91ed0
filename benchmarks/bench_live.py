"""The live display of a ``%%pi`` cell: cost per event against the run's length, and a
reply with 400 tool calls end to end through the real loopback server.

Run: ``.venv/bin/python benchmarks/bench_live.py``. Two tables:

1. `LiveRun` fed a reply with N tool calls (every event shown: ``interval=0``, the worst
   case): HTML characters published in all and per update, and the time per event. The
   old display republished the whole run on every update (126 MB for 400 calls).
2. One ``%%pi`` run whose reply asks for 400 ``ls`` calls, through a real IPython shell,
   the loopback HTTP server and real files, with the live display as a notebook has it
   (the 0.1 s throttle, ToolStart/ToolEnd shown at once): wall time, updates and HTML.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from pinb.agent.events import AgentEnd, ModelEvent, ToolEnd, ToolStart, TurnStart
from pinb.agent.tool import ToolResult
from pinb.core.format.entries import Entry
from pinb.llm import TextDelta, ToolCallEnd, ToolCallStart
from pinb.notebook.live import LiveRun


class _Sink:
    """A display that renders what it is given, as the notebook frontend's publisher does."""

    def __call__(self, obj: Any, display_id: bool = False) -> Any:
        obj._repr_mimebundle_()
        return self

    def update(self, obj: Any) -> None:
        obj._repr_mimebundle_()


def _events(calls: int) -> list[Any]:
    entry = Entry({"type": "message", "id": "x", "parentId": None, "timestamp": "t", "message": {}})
    events: list[Any] = [TurnStart(1), ModelEvent(TextDelta(0, "Listing them all."))]
    for n in range(calls):
        events.append(ModelEvent(ToolCallStart(n, f"c{n}", "ls")))
        events.append(ModelEvent(ToolCallEnd(n, f"c{n}", "ls", {"path": f"dir{n}"})))
    for n in range(calls):
        events.append(ToolStart(f"c{n}", "ls", {"path": f"dir{n}"}))
        result = ToolResult.text("\n".join(f"file{n}_{k}.py" for k in range(8)))
        events.append(ToolEnd(f"c{n}", "ls", result, entry))
    events += [TurnStart(2), ModelEvent(TextDelta(0, "Done.")), AgentEnd("stop", [])]
    return events


def per_event() -> None:
    print("| tool calls | events | updates | HTML published | per update | µs per event |")
    print("|---:|---:|---:|---:|---:|---:|")
    for calls in (50, 100, 200, 400, 800, 1600):
        events = _events(calls)
        live = LiveRun(_Sink(), interval=0)
        started = time.perf_counter()
        for event in events:
            live.add(event)
        live.finish()
        took = time.perf_counter() - started
        print(
            f"| {calls} | {len(events)} | {live.updates} | {live.published_chars / 1e6:.2f} MB "
            f"| {live.published_chars / live.updates / 1e3:.1f} KB "
            f"| {took / len(events) * 1e6:.0f} |"
        )


def end_to_end(calls: int = 400) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from pinb.notebook import live as live_module
    from pinb.testing.llm_server import LLMServer, ToolCallScript

    folder = Path(tempfile.mkdtemp())
    os.chdir(folder)
    os.environ["PI_CODING_AGENT_DIR"] = str(folder / "agent")
    for n in range(10):
        (folder / f"dir{n}").mkdir()
    seen: list[LiveRun] = []
    original = live_module.LiveRun.__init__

    def recording(self: LiveRun, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        seen.append(self)

    live_module.LiveRun.__init__ = recording  # type: ignore[method-assign]
    with LLMServer() as server:
        os.environ["LLAMACPP_BASE_URL"] = server.url
        server.reply(
            "Listing.",
            tool_calls=[ToolCallScript("ls", {"path": f"dir{n % 10}"}) for n in range(calls)],
            chunk_size=64,
        )
        server.reply("All listed.")
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "pinb")
        shell.run_line_magic("pi", "model llamacpp/smol --base-url " + server.url)
        shell.display_pub.publish = lambda *a, **k: None  # type: ignore[method-assign]
        started = time.perf_counter()
        shell.run_cell_magic("pi", "", "list every folder")
        took = time.perf_counter() - started
    live = seen[-1]
    print()
    print("| tool calls in one reply | wall time | updates | HTML published | display time |")
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {calls} | {took:.2f} s | {live.updates} | {live.published_chars / 1e6:.2f} MB "
        f"| {live.render_seconds:.2f} s |"
    )


if __name__ == "__main__":
    per_event()
    end_to_end()
