"""A real browser: JupyterLab and Debian's Chromium (via Playwright) run the tree widget.

JupyterLab starts once on loopback with a token and an ephemeral port. One test opens a
generated notebook, runs it, clicks entries in the tree widget and acts on them (continue,
label, archive, unarchive, search), watches another writer's entry appear, and checks that
none of the session's injected scripts ran. The other opens a notebook whose outputs were
saved beforehand, untrusted (as a fresh clone or a download is), and checks that every tree
picture is visible and no markup shows as text. Screenshots are kept in
``test-artifacts/``. Every wait has a timeout; the server and the kernels are always stopped.
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
from typing import Any

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
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
STEP_MS = 120_000  # any single wait in the browser: a hang guard, generous under load
BUDGET_S = 900.0  # the whole test: a hang guard (speed is the benchmarks' job)

pytestmark = pytest.mark.slow(seconds=45)


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


def _lab_env(home: Path) -> dict[str, str]:
    """Environment for a JupyterLab of its own: config, data and settings under ``home``."""
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
    # Every cell rendered, not only those scrolled into view, so the page can be read whole.
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
        # Kernels import the pinb of this checkout (the virtualenv may hold another).
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    return env


@contextlib.contextmanager
def jupyter_lab(root: Path, *options: str) -> Iterator[tuple[str, str]]:
    """JupyterLab serving ``root`` on 127.0.0.1 (with ``options`` added to its command line);
    yields ``(base_url, token)``; always stopped."""
    token = secrets.token_hex(16)
    port = _free_port()
    env = _lab_env(root / ".jupyter-home")
    home = root / ".jupyter-home"
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
        *options,
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
        wait_or_kill(process)
        log.close()


def wait_or_kill(process: subprocess.Popen[bytes]) -> None:
    """Wait for a server asked to stop; past 10 s, kill its process group."""
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _start_kernel(base: str, token: str, notebook: str) -> None:
    """Start the notebook's kernel through the REST API, so Lab attaches to it directly
    (named as JupyterLab names it: ``path`` from the root, ``name`` the file's)."""
    name = notebook.rsplit("/", 1)[-1]
    body = json.dumps(
        {"path": notebook, "name": name, "type": "notebook", "kernel": {"name": "python3"}}
    ).encode()
    request = urllib.request.Request(
        f"{base}/api/sessions",
        data=body,
        method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=30).close()


def _cell(source: list[str], outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "metadata": {},
        "source": source,
        "outputs": outputs or [],
        "execution_count": None,
    }


def _write_notebook(path: Path, cells: list[dict[str, Any]]) -> None:
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")


def _explorer_notebook(path: Path, session_path: Path, compaction_id: str) -> None:
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
    _write_notebook(path, [_cell(code), _cell(views)])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """One JupyterLab for the module's browser tests: ``(base_url, token, root)``."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser test needs Debian's Chromium "
            "(apt-get install -y chromium)"
        )
    root = tmp_path_factory.mktemp("lab")
    try:
        with jupyter_lab(root) as (base, token):
            yield base, token, root
    finally:
        for pid_file in root.rglob("kernel.pid"):  # the server stops its kernels; make sure
            with contextlib.suppress(ValueError):
                _stop(int(pid_file.read_text()), signal.SIGKILL)


@contextlib.contextmanager
def chromium_page(
    width: int = 1500, height: int = 1400, *, scrollbars: bool = False
) -> Iterator[Any]:
    """A fresh headless Chromium page; scripts the session injects would set a flag.

    ``scrollbars``: drawn as a desktop browser draws them (Playwright hides them).
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install playwright (no browser download)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            timeout=STEP_MS,
            ignore_default_args=["--hide-scrollbars"] if scrollbars else None,
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(STEP_MS)
            page.add_init_script(
                "window.__pinb_xss = undefined;"
                "window.alert = () => { window.__pinb_xss = 'alert'; };"
            )
            # Any dialog (kernel choice, …) is answered whenever it shows up. Not waiting for
            # ".jp-Dialog" to hide: a dialog queued behind the answered one would keep it
            # visible for the whole step, while the next check answers that one too.
            page.add_locator_handler(page.locator(".jp-Dialog"), _answer, no_wait_after=True)
            yield page
        finally:
            browser.close()


def _answer(dialog: Any) -> None:
    """Accept a JupyterLab dialog (Escape if it has no accept button); its text goes to the
    test's captured output, so a failure says which dialog stood in the way."""
    with contextlib.suppress(Exception):
        print("JupyterLab dialog:", " | ".join(dialog.inner_text(timeout=2_000).split()))
    accept = dialog.locator(".jp-mod-accept")
    if accept.count():
        accept.first.click()
    else:
        dialog.press("Escape")


#: The open notebook's kernel, started and idle, as JupyterLab's status bar says it.
_KERNEL_IDLE = (
    "/[(]ipykernel[)] [|] Idle/"
    ".test(document.querySelector('#jp-main-statusbar')?.textContent || '')"
)


def kernel_ready(page: Any) -> None:
    """Wait until the open notebook's kernel is started and idle, every dialog answered on
    the way. JupyterLab asks for a kernel when it looked for the notebook's session before
    the server had it (under load); a cell run before that answer goes to a kernel that is
    replaced under it, and the run is lost."""
    while True:
        page.wait_for_function(f"() => document.querySelector('.jp-Dialog') || {_KERNEL_IDLE}")
        if not page.locator(".jp-Dialog").count():
            return
        page.locator("#jp-main-statusbar").hover()  # an action: the dialog is answered first


def _run_all(page: Any) -> None:
    """Run all cells from the menu, once the kernel is ready."""
    kernel_ready(page)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def _open_notebook(page: Any, base: str, token: str, notebook: str, *, run: bool = True) -> None:
    """Start ``notebook``'s kernel (as JupyterLab does), open it in a workspace of its own
    (named after its folder) and, with ``run``, Run All once the kernel is ready."""
    _start_kernel(base, token, notebook)
    workspace = notebook.split("/")[0] if "/" in notebook else Path(notebook).stem
    page.goto(
        f"{base}/lab/workspaces/{workspace}/tree/{notebook}?token={token}",
        wait_until="domcontentloaded",
    )
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    if run:
        _run_all(page)


def _no_injected_markup(page: Any) -> None:
    assert page.evaluate("window.__pinb_xss") is None, "an injected script ran"
    injected = page.evaluate(
        "document.querySelectorAll('.jp-OutputArea script, .jp-OutputArea iframe,"
        " .jp-OutputArea [onerror], .jp-OutputArea [onload], .jp-OutputArea [onmouseover],"
        ' .jp-OutputArea img:not([src^="data:image/"])\').length'
    )
    assert injected == 0
    typeset = page.evaluate(
        "document.querySelectorAll('.pinb-view mjx-container, .pinb-view .MathJax').length"
    )
    assert typeset == 0, "MathJax typeset session text"


def _row(page: Any, key: str) -> Any:
    return page.locator(f'.pinb-tw-row[data-id="{key}"]')


def test_tree_widget_in_jupyterlab_and_chromium(lab: tuple[str, str, Path], tmp_path: Path) -> None:
    started = time.monotonic()
    base, token, root = lab
    folder = root / "widget"
    demo = demo_session(folder / "sessions", text=TEXT)
    session_path = demo.session.path
    assert session_path is not None
    _explorer_notebook(folder / "explorer.ipynb", session_path, demo.ids["compaction"])
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "explorer-failure.png").unlink(missing_ok=True)
    ids = demo.ids

    with watchdog(BUDGET_S), chromium_page() as page:
        try:
            _open_notebook(page, base, token, "widget/explorer.ipynb")
            widget = page.locator('.pinb-tw[data-ready="1"]')
            widget.wait_for()
            page.wait_for_selector(".pinb-view.pinb-session")  # the second cell's views
            # The leaf's row is marked and selected; the entry panel shows it.
            leaf_row = _row(page, ids["a7"])
            assert "◀ leaf" in (leaf_row.text_content() or "")
            assert "pinb-tw-selected" in (leaf_row.get_attribute("class") or "")
            page.wait_for_function(
                "id => document.querySelector('.pinb-details').textContent.includes(id)",
                arg=ids["a7"],
            )

            # Click a node: the entry of the first branch ending in a4.
            _row(page, ids["a4"]).click()
            page.wait_for_function(
                "id => document.querySelector('.pinb-details').textContent.includes(id)",
                arg=ids["a4"],
            )
            details = page.locator(".pinb-details").text_content() or ""
            assert "<img src=x onerror=" in details  # shown as text
            page.locator(".pinb-tw-tab-context_html").click()
            page.wait_for_function(
                "id => document.querySelector('.pinb-context').textContent"
                ".includes('Context from ' + id)",  # "leaf" is the session's leaf only
                arg=ids["a4"],
            )

            # Continue there: the leaf moves in the file and in the picture.
            page.locator(".pinb-continue").click()
            page.wait_for_function(
                "id => (document.querySelector(`.pinb-tw-row[data-id='${id}']`) || {})"
                ".textContent?.includes('◀ leaf')",
                arg=ids["a4"],
            )
            assert Session.open(session_path).leaf_id == ids["a4"]

            # Label it from the widget.
            page.locator(".pinb-label-text").fill("tests pass here")
            page.locator(".pinb-label").click()
            page.wait_for_function(
                "id => (document.querySelector(`.pinb-tw-row[data-id='${id}']`) || {})"
                ".textContent?.includes('[tests pass here]')",
                arg=ids["a4"],
            )
            # The box shows the label the entry has, and another entry's own (none here).
            assert page.locator(".pinb-label-text").input_value() == "tests pass here"
            _row(page, ids["u2"]).click()
            page.wait_for_function("() => document.querySelector('.pinb-label-text').value === ''")
            _row(page, ids["a4"]).click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-label-text').value === 'tests pass here'"
            )

            # Archive the branch-summary branch (off the path now), then bring it back.
            rows_before = int(widget.get_attribute("data-rows") or 0)
            _row(page, ids["branch_summary"]).click()
            page.wait_for_function(
                "id => document.querySelector('.pinb-details').textContent.includes(id)",
                arg=ids["branch_summary"],
            )
            page.locator(".pinb-archive").click()
            page.wait_for_selector(".pinb-unarchive")
            assert int(widget.get_attribute("data-rows") or 0) < rows_before
            assert _row(page, ids["u6"]).count() == 0
            assert ids["branch_summary"] in Session.open(session_path).archived
            page.locator(".pinb-unarchive").click()
            page.wait_for_function(
                "id => !!document.querySelector(`.pinb-tw-row[data-id='${id}']`)", arg=ids["u6"]
            )

            # Search by text: the hit is highlighted.
            page.locator(".pinb-tw-search").fill("Back on the main line")
            page.wait_for_function(
                "id => (document.querySelector(`.pinb-tw-row[data-id='${id}']`) || {})"
                ".className?.includes('pinb-tw-match')",
                arg=ids["u6"],
            )

            # A compaction's own panel: what its summary kept, lost facts first; a lost
            # fact's entry is a link that selects it (the entry panel shows it).
            _row(page, ids["compaction"]).click()
            tab = page.locator(".pinb-tw-tab-compaction_html")
            page.wait_for_function(
                "() => document.querySelector('.pinb-tw-tab-compaction_html').textContent"
                " === 'This compaction'"
            )
            tab.click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-compaction-preview').textContent"
                ".includes('What the summary kept')"
            )
            panel = page.locator(".pinb-compaction-preview").text_content() or ""
            assert "kept by the summary" in panel and "%pi compactions --id" in panel
            assert "<script>window.__pinb_xss=1</script>" in panel  # a lost command, as text
            page.locator(".pinb-tw-side").screenshot(
                path=str(ARTIFACTS / "explorer-compaction.png")
            )
            page.locator(f'.pinb-compaction-preview [data-pinb-entry="{ids["bash"]}"]').click()
            page.wait_for_function(
                "id => document.querySelector('.pinb-details').textContent.includes(id)"
                " && document.querySelector('.pinb-details').offsetParent !== null",
                arg=ids["bash"],
            )
            assert "pinb-tw-selected" in (_row(page, ids["bash"]).get_attribute("class") or "")
            assert tab.text_content() == "Compaction here"

            # Give back what the compaction lost: only on the active path (the leaf is a4's
            # branch now, so first continue after the compaction).
            give_back = page.locator(".pinb-uncompact")
            _row(page, ids["compaction"]).click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-uncompact').title.includes('not on the active path')"
            )
            assert give_back.is_disabled()
            _row(page, ids["a7"]).click()
            page.locator(".pinb-continue").click()
            page.wait_for_function(
                "id => (document.querySelector(`.pinb-tw-row[data-id='${id}']`) || {})"
                ".textContent?.includes('◀ leaf')",
                arg=ids["a7"],
            )
            _row(page, ids["compaction"]).click()
            page.wait_for_function("() => !document.querySelector('.pinb-uncompact').disabled")
            give_back.click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-tw-status').textContent.startsWith('gave back')"
            )
            last = Session.open(session_path).entries[-1]
            assert last.type == "custom_message" and last.raw["customType"] == "pinb.uncompact"
            assert last.raw["details"]["compactionId"] == ids["compaction"]
            assert f"in entry {last.id}" in (page.locator(".pinb-tw-status").text_content() or "")

            # Another writer (as Pi would) appends; polling in the kernel shows it.
            Session.open(session_path).append_message(user("appended by another writer"))
            page.wait_for_function(
                "() => [...document.querySelectorAll('.pinb-tw-row')]"
                ".some(r => r.textContent.includes('appended by another writer'))"
            )
            _no_injected_markup(page)
            page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
            page.locator(".pinb-tw").first.screenshot(path=str(ARTIFACTS / "explorer-widget.png"))
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "explorer-failure.png"), full_page=True)
            raise
    assert time.monotonic() - started < BUDGET_S


