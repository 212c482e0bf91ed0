"""Every shipped notebook as a newcomer reads it: nothing clipped, no missing glyph, no label
drawn over another.

The notebooks are run fresh (nbclient, a kernel on this checkout's pinb, the repository's
pinned Pi for notebook 07), so the outputs checked are the ones the current code writes, the
ones a re-run saves. Each is then opened untrusted in JupyterLab in Debian's Chromium with its
scrollbars shown (Playwright hides them by default), and every output is checked:

- no element's content is wider or taller than its box unless it scrolls with a visible
  scrollbar (or says it is cut, with an ellipsis);
- every character shown is one the installed fonts can draw (their ``cmap`` tables, read with
  fontTools: Chromium falls back across all of them, and draws an empty box past that);
- every tree picture's labels stay inside it, clear of each other and of its strokes and
  glyphs (the layout read back from its SVG), in characters the PNG's DejaVu face has.

A screenshot of every output is kept in ``test-artifacts/notebooks/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import unicodedata
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.views.test_browser import (
    ARTIFACTS,
    BUDGET_S,
    CHROMIUM,
    REPO,
    _no_injected_markup,
    chromium_page,
    jupyter_lab,
    watchdog,
)
from tests.views.test_picture_marks import picture_problems, svg_picture

pytestmark = pytest.mark.slow(seconds=110)

NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
SHOTS = ARTIFACTS / "notebooks"

#: What clipped, overflowing or scrolling elements of an output report (see the module note).
_CLIPPED_JS = """
area => {
  const problems = [];
  const label = el => {
    const cls = [...el.classList].filter(c => c.startsWith('pinb-') || c.startsWith('jp-'));
    const text = (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 70);
    return `<${el.tagName.toLowerCase()}${cls.length ? ' .' + cls.join('.') : ''}> "${text}"`;
  };
  const px = v => parseFloat(v) || 0;
  for (const el of [area, ...area.querySelectorAll('*')]) {
    if (el instanceof SVGElement || !el.checkVisibility()) continue;
    const cs = getComputedStyle(el);
    if (cs.display === 'inline' || cs.display === 'contents') continue;
    const over = {
      x: el.scrollWidth > el.clientWidth + 1,
      y: el.scrollHeight > el.clientHeight + 1,
    };
    const bars = {
      x: el.offsetHeight - el.clientHeight - px(cs.borderTopWidth) - px(cs.borderBottomWidth),
      y: el.offsetWidth - el.clientWidth - px(cs.borderLeftWidth) - px(cs.borderRightWidth),
    };
    for (const axis of ['x', 'y']) {
      if (!over[axis]) continue;
      const overflow = axis === 'x' ? cs.overflowX : cs.overflowY;
      const sizes = `${el.scrollWidth}x${el.scrollHeight} in ${el.clientWidth}x${el.clientHeight}`;
      if (overflow === 'visible') {
        if (el === area) problems.push(`spills out of its output area (${sizes}): ${label(el)}`);
      } else if (overflow === 'hidden' || overflow === 'clip') {
        if (!(axis === 'x' && cs.textOverflow === 'ellipsis')) {
          problems.push(`clipped (${axis}, ${sizes}): ${label(el)}`);
        }
      } else if (bars[axis] < 4) {
        problems.push(`scrolls without a visible scrollbar (${axis}, ${sizes}): ${label(el)}`);
      }
    }
  }
  return problems;
}
"""

#: The text a reader sees in an output: visible text nodes only (hidden separators are not).
_TEXT_JS = """
area => {
  const parts = [];
  const walker = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (el && el.checkVisibility()) parts.push(node.textContent);
  }
  return parts.join('');
}
"""


def _notebook_env(home: Path, pi_dir: Path) -> dict[str, str]:
    """The kernels' environment: this checkout's pinb, the pinned Pi, no keys, own folders."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.endswith(("_API_KEY", "_BASE_URL")) and name != "PINB_PI_COMMAND"
    }
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
        PINB_PI_DIR=str(pi_dir),
        PI_CODING_AGENT_DIR=str(home / "agent"),
        IPYTHONDIR=str(home / "ipython"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    (home / "agent").mkdir(parents=True, exist_ok=True)
    return env


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A JupyterLab that reads notebooks: it has no kernel to start for one it opens (the
    outputs are the fresh run's, and a kernel per notebook opened is CPU the suite waits
    for). ``(base_url, token, root)``."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's Chromium")
    root = tmp_path_factory.mktemp("lab")
    with jupyter_lab(root, "--KernelSpecManager.allowed_kernelspecs=none") as (base, token):
        yield base, token, root


