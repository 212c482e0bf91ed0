"""The Markdown policy's cost: model replies, hostile runs up to 1 MB, and a streamed reply.

Run: ``.venv/bin/python benchmarks/bench_markdown.py``. Three tables:

1. A reply of ordinary Markdown (prose, lists, code, a table) of 10 and 100 KB through both
   writers (``markdown_to_markdown``, ``markdown_to_html``), best of 3.
2. Hostile runs (``![``, ``[``, ``![[``…``]]``, ``*a``, ``<img ``) of 125 KB to 1 MB: the
   parse alone (markdown-it-py as the policy configures it) and the policy's answer. The
   parse grows linearly (the µs per character stay flat); past ``MAX_MARKDOWN_CHARS`` the
   policy shows the text literally instead of parsing it.
3. A 20 KB reply streamed in 80-character pieces into ``ChatTranscript`` and rendered
   after each piece (the chat renders at most every 0.15 s; this is every piece): the
   total, and the last render.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pinb.agent.events import ModelEvent
from pinb.chat.transcript import ChatTranscript
from pinb.llm import TextDelta
from pinb.render.markdown import (
    MAX_MARKDOWN_CHARS,
    _parser,
    markdown_to_html,
    markdown_to_markdown,
)

BLOCK = (
    "I looked at `app.py`: **the main loop** reads the [config](https://example.org/x) "
    "file, then calls *parse()* on each line.\nIt then writes the result.\n\n"
    "- one item\n- two `items`\n  - nested\n\n```python\nfor x in y:\n    print(x)\n```\n\n"
    "| a | b |\n|---|--:|\n| 1 | 2 |\n\n"
)


def best(action: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def replies() -> None:
    print("| reply | chars | to Markdown | to HTML |")
    print("|---|---:|---:|---:|")
    for size in (10_000, 100_000):
        text = (BLOCK * (size // len(BLOCK) + 1))[:size]
        md = best(lambda text=text: markdown_to_markdown(text))
        html = best(lambda text=text: markdown_to_html(text))
        print(f"| ordinary Markdown | {len(text):,} | {md * 1000:.0f} ms | {html * 1000:.0f} ms |")


def hostile() -> None:
    runs = {
        "![": lambda n: "![" * (n // 2),
        "[": lambda n: "[" * n,
        "![[ … ]]": lambda n: "![[" * (n // 5) + "]]" * (n // 5),
        "*a": lambda n: "*a" * (n // 2),
        "<img ": lambda n: "<img " * (n // 5),
    }
    print(f"\nThe policy parses up to {MAX_MARKDOWN_CHARS:,} characters; longer is literal.\n")
    print("| run | chars | parse | µs/char | policy (to Markdown) |")
    print("|---|---:|---:|---:|---:|")
    for name, make in runs.items():
        for size in (125_000, 250_000, 500_000, 1_000_000):
            text = make(size)
            parse = best(lambda text=text: _parser().parse(text), repeat=1)
            policy = best(lambda text=text: markdown_to_markdown(text), repeat=1)
            print(
                f"| `{name}` | {len(text):,} | {parse:.2f} s | {parse / len(text) * 1e6:.1f} "
                f"| {policy * 1000:.0f} ms |"
            )


def streamed() -> None:
    text = (BLOCK * 200)[:20_000]
    pieces = [text[i : i + 80] for i in range(0, len(text), 80)]
    transcript = ChatTranscript()
    start = time.perf_counter()
    last = 0.0
    for piece in pieces:
        transcript.add(ModelEvent(TextDelta(0, piece)))
        one = time.perf_counter()
        transcript.markdown()
        last = time.perf_counter() - one
    total = time.perf_counter() - start
    print("\n| streamed reply | pieces | renders in all | last render |")
    print("|---|---:|---:|---:|")
    print(f"| {len(text):,} chars | {len(pieces)} | {total:.2f} s | {last * 1000:.0f} ms |")


if __name__ == "__main__":
    replies()
    hostile()
    streamed()
