"""One story, proven: every view, %pi command, CLI command and the cell footer agree.

The same sessions are shown every way a learner sees them — each view's mimebundle (text,
HTML, SVG), the ``%pi`` commands through a real ``InteractiveShell``, the ``pinb`` command
line, the ``%%pi`` cell footer — and the figures are read back out of those outputs (no
second implementation computes them): the context's tokens and how they were measured,
the window and its source, the threshold, what each compaction summarized and kept, and
the system prompt's size. No size is negative and every running total grows.

The sessions: the demo story on a 6,000-token window that compacts automatically; a
session whose tool set changes (``--no-tools``: a system patch that removes every tool);
a prompt larger than the whole window; a fork.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from pinb.agent import Agent, AgentConfig
from pinb.agent.tools import default_tools
from pinb.cli import main
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.notebook import PiMagics
from pinb.testing.story import prompts, story_model, story_tasks, write_project
from pinb.views import CompactionView, ContextPathView, TreeView, TreeWidget

WINDOW = 6_000

_ACCOUNT = re.compile(
    r"([\d,]+) tokens(?: in the context)? \((last reported usage [\d,]+ \+ [\d,]+ estimated "
    r"for later messages|chars/4 estimate: no reported usage to trust)\)"
)
_WINDOW = re.compile(r"of a ([\d,]+)(?:-token)? window \(([^)]*)\)|(window unknown)")
_THRESHOLD = re.compile(r"(?:compacts above|compaction threshold|threshold) ([\d,]+)")
#: The chars/4 estimate of every message, and how many messages: (tokens, messages) groups.
_ESTIMATES = (
    re.compile(r"estimate of every message the model is sent: ([\d,]+) tokens in ([\d,]+) mess"),
    re.compile(r"<ContextBreakdown ([\d,]+) tokens \(chars/4 estimate\) in ([\d,]+) messages"),
)
_CLI_ESTIMATE = re.compile(r"chars/4 estimate of all ([\d,]+) messages: ([\d,]+)")
_WHAT_IF = re.compile(
    r"context ([\d,]+) tokens \((usage\+estimate|estimate)\), ([\d,]+) by chars/4"
)


def _n(text: str) -> int:
    return int(text.replace(",", ""))


def _text(html: str) -> str:
    """What a reader sees of an HTML output: tags dropped, entities read, spaces collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


@dataclass
class Figures:
    """Figures read out of real outputs, each with where it was read."""

    accounts: list[tuple[str, int, str]] = field(default_factory=list)
    windows: list[tuple[str, int | None, str]] = field(default_factory=list)
    thresholds: list[tuple[str, int]] = field(default_factory=list)
    estimates: list[tuple[str, int, int | None]] = field(default_factory=list)
    tokens: list[tuple[str, int]] = field(default_factory=list)
    messages: list[tuple[str, int]] = field(default_factory=list)
    system: list[tuple[str, int]] = field(default_factory=list)
    compactions: dict[str, list[tuple[str, int, int | None]]] = field(default_factory=dict)

    def read(self, where: str, text: str) -> None:
        """The account, window and threshold figures of one output."""
        for match in _ACCOUNT.finditer(text):
            self.accounts.append((where, _n(match[1]), match[2]))
        for match in _WINDOW.finditer(text):
            if match[3]:
                self.windows.append((where, None, "unknown"))
            else:
                self.windows.append((where, _n(match[1]), match[2]))
        for match in _THRESHOLD.finditer(text):
            self.thresholds.append((where, _n(match[1])))
        for pattern in _ESTIMATES:
            for match in pattern.finditer(text):
                self.estimates.append((where, _n(match[1]), _n(match[2])))
        for match in _CLI_ESTIMATE.finditer(text):
            self.estimates.append((where, _n(match[2]), _n(match[1])))
        for match in _WHAT_IF.finditer(text):
            self.tokens.append((where, _n(match[1])))
            self.estimates.append((where, _n(match[3]), None))

    def compaction(self, key: str, where: str, summarized: int, kept: int | None) -> None:
        self.compactions.setdefault(key, []).append((where, summarized, kept))

    def check(self) -> None:
        """Every figure for the same thing is one figure."""
        assert self.accounts, "no account read"
        assert len({(tokens, measure) for _, tokens, measure in self.accounts}) == 1, self.accounts
        assert len({(w, s) for _, w, s in self.windows}) == 1, self.windows
        assert len({t for _, t in self.thresholds}) <= 1, self.thresholds
        assert len({t for _, t in self.system}) <= 1, self.system
        assert len({t for _, t, _ in self.estimates}) == 1, self.estimates
        counts = {m for _, _, m in self.estimates if m is not None} | {m for _, m in self.messages}
        assert len(counts) == 1, (self.estimates, self.messages)
        assert {t for _, t in self.tokens} <= {t for _, t, _ in self.accounts}, self.tokens
        for key, counts in self.compactions.items():
            assert len({s for _, s, _ in counts}) == 1, (key, counts)
            assert len({k for _, _, k in counts if k is not None}) <= 1, (key, counts)

    @property
    def window(self) -> tuple[int | None, str]:
        return self.windows[0][1], self.windows[0][2]


