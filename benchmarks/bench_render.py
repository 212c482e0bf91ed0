"""Render-time benchmark: 10k- and 100k-entry session trees, printed as a Markdown table.

Targets (issue 6): a 10k-node tree renders in at most 1 s; a 100k-node tree in at most 5 s.
"Render" is what the SVG of a ``TreeView`` costs: annotate the tree (``build_graph``), lay the
rows out (chains collapsed, side branches folded past 300 rows), and write the SVG; the PNG
(matplotlib, what an untrusted notebook shows) is timed apart. Building the session is not
timed. The widget columns (no kernel: the widget talks to nothing) show how long opening it
and selecting an entry take in Python; ``bench_widget.py`` measures them in Chromium. Run with ``python benchmarks/bench_render.py``; exits
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
from pinb.render.figure import tree_png
from pinb.render.tree.graph import build_graph
from pinb.render.tree.picture import tree_picture_svg
from pinb.render.tree.rows import row_layout
from pinb.views import ContextPathView, TreeView, TreeWidget

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
    cases = [(10_000, 1.0), (100_000, 5.0)]
    rows: list[str] = []
    ok = True
    for n, target in cases:
        session = make_session(n)
        graph = build_graph(session)
        layout = row_layout(graph)
        t_graph = timed(lambda s=session: build_graph(s), args.repeat)
        t_layout = timed(lambda g=graph: row_layout(g), args.repeat)
        t_svg = timed(lambda lay=layout: tree_picture_svg(lay), args.repeat)
        t_png = timed(lambda lay=layout: tree_png(lay), args.repeat)
        t_total = timed(lambda s=session: TreeView(s, png=False).to_svg(), args.repeat)
        t_context = timed(lambda s=session: ContextPathView(s).to_html(), args.repeat)
        size = len(tree_picture_svg(layout))
        t_open = timed(lambda s=session: TreeWidget(s), 1)
        widget = TreeWidget(session)
        middle = session.entries[n // 2].id
        t_select = timed(lambda w=widget, m=middle: w.select(m), 1)  # first time only
        passed = t_total <= target
        ok = ok and passed
        rows.append(
            f"| {n:,} | {len(layout.rows):,} | {len(layout.folded):,} | "
            f"{t_graph * 1000:.0f} | {t_layout * 1000:.0f} | {t_svg * 1000:.0f} | "
            f"**{t_total * 1000:.0f}** | {target * 1000:.0f} | {'✓' if passed else '✗'} | "
            f"{t_png * 1000:.0f} | {size / 1e6:.2f} | {t_context * 1000:.0f} | "
            f"{t_open * 1000:.0f} | {t_select * 1000:.0f} |"
        )
    print(
        "| entries | rows drawn | branches folded | graph ms | rows ms | SVG ms | "
        "TreeView total ms | target ms | met | PNG ms | SVG MB | ContextPathView ms | "
        "TreeWidget open ms | select entry ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(f"\nPython {sys.version.split()[0]}, best of {args.repeat}.")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