@pytest.fixture(scope="module")
def reader() -> Iterator[Any]:
    """One Chromium page for the module's notebooks, each opened in a workspace of its own:
    JupyterLab's scripts are fetched and compiled once, not once a notebook."""
    with chromium_page(1300, 4000, scrollbars=True) as page:
        yield page


@pytest.fixture(scope="module")
def kernels(lab: tuple[str, str, Path], pi_install: Path) -> tuple[Path, dict[str, str]]:
    """Where the notebooks run (the lab's ``run/`` folder) and their kernels' environment."""
    root = lab[2]
    folder = root / "run"
    folder.mkdir(exist_ok=True)
    return folder, _notebook_env(root / ".kernels", pi_install)


#: Each notebook's fresh run, once for the module: the newcomer's read and the one story.
_EXECUTED: dict[str, Path] = {}


def _execute(name: str, folder: Path, env: dict[str, str]) -> Path:
    """Run ``notebooks/<name>`` fresh (nbclient), once; its copy with the outputs saved."""
    import nbformat
    from nbclient import NotebookClient

    if name in _EXECUTED:
        return _EXECUTED[name]

    notebook = nbformat.read(REPO / "notebooks" / name, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=600,  # a hang guard for one cell
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute(env=env)
    nbformat.write(notebook, folder / name)
    _EXECUTED[name] = folder / name
    return folder / name


@cache
def _font_files() -> tuple[str, ...]:
    """The font files fontconfig offers Chromium (it falls back across all of them)."""
    listed = subprocess.run(
        ["fc-list", "--format", "%{file}\n"], capture_output=True, text=True, check=True
    ).stdout
    return tuple(sorted({line for line in listed.splitlines() if line.strip()}))


@cache
def _drawable() -> frozenset[int]:
    """Every code point some installed font has a glyph for."""
    from fontTools.ttLib import TTCollection, TTFont

    points: set[int] = set()
    for path in _font_files():
        faces = TTCollection(path).fonts if path.lower().endswith(".ttc") else [TTFont(path)]
        for face in faces:
            points.update(face.getBestCmap() or {})
    return frozenset(points)


def _undrawable(text: str, cmap: frozenset[int] | set[int] | dict[int, Any]) -> list[str]:
    """Characters of ``text`` with no glyph in ``cmap`` (layout and control characters aside)."""
    shown = {
        ch
        for ch in text
        if not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Mn", "Me")
    }
    return sorted(f"{ch} U+{ord(ch):04X}" for ch in shown if ord(ch) not in cmap)


def _picture_problems(notebook: Path) -> list[str]:
    """Problems of the tree pictures a notebook saved (layout, and glyphs of the PNG's face)."""
    import nbformat
    from fontTools.ttLib import TTFont

    from pinb.render.tree.raster import font_for

    problems: list[str] = []
    cells = nbformat.read(notebook, as_version=4).cells
    for number, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            svg = output.get("data", {}).get("image/svg+xml")
            if not svg or "pinb-tree" not in svg[:400]:
                continue
            picture = svg_picture(svg)
            problems += picture_problems(picture, name=f"{notebook.name} cell {number}")
            for text in picture.texts:
                face = TTFont(font_for(text).path)
                missing = _undrawable(text.text, face.getBestCmap())
                if missing:
                    problems.append(f"{notebook.name} cell {number}: {text.text!r} {missing}")
    return problems


def _open(page: Any, base: str, token: str, name: str) -> Any:
    """Open ``run/<name>`` untrusted, in a workspace of its own; the outputs once drawn."""
    page.goto(
        f"{base}/lab/workspaces/{Path(name).stem}/tree/run/{name}?token={token}",
        wait_until="domcontentloaded",
    )
    page.wait_for_selector(".jp-Notebook .jp-OutputArea-output")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output img')]"
        ".every(img => img.complete)"
    )
    page.wait_for_timeout(500)  # the last layout pass after the images
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")


