"""Every configured secret stays out of what pinb shows: URLs, models.json, auth.json, variables."""

from __future__ import annotations

import base64
import json
import logging
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinb.llm import (
    ModelRegistry,
    ProviderHTTPError,
    Redactor,
    RetryPolicy,
    display_url,
    get_model,
    redact_secrets,
)
from pinb.llm.config.secrets import configured_redactor, connection_redactor
from pinb.llm.local import LocalServer
from pinb.llm.urls import join_url, mask_urls, url_secrets
from pinb.testing.llm_server import LLMServer

from ..helpers import user

PASSWORD = "pw-7Hq2-userinfo-SECRET"
QUERY_KEY = "qk-93Jd-query-SECRET"
MY_KEY = "sk-mykey-5Tz8-env-SECRET"
HEADER_TOKEN = "ht-4Lp1-header-SECRET"
TEAM = "team-literal-Vb6s"
AUTH_KEY = "sk-auth-json-2Wq7-SECRET"
OAUTH_ACCESS = "oa-access-8Nn3-SECRET"
GEMINI = "gm-pi-reads-this-1Kx9"
PROXY_PASSWORD = "proxy-pw-6Yt4"

ALL = (PASSWORD, QUERY_KEY, MY_KEY, HEADER_TOKEN, TEAM, AUTH_KEY, OAUTH_ACCESS, GEMINI)


def _forms(secret: str) -> list[str]:
    """The ways a secret can be quoted in an error: as is, JSON-escaped, URL-encoded."""
    return [secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, safe="")]


def assert_clean(text: str, *secrets: str) -> None:
    for secret in secrets or ALL:
        for form in _forms(secret):
            assert form not in text, (form, text)
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert basic not in text, text


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    folder = Path(os.environ["PI_CODING_AGENT_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_models_json(agent: Path, base_url: str, **provider: object) -> None:
    config = {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": "$MY_KEY",
        "headers": {"X-Vault-Token": "${HDR_TOKEN}", "X-Team": TEAM},
        "models": [{"id": "tiny", "contextWindow": 8000, "maxTokens": 500}],
        **provider,
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"vault": config}}))


