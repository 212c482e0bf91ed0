"""One story, proven: every view, %pi command, CLI command and the cell footer agree.

The same sessions are shown every way a learner sees them — each view's mimebundle (text,
HTML, SVG), the ``%pi`` commands through a real ``InteractiveShell``, the ``pinb`` command
line, the ``%%pi`` cell footer — and the figures are read back out of those outputs (no
second implementation computes them): the context's tokens and how they were measured,
the window and its source, the threshold, what each compaction summarized and kept, what
its summary kept of the span it replaced (the score, the facts, those kept and those lost:
``CompactionView``, the explorer's compaction panel, the ledger, ``%pi compactions`` and the
what-if lab's replay of it), and the system prompt's size. No size is negative and every
running total grows.

The sessions: the demo story on a 6,000-token window that compacts automatically; a
session whose tool set changes (``--no-tools``: a system patch that removes every tool);
a prompt larger than the whole window; a fork; the what-if lab (a resumed offline session:
``%pi whatif``'s current column is the compaction ``%pi compact`` then carries out, and
after it no column shows a figure); the user's own Pi as the engine (its threshold, its
plan). And the shipped notebooks, their saved outputs and a fresh run of each (the fresh
run is the one ``tests/views/test_notebook_outputs.py`` reads in the browser): per
notebook one window, one threshold per engine, one account and one system prompt size per
leaf, one count of what each compaction summarized and kept, and one size of what it sends.
"""

from __future__ import annotations

import contextlib
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
from tests.shells import pi_shell

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py

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
#: What a summary kept, as every view says it: (score, facts kept, facts, lost).
_SCORE = r"score (\d+%|—), ([\d,]+) of ([\d,]+) facts? kept by the summary; ([\d,]+) lost"
_SCORED = re.compile(_SCORE)
#: ``%pi compactions`` (RetentionView): a compaction's first line, and its lost facts.
_RETENTION = re.compile(
    r"^Compaction (\w+) \(recorded\): score (\d+%|—), ([\d,]+) of ([\d,]+) facts? kept by "
    r"the summary\n(?:.*\n)*?  lost \(([\d,]+);",
    re.M,
)
#: The what-if lab naming a recorded compaction one of its columns writes again.
_REPLAYS = re.compile(r"writes compaction (\w+) again, the same cut and summary: " + _SCORE)


