"""Keep what matters and give back what a compaction lost, as a notebook user meets it: a
real IPython shell, the loopback model server, real session files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.core import Session
from pinb.core.compaction.lost import KEPT_FACTS_HEADING
from pinb.core.compaction.uncompact import UNCOMPACT_TYPE, GivenBack
from pinb.notebook import PiMagics
from pinb.testing import LLMServer
from pinb.testing.work import write_work_session
from tests.pi.loop import MODEL, PiLoop
from tests.pi.reference import PiReference
from tests.shells import pi_shell


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    with pi_shell() as ip:
        yield ip


def _server(agent_dir: Path, server: LLMServer, window: int) -> None:
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "loop": {
                        "baseUrl": server.openai_base_url,
                        "api": "openai-completions",
                        "apiKey": "LOOP_KEY",
                        "models": [{"id": "m", "contextWindow": window, "maxTokens": 1000}],
                    }
                }
            }
        )
    )


@pytest.fixture()
def server(isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer() as srv:
        monkeypatch.setenv("LOOP_KEY", "sk-loop-key-0123456789")
        _server(isolated_agent_dir, srv, 400_000)
        yield srv


def _magics(ip: InteractiveShell) -> PiMagics:
    return ip.magics_manager.registry["PiMagics"]  # type: ignore[no-any-return]


def test_compact_shows_the_loss_uncompact_gives_it_back_and_the_next_cell_sends_it(
    shell: InteractiveShell, server: LLMServer, tmp_path: Path, pi16: PiReference
) -> None:
    """The whole story as a user meets it: compact, see the loss, give it back, the next
    cell's request carries it, and the real Pi 1.6.0 opening the file has it too."""
    # 40 turns: Pi's harness answers with the whole tree, a level per entry (past Python's
    # JSON nesting limit for a much longer file).
    path = write_work_session(tmp_path / "s", turns=40).require_path()
    with capture_output():
        shell.run_line_magic("pi", f"open {path}")
    shell.run_line_magic("pi", "compact --offline --no-keep-facts")
    session = _magics(shell).current_session()
    compaction = session.entries[-1]
    assert compaction.type == "compaction" and KEPT_FACTS_HEADING not in compaction.raw["summary"]
    shown = shell.run_line_magic("pi", "compactions")._repr_mimebundle_()["text/plain"]
    assert "lost (" in shown and "given back" not in shown
    dry = shell.run_line_magic("pi", "uncompact --dry-run")
    assert isinstance(dry, GivenBack) and dry.entry is None and dry.facts
    lost = shown.split("  lost (", 1)[1].split("  kept (", 1)[0]
    for fact in dry.facts[:10]:  # what uncompact would give back is what the view calls lost
        assert f"#{fact.fact.entry_id}" in lost
    assert session.entries[-1] is compaction
    given = shell.run_line_magic("pi", "uncompact")
    assert isinstance(given, GivenBack) and given.entry is not None
    assert [f.to_dict() for f in given.facts] == [f.to_dict() for f in dry.facts]
    text = given._repr_mimebundle_()["text/plain"]
    assert text.startswith(f"gave back {len(given.facts)} facts compaction {compaction.id} lost")
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["customType"] == UNCOMPACT_TYPE and last["parentId"] == compaction.id
    # %pi compactions now says what was given back, and marks each fact given back.
    shown = shell.run_line_magic("pi", "compactions")._repr_mimebundle_()["text/plain"]
    assert f"given back in {given.entry.id}: {len(given.facts)} facts" in shown
    assert shown.count(f"given back in {given.entry.id} · ") == min(len(given.facts), 40)
    # The next cell's request carries the facts given back, as a user message.
    server.reply("Carrying on.")
    with capture_output():
        shell.run_cell_magic("pi", "--model loop/m --no-tools", "Carry on with the work")
    sent = json.dumps(server.last_request.body)
    assert json.dumps(last["content"])[1:-1] in sent
    for fact in given.facts[:5]:
        assert json.dumps(fact.fact.text)[1:-1] in sent
    # Asked again, nothing is still lost: one line, no entry.
    again = shell.run_line_magic("pi", "uncompact")
    assert again.entry is None and again.to_text().startswith("nothing to give back")
    with capture_output() as captured:
        shell.run_line_magic("pi", "uncompact --json --dry-run")
    assert json.loads(captured.stdout)["entryId"] is None
    # The real Pi opening the file builds a context with the facts given back in it.
    opened = pi16.open(path)
    custom = [m for m in opened["context"]["messages"] if m.get("customType") == UNCOMPACT_TYPE]
    assert [m["content"] for m in custom] == [last["content"]]
    for fact in given.facts:
        assert fact.line in custom[0]["content"]


