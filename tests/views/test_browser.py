"""A real browser: JupyterLab and Debian's Chromium (via Playwright) run the explorer in a notebook.

The test starts JupyterLab on loopback with a token and an ephemeral port, opens a generated
notebook in headless Chromium, runs it, clicks an entry in the tree, moves the leaf, checks
the context panel changed and that none of the session's injected scripts ran. A screenshot
is kept in ``test-artifacts/``. Every wait has a timeout, and the server and the kernel are
always stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinb.core import Session
from tests.views.builders import demo_session, user
from tests.views.test_xss import TEXT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
STEP_MS = 30_000  # any single wait in the browser
BUDGET_S = 85.0  # the whole test

pytestmark = pytest.mark.slow


class BudgetExceeded(Exception):
    """The browser test ran out of its overall time budget."""


@contextlib.contextmanager
def watchdog(seconds: float) -> Iterator[None]:
    """Interrupt whatever the test is waiting on once ``seconds`` have passed.

    A ``SIGALRM`` raises in the main thread, so the ``finally`` blocks still stop the
    browser, the server and the kernel: the test fails instead of hanging.
    """

    def expire(signum: int, frame: object) -> None:
        raise BudgetExceeded(f"the browser test took longer than its {BUDGET_S:.0f} s budget")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(1.0, seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, timeout: float = 2.0) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return int(response.status)


def _stop(pid: int, sig: int = signal.SIGTERM) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


@contextlib.contextmanager
def jupyter_lab(root: Path) -> Iterator[tuple[str, str]]:
    """JupyterLab serving ``root`` on 127.0.0.1; yields ``(base_url, token)``; always stopped."""
    token = secrets.token_hex(16)
    port = _free_port()
    home = root / ".jupyter-home"
    config = home / "config"
    (config / "labconfig").mkdir(parents=True)
    # No news, update checks or extension manager: nothing may reach for the network.
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps(
            {
                "disabledExtensions": {
                    "@jupyterlab/apputils-extension:announcements": True,
                    "@jupyterlab/extensionmanager-extension": True,
                }
            }
        )
    )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        "--LabApp.extension_manager=readonly",
        "--ServerApp.terminals_enabled=False",
    ]
    if os.geteuid() == 0:  # CI runs as root
        command.append("--allow-root")
    log = (root / "jupyter.log").open("wb")
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 40
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"JupyterLab exited early:\n{(root / 'jupyter.log').read_text()[-3000:]}"
                )
            with contextlib.suppress(OSError):
                if _get(f"{base}/api/status?token={token}") == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(
                    f"JupyterLab did not start:\n{(root / 'jupyter.log').read_text()[-3000:]}"
                )
            time.sleep(0.25)
        yield base, token
    finally:
        # Ask the server to stop its kernels and itself, then make sure of it.
        with contextlib.suppress(OSError):
            request = urllib.request.Request(
                f"{base}/api/shutdown?token={token}", method="POST", data=b""
            )
            urllib.request.urlopen(request, timeout=5).close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()


def _start_kernel(base: str, token: str, notebook: str) -> None:
    """Start the notebook's kernel through the REST API, so Lab attaches to it directly."""
    body = json.dumps(
        {"path": notebook, "name": notebook, "type": "notebook", "kernel": {"name": "python3"}}
    ).encode()
    request = urllib.request.Request(
        f"{base}/api/sessions",
        data=body,
        method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=30).close()


def _notebook(path: Path, session_path: Path, compaction_id: str) -> None:
    code = [
        "import os, pathlib\n",
        "pathlib.Path('kernel.pid').write_text(str(os.getpid()))\n",
        "from pinb.core import Session\n",
        "from pinb.views import SessionExplorer\n",
        f"session = Session.open({str(session_path)!r})\n",
        "explorer = SessionExplorer(session, poll_interval=0.5)\n",
        "explorer",
    ]
    views = [
        "from IPython.display import display\n",
        "from pinb.views import CompactionView, ContextBreakdown, ContextPathView, TreeView\n",
        "display(TreeView(session), ContextPathView(session), ContextBreakdown(session),\n",
        f"        CompactionView({compaction_id!r}, session), session)",
    ]
    cells = [
        {
            "cell_type": "code",
            "metadata": {},
            "source": source,
            "outputs": [],
            "execution_count": None,
        }
        for source in (code, views)
    ]
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")


