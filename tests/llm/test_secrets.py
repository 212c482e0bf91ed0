"""API keys never appear in reprs, errors, logs or returned messages."""

from __future__ import annotations

import json
import logging
import pickle

import pytest

from pinb.llm import MissingCredentialsError, ModelRegistry, RetryPolicy, Secret, get_model

from .conftest import user

KEY = "sk-FAKE-7c1d9e2b4a-DO-NOT-LEAK"


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_key_absent_everywhere(server, sleeps, keyed, caplog, wire):
    caplog.set_level(logging.DEBUG)
    spec = "openai/gpt-4o" if wire == "openai" else "anthropic/claude-sonnet-4-5"
    base = server.openai_base_url if wire == "openai" else server.anthropic_base_url
    model = get_model(
        spec,
        base_url=base,
        retry=RetryPolicy(sleep=sleeps),
        timeout=5,
        registry=ModelRegistry(False),
    )
    # the server does receive it...
    server.reply("hello")
    ok = model.complete([user("hi")])
    headers = server.last_request.headers
    assert KEY in (headers.get("authorization", "") + headers.get("x-api-key", ""))
    # ...but it shows up nowhere else, even when a provider echoes it back in an error
    server.fail(503, message=f"upstream rejected key {KEY}")
    server.fail(401, message=f"Incorrect API key provided: {KEY}")
    failed = model.complete([user("hi")])
    assert failed["stopReason"] == "error" and "***" in failed["errorMessage"]
    for text in (
        repr(model),
        str(model),
        repr(vars(model)),
        json.dumps(ok),
        json.dumps(failed),
        caplog.text,
    ):
        assert KEY not in text
    assert "retrying" in caplog.text  # the retry was logged, redacted


def test_secret_wrapper():
    secret = Secret(KEY)
    assert KEY not in repr(secret) and KEY not in str(secret) and KEY not in f"{secret}"
    assert secret.reveal() == KEY
    with pytest.raises(TypeError):
        pickle.dumps(secret)


def test_missing_credentials_error_never_shows_other_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(MissingCredentialsError) as info:
        get_model("openrouter/openai/gpt-4o-mini")
    assert KEY not in str(info.value) and "OPENROUTER_API_KEY" in str(info.value)


def test_auth_json_content_not_logged_when_invalid(tmp_path, caplog):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "auth.json").write_text(
        '{"openai": {"type": "api_key", "key": "' + KEY + '"'
    )  # broken JSON
    with pytest.raises(MissingCredentialsError):
        get_model("openai/gpt-4o")
    assert "auth.json is not valid JSON" in caplog.text and KEY not in caplog.text
