"""The chat panel in a real JupyterLab and Chromium: Pi answers in a ``.chat`` beside a notebook,
on the session the notebook's cells write.

JupyterLab starts as in ``tests/views/test_browser.py`` (loopback, a token, its own config),
with the ``chat`` extra's server extensions (jupyterlab-chat, Jupyter AI's router and persona
manager) and pinb's loopback model server as the persona's model (``PinbPersona.model``), so
a reply streams slowly enough to be watched. The test runs a notebook cell, points the chat
at the notebook's session (``/session open``), mentions Pi, watches the reply stream, stops a
second reply with the chat's stop button, runs a cell after the chat's turn and reads both
turns in ``%pi tree``. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from pinb.chat.link import ensure_chat_file, read_link
from pinb.chat.turns import chat_turns
from pinb.core import Session
from pinb.testing.llm_server import LLMServer
from tests.pi.loop import KEY, PiLoop, configure
from tests.views.test_browser import (
    ARTIFACTS,
    BUDGET_S,
    CHROMIUM,
    STEP_MS,
    _cell,
    _start_kernel,
    _write_notebook,
    chromium_page,
    jupyter_lab,
    kernel_ready,
    watchdog,
)

pytestmark = pytest.mark.slow(seconds=60)

HOSTILE = "<img src=x onerror=\"window.__pinb_xss='img'\"> [click](javascript:alert(1))"
ANSWER = "Streaming **slowly** through the chat. " * 12


def _second_page(page: Any) -> Any:
    """A page of its own beside ``page`` (the chat beside the notebook), watched alike."""
    chat = page.context.browser.new_page(viewport={"width": 1400, "height": 1100})
    chat.set_default_timeout(STEP_MS)
    chat.add_init_script(
        "window.__pinb_xss = undefined;window.alert = () => { window.__pinb_xss = 'alert'; };"
    )
    return chat


def _message_texts(page: Any) -> list[str]:
    return list(
        page.evaluate(
            "() => [...document.querySelectorAll('.jp-chat-rendered-message')]"
            ".map(e => e.innerText)"
        )
    )


def _send(page: Any, text: str) -> None:
    box = page.locator(".jp-chat-input-container textarea").first
    box.click()
    box.fill(text)
    page.wait_for_timeout(200)  # the input settles its mention list
    box.press("Enter")


def _wait_for_message(page: Any, needle: str, count_before: int) -> str:
    page.wait_for_function(
        "([needle, before]) => { const m = [...document.querySelectorAll("
        "'.jp-chat-rendered-message')].slice(before);"
        " return m.some(e => e.innerText.includes(needle)); }",
        arg=[needle, count_before],
    )
    return next(t for t in _message_texts(page)[count_before:] if needle in t)


_PROMPT = (
    "i => document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
    ".querySelector('.jp-InputPrompt').textContent"
)


def _run_cell(page: Any, index: int, needle: str = "") -> str:
    """Run cell ``index`` (Shift+Enter) once the kernel is ready, and wait until it has run;
    its output's text. A key the editor missed is pressed again, only while the cell shows
    neither a count nor ``*`` (running).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    kernel_ready(page)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    for _ in range(3):
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"i => /[*\\d]/.test(({_PROMPT})(i))", arg=index, timeout=20_000)
            break
    page.wait_for_function(f"i => /\\[\\d+\\]/.test(({_PROMPT})(i))", arg=index)
    if needle:
        cell.locator(".jp-OutputArea-output").filter(has_text=needle).first.wait_for()
    return str(cell.locator(".jp-OutputArea").inner_text())


def _no_injection(page: Any) -> None:
    assert page.evaluate("window.__pinb_xss") is None, "an injected script ran"
    injected = page.evaluate(
        "() => { const box = document.querySelector('.jp-chat-messages-container');"
        " const tags = box.querySelectorAll('script, iframe, style, [onerror], [onload]');"
        " const links = [...box.querySelectorAll('a')]"
        ".filter(a => !['http:', 'https:', 'mailto:'].includes(a.protocol)"
        " || a.href.startsWith('javascript'));"
        " return tags.length + links.filter(a => a.protocol === 'javascript:').length; }"
    )
    assert injected == 0


