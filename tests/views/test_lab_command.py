"""The command a newcomer runs first: ``.ci/lab`` opens the quickstart in JupyterLab in
Chromium, every shipped notebook opens unmodified, with its saved pictures and text as it
is met untrusted.

A file of its own (the browser helpers are :mod:`tests.views.test_browser`'s), so the
suite's two workers run it beside the other browser tests.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.views.test_browser import (
    ARTIFACTS,
    BUDGET_S,
    CHROMIUM,
    REPO,
    _free_port,
    _lab_env,
    _no_injected_markup,
    _stop,
    chromium_page,
    kernel_ready,
    wait_or_kill,
    watchdog,
)

pytestmark = pytest.mark.slow(seconds=60)


@contextlib.contextmanager
def lab_script(checkout: Path) -> Iterator[str]:
    """``bash .ci/lab`` in ``checkout`` (its ``.venv`` runs this JupyterLab); yields the URL
    it prints for the user to open. Always stopped."""
    import re

    venv = checkout / ".venv"
    (venv / "bin").mkdir(parents=True)
    jupyter = venv / "bin" / "jupyter"
    jupyter.write_text(f'#!/bin/sh\nexec {sys.executable} -m jupyter "$@"\n')
    jupyter.chmod(0o755)
    # The install stamp matches, so the script installs nothing.
    digest = subprocess.run(
        ["sha256sum", "pyproject.toml"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout.split()[0]
    (venv / ".pinb-lab-installed").write_text(digest + "\n")
    home = checkout / ".jupyter-home"
    env = _lab_env(home)
    port = _free_port()
    command = ["bash", ".ci/lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--LabApp.workspaces_dir={home / 'workspaces'}",
               f"--LabApp.user_settings_dir={home / 'settings'}",
               "--LabApp.extension_manager=readonly", "--ServerApp.terminals_enabled=False"]  # fmt: skip
    log_path = checkout / "lab.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        command, cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    printed = re.compile(rf"http://127\.0\.0\.1:{port}/\S*\?token=[0-9a-f]+")
    try:
        deadline = time.monotonic() + 40
        while not (found := printed.search(log_path.read_text(errors="replace"))):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f".ci/lab did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.25)
        yield found.group(0)
    finally:
        _stop(process.pid, signal.SIGINT)
        _stop(process.pid, signal.SIGINT)  # JupyterLab asks to confirm the first one
        wait_or_kill(process)
        log.close()


def _kernel_idle_and_clean(page: Any) -> list[str]:
    """Wait until the open notebook's kernel is idle; the titles of tabs marked unsaved."""
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    kernel_ready(page)
    page.wait_for_timeout(500)  # JupyterLab writes the kernel's metadata just after
    return list(
        page.evaluate(
            "() => [...document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty')]"
            ".map(t => t.textContent)"
        )
    )


def _pictures_and_text_untrusted(page: Any, notebook: Path) -> None:
    """The open ``notebook`` as a newcomer first meets it: saved outputs, untrusted. Every
    saved picture shows, loaded and readable; no markup shows as text, none is injected."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    saved_pictures = sum(
        "image/png" in output.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    page.wait_for_selector(".jp-Notebook .jp-OutputArea-output")
    pictures = page.locator(".jp-OutputArea-output.jp-RenderedImage img")
    if saved_pictures:
        pictures.first.wait_for()
    # JupyterLab renders cells as they scroll into view: scroll down as a reader
    # would, and note every picture that shows, loaded and of a readable size.
    shown: set[str] = set()
    seen_text: list[str] = []
    captured = False
    for _ in range(60):
        shown |= set(
            page.evaluate(
                "() => [...document.querySelectorAll("
                "'.jp-OutputArea-output.jp-RenderedImage img')]"
                ".filter(img => img.complete && img.naturalWidth > 100"
                " && img.getBoundingClientRect().width > 250)"
                ".map(img => img.src.length + ':' + img.src.slice(-64))"
            )
        )
        seen_text.append(page.locator(".jp-Notebook").inner_text())
        if notebook.name.startswith("02") and shown and not captured:
            page.screenshot(path=str(ARTIFACTS / "shipped-02.png"))
            captured = True
        at_end = page.evaluate(
            "() => { const el = document.querySelector("
            "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer');"
            " const before = el.scrollTop; el.scrollTop += el.clientHeight * 0.8;"
            " return el.scrollTop === before; }"
        )
        page.wait_for_timeout(150)
        if at_end:
            break
    assert len(shown) == saved_pictures, f"{notebook.name}: {len(shown)} of {saved_pictures}"
    text = "\n".join(seen_text)
    for leak in ("{font-family", "<div", "<details", "<span", "pinb-view{", "<svg"):
        assert leak not in text, f"{notebook.name}: {leak}"
    _no_injected_markup(page)


def test_the_lab_command_opens_the_quickstart_and_no_tab_starts_unsaved(tmp_path: Path) -> None:
    """The URL ``.ci/lab`` prints opens the quickstart; no shipped notebook opens modified,
    and each shows its saved pictures and text as a newcomer first meets it (untrusted)."""
    import shutil

    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's Chromium")
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / ".ci", checkout / ".ci")
    shutil.copytree(REPO / "notebooks", checkout / "notebooks")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    ARTIFACTS.mkdir(exist_ok=True)
    with watchdog(BUDGET_S), lab_script(checkout) as url, chromium_page(1300, 900) as page:
        try:
            assert "/lab/tree/notebooks/01-quickstart.ipynb?" in url
            page.goto(url, wait_until="domcontentloaded")
            current = page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")
            page.wait_for_function(
                "() => [...document.querySelectorAll('.lm-TabBar-tab.lm-mod-current')]"
                ".some(t => t.textContent.includes('01-quickstart.ipynb'))"
            )
            assert any("01-quickstart.ipynb" in t for t in current.all_text_contents())
            assert _kernel_idle_and_clean(page) == []
            page.screenshot(path=str(ARTIFACTS / "lab-quickstart.png"))
            _pictures_and_text_untrusted(page, checkout / "notebooks" / "01-quickstart.ipynb")
            base, token = url.split("/lab/")[0], url.split("token=")[1]
            for notebook in sorted((checkout / "notebooks").glob("0[2-9]*.ipynb")):
                page.goto(
                    f"{base}/lab/workspaces/{notebook.stem}/tree/notebooks/{notebook.name}"
                    f"?token={token}",
                    wait_until="domcontentloaded",
                )
                assert _kernel_idle_and_clean(page) == [], notebook.name
                _pictures_and_text_untrusted(page, notebook)
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "lab-failure.png"), full_page=True)
            raise