def test_explorer_in_jupyterlab_and_chromium(tmp_path: Path) -> None:
    started = time.monotonic()
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser test needs Debian's Chromium "
            "(apt-get install -y chromium)"
        )
    try:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install playwright (no browser download)")

    demo = demo_session(tmp_path / "sessions", text=TEXT)
    session_path = demo.session.path
    assert session_path is not None
    _notebook(tmp_path / "explorer.ipynb", session_path, demo.ids["compaction"])
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "explorer-failure.png").unlink(missing_ok=True)
    target = demo.ids["a4"]

    try:
        with (
            watchdog(BUDGET_S - (time.monotonic() - started)),
            jupyter_lab(tmp_path) as (base, token),
            sync_playwright() as playwright,
        ):
            _start_kernel(base, token, "explorer.ipynb")
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM),
                args=CHROMIUM_ARGS,
                headless=True,
                timeout=STEP_MS,
            )
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1500})
                page.set_default_timeout(STEP_MS)
                page.add_init_script(
                    "window.__pinb_xss = undefined;"
                    "window.alert = () => { window.__pinb_xss = 'alert'; };"
                )
                # Any dialog (kernel choice, …) is accepted whenever it shows up.
                page.add_locator_handler(
                    page.locator(".jp-Dialog"),
                    lambda dialog: dialog.locator(".jp-mod-accept").click(),
                )
                page.goto(
                    f"{base}/lab/tree/explorer.ipynb?token={token}", wait_until="domcontentloaded"
                )
                page.wait_for_selector(".jp-Notebook .jp-Cell")
                tree = page.locator(".pinb-explorer .pinb-tree select")
                for _ in range(3):  # a kernel dialog racing the first run can swallow it
                    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
                    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                    with contextlib.suppress(PlaywrightTimeout):
                        tree.wait_for(timeout=12_000)
                        break
                tree.wait_for(timeout=1_000)
                page.wait_for_selector(".pinb-view.pinb-session")  # the second cell's views
                context = page.locator(".pinb-context")
                context_before = context.text_content() or ""
                assert demo.ids["a7"] in context_before

                # Click a node: the entry of the first branch ending in a4.
                labels = tree.locator("option").all_text_contents()
                index = next(i for i, text in enumerate(labels) if target[:8] in text)
                tree.select_option(index=index)
                page.wait_for_function(
                    "id => document.querySelector('.pinb-details').textContent.includes(id)",
                    arg=target,
                )
                details = page.locator(".pinb-details").text_content() or ""
                assert "<img src=x onerror=" in details  # shown as text

                # Switch the leaf there and watch the context panel follow.
                page.locator(".pinb-continue").click()
                page.wait_for_function(
                    "before => document.querySelector('.pinb-context').textContent !== before",
                    arg=context_before,
                )
                page.wait_for_function(
                    "id => document.querySelector('.pinb-context').textContent.includes(id)",
                    arg=f"Context at leaf {target}",
                )
                assert Session.open(session_path).leaf_id == target

                # Another writer (as Pi would) appends; polling in the kernel shows it.
                Session.open(session_path).append_message(user("appended by another writer"))
                page.wait_for_function(
                    "() => [...document.querySelectorAll('.pinb-tree option')]"
                    ".some(o => o.textContent.replace(/\\u00a0/g, ' ')"
                    ".includes('appended by another writer'))"
                )

                assert page.evaluate("window.__pinb_xss") is None, "an injected script ran"
                injected = page.evaluate(
                    "document.querySelectorAll('.jp-OutputArea img, .jp-OutputArea script,"
                    " .jp-OutputArea iframe, .jp-OutputArea [onerror], .jp-OutputArea [onload],"
                    " .jp-OutputArea [onmouseover]').length"
                )
                assert injected == 0
                typeset = page.evaluate(
                    "document.querySelectorAll('.pinb-view mjx-container, .pinb-view .MathJax')"
                    ".length"
                )
                assert typeset == 0, "MathJax typeset session text"
                page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
                page.locator(".pinb-explorer").screenshot(
                    path=str(ARTIFACTS / "explorer-widget.png")
                )
                page.locator(".pinb-tree-view").first.screenshot(
                    path=str(ARTIFACTS / "tree-view.png")
                )
            except Exception:
                with contextlib.suppress(Exception):
                    page.screenshot(path=str(ARTIFACTS / "explorer-failure.png"), full_page=True)
                raise
            finally:
                browser.close()
    finally:
        pid_file = tmp_path / "kernel.pid"
        if pid_file.exists():  # the server stops its kernel; this only makes sure
            _stop(int(pid_file.read_text()), signal.SIGKILL)
    assert time.monotonic() - started < BUDGET_S
