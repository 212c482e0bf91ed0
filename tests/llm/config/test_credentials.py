"""API keys never appear in reprs, errors, logs or returned messages."""

from __future__ import annotations

import json
import logging
import pathlib
import pickle

import pytest

from pinb.llm import MissingCredentialsError, ModelRegistry, RetryPolicy, Secret, get_model

from ..helpers import user

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


def test_a_trailing_newline_is_stripped_on_load(server, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\r\n")
    model = get_model(
        "openai/gpt-4o", base_url=server.openai_base_url, registry=ModelRegistry(False)
    )
    server.reply("fine")
    assert model.complete([user("hi")])["stopReason"] == "stop"
    assert server.last_request.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "bad", [KEY[:12] + "é" + KEY[12:], KEY[:12] + "\n" + KEY[12:], KEY + "\x07"]
)
def test_a_key_no_header_can_carry_is_refused_naming_the_variable(server, monkeypatch, caplog, bad):
    from pinb.llm import InvalidCredentialsError

    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", bad)
    with pytest.raises(InvalidCredentialsError) as info:
        get_model("openai/gpt-4o", base_url=server.openai_base_url, registry=ModelRegistry(False))
    text = str(info.value)
    assert "OPENAI_API_KEY" in text and "\n" not in text
    for piece in (bad, KEY, KEY[:8], repr(bad)[1:-1]):
        assert piece not in text and piece not in caplog.text
    assert server.requests == []  # refused before any request


def test_a_key_in_auth_json_or_models_json_is_checked_too(tmp_path, monkeypatch):
    from pinb.llm import InvalidCredentialsError
    from pinb.llm.config.credentials import find_api_key

    path = tmp_path / "auth.json"
    path.write_text(json.dumps({"openai": {"type": "api_key", "key": KEY + "\n"}}))
    assert find_api_key("openai", auth_path=path).reveal() == KEY
    path.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-ü" + KEY}}))
    with pytest.raises(InvalidCredentialsError, match=r"auth\.json"):
        find_api_key("openai", auth_path=path)
    monkeypatch.setenv("MY_BOX_KEY", "sk-\x07" + KEY)
    with pytest.raises(InvalidCredentialsError, match="MY_BOX_KEY"):
        find_api_key("box", config_value="MY_BOX_KEY", auth_path=tmp_path / "none.json")


@pytest.mark.parametrize(
    "form",
    [
        KEY,
        repr(KEY + "\n")[1:-1],  # Python escapes, as in an httpx header error
        json.dumps(KEY + "é")[1:-1],  # JSON escapes
        "sk-FAKE-7c1d9e2b4a-DO-NOT-LEAK%0A",  # URL-encoded newline
        "b'Bearer sk-FAKE-7c1d9e2b4a-DO-NOT-LEAK\\xc3\\xa9'",  # bytes repr
        "sk-FAKE-7c1d9e2b4a-DO-N…",  # a cut copy
    ],
)
def test_redaction_catches_escaped_and_encoded_forms(form):
    from pinb.llm.config.credentials import redact

    for secret in (KEY, KEY + "\n", KEY + "é"):
        out = redact(f"error: {form} (while sending)", [Secret(secret)])
        assert "7c1d9e2b4a" not in out, (secret, out)
        assert out.startswith("error: ") and out.endswith("(while sending)")


def test_models_json_values_resolve_as_pi_1x_does() -> None:
    """Pi 1.6's resolve-config-value.js: templates, escapes, and an unset variable."""
    from pinb.llm.config.credentials import resolve_config_value

    env = {"A": "alpha", "B": "beta"}
    assert resolve_config_value("$A", env) == "alpha"
    assert resolve_config_value("${A}-${B}/x", env) == "alpha-beta/x"
    assert resolve_config_value("$$A and $!", env) == "$A and !"
    assert resolve_config_value("$UNSET", env) is None  # Pi: the whole value is unresolved
    assert resolve_config_value("${not a name}", env) == "${not a name}"
    assert resolve_config_value("cost $5", env) == "cost $5"
    assert resolve_config_value("A", env) == "alpha"  # Pi 0.x: a bare variable name
    assert resolve_config_value("sk-literal", env) == "sk-literal"


def test_a_models_json_key_comes_before_the_providers_variable(tmp_path: pathlib.Path) -> None:
    """Pi 1.x's order (docs/models.md): auth.json, then models.json's apiKey, then variables."""
    from pinb.llm.config.credentials import find_api_key

    found = find_api_key(
        "openai",
        env_vars=["OPENAI_API_KEY"],
        config_value="$PROXY_KEY",
        env={"OPENAI_API_KEY": "from-variable", "PROXY_KEY": "from-models-json"},
        auth_path=tmp_path / "none.json",
    )
    assert found is not None and found.reveal() == "from-models-json"