@pytest.fixture
def configured(agent: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A models.json provider with a password, a ?key=, $MY_KEY and two headers; auth.json too."""
    monkeypatch.setenv("MY_KEY", MY_KEY)
    monkeypatch.setenv("HDR_TOKEN", HEADER_TOKEN)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI)
    monkeypatch.setenv("HTTPS_PROXY", f"http://squid:{PROXY_PASSWORD}@proxy.lan:3128")
    write_models_json(agent, f"http://alice:{PASSWORD}@vault.lan/v1?key={QUERY_KEY}&api-version=2")
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "anthropic": {"type": "api_key", "key": AUTH_KEY},
                "openai-codex": {"type": "oauth", "access": OAUTH_ACCESS, "expires": 1},
            }
        )
    )
    return agent


# ---------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://alice:pw@host:8080/v1", "http://***:***@host:8080/v1"),
        ("https://TOKEN123@host/v1", "https://***@host/v1"),
        ("http://u:p@ss@host/v1", "http://***:***@host/v1"),  # an unencoded "@" in a password
        ("https://h/v1?key=abc&api-version=2024", "https://h/v1?key=***&api-version=2024"),
        (
            "https://h/v1?api_key=a&access_token=b&sig=c#top",
            "https://h/v1?api_key=***&access_token=***&sig=***#top",
        ),
        ("me:pw@box:11434", "***:***@box:11434"),  # OLLAMA_HOST without a scheme
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("http://host/@models?q=1", "http://host/@models?q=1"),
    ],
)
def test_display_url_masks_userinfo_and_key_like_query_values(url: str, shown: str) -> None:
    assert display_url(url) == shown


def test_urls_in_any_text_are_masked_and_other_text_is_kept() -> None:
    text = "404 at http://bob:hunter22@h/v1/x?token=abc&page=2 for bob@example.com (key=value)"
    assert mask_urls(text) == (
        "404 at http://***:***@h/v1/x?token=***&page=2 for bob@example.com (key=value)"
    )


def test_a_path_goes_before_the_query_of_a_base_url() -> None:
    assert join_url("http://h/v1?key=k", "chat/completions") == "http://h/v1/chat/completions?key=k"
    assert join_url("http://h/v1/", "/models") == "http://h/v1/models"
    assert url_secrets("http://me:p%40ss@h/v1?key=k3y") == [
        "p%40ss",
        "p@ss",
        "me",
        "me:p%40ss",
        "me:p@ss",
        "k3y",
    ]


# ---------------------------------------------------------------- what is configured


def test_every_configured_secret_is_redacted_in_every_form(configured: Path) -> None:
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    forms = [form for secret in ALL for form in _forms(secret)]
    text = " | ".join([*forms, f"Authorization: Basic {basic}", PROXY_PASSWORD, "squid"])
    out = redact_secrets(text, urls=False)
    assert_clean(out)
    assert PROXY_PASSWORD not in out and "squid" not in out
    assert out.count("***") >= len(forms)


def test_a_cut_copy_of_a_key_is_redacted_but_a_header_value_is_removed_exactly(
    configured: Path,
) -> None:
    out = redact_secrets(f"sent {MY_KEY[:12]}… and {TEAM[:6]}… and {TEAM}")
    assert MY_KEY[:12] not in out and TEAM not in out
    assert TEAM[:6] in out  # a header's start may be a common word: only the whole counts


def test_the_text_around_secrets_is_kept_and_placeholders_are_no_secrets(
    agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", MY_KEY)
    monkeypatch.setenv("TELEMETRY_TOKEN", "true")  # named like a key, holds a flag
    monkeypatch.setenv("CACHE_KEY", "model")  # too short for a key found by its name alone
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "ollama": {"baseUrl": "http://127.0.0.1:11434/v1", "apiKey": "ollama"},
                    "box": {"baseUrl": "http://box/v1", "apiKey": "local"},
                    "proxy": {"baseUrl": "http://p/v1", "apiKey": "MY_KEY"},  # Pi 0.x form
                }
            }
        )
    )
    text = f"ollama at http://127.0.0.1:11434/v1 (local): model not found (true); key {MY_KEY}"
    assert redact_secrets(text) == (
        "ollama at http://127.0.0.1:11434/v1 (local): model not found (true); key ***"
    )


def test_a_command_is_never_run_to_find_a_key(agent: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_models_json(agent, "http://box/v1", apiKey=f"!touch {marker}")
    assert redact_secrets("nothing to hide") == "nothing to hide"
    assert not marker.exists()


def test_the_configuration_is_read_again_only_when_it_changes(
    configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = configured_redactor()
    assert configured_redactor() is first  # nothing changed: the cached one
    models = configured / "models.json"
    write_models_json(configured, "http://box/v1", apiKey="sk-new-literal-key-0000")
    os.utime(models, ns=(1, 1))  # whatever the clock's resolution, the mtime moved
    second = configured_redactor()
    assert second is not first
    assert redact_secrets("sk-new-literal-key-0000") == "***"
    assert PASSWORD in redact_secrets(PASSWORD)  # that URL is no longer configured
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-changed-env-1234")
    assert configured_redactor() is not second
    assert redact_secrets("tok-changed-env-1234") == "***"


def test_redactors_never_show_their_secrets() -> None:
    scrub = connection_redactor(api_key=MY_KEY, base_url=f"http://alice:{PASSWORD}@h/v1")
    assert MY_KEY not in repr(scrub) and PASSWORD not in repr(scrub)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(scrub)
    assert not Redactor([None, "", "abc"])  # too short to redact


# ---------------------------------------------------------------- shown by the client


@pytest.fixture
def echo_server() -> Iterator[LLMServer]:
    with LLMServer(echo_request=True) as server:
        yield server


def _vault_url(server: LLMServer, wire: str) -> str:
    base = server.openai_base_url if wire == "openai" else server.anthropic_base_url
    return base.replace("http://", f"http://alice:{PASSWORD}@") + f"?key={QUERY_KEY}"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_an_echoing_server_gives_back_no_secret(
    configured: Path,
    echo_server: LLMServer,
    sleeps,
    caplog: pytest.LogCaptureFixture,
    wire: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    api = "openai-completions" if wire == "openai" else "anthropic-messages"
    write_models_json(configured, _vault_url(echo_server, wire), api=api)
    model = get_model("vault/tiny", retry=RetryPolicy(max_retries=1, sleep=sleeps), timeout=5)
    echo_server.fail(503, message=f"upstream said {MY_KEY}")
    echo_server.fail(401, message=f"bad header {HEADER_TOKEN} and team {TEAM}")
    failed = model.complete([user("hi")])
    # The request carried them all, the query in its place after the path ...
    seen = echo_server.requests[-1]
    endpoint = "/chat/completions" if wire == "openai" else "/messages"
    assert seen.path.endswith(f"{endpoint}?key={QUERY_KEY}")
    assert seen.headers["X-Vault-Token"] == HEADER_TOKEN and seen.headers["X-Team"] == TEAM
    assert seen.headers["Authorization"].startswith("Basic ")  # httpx: the URL's userinfo
    # ... and the server echoed every one back, but nothing shows them.
    assert failed["stopReason"] == "error" and "(request: POST" in failed["errorMessage"]
    assert "401" in failed["errorMessage"] and "***" in failed["errorMessage"]
    with pytest.raises(ProviderHTTPError) as info:
        echo_server.fail(400, message="once more")
        model.complete([user("hi")], raise_on_error=True)
    for text in (
        json.dumps(failed),
        str(info.value),
        repr(info.value),
        repr(model),
        repr(vars(model)),
        caplog.text,
    ):
        assert_clean(text, PASSWORD, QUERY_KEY, MY_KEY, HEADER_TOKEN, TEAM)
    assert "retrying" in caplog.text and "POST http://***:***@127.0.0.1" in caplog.text
    assert repr(model).endswith("?key=***')") and "***:***@" in repr(model)


def test_a_key_given_in_code_and_a_url_nobody_configured_are_redacted_too(
    echo_server: LLMServer, sleeps
) -> None:
    url = echo_server.openai_base_url.replace("http://", "http://carol:cpw-Zq81-code@")
    model = get_model(
        "openai/gpt-4o",
        base_url=url + "?token=tok-in-code-Rr55",
        api_key="sk-in-code-key-Mm31",
        headers={"X-Api-Key": "hdr-in-code-Pp42"},
        registry=ModelRegistry(False),
        retry=RetryPolicy(max_retries=0, sleep=sleeps),
    )
    echo_server.fail(400, message="echo")
    failed = model.complete([user("hi")])
    assert failed["stopReason"] == "error"
    for secret in ("cpw-Zq81-code", "tok-in-code-Rr55", "sk-in-code-key-Mm31", "hdr-in-code-Pp42"):
        assert secret not in json.dumps(failed) and secret not in repr(model)
    plain = redact_secrets("unrelated text with http://dave:dpw-0000@h/?sig=abcd")
    assert plain == "unrelated text with http://***:***@h/?sig=***"


def test_a_url_that_cannot_be_sent_is_an_error_message_without_its_secrets(sleeps) -> None:
    model = get_model(
        "openai/gpt-4o",
        base_url=f"http://alice:{PASSWORD}@[::1/v1?key={QUERY_KEY}",
        api_key="sk-anything-0000",
        registry=ModelRegistry(False),
        retry=RetryPolicy(max_retries=0, sleep=sleeps),
    )
    failed = model.complete([user("hi")])
    assert failed["stopReason"] == "error" and "could not be sent" in failed["errorMessage"]
    assert_clean(json.dumps(failed) + repr(model), PASSWORD, QUERY_KEY)


def test_providers_and_local_servers_show_their_address_masked(configured: Path) -> None:
    config = ModelRegistry().provider("vault")
    assert config.base_url.startswith("http://alice:")  # requests need it whole
    assert_clean(repr(config), PASSWORD, QUERY_KEY, MY_KEY, HEADER_TOKEN, TEAM)
    assert "base_url='http://***:***@vault.lan/v1?key=***&api-version=2'" in repr(config)
    server = LocalServer("ollama", f"http://alice:{PASSWORD}@h/v1?key={QUERY_KEY}", "notebook")
    for text in (str(server), repr(server)):
        assert_clean(text, PASSWORD, QUERY_KEY)
        assert "http://***:***@h/v1?key=***" in text


def test_text_from_the_users_pi_is_cleaned_with_the_environment_pi_runs_in(
    tmp_path: Path, configured: Path
) -> None:
    """The Pi engine passes the environment it starts Pi with; both stay cached."""
    elsewhere = tmp_path / "pi-agent"
    elsewhere.mkdir()
    (elsewhere / "models.json").write_text(
        json.dumps({"providers": {"box": {"baseUrl": "http://box/v1", "apiKey": "${PI_ONLY}"}}})
    )
    pi_env = {"PI_CODING_AGENT_DIR": str(elsewhere), "PI_ONLY": "sk-only-pi-knows-4Gg1"}
    said = 'Error: 401 {"error": "Incorrect API key provided: sk-only-pi-knows-4Gg1"}'
    assert redact_secrets(said, env=pi_env) == (
        'Error: 401 {"error": "Incorrect API key provided: ***"}'
    )
    assert "sk-only-pi-knows-4Gg1" in redact_secrets(said)  # not the kernel's configuration
    kernel, pi = configured_redactor(), configured_redactor(pi_env)
    assert configured_redactor() is kernel and configured_redactor(pi_env) is pi
    assert_clean(redact_secrets(f"{MY_KEY} {PASSWORD}"), MY_KEY, PASSWORD)