# -- reading each output ------------------------------------------------------------------

_ROW = re.compile(r'<div class="pinb-tr[^"]*"[^>]*>(.*?)</div>', re.S)
_SEPARATOR = '<span style="display:none"> │ </span>'


def _rows(html: str, after: str) -> list[list[str]]:
    """The cells of the first table after the heading ``after`` (pinb's div tables)."""
    at = html.index('<div class="pinb-table"', html.index(after))
    rows: list[list[str]] = []
    for match in _ROW.finditer(html, at):
        if rows and match.start() != at:
            break  # the next row does not follow: the table ended
        rows.append([_text(cell) for cell in match[1].split(_SEPARATOR)])
        at = match.end()
    if not rows:
        raise AssertionError(f"no table after {after!r}")
    return rows


def read_context_view(figures: Figures, where: str, view: Any) -> None:
    bundle = view._repr_mimebundle_()
    figures.read(f"{where} text", bundle["text/plain"])
    html = bundle["text/html"]
    figures.read(f"{where} html", _text(html))
    by_role = {r[0]: _n(r[1]) for r in _rows(html, "By role")[1:] if r[1]}
    if "system" in by_role:
        figures.system.append((f"{where} by role", by_role["system"]))
    rows = _rows(html, "What the model sees, in order")
    header, body = rows[0], rows[1:]
    kind, tokens, running = (header.index(h) for h in ("kind", "tokens (chars/4)", "running total"))
    totals = [_n(r[running]) for r in body if r[running]]
    sizes = [_n(r[tokens].replace("−", "-")) for r in body if r[tokens]]
    assert all(size >= 0 for size in sizes), sizes  # no message costs less than nothing
    assert totals == sorted(totals), totals  # a running total never decreases
    ends = re.search(r"estimate of every message \(([\d,]+)\)", _text(html))
    assert ends is not None and totals and totals[-1] == _n(ends[1])
    system_rows = [
        _n(r[tokens]) for r in body if r[kind] == "system" and r[tokens] and "summary" not in r[2]
    ]
    checkpoint = [r for r in body if "system checkpoint" in r[2]]
    if system_rows and not checkpoint:
        figures.system.append((f"{where} system rows", sum(system_rows)))
    text = bundle["text/plain"]
    found = re.search(r"compaction (\w+) summarized (\d+) entr\w+, kept (\d+)", text)
    if found:
        figures.compaction(found[1], f"{where} text", int(found[2]), int(found[3]))
        note = re.search(
            r"(\d+) entr\w+ summarized by compaction (\w+) .*?, ([\d,]+) kept", _text(html)
        )
        assert note is not None and note[2] == found[1]
        figures.compaction(found[1], f"{where} html", int(note[1]), _n(note[3]))