def test_uncompact_errors_are_one_line(shell: InteractiveShell, tmp_path: Path) -> None:
    path = write_work_session(tmp_path / "s", turns=4).require_path()
    with capture_output():
        shell.run_line_magic("pi", f"open {path}")
    with capture_output() as captured:
        shell.run_cell("%pi uncompact")
    assert (
        "CompactionError: no compaction on the current path: there is nothing to give back"
        in captured.stdout + captured.stderr
    )
    assert "Traceback" not in captured.stdout + captured.stderr
    with capture_output() as captured:
        shell.run_cell("%pi uncompact --kinds vibes")
    assert "'vibes' is not a kind of fact" in captured.stdout + captured.stderr


RULES = (
    "Never use tabs in the parser.",
    "Always run black before committing.",
    "Don't touch the vendored yaml code.",
    "Only edit files under src.",
)


def test_automatic_compaction_keeps_facts_unless_the_setting_is_off(
    shell: InteractiveShell, isolated_agent_dir: Path
) -> None:
    summaries = {}
    with LLMServer() as srv:
        _server(isolated_agent_dir, srv, 4000)
        for keep in (True, False):
            _magics(shell).keep_facts = keep
            shell.run_line_magic("pi", "new")
            for i in range(3):
                srv.reply(
                    f"answer {i} " + "w" * 1500, usage={"input": 900 * (i + 1), "output": 400}
                )
            srv.reply("## Goal\nthe summary")
            srv.reply("answer 3", usage={"input": 900, "output": 4})
            with capture_output():
                for i in range(4):
                    shell.run_cell_magic(
                        "pi",
                        "--model loop/m --no-tools",
                        f"{RULES[i]} " + "q" * 600,
                    )
            session = Session.open(_magics(shell).current_session().require_path())
            compactions = [e for e in session.entries if e.type == "compaction"]
            assert compactions, "the context passed the threshold of the 4000-token window"
            summaries[keep] = compactions[0].raw["summary"]
    assert KEPT_FACTS_HEADING in summaries[True]
    assert RULES[0] in summaries[True].split(KEPT_FACTS_HEADING)[1]
    assert KEPT_FACTS_HEADING not in summaries[False]


def test_with_pi_as_the_engine_uncompact_reaches_pis_next_turn_through_the_file(
    shell: InteractiveShell, pi_loop: PiLoop, tmp_path: Path
) -> None:
    from pinb.core import ExtractiveSummarizer, compact
    from pinb.core.context.tokens import CompactionSettings

    session = write_work_session(tmp_path / "s", turns=20, cwd=tmp_path)
    settings = CompactionSettings(keep_recent_tokens=3000, keep_facts_tokens=300)
    kept = compact(session, ExtractiveSummarizer(), settings=settings)
    assert kept.kept_facts is not None and kept.kept_facts.omitted  # more to give back
    magics = _magics(shell)
    magics.engine = "pi"
    with capture_output():
        shell.run_line_magic("pi", f"open {session.require_path()}")
        pi_loop.server.reply(text="Pi read it.")
        first = shell.run_cell(f"%%pi --model {MODEL}\nWhere were we?")
    assert first.error_in_exec is None
    given = shell.run_line_magic("pi", "uncompact")
    assert isinstance(given, GivenBack) and given.entry is not None
    pi_loop.server.reply(text="Pi carries on.")
    with capture_output():
        result = shell.run_cell(f"%%pi --model {MODEL}\nCarry on with the next fixture")
    assert result.error_in_exec is None
    assert magics.pi_engine.process is not None  # the cells ran in the user's Pi
    assert len(pi_loop.server.requests) == 2
    sent = json.dumps(pi_loop.server.requests[-1].body)
    assert json.dumps(given.text)[1:-1] in sent  # Pi read the give-back from the file
    for fact in kept.kept_facts.facts:
        assert json.dumps(fact.line)[1:-1] in sent
