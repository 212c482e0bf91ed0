"""Model registry, Pi's models.json, credentials and base URLs."""

from __future__ import annotations

import json

import pytest

from pinb.errors import PinbError
from pinb.llm import (
    AnthropicChatModel,
    MissingCredentialsError,
    ModelCost,
    ModelInfo,
    ModelRegistry,
    OpenAIChatModel,
    UnknownProviderError,
    UnsupportedApiError,
    get_model,
    resolve_model,
    split_spec,
)


@pytest.fixture
def agent(tmp_path):
    path = tmp_path / "agent"
    path.mkdir()
    return path


def test_split_spec():
    assert split_spec("openai/gpt-4o") == ("openai", "gpt-4o")
    assert split_spec("openrouter/anthropic/claude-sonnet-4.5") == (
        "openrouter",
        "anthropic/claude-sonnet-4.5",
    )
    assert split_spec("gpt-4o") == ("", "gpt-4o")


def test_known_model_info():
    info = ModelRegistry(False).info("anthropic/claude-sonnet-4-5")
    assert info.known and info.reasoning and info.api == "anthropic-messages"
    assert (info.context_window, info.max_tokens) == (200_000, 64_000)
    assert info.cost == ModelCost(3.0, 15.0, 0.3, 3.75)
    assert info.spec == "anthropic/claude-sonnet-4-5" and info.supports_images


def test_unknown_id_gets_conservative_defaults():
    info = ModelRegistry(False).info("ollama/qwen3:8b")
    assert not info.known and not info.reasoning
    assert (info.context_window, info.max_tokens) == (128_000, 16_384)
    assert info.cost == ModelCost() and info.input == ("text",)


def test_bare_known_id_and_errors():
    reg = ModelRegistry(False)
    assert reg.info("gpt-4o").provider == "openai"
    with pytest.raises(UnknownProviderError, match="Known providers"):
        reg.info("nosuch/model")
    with pytest.raises(UnknownProviderError, match="provider/model-id"):
        reg.info("mystery-model")
    assert isinstance(UnknownProviderError("x"), PinbError | ValueError)


def test_user_overrides_and_registration():
    reg = ModelRegistry(False)
    info = reg.override("openai/gpt-4o", context_window=64_000, cost={"input": 1.0})
    assert info.context_window == 64_000 and info.cost.input == 1.0 and info.cost.output == 10.0
    reg.register_model(
        ModelInfo("vllm", "my-model", "openai-completions", 32_768, 4096, reasoning=True)
    )
    assert reg.info("vllm/my-model").reasoning
    assert [m.id for m in reg.models("vllm")] == ["my-model"]
    with pytest.raises(TypeError):
        reg.override("openai/gpt-4o", window=1)


def test_pi_models_json(agent, monkeypatch, caplog):
    monkeypatch.setenv("MY_VLLM_KEY", "vllm-secret-key")
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "my-vllm": {
                        "baseUrl": "http://10.0.0.5:8000/v1",
                        "api": "openai-completions",
                        "apiKey": "MY_VLLM_KEY",
                        "models": [
                            {
                                "id": "qwen3-coder",
                                "contextWindow": 65536,
                                "maxTokens": 8192,
                                "reasoning": True,
                                "cost": {
                                    "input": 0.1,
                                    "output": 0.2,
                                    "cacheRead": 0,
                                    "cacheWrite": 0,
                                },
                            }
                        ],
                    },
                    "anthropic": {
                        "baseUrl": "https://proxy.example/anthropic",
                        "modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 1000000}},
                    },
                    "broken": {"models": [{"id": "x"}]},
                    "badmodel": {
                        "baseUrl": "http://h/v1",
                        "api": "openai-completions",
                        "models": [{"name": "no id"}],
                    },
                }
            }
        )
    )
    reg = ModelRegistry()
    info = reg.info("my-vllm/qwen3-coder")
    assert (info.context_window, info.max_tokens, info.reasoning) == (65536, 8192, True)
    assert info.cost == ModelCost(0.1, 0.2, 0.0, 0.0)
    assert reg.info("anthropic/claude-sonnet-4-5").context_window == 1_000_000
    assert reg.info("my-vllm/any-other-id").known is False  # any id accepted
    assert len(reg.problems) == 2 and any("broken" in p for p in reg.problems)
    model = resolve_model("my-vllm/qwen3-coder", registry=reg)
    assert isinstance(model, OpenAIChatModel) and model.base_url == "http://10.0.0.5:8000/v1"
    assert model._headers()["authorization"] == "Bearer vllm-secret-key"
    ant = resolve_model("anthropic/claude-sonnet-4-5", registry=reg, api_key="k" * 10)
    assert isinstance(ant, AnthropicChatModel) and ant.base_url == "https://proxy.example/anthropic"


