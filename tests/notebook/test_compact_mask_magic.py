"""``%pi compact --mask`` in a real IPython shell, then the next cell through the loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.core.compaction.masking import MASK_PREFIX
from pinb.core.context.tokens import estimate_projected_tokens
from pinb.testing import LLMServer
from pinb.testing.generate import tool_heavy_session
from tests.shells import pi_shell

WINDOW = 64_000


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    with pi_shell(context_window=WINDOW) as ip:
        yield ip


def test_compact_mask_masks_and_the_next_cell_sends_placeholders_and_offers_recall(
    shell: InteractiveShell, tmp_path: Path, isolated_agent_dir: Path
) -> None:
    path = tool_heavy_session(tmp_path / "sessions", turns=40, result_chars=6_000, cwd=tmp_path)
    with capture_output():
        shell.run_line_magic("pi", f"open {path}")
    view = shell.run_line_magic("pi", "compact --mask --offline")
    bundle = view._repr_mimebundle_()
    report = view.report
    assert report.written and report.reaches and report.summary_calls_avoided == 1
    assert f"Masked {len(report.masked)} old tool results" in bundle["text/html"]
    assert "no summary needed" in bundle["text/plain"]
    magics = shell.magics_manager.registry["PiMagics"]
    session = magics.current_session()
    assert session.entries[-1].type == "context_edit"
    # The footer's figure is the trigger's: the projected estimate after the edits.
    tokens = shell.run_line_magic("pi", "tokens")
    figure = estimate_projected_tokens(session.build_context()).tokens
    assert f"{figure:,}" in tokens._repr_mimebundle_()["text/plain"]

    with LLMServer() as server:
        (isolated_agent_dir / "models.json").write_text(json.dumps({"providers": {"loop": {
            "baseUrl": server.openai_base_url, "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "loop-model", "contextWindow": WINDOW, "maxTokens": 1000}],
        }}}))  # fmt: skip
        server.reply("carrying on", usage={"input": 45_000, "output": 3})
        with capture_output():
            shell.run_cell_magic("pi", "--model loop/loop-model --no-tools", "carry on")
        body = server.requests[-1].body
        sent = json.dumps(body, ensure_ascii=False)
        assert sent.count(MASK_PREFIX) == len(report.masked)
        # --no-tools sends none; recall comes with the tools a cell offers.
        server.reply("with tools", usage={"input": 45_100, "output": 3})
        with capture_output():
            shell.run_cell_magic("pi", "--model loop/loop-model", "and with tools?")
        names = [t["function"]["name"] for t in server.requests[-1].body["tools"]]
        assert "recall" in names


def test_with_nothing_old_to_mask_the_offline_summary_is_written_and_says_why(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    path = tool_heavy_session(tmp_path / "sessions", turns=3, result_chars=300, cwd=tmp_path)
    with capture_output():
        shell.run_line_magic("pi", f"open {path}")
    view = shell.run_line_magic("pi", "compact --mask --offline")
    assert view.report.entry is not None and view.report.entry.type == "compaction"
    html = view._repr_mimebundle_()["text/html"]
    assert "not enough, so a summary: Nothing to mask" in html


def test_whatif_shows_mask_first_beside_pis_plan(shell: InteractiveShell, tmp_path: Path) -> None:
    path = tool_heavy_session(tmp_path / "sessions", turns=40, result_chars=6_000, cwd=tmp_path)
    with capture_output():
        shell.run_line_magic("pi", f"open {path}")
    before = path.read_bytes()
    result = shell.run_line_magic("pi", "whatif --no-score --offline")
    assert path.read_bytes() == before
    text = result._repr_mimebundle_()["text/plain"]
    assert "Pi's plan and mask-first side by side" in text
    assert result.masking is not None and result.masking.reaches
    # The default columns differ: none plans the cut of a column before it.
    cuts = [r.first_kept_entry_id for r in result.rows]
    assert len(cuts) == len(set(cuts))