def read_breakdown(figures: Figures, where: str, view: Any) -> None:
    bundle = view._repr_mimebundle_()
    figures.read(f"{where} text", bundle["text/plain"])
    figures.read(f"{where} html", _text(bundle["text/html"]))
    system = re.search(r"system ([\d,]+)", bundle["text/plain"])
    if system:
        figures.system.append((f"{where} text", _n(system[1])))


def read_tree(figures: Figures, where: str, bundle: dict[str, Any], path_system: bool) -> None:
    """Tree rows: sizes never negative; the system messages on the path add up to the prompt."""
    text = bundle["text/plain"]
    sizes = [_n(m) for m in re.findall(r"\s(-?[\d,]+)$", text, re.M)]
    assert all(size >= 0 for size in sizes)
    rows = [line for line in text.splitlines() if re.match(r"^[●○·]\s+system\b", line)]
    on_path = [line for line in rows if line.startswith("●")]
    boundary = re.search(r"▲ (\d+) entr\w+ summarized by compaction (\w+) · ([\d,]+) kept ▼", text)
    if boundary:
        figures.compaction(boundary[2], f"{where} text", int(boundary[1]), _n(boundary[3]))
    if path_system and on_path and not boundary:
        shown = [re.search(r"\s([\d,]+)$", line) for line in on_path]
        figures.system.append((f"{where} text", sum(_n(m[1]) for m in shown if m)))
    svg = bundle.get("image/svg+xml")
    if svg:
        numbers = re.findall(r'text-anchor="end"[^>]*>(-?[\d,]+)</text>', svg)
        assert numbers and all(not n.startswith("-") for n in numbers)


def read_compaction_view(figures: Figures, where: str, view: Any) -> str:
    bundle = view._repr_mimebundle_()
    text = bundle["text/plain"]
    found = re.search(r"<CompactionView (\w+): .*?(\d+) entr\w+ summarized, ([\d,]+) kept>", text)
    assert found is not None, text
    key = found[1]
    figures.compaction(key, f"{where} text", int(found[2]), _n(found[3]))
    html = _text(bundle["text/html"])
    summarized = re.search(r"Summarized: (\d+) entr", html)
    kept = re.search(r"Kept verbatim: (\d+) entr", html)
    assert summarized and kept
    figures.compaction(key, f"{where} html", int(summarized[1]), int(kept[1]))
    window = re.search(r"share of a ([\d,]+)-token window \(([^)]*)\)|window unknown", html)
    assert window is not None
    figures.windows.append(
        (f"{where} html", _n(window[1]), window[2]) if window[1] else (where, None, "unknown")
    )
    return key


def read_ledger(figures: Figures, where: str, ledger: Any) -> None:
    """The ledger's ``summarized u/a/tool`` messages of each compaction (one per entry here)."""
    text = ledger._repr_mimebundle_()["text/plain"]
    for line in text.splitlines():
        found = re.search(r"^\w{8}\s+(\w{8})\s.*?\s(\d+)/(\d+)/(\d+)\s", line)
        if found:
            figures.compaction(found[1], where, sum(int(x) for x in found.groups()[1:]), None)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


# -- the shell ----------------------------------------------------------------------------


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "pinb")
    magics = _magics(ip)
    saved = (magics.model, magics.context_window, magics.sessions_dir, list(magics.tools))
    magics.session = None
    magics._model = None
    magics._model_spec = None
    magics.model = ""
    magics.context_window = 0
    magics.sessions_dir = str(tmp_path / "sessions")
    magics.tools = ["read", "write", "edit", "bash", "ls", "grep", "find"]
    yield ip
    magics.session = None
    magics._model = None
    magics._model_spec = None
    magics.model, magics.context_window, magics.sessions_dir, magics.tools = saved


def _magics(ip: InteractiveShell) -> PiMagics:
    return ip.magics_manager.registry["PiMagics"]  # type: ignore[no-any-return]