def _kept(score: str, kept: str, facts: str, lost: str) -> tuple[str, int, int, int]:
    """(score, facts, kept, lost) of a score line's groups."""
    return score, _n(facts), _n(kept), _n(lost)


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
    #: What a compaction entry sends (checkpoint + summary) in one context: keyed by the
    #: compaction's id and the context's leaf ("after": the context right after it).
    sizes: dict[tuple[str, str], list[tuple[str, int]]] = field(default_factory=dict)
    #: Its summary's share, the same in every context.
    summaries: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: What its summary kept: (where, (score, facts, kept, lost)) by compaction id.
    retention: dict[str, list[tuple[str, tuple[str, int, int, int]]]] = field(default_factory=dict)

    def kept(self, key: str, where: str, figures: tuple[str, int, int, int]) -> None:
        self.retention.setdefault(key, []).append((where, figures))

    def read(self, where: str, text: str) -> None:
        """The account, window and threshold figures of one output."""
        for match in _ACCOUNT.finditer(text):
            self.accounts.append((where, _n(match[1]), match[2]))
        for match in _WINDOW.finditer(text):
            if match[3]:
                self.windows.append((where, None, "unknown"))
            else:
                self.windows.append((where, _n(match[1]), match[2]))
        # A Pi engine's line names pinb's fitted threshold beside Pi's own: Pi's is the one.
        for match in _THRESHOLD.finditer(_PI_THRESHOLD.sub(r"compacts above \1", text)):
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
        for table in (self.sizes, self.summaries, self.retention):
            for key, found in table.items():
                assert len({t for _, t in found}) == 1, (key, found)
        for key, found in self.retention.items():
            for _, (_, facts, kept, lost) in found:
                assert kept + lost == facts, (key, found)

    def size(self, key: str, context: str, where: str, tokens: int) -> None:
        self.sizes.setdefault((key, context), []).append((where, tokens))

    def summary(self, key: str, where: str, tokens: int) -> None:
        self.summaries.setdefault(key, []).append((where, tokens))

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
    leaf = _CONTEXT_LEAF.search(bundle["text/plain"])
    assert leaf is not None
    for row in body:
        if row[kind] == "compaction" and row[tokens]:
            figures.size(row[0], leaf[1], f"{where} context row", _n(row[tokens]))
            split = re.search(r"system checkpoint ([\d,]+) \+ summary ([\d,]+) = ", row[2])
            if split:
                figures.summary(row[0], f"{where} context row", _n(split[2]))
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
    leaf = _TREE_LEAF.search(text)
    for line in text.splitlines():
        row = re.match(r"^[■□\s│├└─]*compaction\s+(\w{8})\s.*?\s([\d,]+)$", line)
        if row and leaf:
            figures.size(row[1], leaf[1], f"{where} tree row", _n(row[2]))
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
    sends = _SENDS.search(html)
    if sends:
        figures.size(key, "after", f"{where} sends", _n(sends[1]))
        figures.summary(key, f"{where} sends", _n(sends[2]))
    if view.report.entry is not None:  # a recorded compaction: what its summary kept
        for name, shown in (("text", text), ("html", html)):
            scored = _SCORED.search(shown)
            assert scored is not None, shown
            figures.kept(key, f"{where} {name}", _kept(*scored.groups()))
    window = re.search(r"share of a ([\d,]+)-token window \(([^)]*)\)|window unknown", html)
    assert window is not None
    figures.windows.append(
        (f"{where} html", _n(window[1]), window[2]) if window[1] else (where, None, "unknown")
    )
    return key


def read_ledger(figures: Figures, where: str, ledger: Any) -> None:
    """The ledger's ``summarized u/a/tool`` messages of each compaction (one per entry here),
    and what each compaction entry sends (summary tok + checkpoint tok)."""
    text = ledger._repr_mimebundle_()["text/plain"]
    for row in _ledger_table(text.splitlines(), "compaction"):
        messages = sum(int(x) for x in row["summarized u/a/tool"].split("/"))
        figures.compaction(row["compaction"], where, messages, None)
    story = NotebookStory(where)
    _read_ledger_output(story, where, text)
    for (key, context), found in story.sizes.items():
        for _, tokens in found:
            figures.size(key, context, where, tokens)
    for key, found in story.summaries.items():
        for _, tokens in found:
            figures.summary(key, where, tokens)
    for key, kept in story.retention.items():
        for _, value in kept:
            figures.kept(key, where, value)


def read_retention(figures: Figures, where: str, text: str) -> int:
    """``%pi compactions`` (a RetentionView's text): each compaction's score and facts."""
    found = 0
    for match in _RETENTION.finditer(text):
        score, kept, facts, lost = match.groups()[1:]
        figures.kept(match[1], where, _kept(score, kept, facts, lost))
        found += 1
    return found


def read_replays(figures: Figures, where: str, text: str) -> int:
    """The what-if lab's columns that write a recorded compaction again, and its figures."""
    found = 0
    for match in _REPLAYS.finditer(text):
        figures.kept(match[1], where, _kept(*match.groups()[1:]))
        found += 1
    return found