def test_the_checks_catch_what_the_newcomer_saw(lab: tuple[str, str, Path]) -> None:
    """Each check fails on what it is for: a clipped header, a table scrolling with no
    scrollbar, a ditto mark no installed font has, a label run into another. (First in the
    module: its browser, scrollbars hidden, is closed before the ``reader`` starts; one
    thread holds one Playwright at a time.)"""
    from pinb.render.tree.marks import Picture, Text

    base, token, root = lab
    (root / "run").mkdir(exist_ok=True)
    wide = "<div style='width:200px;overflow:hidden;white-space:nowrap'>" + "word " * 80 + "</div>"
    scrolled = (
        "<div style='max-width:100%;overflow-x:auto'><div style='width:3000px'>far too wide"
        "</div></div>"
    )
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "x",
         "outputs": [{"output_type": "display_data", "metadata": {},
                      "data": {"text/html": html, "text/plain": "x"}}]}
        for html in (wide, scrolled, "<div>status: 〃</div>")
    ]  # fmt: skip
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "run" / "odd.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    # Scrollbars hidden, as Playwright has them by default (and overlay scrollbars are).
    with watchdog(BUDGET_S), chromium_page(1300, 1000) as page:
        outputs = _open(page, base, token, "odd.ipynb")
        found = [outputs.nth(i).evaluate(_CLIPPED_JS) for i in range(outputs.count())]
        text = "".join(outputs.nth(i).evaluate(_TEXT_JS) for i in range(outputs.count()))
    assert any("clipped (x" in p for p in found[0]), found[0]
    assert any("without a visible scrollbar" in p for p in found[1]), found[1]
    assert _undrawable(text, _drawable()) == ["〃 U+3003"]
    picture = Picture(width=200, height=50)
    picture.texts += [
        Text(10, 20, "a label", "#000"),
        Text(30, 22, "another", "#000"),
        Text(150, 40, "too wide", "#000"),
    ]
    problems = picture_problems(picture)
    assert any("runs into" in p for p in problems) and any("leaves" in p for p in problems)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_newcomer_reads_every_output_whole(
    name: str, kernels: tuple[Path, dict[str, str]], lab: tuple[str, str, Path], reader: Any
) -> None:
    base, token, _ = lab
    notebook = _execute(name, *kernels)
    saved = json.loads(notebook.read_text(encoding="utf-8"))
    with_outputs = sum(1 for cell in saved["cells"] if cell.get("outputs"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob(f"{notebook.stem}-*.png"):
        old.unlink()
    started = time.monotonic()
    problems: list[str] = []
    text = ""
    page = reader
    with watchdog(BUDGET_S):
        try:
            outputs = _open(page, base, token, name)
            count = outputs.count()
            assert count >= with_outputs, f"{name}: {count} outputs shown of {with_outputs}"
            for i in range(count):
                output = outputs.nth(i)
                problems += [f"{name} output {i}: {p}" for p in output.evaluate(_CLIPPED_JS)]
                text += output.evaluate(_TEXT_JS) + "\n"
            # Screenshots after every check: an element screenshot (one taller than the view,
            # here 03's CompactionView) leaves the scroll boxes laid out meanwhile with no
            # scrollbar, in the page the checks read (not in a browser a reader scrolls).
            for i in range(count):
                output = outputs.nth(i)
                box = output.bounding_box()
                if box is not None and box["height"] > 4:
                    output.screenshot(path=str(SHOTS / f"{notebook.stem}-{i:02d}.png"))
            _no_injected_markup(page)
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(SHOTS / f"{notebook.stem}-failure.png"))
            raise
    missing = _undrawable(text, _drawable())
    if missing:
        problems.append(f"{name}: no installed font draws {', '.join(missing)}")
    problems += _picture_problems(notebook)
    assert problems == [], "\n".join(problems)
    assert time.monotonic() - started < BUDGET_S


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebooks_fresh_outputs_tell_one_story(
    name: str, kernels: tuple[Path, dict[str, str]]
) -> None:
    """The fresh run the newcomer read tells one story (``tests/test_one_story.py``)."""
    from tests.test_one_story import expected_story, read_notebook

    cells = json.loads(_execute(name, *kernels).read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", [])), cell
    story = read_notebook(name, cells)
    story.check()
    expected_story(name, story)