def _everything(
    ip: InteractiveShell,
    capsys: pytest.CaptureFixture[str],
    figures: Figures,
    *,
    window_args: tuple[str, ...] = (),
) -> Session:
    """Read every view, command and CLI output of the magics' current session."""
    session = _magics(ip).current_session()
    assert session.path is not None
    read_context_view(figures, "%pi context", ip.run_line_magic("pi", "context"))
    read_context_view(figures, "ContextPathView(session)", ContextPathView(session))
    read_breakdown(figures, "%pi tokens", ip.run_line_magic("pi", "tokens"))
    shown = ip.run_line_magic("pi", "session")
    figures.read("%pi session html", _text(shown._repr_mimebundle_()["text/html"]))
    read_tree(figures, "%pi tree", ip.run_line_magic("pi", "tree")._repr_mimebundle_(), True)
    read_tree(figures, "TreeView(session)", TreeView(session)._repr_mimebundle_(), True)
    widget = TreeWidget(session)
    widget.select(str(session.leaf_id))
    widget.tab = "context_html"
    assert _ACCOUNT.search(_text(widget.context_html))
    figures.read("TreeWidget context tab", _text(widget.context_html))
    cli_tokens = run_cli(capsys, "tokens", str(session.path), *window_args)
    figures.read("pinb tokens", cli_tokens)
    system = re.search(r"^\s+system\s+([\d,]+)$", cli_tokens, re.M)
    if system:
        figures.system.append(("pinb tokens", _n(system[1])))
    read_tree(
        figures, "pinb tree", {"text/plain": run_cli(capsys, "tree", str(session.path))}, True
    )
    for entry in session.entries:
        if entry.type == "compaction":
            read_compaction_view(
                figures, f"CompactionView({entry.id})", CompactionView(entry, session)
            )
    read_ledger(figures, "%pi ledger", ip.run_line_magic("pi", "ledger"))
    what_if = ip.run_line_magic("pi", "whatif --keep 100 300")._repr_mimebundle_()
    assert _WHAT_IF.search(what_if["text/plain"])
    figures.read("%pi whatif", what_if["text/plain"])
    listing = run_cli(capsys, "context", str(session.path))
    counted = re.match(r"(\d+) messages ·", listing)
    assert counted is not None
    figures.messages.append(("pinb context", int(counted[1])))
    return session


