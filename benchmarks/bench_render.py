"""Render-time benchmark: 10k- and 100k-entry session trees, printed as a Markdown table.

Targets (issue 6): a 10k-node tree renders in at most 1 s (nothing collapsed); a 100k-node
tree in at most 5 s with chains collapsed. "Render" is what displaying a ``TreeView`` costs:
annotate the tree (``build_graph``), lay it out, and write the SVG. Building the session is
not timed. The explorer columns (no kernel: widgets talk to nothing) show how long opening
it and selecting an entry take. Run with ``python benchmarks/bench_render.py``; exits
non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from pinb.core import Session
from pinb.render.graph import build_graph
from pinb.render.layout import layout_tree
from pinb.render.svg import tree_svg
from pinb.views import ContextPathView, SessionExplorer, TreeView

WORDS = (
    "the config loader reads a file then the parser checks every key and the test suite "
    "runs again after each edit so the change is safe"
)


_WORDS = WORDS.split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def make_session(n: int, *, branch_every: int = 150, seed: int = 6) -> Session:
    """An in-memory session of ``n`` entries shaped like real agent work.

    Turns of user → assistant(tool call) → tool result → assistant, a side branch started
    every ``branch_every`` entries from a point a few turns back, and labels now and then.
    """
    rng = random.Random(seed)
    s = Session.in_memory("/bench")
    ms = 1_765_000_000_000
    count = 0
    history: list[str] = []
    while count < n:
        ms += 1000
        step = count % 4
        if step == 0:
            message: dict[str, Any] = {"role": "user", "content": _text(rng, 20), "timestamp": ms}
        elif step == 1:
            message = {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": _text(rng, 15)},
                    {
                        "type": "toolCall",
                        "id": f"c{count}",
                        "name": rng.choice(["read", "bash", "edit"]),
                        "arguments": {"path": f"src/m{count % 97}.py"},
                    },
                ],
                "api": "x",
                "provider": "p",
                "model": "m",
                "stopReason": "toolUse",
                "usage": {"totalTokens": 1000 + count},
                "timestamp": ms,
            }
        elif step == 2:
            message = {
                "role": "toolResult",
                "toolCallId": f"c{count - 1}",
                "toolName": "read",
                "content": [{"type": "text", "text": _text(rng, 80)}],
                "isError": False,
                "timestamp": ms,
            }
        else:
            message = {
                "role": "assistant",
                "content": [{"type": "text", "text": _text(rng, 30)}],
                "api": "x",
                "provider": "p",
                "model": "m",
                "stopReason": "stop",
                "usage": {"totalTokens": 1200 + count},
                "timestamp": ms,
            }
        entry = s.append_message(message, validate=False)
        history.append(entry.id)
        count += 1
        if count % branch_every == 0 and len(history) > 40:
            s.branch(history[-rng.randint(8, 40)], persist=False)
    return s


def timed(action: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    args = parser.parse_args(argv)
    cases = [(10_000, False, 1.0), (100_000, True, 5.0)]
    rows: list[str] = []
    ok = True
    for n, collapse, target in cases:
        session = make_session(n)
        graph = build_graph(session)
        layout = layout_tree(graph, collapse=collapse)
        t_graph = timed(lambda s=session: build_graph(s), args.repeat)
        t_layout = timed(lambda g=graph, c=collapse: layout_tree(g, collapse=c), args.repeat)
        t_svg = timed(lambda lay=layout: tree_svg(lay), args.repeat)
        t_total = timed(lambda s=session, c=collapse: TreeView(s, collapse=c).to_svg(), args.repeat)
        t_context = timed(lambda s=session: ContextPathView(s).to_html(), args.repeat)
        size = len(tree_svg(layout))
        t_open = timed(lambda s=session: SessionExplorer(s), 1)
        explorer = SessionExplorer(session)
        middle = session.entries[n // 2].id
        t_select = timed(lambda e=explorer, m=middle: e.select(m), 1)  # first time only
        passed = t_total <= target
        ok = ok and passed
        rows.append(
            f"| {n:,} | {'yes' if collapse else 'no'} | {len(layout.items):,} | "
            f"{t_graph * 1000:.0f} | {t_layout * 1000:.0f} | {t_svg * 1000:.0f} | "
            f"**{t_total * 1000:.0f}** | {target * 1000:.0f} | {'✓' if passed else '✗'} | "
            f"{size / 1e6:.2f} | {t_context * 1000:.0f} | {t_open * 1000:.0f} | "
            f"{t_select * 1000:.0f} |"
        )
    print(
        "| entries | chains collapsed | drawn items | graph ms | layout ms | SVG ms | "
        "TreeView total ms | target ms | met | SVG MB | ContextPathView ms | "
        "SessionExplorer open ms | select entry ms |"
    )
    print("|---:|:---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(f"\nPython {sys.version.split()[0]}, best of {args.repeat}.")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