@contextlib.contextmanager
def transcript_dropped(capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    """Run cells whose transcript the test does not read: captured, then dropped.

    Never ``capsys.disabled()``: that writes the agent's transcript between the test
    runner's progress dots.
    """
    yield
    capsys.readouterr()


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


# -- the shell ----------------------------------------------------------------------------


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    with pi_shell(sessions_dir=str(tmp_path / "sessions")) as ip:
        yield ip


def _magics(ip: InteractiveShell) -> PiMagics:
    return ip.magics_manager.registry["PiMagics"]  # type: ignore[no-any-return]


def _everything(
    ip: InteractiveShell,
    capsys: pytest.CaptureFixture[str],
    figures: Figures,
    *,
    window_args: tuple[str, ...] = (),
    whatif_args: str = "",
) -> Session:
    """Read every view, command and CLI output of the magics' current session.

    Each compaction's parent is replayed by ``%pi whatif --leaf PARENT {whatif_args}``: a
    column that writes the compaction again reports what its summary kept.
    """
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
    compactions = [e for e in session.entries if e.type == "compaction"]
    for entry in compactions:
        read_compaction_view(figures, f"CompactionView({entry.id})", CompactionView(entry, session))
        widget.select(str(entry.id))  # the explorer's compaction panel for it
        widget.tab = "compaction_html"
        scored = _SCORED.search(_text(widget.compaction_html))
        assert scored is not None and "This compaction as recorded" in widget.compaction_html
        figures.kept(str(entry.id), "TreeWidget compaction tab", _kept(*scored.groups()))
        replay = ip.run_line_magic("pi", f"whatif --leaf {entry.parent_id} {whatif_args}")
        read_replays(figures, "%pi whatif --leaf parent", replay._repr_mimebundle_()["text/plain"])
    shown = ip.run_line_magic("pi", "compactions")._repr_mimebundle_()["text/plain"]
    assert read_retention(figures, "%pi compactions", shown) == len(compactions)
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
    with transcript_dropped(capsys):
        reply = shell.run_cell_magic("pi", "--no-tools", "Thanks, that is all for today.")
    figures.read("footer", reply._repr_mimebundle_()["text/plain"])
    # The what-if replays each compaction at its parent with the agent's own budgets.
    replay = f"--keep {settings.keep_recent_tokens} --reserve {settings.reserve_tokens}"
    _everything(shell, capsys, figures, window_args=("--window", str(WINDOW)), whatif_args=replay)
    figures.check()
    assert figures.window == (WINDOW, "setting")
    # What each summary kept: one score, one count of facts kept and lost, in every view.
    for entry in compactions:
        read = [where for where, _ in figures.retention[entry.id]]
        for source in ("CompactionView", "TreeWidget", "%pi compactions", "%pi ledger",
                       "%pi whatif"):  # fmt: skip
            assert any(where.startswith(source) for where in read), (source, read)
    assert {t for _, t in figures.thresholds} == {WINDOW - WINDOW // 4}
    # A view handed the session uses the window it ran with, never a registry default.
    for entry in compactions:
        assert CompactionView(entry, session).context_window == WINDOW
    assert ContextPathView(session).usage.window == WINDOW
    assert set(figures.compactions) == {c.id for c in compactions}
    last = figures.compactions[compactions[-1].id]  # the views of the context show the last
    assert len(last) >= 8, last
    # What the last compaction sends: the tree's row and the context's row (at the leaf),
    # the compaction view and the ledger (right after it); its summary the same in all.
    sent = [
        where
        for (key, _), found in figures.sizes.items()
        if key == compactions[-1].id
        for where, _ in found
    ]
    for kind in ("tree row", "context row", "sends", "ledger"):
        assert any(where.endswith(kind) for where in sent), (kind, sent)
    assert len(figures.summaries[compactions[-1].id]) >= 4, figures.summaries
    assert all(len(c) >= 3 for c in figures.compactions.values()), figures.compactions

    # A fork before the last prompt: the same figures in the fork, its window carried.
    last_user = [e for e in session.path_to() if e.role == "user"][-1]
    with transcript_dropped(capsys):
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
    with transcript_dropped(capsys):
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
    with transcript_dropped(capsys):
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
    with transcript_dropped(capsys):
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
    with transcript_dropped(capsys):
        shell.run_cell_magic("pi", "--no-tools", "A first, short question.")
        huge = "Please read all of this. " + "word " * 40_000  # ~50,000 tokens, window 32,000
        shell.run_cell_magic("pi", "--no-tools", huge)
    figures = Figures()
    _everything(shell, capsys, figures)
    figures.check()
    assert figures.window[0] is not None


def test_the_what_if_lab_plans_what_compact_carries_out(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A short offline session, then a new kernel resumes it: no model in memory.
    project = write_project(tmp_path / "textstats")
    shell.run_line_magic("config", 'PiMagics.model = "offline"')
    shell.run_line_magic("pi", f"new --cwd {project}")
    with capsys.disabled():
        shell.run_cell_magic("pi", "", "Read textstats/core.py and explain what it does.")
        shell.run_cell_magic("pi", "", "Run the checks: python3 check.py")
        shell.run_cell_magic("pi", "--no-tools", "Which week had the longest notes?")
    magics = _magics(shell)
    path = magics.current_session().require_path()
    magics.session, magics._model, magics._model_spec = None, None, None
    with capsys.disabled():
        shell.run_line_magic("pi", f"open {path}")
    assert len(magics.current_session().entries) >= 12

    # The what-if's current column is the plan %pi compact then carries out.
    planned = shell.run_line_magic("pi", "whatif")
    current = planned.current
    assert current is not None and current.nothing is None, current
    assert current.keep_used is not None and current.first_kept_entry_id is not None
    text = planned._repr_mimebundle_()["text/plain"]
    assert "current settings" in text and f"{current.keep_used:,}" in text
    before = Figures()  # the what-if and the views of the context it replays agree
    before.read("%pi whatif", text)
    read_context_view(before, "%pi context", shell.run_line_magic("pi", "context"))
    read_breakdown(before, "%pi tokens", shell.run_line_magic("pi", "tokens"))
    before.check()
    figures = Figures()
    with capsys.disabled():
        view = shell.run_line_magic("pi", "compact --offline")
    report = view.report
    assert report.first_kept_entry_id == current.first_kept_entry_id
    assert report.keep_recent_tokens == current.keep_used
    assert (len(report.summarized_ids), len(report.kept_ids)) == (
        current.entries_summarized,
        current.entries_kept,
    )
    shown = view._repr_mimebundle_()["text/plain"]
    assert f"keepRecentTokens {current.keep_used:,}" in shown  # it says the keep it used
    key = read_compaction_view(figures, "%pi compact", view)
    figures.compaction(key, "%pi whatif", current.entries_summarized or 0, current.entries_kept)

    # Right after it: nothing to compact, every column says so, and shows no figure.
    after = shell.run_line_magic("pi", "whatif")
    assert after.leaf_is_compaction and all(r.nothing for r in after.rows)
    lines = after._repr_mimebundle_()["text/plain"].splitlines()
    for name in ("entries kept", "entries summarized", "tokens kept (chars/4)"):
        line = next(line for line in lines if line.startswith(name))
        assert not re.search(r"\d", line[len(name) :]), line
    # Replayed at its parent, the current column is the compaction just made.
    replay = shell.run_line_magic("pi", f"whatif --leaf {after.parent_id}")
    assert replay.current is not None
    assert replay.current.first_kept_entry_id == report.first_kept_entry_id
    _everything(shell, capsys, figures)
    figures.check()
    assert len(figures.compactions[key]) >= 6, figures.compactions[key]
    # Replayed at its parent, the lab's current column writes it again: the same figures.
    assert any(where.startswith("%pi whatif") for where, _ in figures.retention[key])
    assert len(figures.retention[key]) >= 6, figures.retention[key]


def test_the_pi_engine_tells_one_story(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], tmp_path: Path, pi_loop: Any
) -> None:
    from tests.pi.loop import MODEL

    project = write_project(tmp_path / "textstats")
    magics = _magics(shell)
    shell.run_line_magic("config", f'PiMagics.model = "{MODEL}"')
    shell.run_line_magic("pi", f"new --cwd {project}")
    figures = Figures()
    try:
        for number, prompt in enumerate(("What is in this folder?", "Thanks."), 1):
            pi_loop.server.reply(text=f"Answer {number}.")
            with capsys.disabled():
                reply = shell.run_cell_magic("pi", "--engine pi", prompt)
            footer = reply._repr_mimebundle_()["text/plain"]
            pi = _PI_THRESHOLD.search(footer)
            assert pi is not None, footer  # Pi's own threshold, and pinb's beside it
            figures.thresholds.append((f"footer {number}", _n(pi[1])))
            figures.windows.extend(
                (f"footer {number}", _n(m[1]), m[2]) for m in _WINDOW.finditer(footer) if m[1]
            )
        last_footer = footer
        # With Pi as the engine, the views show Pi's threshold and the plan Pi would make.
        shell.run_line_magic("config", 'PiMagics.engine = "pi"')
        context = shell.run_line_magic("pi", "context")
        read_context_view(figures, "%pi context", context)
        read_breakdown(figures, "%pi tokens", shell.run_line_magic("pi", "tokens"))
        read_tree(figures, "%pi tree", shell.run_line_magic("pi", "tree")._repr_mimebundle_(), True)
        plan = shell.run_line_magic("pi", "whatif")
        text = plan._repr_mimebundle_()["text/plain"]
        figures.read("%pi whatif", text)
        assert plan.current is not None and plan.current.threshold is not None
        figures.thresholds.append(("%pi whatif current column", plan.current.threshold))
        assert "Pi's own settings" in text
        account = _ACCOUNT.search(last_footer.split("context now: ", 1)[1])
        assert account is not None
        figures.accounts.append(("last footer", _n(account[1]), account[2]))
        figures.check()
        (window, source) = figures.window
        assert source == "Pi's model" and {t for _, t in figures.thresholds} == {
            window - CompactionSettings().reserve_tokens
        }
    finally:
        magics.engine = "pinb"
        magics.pi_engine.close()


# -- the seven notebooks, saved and fresh -----------------------------------------------------

#: The seven teaching notebooks (a notebook added later joins this list when it ships).
NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("0[1-7]-*.ipynb"))

_PI_THRESHOLD = re.compile(
    r"compacts above ([\d,]+) \(Pi's own reserve, ([\d,]+); pinb's agent fits it to this "
    r"window and compacts above ([\d,]+)\)"
)
_PLAIN_THRESHOLD = re.compile(
    r"(?:compacts above|compaction threshold|threshold) ([\d,]+)(?! \(Pi)"
)
_CONTEXT_LEAF = re.compile(r"<ContextPathView leaf (\w+): (\d+) messages?; ")
_WHAT_IF_LEAF = re.compile(
    r"What if leaf (\w+) were compacted now: context ([\d,]+) tokens \((usage\+estimate|estimate)"
    r"\), ([\d,]+) by chars/4"
)
_TREE_LEAF = re.compile(r"; leaf (\w{8})")
_SENDS = re.compile(
    r"the compaction entry sends[\s│]+([\d,]+) tokens: (?:system checkpoint [\d,]+ \+ )?"
    r"(?:summary ([\d,]+)|the summary)"
)
_MEASURES = {
    "usage+estimate": "last reported usage",
    "estimate": "chars/4 estimate",
}


@dataclass
class NotebookStory:
    """Figures read out of one notebook's outputs, keyed by what they are about."""

    name: str
    windows: list[tuple[str, int, str]] = field(default_factory=list)
    thresholds: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    accounts: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    estimates: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    system: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    compactions: dict[str, list[tuple[str, int, int | None]]] = field(default_factory=dict)
    sizes: dict[tuple[str, str], list[tuple[str, int]]] = field(default_factory=dict)
    summaries: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: What each compaction's summary kept: (where, (score, facts, kept, lost)).
    retention: dict[str, list[tuple[str, tuple[str, int, int, int]]]] = field(default_factory=dict)
    read: int = 0

    def add(self, table: dict[str, list[Any]], key: str, value: tuple[Any, ...]) -> None:
        table.setdefault(key, []).append(value)

    def check(self) -> None:
        """Every figure for the same thing is one figure (and how it was made, one way)."""
        where = self.name
        assert len({w for _, w, _ in self.windows}) <= 1, (where, self.windows)
        # The Pi engine's window is the one Pi reports; every other output names one source.
        sources = {s for _, _, s in self.windows if s != "Pi's model"}
        assert len(sources) <= 1, (where, self.windows)
        for whose, found in self.thresholds.items():
            assert len({t for _, t in found}) == 1, (where, whose, found)
        for table in (
            self.accounts,
            self.estimates,
            self.system,
            self.sizes,
            self.summaries,
            self.retention,
        ):
            for key, found in table.items():
                assert len({f[1:] for f in found}) == 1, (where, key, found)
        for key, found in self.compactions.items():
            assert len({s for _, s, _ in found}) == 1, (where, key, found)
            assert len({k for _, _, k in found if k is not None}) <= 1, (where, key, found)


def _data_text(output: dict[str, Any], mime: str) -> str:
    value = output.get("data", {}).get(mime, "")
    return "".join(value) if isinstance(value, list) else str(value)


def _account_of(text: str) -> tuple[int, str] | None:
    found = _ACCOUNT.search(text)
    if found is None:
        return None
    measure = "usage+estimate" if found[2].startswith("last reported usage") else "estimate"
    return _n(found[1]), measure


def read_notebook(name: str, cells: list[dict[str, Any]]) -> NotebookStory:
    """Read the figures of every output of ``cells`` (saved or fresh)."""
    story = NotebookStory(name)
    leaf: str | None = None
    pending: list[tuple[str, Any, tuple[Any, ...]]] = []

    def about_leaf(key: str) -> None:
        nonlocal leaf
        leaf = key
        for table, _where, value in pending:
            story.add(table, key, value)
        pending.clear()

    def at_leaf(table: Any, value: tuple[Any, ...]) -> None:
        if leaf is None:
            pending.append((table, leaf, value))
        else:
            story.add(table, leaf, value)

    for number, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", ""))
        if source.lstrip().startswith("%%pi"):
            leaf = None  # a cell that talks appends: the leaf moves on
            pending.clear()  # a footer no view followed: its window and threshold are read
        for output in cell.get("outputs", []):
            plain = _data_text(output, "text/plain")
            html = _text(_data_text(output, "text/html"))
            if not plain:
                continue
            where = f"{name} cell {number}"
            story.read += 1
            for text in (plain, html):
                for match in _WINDOW.finditer(text):
                    if not match[3]:
                        story.windows.append((where, _n(match[1]), match[2]))
                for match in _PI_THRESHOLD.finditer(text):
                    story.add(story.thresholds, "pi", (where, _n(match[1])))
                    story.add(story.thresholds, "pinb", (where, _n(match[3])))
                for match in _PLAIN_THRESHOLD.finditer(_PI_THRESHOLD.sub("", text)):
                    story.add(story.thresholds, "pinb", (where, _n(match[1])))
            if found := _CONTEXT_LEAF.search(plain):
                about_leaf(found[1])
                _read_context_output(story, where, found[1], plain, _data_text(output, "text/html"))
            elif found := _WHAT_IF_LEAF.search(plain):
                story.add(story.accounts, found[1], (where, _n(found[2]), found[3]))
                story.add(story.estimates, found[1], (where, _n(found[4])))
                for match in _REPLAYS.finditer(plain):  # a column writes a compaction again
                    story.add(story.retention, match[1], (where, _kept(*match.groups()[1:])))
            elif plain.startswith("Session tree · "):
                tree_leaf = _TREE_LEAF.search(plain)
                if tree_leaf:
                    about_leaf(tree_leaf[1])
                _read_tree_output(story, where, plain, tree_leaf[1] if tree_leaf else None)
            elif plain.startswith("<CompactionView "):
                _read_compaction_output(story, where, plain, html)
            elif plain.startswith("Compaction ledger:"):
                _read_ledger_output(story, where, plain)
            elif _RETENTION.search(plain):  # %pi compactions, a RetentionView
                for match in _RETENTION.finditer(plain):
                    score, kept, facts, lost = match.groups()[1:]
                    story.add(story.retention, match[1], (where, _kept(score, kept, facts, lost)))
            elif "<ContextBreakdown " in plain:
                account = _account_of(plain)
                if account:
                    at_leaf(story.accounts, (where, *account))
                total = re.search(r"<ContextBreakdown ([\d,]+) tokens", plain)
                assert total is not None
                at_leaf(story.estimates, (where, _n(total[1])))
                system = re.search(r"\bsystem ([\d,]+)", plain.split("<ContextBreakdown", 1)[1])
                if system:
                    at_leaf(story.system, (where, _n(system[1])))
            elif "context now: " in plain:
                account = _account_of(plain.split("context now: ", 1)[1])
                assert account is not None, plain
                at_leaf(story.accounts, (where, *account))
    return story


def _read_context_output(
    story: NotebookStory, where: str, leaf: str, plain: str, html: str
) -> None:
    account = _account_of(plain)
    assert account is not None, plain
    story.add(story.accounts, leaf, (where, *account))
    text = _text(html)
    account = _account_of(text)
    assert account is not None
    story.add(story.accounts, leaf, (f"{where} html", *account))
    estimate = re.search(r"estimate of every message the model is sent: ([\d,]+) tokens", text)
    assert estimate is not None
    story.add(story.estimates, leaf, (where, _n(estimate[1])))
    by_role = {r[0]: _n(r[1]) for r in _rows(html, "By role")[1:] if r[1]}
    if "system" in by_role:
        story.add(story.system, leaf, (where, by_role["system"]))
    rows = _rows(html, "What the model sees, in order")
    header, body = rows[0], rows[1:]
    kind, tokens = header.index("kind"), header.index("tokens (chars/4)")
    for row in body:
        if row[kind] == "compaction" and row[tokens]:
            story.add(story.sizes, (row[0], leaf), (where, _n(row[tokens])))
            split = re.search(r"system checkpoint ([\d,]+) \+ summary ([\d,]+) = ", row[2])
            if split:
                story.add(story.summaries, row[0], (where, _n(split[2])))
    found = re.search(r"compaction (\w+) summarized (\d+) entr\w+, kept (\d+)", plain)
    if found:
        story.add(story.compactions, found[1], (where, int(found[2]), int(found[3])))


def _read_tree_output(story: NotebookStory, where: str, plain: str, leaf: str | None) -> None:
    boundary = re.search(r"▲ (\d+) entr\w+ summarized by compaction (\w+) · ([\d,]+) kept ▼", plain)
    if boundary:
        story.add(story.compactions, boundary[2], (where, int(boundary[1]), _n(boundary[3])))
    elif leaf is not None:  # the system messages on the path make the prompt as sent
        system = [_n(m[1]) for m in re.finditer(r"^●\s+system\s.*?\s([\d,]+)$", plain, re.M)]
        if system:
            story.add(story.system, leaf, (where, sum(system)))
    for line in plain.splitlines():
        row = re.match(r"^[■□\s│├└─]*compaction\s+(\w{8})\s.*?\s([\d,]+)$", line)
        if row and leaf is not None:
            story.add(story.sizes, (row[1], leaf), (where, _n(row[2])))


def _read_compaction_output(story: NotebookStory, where: str, plain: str, html: str) -> None:
    found = re.search(r"<CompactionView (\w+): .*?(\d+) entr\w+ summarized, ([\d,]+) kept>", plain)
    assert found is not None, plain
    story.add(story.compactions, found[1], (where, int(found[2]), _n(found[3])))
    summarized = re.search(r"Summarized: (\d+) entr", html)
    kept = re.search(r"Kept verbatim: (\d+) entr", html)
    assert summarized and kept
    story.add(story.compactions, found[1], (f"{where} html", int(summarized[1]), int(kept[1])))
    sends = _SENDS.search(html)
    if sends:
        story.add(story.sizes, (found[1], "after"), (where, _n(sends[1])))
        if sends[2]:
            story.add(story.summaries, found[1], (where, _n(sends[2])))
    if found[1] != "dry":  # a recorded compaction: what its summary kept, text and HTML
        for name, shown in (("text", plain), ("html", html)):
            scored = _SCORED.search(shown)
            assert scored is not None, shown
            story.add(story.retention, found[1], (f"{where} {name}", _kept(*scored.groups())))


def _ledger_table(lines: list[str], first: str) -> list[dict[str, str]]:
    """The rows of the ledger's table whose header starts with ``first`` (split on runs of
    two spaces, as the text table aligns them)."""
    header = next((line for line in lines if line.startswith(first + " ")), None)
    if header is None:
        return []  # no compaction: no table
    columns = re.split(r"\s{2,}", header.strip())
    rows = []
    for line in lines[lines.index(header) + 1 :]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != len(columns):
            break
        rows.append(dict(zip(columns, cells, strict=True)))
    return rows


def _read_ledger_output(story: NotebookStory, where: str, plain: str) -> None:
    lines = plain.splitlines()
    for row in _ledger_table(lines, "session"):
        kept, facts = (_n(x) for x in row["facts kept"].split("/"))
        figures = (row["score"], facts, kept, facts - kept)
        story.add(story.retention, row["compaction"], (where, figures))
    for row in _ledger_table(lines, "compaction"):  # where each compaction's size went
        size = _n(row["summary tok"]) + _n(row["checkpoint tok"])
        story.add(story.sizes, (row["compaction"], "after"), (where, size))
        story.add(story.summaries, row["compaction"], (where, _n(row["summary tok"])))


def _saved(path: Path) -> list[dict[str, Any]]:
    import json

    cells: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_a_notebooks_saved_outputs_tell_one_story(notebook: Path) -> None:
    story = read_notebook(notebook.name, _saved(notebook))
    assert story.read, "no output read"
    story.check()
    expected_story(notebook.name, story)


def expected_story(name: str, story: NotebookStory) -> None:
    """What each notebook is about: its window and the compactions it shows."""
    windows = {w for _, w, _ in story.windows}
    expected = {
        "01": {32_000},
        "02": {200_000},
        "03": {20_000},  # the reading story's window (pinb.testing.story.READING_WINDOW)
        "04": {200_000},
        "06": {5_000},
        "07": {32_000},
        "05": set(),
    }.get(name[:2])
    if expected is not None:  # a notebook added later is held to one story all the same
        assert windows == expected, (name, story.windows)
    if name.startswith("03"):  # what a summary kept, shown by several views of one compaction
        assert any(len(found) >= 4 for found in story.retention.values()), story.retention
    if name.startswith(("03", "06")):
        assert story.compactions and story.sizes, name
        # A compaction shown is shown alike in two places at least (view, context, ledger).
        for key in story.compactions:
            sizes = [f for (cid, _), found in story.sizes.items() if cid == key for f in found]
            assert len(story.compactions[key]) + len(sizes) >= 3, (key, story)
    if name.startswith("06"):  # the small-window session shows the window it ran with
        assert {s for _, _, s in story.windows} == {"models.json"}, story.windows
        assert {t for _, t in story.thresholds["pinb"]} == {3_750}
