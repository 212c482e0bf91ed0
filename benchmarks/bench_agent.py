"""Agent loop overhead per turn, with a scripted model (no network, no model time).

Run: ``.venv/bin/python benchmarks/bench_agent.py``. A "turn" is one model call plus its
tool results; the scripted model streams a short reply, so what is measured is pinb's own
work: building the context from the file's entries, converting it, streaming events,
appending entries under the file lock and running a trivial tool.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pinb.agent import Agent, ToolContext, ToolResult
from pinb.core import Session
from pinb.llm import API_OPENAI, Done, ModelInfo, TextDelta, make_usage
from pinb.testing.generate import SessionShape, generate_session


class LeanModel:
    """A model that answers instantly and records nothing (ScriptedLLM deep-copies every
    request, which would dominate the measurement)."""

    info = ModelInfo("bench", "lean", API_OPENAI, context_window=10_000_000)

    def __init__(self) -> None:
        self.calls = 0

    async def astream(self, messages: Any, options: Any = None, **fields: Any) -> Any:
        self.calls += 1
        call = self.calls % 2 == 1
        text = "calling" if call else "done " * 20
        for i in range(0, len(text), 16):
            yield TextDelta(0, text[i : i + 16])
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if call:
            content.append(
                {"type": "toolCall", "id": f"c{self.calls}", "name": "noop", "arguments": {}}
            )
        yield Done(
            {
                "role": "assistant",
                "content": content,
                "api": API_OPENAI,
                "provider": "bench",
                "model": "lean",
                "usage": make_usage(1000, 50, 0, 0, 1050, None),
                "stopReason": "toolUse" if call else "stop",
                "timestamp": int(time.time() * 1000),
            }
        )


class Noop:
    name = "noop"
    description = "Does nothing."

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.text("ok")


def per_turn(session: Session, prompts: int) -> float:
    agent = Agent(session, LeanModel(), [Noop()])  # type: ignore[arg-type]
    start = time.perf_counter()
    for i in range(prompts):
        agent.prompt(f"prompt {i}")
    return (time.perf_counter() - start) / (2 * prompts)


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for entries in (0, 2_000, 20_000):
            path = Path(tmp) / f"s{entries}.jsonl"
            if entries:
                generate_session(
                    path,
                    SessionShape(
                        entries=entries, main_depth=int(entries * 0.7), compaction_every=0
                    ),
                    seed=3,
                )
                session = Session.open(path)
            else:
                session = Session.create(tmp, tmp)
            times = [per_turn(session, 20) for _ in range(3)]
            depth = len(session.path_to())
            rows.append((entries, depth, statistics.median(times)))
    print("| session before the run | active path | pinb overhead per turn |\n|---|---:|---:|")
    for entries, depth, seconds in rows:
        label = "new session" if not entries else f"{entries:,} entries"
        print(f"| {label} | {depth:,} | {seconds * 1000:.2f} ms |")


if __name__ == "__main__":
    main()