def test_pi_in_the_chat_panel_beside_a_notebook(
    tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The persona on pinb's built-in agent."""
    monkeypatch.setenv("LOOP_KEY", KEY)
    with LLMServer() as server:
        configure(isolated_agent_dir, server)
        _chat_beside_a_notebook(tmp_path, isolated_agent_dir, server, {"model": "loop/loop-model"})


def test_your_own_pi_in_the_chat_panel_beside_a_notebook(
    tmp_path: Path, isolated_agent_dir: Path, pi_loop: PiLoop
) -> None:
    """The persona with ``engine = "pi"``: the real Pi 1.6.0 answers (over RPC, started by
    the server's persona), on the same session the notebook's cells write."""
    _chat_beside_a_notebook(
        tmp_path,
        isolated_agent_dir,
        pi_loop.server,
        {"engine": "pi", "pi_model": "loop/loop-model"},
        footer="your Pi · loop/loop-model · this run (1 request)",
    )


def _chat_beside_a_notebook(
    tmp_path: Path,
    isolated_agent_dir: Path,
    server: LLMServer,
    persona: dict[str, str],
    footer: str = "loop/loop-model · this run (1 request)",
) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's Chromium")
    started = time.monotonic()
    root = tmp_path / "lab"
    root.mkdir()
    (root / "app.py").write_text("print('hello from app.py')\n")
    config = root / ".jupyter-home" / "config"
    config.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(json.dumps({"PinbPersona": persona}))
    _write_notebook(
        root / "demo.ipynb",
        [
            _cell(["%load_ext pinb\n", '%config PiMagics.model = "offline"']),
            _cell(["%%pi\n", "What does app.py do?"]),
            _cell(["%%pi\n", "And what did the chat just do?"]),
            _cell(["%pi tree"]),
            _cell(["print(_.to_text())"]),
        ],
    )
    ensure_chat_file(root / "demo.chat")
    ARTIFACTS.mkdir(exist_ok=True)
    engine = persona.get("engine", "pinb")
    server.reply(text=ANSWER + HOSTILE, chunk_delay=0.07)
    server.reply(text="A long and slow answer. " * 60, chunk_delay=0.05)
    with (
        watchdog(BUDGET_S),
        jupyter_lab(root) as (base, token),
        chromium_page(1400, 1100) as page,
    ):
        chat = _second_page(page)
        try:
            # The notebook: a first cell writes the session.
            _start_kernel(base, token, "demo.ipynb")
            page.goto(
                f"{base}/lab/workspaces/notebook/tree/demo.ipynb?token={token}",
                wait_until="domcontentloaded",
            )
            page.wait_for_selector(".jp-Notebook .jp-Cell .jp-InputArea-editor")
            _run_cell(page, 0)
            _run_cell(page, 1, "this run")
            (path,) = (isolated_agent_dir / "sessions").rglob("*.jsonl")

            # The chat: pick the notebook's session, then mention Pi.
            chat.goto(
                f"{base}/lab/workspaces/chat/tree/demo.chat?token={token}",
                wait_until="domcontentloaded",
            )
            chat.locator(".jp-chat-input-container textarea").first.wait_for()
            assert "Pi" in chat.locator(".jp-jai-personaControls-persona").first.inner_text()
            _send(chat, f"@Pi /session open {path}")
            opened = _wait_for_message(chat, "Now continuing it.", 1)
            assert path.name in opened
            before = len(_message_texts(chat))
            _send(chat, "@Pi run `python app.py` and tell me about it")
            # It streams: part of the answer shows before the footer does.
            partial = _wait_for_message(chat, "Streaming slowly", before + 1)
            assert "context now" not in partial
            chat.screenshot(path=str(ARTIFACTS / f"chat-streaming-{engine}.png"))
            final = _wait_for_message(chat, "context now", before + 1)
            assert final.count("Streaming slowly through the chat.") == 12
            assert "<img src=x onerror=" in final  # the model's HTML shows as text
            assert footer in final
            _no_injection(chat)
            chat.screenshot(path=str(ARTIFACTS / f"chat-reply-{engine}.png"))

            # Stop: the chat's stop button ends a slow reply; its part is saved.
            before = len(_message_texts(chat))
            _send(chat, "@Pi take your time")
            _wait_for_message(chat, "A long and slow answer.", before + 1)
            stop = chat.locator(".jp-jai-stopButton button, button.jp-jai-stopButton").first
            stop.click()
            stopped = _wait_for_message(chat, "stopped: the partial reply", before + 1)
            assert "A long and slow answer." in stopped
            chat.screenshot(path=str(ARTIFACTS / f"chat-stopped-{engine}.png"))

            # Back in the notebook: the next cell continues after the chat's turns.
            shown = _run_cell(page, 2, "this run")
            assert "entries the chat panel (demo.chat) appended to this session" in shown
            _run_cell(page, 3)
            tree = _run_cell(page, 4, "pinb.chat")
            assert tree.count("pinb.chat") == 2
            assert "run `python app.py` and tell me about it" in tree
            page.screenshot(
                path=str(ARTIFACTS / f"chat-notebook-tree-{engine}.png"), full_page=True
            )
        except Exception:
            with contextlib.suppress(Exception):
                chat.screenshot(path=str(ARTIFACTS / f"chat-failure-{engine}.png"))
                page.screenshot(path=str(ARTIFACTS / f"chat-notebook-failure-{engine}.png"))
            raise
    session = Session.open(path)
    assert session.problems == []
    texts = [e.message["content"][0]["text"] for e in session.path_to() if e.role == "user"]
    assert texts == [
        "What does app.py do?",
        "run `python app.py` and tell me about it",
        "take your time",
        "And what did the chat just do?",
    ]
    assert len(chat_turns(session)) == 2
    aborted = [e for e in session.path_to() if e.role == "assistant"][-2].message
    assert aborted["stopReason"] == "aborted"
    link = read_link(root / "demo.chat")
    assert link is not None and link.session == path and link.linked_by == "chat"
    assert KEY not in (root / "demo.chat").read_text()
    assert time.monotonic() - started < BUDGET_S