def test_compaction_view_gives_back_from_its_button(lab: tuple[str, str, Path]) -> None:
    """A CompactionView shown in a live kernel is the widget: its button appends one give-back
    to the file, says what it appended, redraws, and a second click writes nothing."""
    started = time.monotonic()
    base, token, root = lab
    folder = root / "giveback"
    demo = demo_session(folder / "sessions", text=TEXT)
    session_path = demo.session.path
    assert session_path is not None
    compaction = demo.ids["compaction"]
    code = [
        "import os, pathlib\n",
        "pathlib.Path('kernel.pid').write_text(str(os.getpid()))\n",
        "from pinb.core import Session\n",
        "from pinb.views import CompactionView\n",
        f"session = Session.open({str(session_path)!r})\n",
        f"CompactionView({compaction!r}, session)",
    ]
    _write_notebook(folder / "giveback.ipynb", [_cell(code)])
    ARTIFACTS.mkdir(exist_ok=True)
    lines = session_path.read_text().splitlines()
    with watchdog(BUDGET_S), chromium_page(1300, 1200) as page:
        try:
            _open_notebook(page, base, token, "giveback/giveback.ipynb")
            button = page.locator(".pinb-cw-give-back")
            button.wait_for()
            view = page.locator(".pinb-cw")
            assert button.text_content() == "Give back what it lost"
            assert not button.is_disabled()
            body = page.locator(".pinb-cw-body").text_content() or ""
            assert f"Compaction {compaction}" in body and "What pinb kept and gave back" in body
            assert "%pi uncompact" not in body  # the button stands where the command was
            assert "<script>window.__pinb_xss=1</script>" in body  # a lost command, as text
            revision = int(view.get_attribute("data-revision") or 0)
            button.click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-cw-status').textContent"
                ".startsWith('gave back')"
            )
            grown = session_path.read_text().splitlines()
            assert len(grown) == len(lines) + 1 and grown[: len(lines)] == lines
            added = json.loads(grown[-1])
            assert added["customType"] == "pinb.uncompact"
            assert added["details"]["compactionId"] == compaction
            status = page.locator(".pinb-cw-status").text_content() or ""
            assert f"in entry {added['id']}: {added['details']['tokens']:,} of" in status
            assert f"{len(added['details']['facts'])} fact" in status
            page.wait_for_function(
                "id => document.querySelector('.pinb-cw-body').textContent"
                ".includes('given back in ' + id)",
                arg=added["id"],
            )
            assert int(view.get_attribute("data-revision") or 0) > revision
            page.wait_for_function("() => !document.querySelector('.pinb-cw-give-back').disabled")
            _no_injected_markup(page)
            view.screenshot(path=str(ARTIFACTS / "compaction-give-back.png"))
            button.click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-cw-status').textContent"
                ".startsWith('nothing to give back')"
            )
            assert session_path.read_text().splitlines() == grown
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "giveback-failure.png"), full_page=True)
            raise
    assert time.monotonic() - started < BUDGET_S


