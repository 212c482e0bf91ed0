"""No key shows in a notebook: ``%pi model``, ``--discover``, a failed ``%%pi`` cell, its file."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output

from pinb.core import Session
from pinb.llm.config.discover import forget_discoveries
from pinb.notebook import PiMagics
from pinb.notebook.live import RunFailedError
from pinb.testing import LLMServer
from tests.shells import pi_shell

PASSWORD = "pw-nb-3Kd8-userinfo"
QUERY_KEY = "qk-nb-7Ws2-query"
MY_KEY = "sk-nb-mykey-9Hf4-env"
HEADER_TOKEN = "ht-nb-1Bv6-header"
TEAM = "team-nb-literal-5Rc0"
SECRETS = (PASSWORD, QUERY_KEY, MY_KEY, HEADER_TOKEN, TEAM)


def _assert_clean(text: str, *secrets: str) -> None:
    for secret in secrets or SECRETS:
        for form in (secret, json.dumps(secret)[1:-1]):
            assert form not in text, (form, text)
    assert base64.b64encode(f"alice:{PASSWORD}".encode()).decode() not in text


def _shown(captured: CapturedIO) -> str:
    parts = [captured.stdout, captured.stderr]
    parts += [str(value) for output in captured.outputs for value in output.data.values()]
    return "\n".join(parts)


def _session_path(ip: InteractiveShell) -> Path:
    session = ip.magics_manager.registry["PiMagics"].session
    assert session is not None and session.path is not None
    return Path(session.path)


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    forget_discoveries()
    with pi_shell() as ip:
        yield ip


@pytest.fixture()
def vault(isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """A models.json provider behind a password, a ?key=, $MY_KEY and two headers.

    The server echoes each failed request (URL, query, every header) into its error body.
    """
    with LLMServer(echo_request=True) as server:
        monkeypatch.setenv("MY_KEY", MY_KEY)
        monkeypatch.setenv("HDR_TOKEN", HEADER_TOKEN)
        base = server.openai_base_url.replace("http://", f"http://alice:{PASSWORD}@")
        provider = {
            "baseUrl": f"{base}?key={QUERY_KEY}",
            "api": "openai-completions",
            "apiKey": "$MY_KEY",
            "headers": {"X-Vault-Token": "${HDR_TOKEN}", "X-Team": TEAM},
            "models": [{"id": "tiny", "contextWindow": 8000, "maxTokens": 500}],
        }
        (isolated_agent_dir / "models.json").write_text(
            json.dumps({"providers": {"vault": provider}})
        )
        (isolated_agent_dir / "settings.json").write_text(
            json.dumps({"retry": {"maxRetries": 1, "baseDelayMs": 1}})
        )
        yield server


def test_a_failed_cell_shows_and_saves_no_secret(
    shell: InteractiveShell, vault: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with capture_output() as chosen:
        shell.run_line_magic("pi", "model vault/tiny")
    assert "vault/tiny · window 8,000" in chosen.stdout
    assert "· http://***:***@127.0.0.1:" in chosen.stdout and "/v1?key=***" in chosen.stdout
    vault.fail(503, message=f"upstream refused {MY_KEY}")  # retried once, then
    vault.fail(401, message=f"token {HEADER_TOKEN} of team {TEAM} is not valid here")
    with capture_output() as captured:
        result = shell.run_cell("%%pi --model vault/tiny --no-tools\nhello")
    error = result.error_in_exec
    assert isinstance(error, RunFailedError)
    # Every secret went to the server, and came back in its error bodies ...
    assert len(vault.requests) == 2 and vault.requests[-1].path.endswith(f"?key={QUERY_KEY}")
    assert vault.requests[-1].headers["X-Vault-Token"] == HEADER_TOKEN
    # ... and the error is shown and saved, with *** where each one was.
    session = Session.open(_session_path(shell))
    failed = [m for m in session.build_context().messages if m.get("stopReason") == "error"]
    assert failed and failed[-1]["errorMessage"].startswith("401 token *** of team *** is not")
    assert "(request: POST http://127.0.0.1:" in failed[-1]["errorMessage"]
    shown = _shown(captured)
    assert "retrying in" in shown and "401 token ***" in shown
    magics: PiMagics = shell.magics_manager.registry["PiMagics"]
    for text in (
        shown,
        str(error),
        repr(error),
        "\n".join(error._render_traceback_()),
        repr(magics.current_model()),
        session.path.read_bytes().decode("utf-8"),
        caplog.text,
    ):
        _assert_clean(text)


def test_discover_and_base_url_show_addresses_masked(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with (
        LLMServer(context_window=4096, window_endpoint="ollama") as server,
        LLMServer(context_window=4096, window_endpoint="llamacpp") as other,
    ):
        host = server.url.removeprefix("http://")
        notebook_url = f"http://bob:{PASSWORD}@{host}?token={QUERY_KEY}"
        # The other local providers are configured too, so no usual port is asked; two name
        # the notebook's server (listed once), llama.cpp a server of its own.
        for name in ("LMSTUDIO_BASE_URL", "VLLM_BASE_URL"):
            monkeypatch.setenv(name, f"http://carol:{MY_KEY}@{host}/v1?api_key={TEAM}")
        other_host = other.url.removeprefix("http://")
        monkeypatch.setenv(
            "LLAMACPP_BASE_URL", f"http://carol:{MY_KEY}@{other_host}/v1?api_key={TEAM}"
        )
        with capture_output() as chosen:
            shell.run_line_magic("pi", f"model ollama/qwen3:0.6b --base-url {notebook_url}")
        with capture_output() as found:
            shell.run_line_magic("pi", "model --discover")
        model = shell.magics_manager.registry["PiMagics"].current_model()
        assert model.base_url == f"http://bob:{PASSWORD}@{host}/v1?token={QUERY_KEY}"
        assert any(p.endswith(f"?token={QUERY_KEY}") for p in server.probes)
    assert f"· http://***:***@{host}/v1?token=***" in chosen.stdout
    assert "window 4,096 (server: /api/show num_ctx)" in chosen.stdout
    assert f"ollama at http://***:***@{host}/v1?token=*** (notebook)" in found.stdout
    assert f"--base-url http://***:***@{host}?token=***" in found.stdout
    assert (
        f"llamacpp at http://***:***@{other_host}/v1?api_key=*** (LLAMACPP_BASE_URL)"
        in found.stdout
    )
    assert found.stdout.count("- ") == 2  # one server, one line
    for text in (chosen.stdout, found.stdout, repr(model), caplog.text):
        _assert_clean(text, PASSWORD, QUERY_KEY, MY_KEY, TEAM)
