"""The tree widget in a real browser: first paint and a selection round trip, in Chromium.

JupyterLab (loopback, token) runs a notebook that builds a session, then shows the widget;
headless Chromium (Debian's ``/usr/bin/chromium`` through Playwright) measures

- **first paint**: from the moment the widget's output exists in the page to its rows
  drawn (the ES module sets ``data-ready``), and the whole cell run (kernel work included);
- **selection round trip**: a click on a row until the entry panel shows that entry
  (browser → kernel → panels rebuilt → browser), median of several clicks;
- **scroll**: jumping through the tree a screen at a time, mean time per redraw.

Sizes: the demo session (25 entries) and a 10,000-entry session shaped like agent work
(``bench_render.make_session``). Run ``python benchmarks/bench_widget.py``; prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from tests.views.test_browser import (  # noqa: E402
    _cell,
    _start_kernel,
    _write_notebook,
    chromium_page,
    jupyter_lab,
)

SETUP = {
    "demo": [
        "from pathlib import Path\n",
        "from tests.views.builders import demo_session\n",
        "session = demo_session(Path('sessions')).session\n",
    ],
    "10k": [
        "from bench_render import make_session\n",
        "session = make_session(10_000)\n",
    ],
}


def _notebook(path: Path, case: str) -> None:
    setup = [
        "import sys\n",
        f"sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'benchmarks')!r}]\n",
        *SETUP[case],
    ]
    show = ["from pinb.views import TreeWidget\n", "widget = TreeWidget(session)\n", "widget"]
    _write_notebook(path, [_cell([*setup, *show])])


def measure(page: Any, base: str, token: str, name: str, clicks: int) -> dict[str, float]:
    page.goto(f"{base}/lab/workspaces/{name}/tree/{name}.ipynb?token={token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    page.evaluate(
        "() => { window.__pinbSeen = null; window.__pinbReady = null;"
        " new MutationObserver(() => {"
        "  const el = document.querySelector('.pinb-tw');"
        "  if (el && window.__pinbSeen === null) window.__pinbSeen = performance.now();"
        "  if (el && el.dataset.ready && window.__pinbReady === null)"
        "   window.__pinbReady = performance.now();"
        " }).observe(document.body, {subtree: true, childList: true, attributes: true}); }"
    )
    started = page.evaluate("performance.now()")
    for _ in range(3):  # a kernel dialog racing the first run can swallow it
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        with contextlib.suppress(Exception):
            page.wait_for_selector('.pinb-tw[data-ready="1"]', timeout=60_000)
            break
    seen, ready = page.evaluate("[window.__pinbSeen, window.__pinbReady]")
    rows = int(page.locator(".pinb-tw").get_attribute("data-rows") or 0)
    trips: list[float] = []
    for i in range(clicks):
        # A row drawn now, entries only (a chain or folded row would also relayout).
        key = page.evaluate(
            "i => [...document.querySelectorAll('.pinb-tw-row')]"
            ".filter(r => r.dataset.id && !r.className.match(/chain|folded|selected/))"
            ".map(r => r.dataset.id)[i]",
            i + 1,
        )
        if not key:
            break
        row = page.locator(f'.pinb-tw-row[data-id="{key}"]')
        begin = time.perf_counter()
        row.click()
        page.wait_for_function(
            "id => document.querySelector('.pinb-details').textContent.includes(id)", arg=key
        )
        trips.append((time.perf_counter() - begin) * 1000)
    frames = page.evaluate(
        "async () => { const s = document.querySelector('.pinb-tw-scroller');"
        " const times = []; for (let i = 0; i < 30; i++) {"
        "  const t = performance.now(); s.scrollTop += s.clientHeight;"
        "  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));"
        "  times.push(performance.now() - t); } return times; }"
    )
    shots = ROOT / "test-artifacts"
    shots.mkdir(exist_ok=True)
    page.locator(".pinb-tw").screenshot(path=str(shots / f"widget-{name}.png"))
    return {
        "rows": rows,
        "cell": ready - started,  # session built, widget made, rows drawn
        "paint": ready - seen,
        "select": statistics.median(trips) if trips else float("nan"),
        "scroll": statistics.mean(frames),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=7, help="selections to time (default 7)")
    args = parser.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for case in SETUP:
            _notebook(root / f"{case}.ipynb", case)
        results: dict[str, dict[str, float]] = {}
        with jupyter_lab(root) as (base, token), chromium_page(1500, 1200) as page:
            for case in SETUP:
                _start_kernel(base, token, f"{case}.ipynb")
                with contextlib.suppress(Exception):
                    page.add_locator_handler(
                        page.locator(".jp-Dialog"),
                        lambda dialog: dialog.locator(".jp-mod-accept").click(),
                    )
                results[case] = measure(page, base, token, case, args.clicks)
    print(
        "| session | rows sent | run all → rows drawn ms (session built too) | first paint ms | "
        "selection round trip ms (median) | scroll redraw ms (mean) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for case, r in results.items():
        print(
            f"| {case} | {r['rows']:,.0f} | {r['cell']:.0f} | {r['paint']:.0f} | "
            f"{r['select']:.0f} | {r['scroll']:.1f} |"
        )
    print(f"\nPython {sys.version.split()[0]}, Chromium headless, JupyterLab on loopback.")
    # The static picture of the large session, beside the widget's screenshot.
    from bench_render import make_session

    from pinb.views import TreeView

    png = TreeView(make_session(10_000)).to_png()
    (ROOT / "test-artifacts" / "tree-10k.png").write_bytes(png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