def test_saved_outputs_show_untrusted(lab: tuple[str, str, Path]) -> None:
    """A notebook with saved outputs, opened untrusted: tree pictures visible, no raw markup."""
    from tests.views.sanitizers import saved_outputs_notebook

    started = time.monotonic()
    base, token, root = lab
    folder = root / "static"
    demo = demo_session(folder / "sessions", text=TEXT)
    saved_outputs_notebook(folder / "saved.ipynb", demo.session, demo.ids["compaction"])
    ARTIFACTS.mkdir(exist_ok=True)
    with watchdog(BUDGET_S), chromium_page(1300, 1200) as page:
        try:
            page.goto(
                f"{base}/lab/workspaces/untrusted/tree/static/saved.ipynb?token={token}",
                wait_until="domcontentloaded",
            )
            page.wait_for_selector(".jp-Notebook .jp-OutputArea-output")
            trusted = page.evaluate(
                "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].length"
            )
            assert trusted >= 3
            pictures = page.locator(".jp-OutputArea-output.jp-RenderedImage img")
            pictures.first.wait_for()
            count = pictures.count()
            assert count >= 2  # the TreeView and the widget's static fallback
            for i in range(count):
                picture = pictures.nth(i)
                picture.scroll_into_view_if_needed()
                box = picture.bounding_box()
                assert box is not None and box["width"] > 300 and box["height"] > 200
                loaded = picture.evaluate("img => img.complete && img.naturalWidth > 0")
                assert loaded, "a tree picture did not load"
                assert (picture.get_attribute("src") or "").startswith("data:image/png")
            # Untrusted HTML outputs lost nothing that shows: no CSS or tags as text.
            text = page.locator(".jp-Notebook").inner_text()
            for leak in ("{font-family", "<div", "<table", "<td", "pinb-view{", "border-collapse"):
                assert leak not in text, leak
            # The views' tables are divs laid out by inline styles, which JupyterLab keeps
            # for untrusted outputs: they are real tables, their separators hidden.
            assert page.locator(".jp-RenderedHTMLCommon .pinb-table").count() >= 3
            layout = page.evaluate(
                "() => { const t = document.querySelector('.jp-RenderedHTMLCommon .pinb-table');"
                " const cell = t.querySelector('.pinb-td');"
                " const sep = cell.nextElementSibling;"
                " return [getComputedStyle(t).display, getComputedStyle(cell).display,"
                " getComputedStyle(sep).display]; }"
            )
            assert layout == ["table", "table-cell", "none"], layout
            assert "Context at leaf" in text and "What the model sees" in text
            _no_injected_markup(page)
            page.screenshot(path=str(ARTIFACTS / "untrusted-notebook.png"), full_page=True)
            context = page.locator(".jp-RenderedHTMLCommon .pinb-context-path").first
            context.scroll_into_view_if_needed()
            context.screenshot(path=str(ARTIFACTS / "untrusted-context-path.png"))
            pictures.first.screenshot(path=str(ARTIFACTS / "tree-view.png"))
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "untrusted-failure.png"), full_page=True)
            raise
    assert time.monotonic() - started < BUDGET_S


