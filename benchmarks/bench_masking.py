"""Benchmark masking before summarizing: the summary calls it avoids and the tokens sent, on a long tool-heavy run.

Run: ``.venv/bin/python benchmarks/bench_masking.py [--turns 150] [--window 64000]
[--result-chars 6000]``.

pinb's agent runs ``--turns`` prompts against the scripted model
(:class:`pinb.testing.ScriptedLLM`); each prompt makes one ``read`` call whose result is
``--result-chars`` characters of generated text (the vocabulary of
:mod:`pinb.testing.generate`), then a short answer. Once with Pi's strategy (every
compaction a summary: the offline extractive summarizer writes it, and each of its calls is
counted as the request a model would have been sent), once with ``"mask-first"``. For each:
the summary calls, the maskings, the compactions, the tokens of every request sent
(chars/4 of its messages and system prompt: what a provider would bill as input), the
context at the end, the wall time of the run and of the compaction steps alone.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Read:
    """A ``read`` tool whose every result is a long, distinct file."""

    name = "read"
    description = "Read a file."

    def __init__(self, chars: int, seed: int = 0) -> None:
        from pinb.testing.generate import _WORDS

        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }
        self.chars = chars
        self.rng = random.Random(seed)
        self.words = _WORDS

    def execute(self, arguments: dict[str, Any], context: Any) -> Any:
        from pinb.agent import ToolResult

        text = " ".join(self.rng.choice(self.words) for _ in range(self.chars // 6))
        return ToolResult.text(f"{arguments.get('path')}: {text}"[: self.chars])


class _Counting:
    """The offline summarizer, each call counted (a model would have been asked once each)."""

    def __init__(self) -> None:
        from pinb.core import ExtractiveSummarizer

        self.inner = ExtractiveSummarizer()
        self.name = self.inner.name
        self.calls = 0
        self.seconds = 0.0

    def summarize(self, conversation: str, **options: Any) -> str:
        self.calls += 1
        start = time.perf_counter()
        try:
            return self.inner.summarize(conversation, **options)
        finally:
            self.seconds += time.perf_counter() - start


def run(strategy: str, turns: int, window: int, chars: int) -> dict[str, Any]:
    from pinb.agent import Agent, AgentConfig, CompactionDone, MaskingDone
    from pinb.core import CompactionSettings, Session
    from pinb.core.context.tokens import estimate_projected_tokens, estimate_tokens
    from pinb.testing import ScriptedLLM

    folder = Path(tempfile.mkdtemp(prefix="pinb-bench-masking-"))
    session = Session.create(folder, folder)
    llm = ScriptedLLM(context_window=window)
    summarizer = _Counting()
    agent = Agent(
        session,
        llm,
        [_Read(chars)],
        config=AgentConfig(compaction=CompactionSettings(strategy=strategy)),
        summarizer=summarizer,  # type: ignore[arg-type]
    )
    maskings = compactions = masked = 0
    compaction_seconds = 0.0
    start = time.perf_counter()
    for turn in range(turns):
        llm.reply_tool_call("read", {"path": f"src/module_{turn}.py"}).reply(f"step {turn} done")
        last = time.perf_counter()
        for event in agent.run(f"step {turn}: read src/module_{turn}.py and say what it does"):
            now = time.perf_counter()
            if isinstance(event, MaskingDone):
                maskings += 1
                masked += len(event.report.masked) if event.report is not None else 0
                compaction_seconds += now - last
            elif isinstance(event, CompactionDone):
                compactions += 1
                compaction_seconds += now - last
            last = now
    wall = time.perf_counter() - start
    sent = 0
    for call in llm.calls:
        sent += sum(estimate_tokens(m) for m in call.messages)
        sent += -(-len(call.system_prompt or "") // 4)
    final = estimate_projected_tokens(session.build_context()).tokens
    return {
        "strategy": strategy,
        "requests": len(llm.calls),
        "summary calls": summarizer.calls,
        "compactions": compactions,
        "maskings": maskings,
        "results masked": masked,
        "tokens sent": sent,
        "context at the end": final,
        "run s": wall,
        "compaction steps s": compaction_seconds,
        "entries": len(session.entries),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--window", type=int, default=64_000)
    parser.add_argument("--result-chars", type=int, default=6_000)
    args = parser.parse_args(argv)
    rows = [run(s, args.turns, args.window, args.result_chars) for s in ("pi", "mask-first")]
    keys = list(rows[0])
    width = max(len(k) for k in keys)
    print(
        f"{args.turns} prompts, one read of {args.result_chars:,} characters each, "
        f"{args.window:,}-token window"
    )
    for key in keys:
        values = [row[key] for row in rows]
        shown = [f"{v:,.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else v
                 for v in values]  # fmt: skip
        print(f"{key:<{width}}  {shown[0]:>14}  {shown[1]:>14}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