def test_models_json_is_reread_when_it_changes(agent):
    path = agent / "models.json"
    reg = ModelRegistry()
    with pytest.raises(UnknownProviderError):
        reg.info("late/x")
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "late": {
                        "baseUrl": "http://h/v1",
                        "api": "openai-completions",
                        "apiKey": "literal-key",
                        "models": [{"id": "x"}],
                    }
                }
            }
        )
    )
    assert reg.info("late/x").known


def test_invalid_models_json_is_reported_not_fatal(agent, caplog):
    (agent / "models.json").write_text("{not json")
    reg = ModelRegistry()
    assert reg.info("openai/gpt-4o").known
    assert reg.problems and "cannot be read as JSON" in reg.problems[0]
    assert "models.json" in caplog.text


def test_unsupported_api(agent):
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "g": {
                        "baseUrl": "http://h",
                        "api": "google-generative-ai",
                        "apiKey": "k",
                        "models": [{"id": "gem"}],
                    }
                }
            }
        )
    )
    with pytest.raises(UnsupportedApiError, match="google-generative-ai"):
        resolve_model("g/gem")


def test_missing_key_names_the_variable():
    with pytest.raises(MissingCredentialsError) as info:
        get_model("anthropic/claude-sonnet-4-5")
    text = str(info.value)
    assert "ANTHROPIC_API_KEY" in text and "\n" not in text and "auth.json" in text
    assert info.value.env_var == "ANTHROPIC_API_KEY" and info.value.provider == "anthropic"
    assert info.value._render_traceback_() == [f"MissingCredentialsError: {text}"]


def test_key_sources_in_pi_order(agent, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env-1234")
    assert get_model("openai/gpt-4o")._api_key.reveal() == "from-env-1234"
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "openai": {"type": "api_key", "key": "from-auth-json"},
                "anthropic": {"type": "oauth", "access": "x", "refresh": "y"},
            }
        )
    )
    assert get_model("openai/gpt-4o")._api_key.reveal() == "from-auth-json"
    assert get_model("openai/gpt-4o", api_key="explicit-key")._api_key.reveal() == "explicit-key"
    with pytest.raises(MissingCredentialsError):  # OAuth entries are not used
        get_model("anthropic/claude-sonnet-4-5")


def test_local_providers_need_no_key():
    for spec, url in (
        ("ollama/llama3.2", "http://127.0.0.1:11434/v1"),
        ("lmstudio/x", "http://127.0.0.1:1234/v1"),
        ("llamacpp/x", "http://127.0.0.1:8080/v1"),
        ("vllm/x", "http://127.0.0.1:8000/v1"),
    ):
        model = get_model(spec)
        assert model.base_url == url and "authorization" not in model._headers()


def test_base_url_from_sdk_variables(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway.local/v1/")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gateway.local/anthropic")
    assert get_model("openai/gpt-4o", api_key="k" * 8).base_url == "http://gateway.local/v1"
    ant = get_model("anthropic/claude-haiku-4-5", api_key="k" * 8)
    assert ant._url() == "http://gateway.local/anthropic/v1/messages"
    assert (
        get_model("openai/gpt-4o", api_key="k" * 8, base_url="http://other/v1").base_url
        == "http://other/v1"
    )


def test_per_object_overrides():
    model = get_model(
        "openai/gpt-4o",
        api_key="k" * 8,
        context_window=1000,
        reasoning=True,
        cost={"input": 1, "output": 2},
    )
    assert model.info.context_window == 1000 and model.info.reasoning
    assert model.info.cost == ModelCost(1, 2, 0, 0)


def test_model_info_without_provider_needs_base_url():
    info = ModelInfo("mylab", "m1", "openai-completions")
    with pytest.raises(UnknownProviderError):
        resolve_model(info, registry=ModelRegistry(False))
    model = resolve_model(info, base_url="http://lab:9000/v1", registry=ModelRegistry(False))
    assert model.info is info and model._url() == "http://lab:9000/v1/chat/completions"


def test_dated_snapshot_inherits_its_family():
    reg = ModelRegistry(False)
    info = reg.info("openai/gpt-4o-2024-08-06")
    assert info.known and info.id == "gpt-4o-2024-08-06" and info.cost.input == 2.5
    assert reg.info("anthropic/claude-haiku-4-5-latest").reasoning
    assert not reg.info("openai/o3-pro").known  # not a snapshot: defaults, no guessed prices