def _wide_outputs_notebook(path: Path, root: Path) -> None:
    """Saved outputs (untrusted) of the views that hold the widest tables."""
    from pinb.analysis import (
        UsageTotalsView,
        compaction_ledger,
        search,
        usage_calibration,
        usage_totals,
        what_if,
    )
    from pinb.core import ExtractiveSummarizer
    from pinb.testing.story import EXTRA_TASKS, story_tasks, write_story_session
    from pinb.views import ContextPathView
    from tests.views.sanitizers import check_html_survives, output_of

    story = write_story_session(
        root / "--home-dev-textstats--",
        seed=7,
        tasks=story_tasks(extras=EXTRA_TASKS),
        context_window=5_000,
    )
    last = [e for e in story.entries if e.type == "compaction"][-1]
    views = {
        "what-if": what_if(
            story,
            last.parent_id,
            keep_recent_tokens=(600, 1_250, 2_000),
            summarizer=ExtractiveSummarizer(),
            context_window=5_000,
        ),
        "ledger": compaction_ledger(story),
        "calibration": usage_calibration(story),
        "search": search("file:textstats/core.py tool:edit", root=root, limit=5),
        "context": ContextPathView(story, last.parent_id),
        "totals": UsageTotalsView(usage_totals(root, "session")),
    }
    cells = []
    for i, (name, view) in enumerate(views.items()):
        output = output_of(view)
        check_html_survives(output["data"]["text/html"])
        cells.append({**_cell([f"{name}  # {type(view).__name__}"], [output]), "id": f"c{i}"})
    _write_notebook(path, cells)