def test_the_story_on_a_6000_token_window_tells_one_story(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The story as notebook 03 plays it: a real agent and tools, a scripted model, an
    # offline summary; then the notebook's magics take the session over for one more cell.
    project = write_project(tmp_path / "textstats")
    session = Session.create(project, tmp_path / "sessions")
    tasks = story_tasks(wrong_turn=False)
    model = story_model(tasks, context_window=WINDOW)
    settings = CompactionSettings(reserve_tokens=1_500, keep_recent_tokens=600)
    agent = Agent(
        session,
        model,
        default_tools(project),
        config=AgentConfig(compaction=settings),
        summarizer=ExtractiveSummarizer(),
    )
    for prompt in prompts(tasks):
        agent.prompt(prompt)
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert compactions, "the story compacts on a 6,000-token window"
    magics = _magics(shell)
    shell.run_line_magic("config", f"PiMagics.context_window = {WINDOW}")
    magics.session = session
    magics._model = model.reply("Glad it works now.")
    magics._model_spec = magics.model = "story"
    figures = Figures()
    with capsys.disabled():
        reply = shell.run_cell_magic("pi", "--no-tools", "Thanks, that is all for today.")
    figures.read("footer", reply._repr_mimebundle_()["text/plain"])
    _everything(shell, capsys, figures, window_args=("--window", str(WINDOW)))
    figures.check()
    assert figures.window == (WINDOW, "setting")
    assert {t for _, t in figures.thresholds} == {WINDOW - WINDOW // 4}
    # A view handed the session uses the window it ran with, never a registry default.
    for entry in compactions:
        assert CompactionView(entry, session).context_window == WINDOW
    assert ContextPathView(session).usage.window == WINDOW
    assert set(figures.compactions) == {c.id for c in compactions}
    last = figures.compactions[compactions[-1].id]  # the views of the context show the last
    assert len(last) >= 8, last
    assert all(len(c) >= 3 for c in figures.compactions.values()), figures.compactions

    # A fork before the last prompt: the same figures in the fork, its window carried.
    last_user = [e for e in session.path_to() if e.role == "user"][-1]
    with capsys.disabled():
        shell.run_line_magic("pi", f"fork {last_user.id}")
    fork = magics.current_session()
    assert fork.path != session.path
    forked = Figures()
    _everything(shell, capsys, forked, window_args=("--window", str(WINDOW)))
    forked.check()
    assert forked.window == (WINDOW, "setting")
    for key, counts in forked.compactions.items():
        assert {s for _, s, _ in counts} == {s for _, s, _ in figures.compactions[key]}

    # The command line compacts the fork's file; the notebook opens it again: one count.
    path = fork.require_path()
    (project / ".pi").mkdir()  # Pi's project settings: keep less than the last compaction did
    (project / ".pi" / "settings.json").write_text('{"compaction": {"keepRecentTokens": 300}}')
    out = run_cli(capsys, "compact", str(path), "--offline", "--window", str(WINDOW))
    found = re.search(r"appended compaction (\w+): summarized (\d+) entries, kept (\d+)", out)
    assert found is not None, out
    with capsys.disabled():
        shell.run_line_magic("pi", f"open {path}")
    again = Figures()
    again.compaction(found[1], "pinb compact", int(found[2]), int(found[3]))
    _everything(shell, capsys, again, window_args=("--window", str(WINDOW)))
    again.check()
    assert again.window == (WINDOW, "setting")
    assert len(again.compactions[found[1]]) >= 9, again.compactions[found[1]]


def test_a_tool_set_change_costs_what_its_text_costs(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = write_project(tmp_path / "textstats")
    # Pi's project settings keep little, so that this short talk has something to compact.
    (project / ".pi").mkdir()
    (project / ".pi" / "settings.json").write_text('{"compaction": {"keepRecentTokens": 150}}')
    shell.run_line_magic("config", 'PiMagics.model = "offline"')
    shell.run_line_magic("pi", f"new --cwd {project}")
    with capsys.disabled():
        shell.run_cell_magic("pi", "", "Read textstats/core.py and explain what it does.")
        reply = shell.run_cell_magic("pi", "--no-tools", "Which week had the longest notes?")
    session = _magics(shell).current_session()
    patches = [e for e in session.path_to() if e.role == "system"]
    assert len(patches) == 2 and patches[1].message.get("toolsRemoved")
    figures = Figures()
    figures.read("footer", reply._repr_mimebundle_()["text/plain"])
    _everything(shell, capsys, figures)
    figures.check()
    assert figures.window[0] is not None and figures.system
    # The prompt as sent carries no tool schema once the tools are gone.
    context = ContextPathView(session)
    system = context.usage.by_role["system"]
    rows = [r for r in context.context_rows if r.role == "system"]
    assert [r.tokens for r in rows][1] == 0 and sum(r.tokens for r in rows) == system
    assert "removes 7 tools" in rows[1].status and "no longer sent" in rows[1].status

    # A compaction now: %pi compact, the view, the ledger and the CLI count it alike.
    with capsys.disabled():
        view = shell.run_line_magic("pi", "compact --offline")
    after = Figures()
    key = read_compaction_view(after, "%pi compact", view)
    _everything(shell, capsys, after)
    after.check()
    assert key in after.compactions and len(after.compactions[key]) >= 5


def test_a_prompt_larger_than_the_window(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = write_project(tmp_path / "textstats")
    shell.run_line_magic("config", 'PiMagics.model = "offline"')
    shell.run_line_magic("pi", f"new --cwd {project}")
    with capsys.disabled():
        shell.run_cell_magic("pi", "--no-tools", "A first, short question.")
        huge = "Please read all of this. " + "word " * 40_000  # ~50,000 tokens, window 32,000
        shell.run_cell_magic("pi", "--no-tools", huge)
    figures = Figures()
    _everything(shell, capsys, figures)
    figures.check()
    assert figures.window[0] is not None
