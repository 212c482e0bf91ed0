"""The user's own Pi on a local model, right the first time: one models.json for both engines,
Pi's reason when it cannot find a model, Pi's own threshold, small-window settings for Pi."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.agent.pi.rpc import PiCommandError, PiExitedError
from tests.pi.loop import MODEL, PiLoop
from tests.shells import pi_shell


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    with pi_shell("terminal") as ip:
        yield ip


def _run(shell: InteractiveShell, source: str) -> tuple[Any, str]:
    with capture_output() as captured:
        result = shell.run_cell(source)
    return result, captured.stdout + captured.stderr


def _models(loop: PiLoop, provider: dict[str, Any]) -> None:
    (loop.agent_dir / "models.json").write_text(json.dumps({"providers": {"local": provider}}))


@pytest.mark.parametrize("missing", ["api", "apiKey"])
def test_a_models_json_pi_cannot_use_says_why_in_one_line(
    shell: InteractiveShell, pi_loop: PiLoop, missing: str
) -> None:
    provider = {
        "baseUrl": pi_loop.server.openai_base_url,
        "api": "openai-completions",
        "apiKey": "none",
        "models": [{"id": "small", "contextWindow": 8192, "maxTokens": 512}],
    }
    del provider[missing]
    _models(pi_loop, provider)
    result, said = _run(shell, "%%pi --engine pi --model local/small\nhello")
    # No api: Pi stops at start-up; no apiKey: Pi starts, then refuses the prompt.
    assert isinstance(result.error_in_exec, PiExitedError if missing == "api" else PiCommandError)
    message = str(result.error_in_exec)
    expected = 'names no "api"' if missing == "api" else 'has no "apiKey"'
    assert expected in message and "models.json" in message
    assert "Traceback" not in said and expected in said.strip().splitlines()[-1]


def test_save_writes_one_models_json_entry_both_engines_use(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    (pi_loop.agent_dir / "models.json").unlink()
    result, said = _run(
        shell,
        f"%pi model local/small --save --base-url {pi_loop.server.openai_base_url} --window 8192",
    )
    assert result.error_in_exec is None, said
    entry = json.loads((pi_loop.agent_dir / "models.json").read_text())["providers"]["local"]
    assert entry["api"] == "openai-completions" and entry["apiKey"] == "none"
    assert entry["models"] == [{"id": "small", "contextWindow": 8192, "maxTokens": 2048}]
    # Pi 1.6 lists it ...
    listed = subprocess.run(
        [*pi_loop.argv, "--list-models"],
        env=pi_loop.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "small" in listed.stdout and "8.2K" in listed.stdout, listed.stdout + listed.stderr
    # ... and both engines answer with it.
    for engine in ("pinb", "pi"):
        pi_loop.server.reply(text=f"hello from {engine}")
        result, said = _run(shell, f"%%pi --engine {engine} --model local/small\nhi")
        assert result.error_in_exec is None and f"hello from {engine}" in said, said


def test_pi_on_a_small_window_says_so_once_and_fit_pi_makes_it_compact_in_the_window(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    # 8,192: the smallest usual window on which Pi 1.6 can answer at all (see test_limits)
    _models(pi_loop, {
        "baseUrl": pi_loop.server.openai_base_url, "api": "openai-completions",
        "apiKey": "none", "models": [{"id": "small", "contextWindow": 8192, "maxTokens": 512}],
    })  # fmt: skip
    pi_loop.server.reply(text="first")
    _, said = _run(shell, "%%pi --engine pi --model local/small\none")
    assert "do not fit local/small's 8,192-token window" in said and "%pi model --fit-pi" in said
    # Pi's own threshold in the footer: window - reserve, as Pi uses its settings, and what
    # Pi really does then (its keep leaves nothing to summarize).
    assert "Pi tries to compact before every request (a reserve of 16,384 leaves no room)" in said
    pi_loop.server.reply(text="second")
    _, said = _run(shell, "%%pi --engine pi\ntwo")
    assert "do not fit" not in said  # said once, when Pi started

    result, said = _run(shell, "%pi model --fit-pi")
    assert result.error_in_exec is None, said
    settings = json.loads((pi_loop.agent_dir / "settings.json").read_text())
    assert settings["compaction"]["modelOverrides"]["local/small"] == {
        "reserveTokens": 2048,
        "keepRecentTokens": 2048,
    }
    assert "Pi compacts above 6,144 tokens and keeps 2,048" in said
    pi_loop.server.reply(text="third")
    _, said = _run(shell, "%%pi --engine pi --model local/small\nthree")
    assert "do not fit" not in said and "compacts above 6,144" in said


def test_pi_on_a_4096_window_stops_at_once_with_the_reason_and_the_built_in_engine_answers(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    _models(pi_loop, {
        "baseUrl": pi_loop.server.openai_base_url, "api": "openai-completions",
        "apiKey": "none", "models": [{"id": "small", "contextWindow": 4096, "maxTokens": 1024}],
    })  # fmt: skip
    result, said = _run(shell, "%%pi --engine pi --model local/small\nhello")
    assert result.error_in_exec is not None
    assert "Traceback" not in said
    assert "at most 1 token (max_completion_tokens)" in said and "--n_ctx" in said, said
    assert pi_loop.server.requests == []  # Pi sent nothing
    pi_loop.server.reply(text="from the built-in engine")
    result, said = _run(shell, "%%pi --engine pinb --model local/small\nhello")
    assert result.error_in_exec is None and "from the built-in engine" in said, said
    body = pi_loop.server.requests[-1].body
    assert body["max_tokens"] > 256  # a useful reply fits: pinb's margin grows with the window


def test_a_pi_cells_footer_shows_pis_own_threshold(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    pi_loop.server.reply(text="hi")
    _, said = _run(shell, f"%%pi --engine pi --model {MODEL}\nhello")
    # 32,000 - 16,384: Pi's rule on its own settings (pinb's agent would fit them: 24,000).
    assert "of a 32,000 window (Pi's model) · compacts above 15,616" in said


def test_a_one_off_built_in_cell_says_when_the_next_pi_cell_compacts(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    # Pi is the engine; one cell runs pinb's agent. Its footer's "compacts above" is for the
    # next cell, which is Pi's: Pi's own rule (32,000 - 16,384), not pinb's fitted 24,000.
    shell.run_line_magic("config", 'PiMagics.engine = "pi"')
    pi_loop.server.reply(text="hi")
    _run(shell, f"%%pi --model {MODEL}\nhello")
    pi_loop.server.reply(text="hi again")
    result, said = _run(shell, f"%%pi --engine pinb --model {MODEL}\nand you?")
    assert result.error_in_exec is None
    assert "· compacts above 15,616 (Pi's own reserve" in said


def test_a_routed_compacts_events_stay_in_its_own_cell(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    shell.run_line_magic("config", 'PiMagics.engine = "pi"')
    (pi_loop.agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 100}})  # something to summarize
    )
    for turn in range(3):
        pi_loop.server.reply(text=f"answer {turn} " + "words " * 400)
        _run(shell, f"%%pi --model {MODEL}\nquestion {turn}")
    for _ in range(2):  # the history summary, and the split turn's prefix
        pi_loop.server.reply(text="## Goal\nthe summary")
    result, said = _run(shell, "%pi compact")
    assert result.error_in_exec is None, said
    assert "Pi is compacting the context (manual)" in said and "Pi compacted the context" in said
    pi_loop.server.reply(text="after")
    _, said = _run(shell, "%%pi\nnext")
    assert "compacting" not in said


def test_after_open_the_model_is_the_one_the_session_recorded(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    _models(pi_loop, {
        "baseUrl": pi_loop.server.openai_base_url, "api": "openai-completions",
        "apiKey": "none", "models": [{"id": "small", "contextWindow": 8192, "maxTokens": 512}],
    })  # fmt: skip
    pi_loop.server.reply(text="recorded")
    _run(shell, "%%pi --engine pi --model local/small\nfirst")  # Pi records local/small
    magics = shell.magics_manager.registry["PiMagics"]
    path = magics.session.path
    magics.pi_engine.close()
    magics.session, magics._model, magics._model_spec, magics.model = None, None, None, ""
    _run(shell, f"%pi open {path}")
    _, said = _run(shell, "%pi model")
    assert said.startswith("local/small · window 8,192 (models.json)"), said
    pi_loop.server.reply(text="continued")
    result, said = _run(shell, "%%pi\nsecond")
    assert result.error_in_exec is None and "continued" in said
    assert pi_loop.server.requests[-1].body["model"] == "small"


def test_a_pi_cell_on_a_server_without_usage_is_estimated_as_a_built_in_one(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    from pinb.testing.llm_server import ServerReply

    for engine in ("pi", "pinb"):
        pi_loop.server.add(ServerReply(text=f"answer by {engine}", no_usage=True))
        result, said = _run(shell, f"%%pi --engine {engine} --model {MODEL}\nhello")
        assert result.error_in_exec is None, said
        assert "(estimated: the server reported no usage)" in said, said
        billed = re.search(r"input ~([\d,]+) · output ~([\d,]+)", said)
        assert billed is not None and int(billed[1].replace(",", "")) > 100, said


def test_after_a_pi_cell_the_footer_says_what_the_next_built_in_cell_will_send(
    shell: InteractiveShell, pi_loop: PiLoop
) -> None:
    from pinb.testing.llm_server import ServerReply

    pi_loop.server.add(ServerReply(text="from Pi", no_usage=True))
    _, said = _run(shell, f"%%pi --engine pi --model {MODEL}\nhello")
    found = re.search(
        r"the next built-in %%pi cell also sends pinb's system prompt and tools "
        r"\(\+([\d,]+)\): ≈([\d,]+)",
        said,
    )
    assert found is not None, said
    predicted = int(found[2].replace(",", ""))
    pi_loop.server.add(ServerReply(text="ok", no_usage=True))
    _, said = _run(shell, f"%%pi --model {MODEL}\nhi")
    now = re.search(r"context now: ([\d,]+) tokens", said)
    assert now is not None, said
    # What the built-in cell's request carried: the prediction plus its own prompt and reply.
    assert 0 <= int(now[1].replace(",", "")) - predicted < 20, (predicted, said)
    assert "the next built-in %%pi cell also sends" not in said  # now it is in the replay


def test_after_every_engine_switch_the_footer_shows_what_the_next_trigger_counts(
    shell: InteractiveShell, pi_loop: PiLoop, pi16: Any
) -> None:
    """Both ways, against the real Pi: the footer's figure is compaction_due's (the built-in
    engine's trigger) and Pi's own estimateContextTokens of the file (Pi's)."""
    from pinb.core import Session
    from pinb.core.compaction.operations import trigger_tokens
    from pinb.testing.llm_server import ServerReply

    for turn, engine in enumerate(["pinb", "pi", "pinb", "pi", "pinb"]):
        pi_loop.server.add(ServerReply(text=f"answer {turn} " + "w" * 200, no_usage=True))
        result, said = _run(shell, f"%%pi --engine {engine} --model {MODEL}\nquestion {turn}")
        assert result.error_in_exec is None, said
        shown = re.search(r"([\d,]+) tokens \(chars/4 estimate", said)
        assert shown is not None, said
        figure = int(shown[1].replace(",", ""))
        path = shell.magics_manager.registry["PiMagics"].session.path
        assert figure == trigger_tokens(Session.open(path)), (engine, said)
        preset = {"reserve": 16384, "keep": 20000, "window": 32000}
        query = {"leaves": [{"key": "@default"}], "branches": [], "plans": ["p"],
                 "planPresets": {"p": preset}, "budgets": [0], "tree": "nested"}  # fmt: skip
        pis = pi16.answer(query, path)["@default"]["plan"]["p"]["contextTokens"]
        assert figure == pis, (engine, figure, pis)
    systems = [e for e in Session.open(path).entries if e.role == "system"]
    assert len(systems) >= 2  # both engines' prompts are on the path, and both counted