def test_wide_outputs_fit_their_cell(lab: tuple[str, str, Path]) -> None:
    """Each view is as wide as its output cell at most; a table wider than that scrolls
    inside the view, and the what-if, search and context tables wrap to fit."""
    base, token, root = lab
    folder = root / "wide"
    _wide_outputs_notebook(folder / "wide.ipynb", folder / "sessions")
    ARTIFACTS.mkdir(exist_ok=True)
    with watchdog(BUDGET_S), chromium_page(1300, 1000) as page:
        try:
            page.goto(
                f"{base}/lab/workspaces/wide/tree/wide/wide.ipynb?token={token}",
                wait_until="domcontentloaded",
            )
            page.wait_for_selector(".jp-Notebook .pinb-view.pinb-usage-totals")
            sizes = page.evaluate(
                "() => [...document.querySelectorAll('.jp-OutputArea-output')].map(o => {"
                " const v = o.querySelector('.pinb-view');"
                " return v && {name: [...v.classList].find(c => c.startsWith('pinb-')"
                "   && c !== 'pinb-view'), cell: o.clientWidth,"
                "   box: v.getBoundingClientRect().width, content: v.scrollWidth,"
                "   view: v.clientWidth, overflow: getComputedStyle(v).overflowX}; })"
            )
            assert len(sizes) == 6 and all(sizes), sizes
            for size in sizes:
                assert size["box"] <= size["cell"] + 1, size  # never wider than the cell
                if size["content"] > size["view"] + 1:  # what does not fit scrolls in place
                    assert size["overflow"] == "auto", size
            fitted = {s["name"]: s["content"] <= s["view"] + 1 for s in sizes}
            for name in ("pinb-what-if", "pinb-search", "pinb-context-path", "pinb-calibration"):
                assert fitted[name], (name, sizes)
            # A long context pages: its first rows, those nearest the leaf, and how many more.
            context = page.locator(".pinb-view.pinb-context-path").first
            assert "more rows" in (context.text_content() or "")
            # The what-if shows the current settings and the other two within the cell (a
            # scenario equal to the current settings is their column).
            what_if_view = page.locator(".pinb-view.pinb-what-if")
            cell_right = what_if_view.evaluate(
                "v => v.closest('.jp-OutputArea-output').getBoundingClientRect().right"
            )
            heads = what_if_view.locator(".pinb-tr").first.locator(".pinb-td")
            assert heads.count() == 4
            for i in range(4):
                box = heads.nth(i).bounding_box()
                assert box is not None and box["x"] + box["width"] <= cell_right + 1
            what_if_view.screenshot(path=str(ARTIFACTS / "wide-what-if.png"))
            page.locator(".pinb-view.pinb-ledger").screenshot(
                path=str(ARTIFACTS / "wide-ledger.png")
            )
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "wide-failure.png"), full_page=True)
            raise


def test_explorer_actions_in_the_shipped_notebook(
    lab: tuple[str, str, Path], tmp_path: Path
) -> None:
    """Notebook 02 run as shipped: the explorer's actions work as it builds the widget, a
    label moves nothing, the file agrees, text stays whole at 80% and the tokens show."""
    import shutil
    import tempfile

    from pinb.testing.story import EXTRA_TASKS, story_tasks, write_story_session

    base, token, root = lab
    folder = root / "shipped02"
    folder.mkdir()
    shutil.copy(REPO / "notebooks" / "02-session-trees.ipynb", folder / "02.ipynb")
    # The notebook writes the story with a fixed seed: the same ids as this copy.
    story = write_story_session(tmp_path / "same", tasks=story_tasks(extras=EXTRA_TASKS[:2]))
    path = [e for e in story.path_to() if e.type == "message"]
    here, earlier = path[-3].id, path[-6].id
    started = time.time()
    ARTIFACTS.mkdir(exist_ok=True)
    with watchdog(BUDGET_S), chromium_page(1500, 1300) as page:
        try:
            _open_notebook(page, base, token, "shipped02/02.ipynb")
            widget = page.locator('.pinb-tw[data-ready="1"]')
            widget.wait_for()
            widget.scroll_into_view_if_needed()
            status = widget.locator(".pinb-status")

            # The token column is in view in the pane as it opens.
            scroller_box = widget.locator(".pinb-tw-scroller").bounding_box()
            tokens_box = widget.locator(".pinb-tw-row .pinb-tw-tokens").first.bounding_box()
            assert scroller_box is not None and tokens_box is not None
            assert (
                tokens_box["x"] + tokens_box["width"] <= scroller_box["x"] + scroller_box["width"]
            )

            # Archive is greyed out on the active path, and says why.
            _row(widget, here).click()
            archive = widget.locator(".pinb-archive")
            assert archive.is_disabled()
            assert "active path cannot be archived" in (archive.get_attribute("title") or "")

            # Continue here, then label: the conversation stays where it was put.
            widget.locator(".pinb-continue").click()
            page.wait_for_function(
                "([el, id]) => el.textContent.includes('Leaf moved to ' + id)",
                arg=[status.element_handle(), here],
            )
            widget.locator(".pinb-label-text").fill("checked by hand")
            widget.locator(".pinb-label").click()
            page.wait_for_function(
                "([el, id]) => el.textContent === `Label of ${id} set to “checked by hand”.`",
                arg=[status.element_handle(), here],
            )
            assert "◀ continues here" in (_row(widget, here).text_content() or "")
            files = [
                p for p in Path(tempfile.gettempdir()).glob("pinb-trees-*/*.jsonl")
                if p.stat().st_mtime >= started
            ]  # fmt: skip
            assert len(files) == 1
            reopened = Session.open(files[0])
            assert reopened.build_context().messages == reopened.build_context(here).messages
            summary = widget.locator(".pinb-tw-summary").text_content() or ""
            assert f"({len(reopened.entries)} entries in the file)" in summary
            assert f"leaf {reopened.leaf_id}" in summary

            # Continue with a branch summary, as notebook 02 builds the widget (no model).
            _row(widget, earlier).click()
            widget.locator(".pinb-summarize").click()
            page.wait_for_function(
                'el => el.textContent.includes("written by pinb\'s offline extractive")',
                arg=status.element_handle(),
            )
            assert "pinb-tw-status-info" in (status.get_attribute("class") or "")
            reopened = Session.open(files[0])
            assert reopened.leaf is not None and reopened.leaf.type == "branch_summary"
            assert reopened.leaf.parent_id == earlier
            assert f"Leaf moved to {reopened.leaf_id} " in (status.text_content() or "")

            # At 80% the monospace text keeps room below its baseline (underscores show).
            widget.locator(".pinb-tw-zoom-out").click()
            page.wait_for_function(
                "el => el.querySelector('.pinb-tw-zoom-reset').textContent === '80%'",
                arg=widget.element_handle(),
            )
            metrics = widget.evaluate(
                "w => { const t = w.querySelector('.pinb-tw-row .pinb-tw-text');"
                " const s = getComputedStyle(t); const rest = t.querySelector('.pinb-tw-rest');"
                " return [parseFloat(s.fontSize), parseFloat(s.lineHeight),"
                " t.getBoundingClientRect().height, rest.getBoundingClientRect().height]; }"
            )
            font, line, row_height, text_height = metrics
            assert abs(font - 12 * 0.8) < 0.01 and line >= 1.4 * font
            assert text_height <= row_height + 0.5  # the line box fits the row
            _row(widget, earlier).scroll_into_view_if_needed()
            widget.screenshot(path=str(ARTIFACTS / "explorer-02-80.png"))
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "explorer-02-failure.png"), full_page=True)
            raise


# A stand-in for anywidget's model with the widget's real state: counts the listeners each
# view adds and fires change events as the kernel would.
_MODEL_JS = """
(state) => {
  const handlers = new Map();
  return {
    state, sent: [],
    get(key) { return this.state[key]; },
    set(key, value) { this.state[key] = value; },
    save_changes() {},
    send(message) { this.sent.push(message); },
    on(event, fn) { (handlers.get(event) || handlers.set(event, new Set()).get(event)).add(fn); },
    off(event, fn) { if (handlers.has(event)) handlers.get(event).delete(fn); },
    count() { let n = 0; for (const set of handlers.values()) n += set.size; return n; },
    fire(key, value) { this.state[key] = value; for (const fn of handlers.get("change:" + key) || []) fn(); },
  };
}
"""

_WINDOW_COUNT_JS = """
window.__pinb_window_listeners = 0;
const add = window.addEventListener.bind(window), remove = window.removeEventListener.bind(window);
window.addEventListener = (...a) => { window.__pinb_window_listeners++; add(...a); };
window.removeEventListener = (...a) => { window.__pinb_window_listeners--; remove(...a); };
"""


def test_a_removed_tree_widget_view_leaves_no_listener_behind(tmp_path: Path) -> None:
    """Two views of one widget, removed one by one: every model and window listener goes.

    The view that is gone no longer follows the model (its search note stays as it was)
    while the one still shown does.
    """
    from pinb.views import TreeWidget

    widget = TreeWidget(demo_session(tmp_path).session)
    state = {
        name: getattr(widget, name)
        for name in widget.trait_names(sync=True)
        if not name.startswith("_") and name not in ("layout", "tooltip", "tabbable")
    }
    source = (REPO / "pinb" / "views" / "tree_widget.js").read_text(encoding="utf-8")
    with chromium_page(900, 700) as page:
        page.add_init_script(_WINDOW_COUNT_JS)
        page.goto("about:blank")
        page.set_content("<div id='a'></div><div id='b'></div>")
        counts = page.evaluate(
            """async ([source, state, makeModel]) => {
              const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
              const widget = (await import(url)).default;
              const model = (0, eval)(makeModel)(state);
              const el = (id) => document.getElementById(id);
              const counts = [["none", model.count(), window.__pinb_window_listeners]];
              const removeA = widget.render({ model, el: el("a") });
              counts.push(["one view", model.count(), window.__pinb_window_listeners]);
              const removeB = widget.render({ model, el: el("b") });
              counts.push(["two views", model.count(), window.__pinb_window_listeners]);
              removeA();
              counts.push(["one removed", model.count(), window.__pinb_window_listeners]);
              model.fire("match_note", "3 matches");
              const notes = [...document.querySelectorAll(".pinb-tw-matchnote")].map((n) => n.textContent);
              removeB();
              counts.push(["both removed", model.count(), window.__pinb_window_listeners]);
              return { counts, notes };
            }""",
            [source, state, _MODEL_JS],
        )
    by_step = {step: (on_model, on_window) for step, on_model, on_window in counts["counts"]}
    per_view = by_step["one view"][0]
    assert per_view > 0 and by_step["one view"][1] > 0
    assert by_step["two views"] == (2 * per_view, 2 * by_step["one view"][1])
    assert by_step["one removed"] == by_step["one view"]
    assert by_step["both removed"] == (0, 0)
    assert counts["notes"] == ["", "3 matches"]


def test_what_if_strategies_read_whole_at_a_notebook_s_width(tmp_path: Path) -> None:
    """The strategies table (Pi's plan, pinb's kept facts, mask-first, observation masking)
    shows its four columns inside a 900-pixel output without scrolling, in Chromium."""
    from pinb.analysis.compaction.whatif import what_if
    from pinb.testing.generate import tool_heavy_session

    result = what_if(
        tool_heavy_session(tmp_path, turns=40, result_chars=6_000), context_window=64_000
    )
    html = result._repr_mimebundle_()["text/html"]
    with watchdog(BUDGET_S), chromium_page(1000, 1400) as page:
        page.goto("about:blank")
        page.set_content(f"<div id='cell' style='width:900px'>{html}</div>")
        found = page.evaluate(
            """() => {
              const title = [...document.querySelectorAll('strong')]
                .find((s) => s.textContent.startsWith('Strategies at this cut'));
              let box = title.parentElement.nextElementSibling;
              const right = document.getElementById('cell').getBoundingClientRect().right;
              const rows = [...box.querySelectorAll('.pinb-tr')].map((tr) =>
                [...tr.querySelectorAll('.pinb-td')].map((td) => {
                  const r = td.getBoundingClientRect();
                  return { text: td.textContent, right: r.right };
                }));
              return { right, scroll: box.scrollWidth, width: box.clientWidth, rows };
            }"""
        )
        assert found["scroll"] <= found["width"] + 1, found  # no scrolling
        heads = [cell["text"] for cell in found["rows"][0]]
        assert heads == [
            "strategy",
            "facts kept · score",
            "tokens it costs",
            "context after (chars/4)",
        ]
        names = [row[0]["text"] for row in found["rows"][1:]]
        assert "pi plan + pinb kept facts, current settings" in names and "mask-first" in names
        for row in found["rows"]:
            assert len(row) == 4 and all(c["right"] <= found["right"] + 1 for c in row), row
        assert page.evaluate("window.__pinb_xss") is None


def test_explorer_keeps_the_selection_and_offers_the_text_to_resend(
    lab: tuple[str, str, Path], tmp_path: Path
) -> None:
    """Continue at a user message off the path of a long story: the row stays selected and
    in view after the tree is laid out again, its text waits in an editable box, and the
    copy button puts a ready ``%%pi`` cell with the edited text on the clipboard."""
    from pinb.testing.story import EXTRA_TASKS, story_tasks, write_story_session

    base, token, root = lab
    folder = root / "resend"
    story = write_story_session(folder / "s", tasks=story_tasks(extras=EXTRA_TASKS[:2]))
    assert story.path is not None
    on_path = {e.id for e in story.path_to()}
    target = next(e for e in story.entries if e.role == "user" and e.id not in on_path)
    text = target.message["content"][0]["text"]
    _explorer_notebook(folder / "resend.ipynb", story.path, story.entries[0].id)
    ARTIFACTS.mkdir(exist_ok=True)
    in_view = (
        "id => { const r = document.querySelector(`.pinb-tw-row[data-id='${id}']`);"
        " const s = document.querySelector('.pinb-tw-scroller'); if (!r) return false;"
        " const a = r.getBoundingClientRect(), b = s.getBoundingClientRect();"
        " return r.className.includes('pinb-tw-selected') && a.top >= b.top && a.bottom <= b.bottom; }"
    )
    with watchdog(BUDGET_S), chromium_page(1500, 1100) as page:
        try:
            page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
            _open_notebook(page, base, token, "resend/resend.ipynb")
            widget = page.locator('.pinb-tw[data-ready="1"]')
            widget.wait_for()
            editor = widget.locator(".pinb-tw-editor")
            assert not editor.is_visible()  # nothing to resend yet
            # Select the message with the search box (Enter jumps to the hit).
            widget.locator(".pinb-tw-search").fill(target.id)
            page.wait_for_function(
                "() => document.querySelector('.pinb-tw-matchnote').textContent === '1 match'"
            )
            widget.locator(".pinb-tw-search").press("Enter")
            page.wait_for_function(in_view, arg=target.id)
            fork = widget.locator(".pinb-fork")
            page.wait_for_function(
                "() => document.querySelector('.pinb-fork').textContent === 'Fork before this message'"
            )
            assert "/fork" in (fork.get_attribute("title") or "")
            widget.screenshot(path=str(ARTIFACTS / "explorer-resend-selected.png"))

            widget.locator(".pinb-continue").click()
            page.wait_for_function(
                "id => document.querySelector('.pinb-tw-status').textContent"
                ".includes('before the message ' + id)",
                arg=target.id,
            )
            leaf = target.parent_id
            assert Session.open(story.path).leaf_id == leaf
            assert "◀ leaf" in (_row(page, str(leaf)).text_content() or "")
            # The selection survived the new layout, in view, and its panel still shows it.
            page.wait_for_function(in_view, arg=target.id)
            assert target.id in (widget.locator(".pinb-details").text_content() or "")
            # The text waits in a box (a value, never HTML), editable, copied as a cell.
            editor.wait_for()
            box = widget.locator(".pinb-editor-text")
            assert box.input_value() == text
            assert "paste it into a new cell" in (editor.text_content() or "").lower()
            box.fill(text + " Keep it short.")
            widget.locator(".pinb-copy-cell").click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-tw-editor-note').textContent.startsWith('Copied')"
            )
            copied = page.evaluate("() => navigator.clipboard.readText()")
            assert copied == f"%%pi\n{text} Keep it short."
            widget.screenshot(path=str(ARTIFACTS / "explorer-resend.png"))
            # Another entry's fork copies up to it, and says so before it is pressed.
            _row(page, str(leaf)).click()
            page.wait_for_function(
                "() => document.querySelector('.pinb-fork').textContent"
                " === 'Copy the path to here into a new file'"
            )
            _no_injected_markup(page)
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(ARTIFACTS / "explorer-resend-failure.png"), full_page=True)
            raise
