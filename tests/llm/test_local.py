"""Local servers by configuration only, an explicit look around, and each kind's window."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinb.llm import ModelRegistry, get_model
from pinb.llm.config.catalog import BUILTIN_PROVIDERS
from pinb.llm.config.discover import forget_discoveries
from pinb.llm.local import configured_local_servers, discover_local_servers
from pinb.notebook.models import NoModelConfiguredError, choose_model
from pinb.testing.llm_server import LLMServer, ServerReply

_URL_VARIABLES = (
    "OLLAMA_HOST",
    "OLLAMA_BASE_URL",
    "LMSTUDIO_BASE_URL",
    "LLAMACPP_BASE_URL",
    "VLLM_BASE_URL",
)


@pytest.fixture(autouse=True)
def _nothing_configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in _URL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    forget_discoveries()
    yield
    forget_discoveries()


@pytest.fixture()
def agent_dir() -> Path:
    folder = Path(os.environ["PI_CODING_AGENT_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture()
def default_port_servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, LLMServer]]:
    """A server at each local provider's built-in address, as if it listened on 8080 ..."""
    kinds = {"ollama": "ollama", "lmstudio": "lmstudio", "llamacpp": "llamacpp", "vllm": "vllm"}
    servers = {
        p: LLMServer(context_window=4096, window_endpoint=k).start() for p, k in kinds.items()
    }
    try:
        for provider, server in servers.items():
            moved = dataclasses.replace(
                BUILTIN_PROVIDERS[provider], base_url=server.openai_base_url
            )
            monkeypatch.setitem(BUILTIN_PROVIDERS, provider, moved)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def _seen(servers: dict[str, LLMServer]) -> int:
    return sum(len(s.probes) + len(s.requests) for s in servers.values())


def test_with_nothing_configured_no_request_reaches_a_local_port(default_port_servers) -> None:
    assert configured_local_servers() == []
    with pytest.raises(NoModelConfiguredError, match="--discover"):
        choose_model(None)
    assert _seen(default_port_servers) == 0  # the old probe asked all four ports


def test_a_configured_address_is_the_only_one_asked(default_port_servers, monkeypatch) -> None:
    other = default_port_servers["vllm"]
    monkeypatch.setenv("VLLM_BASE_URL", other.url)
    assert [(p, s) for p, _, s in configured_local_servers()] == [("vllm", "VLLM_BASE_URL")]
    model = choose_model(None)
    assert model.info.spec == "vllm/loopback-135M.Q4_1"
    assert model.info.window_source == "server: /v1/models max_model_len"
    untouched = {k: v for k, v in default_port_servers.items() if k != "vllm"}
    assert _seen(untouched) == 0


def test_a_models_json_provider_counts_as_configured(default_port_servers, agent_dir: Path) -> None:
    server = default_port_servers["lmstudio"]
    (agent_dir / "models.json").write_text(
        json.dumps({"providers": {"lmstudio": {"baseUrl": server.openai_base_url}}})
    )
    found = configured_local_servers(registry=ModelRegistry())
    assert found == [("lmstudio", server.openai_base_url, "models.json")]


def test_discovery_lists_what_answers_and_picks_nothing(default_port_servers) -> None:
    default_port_servers["vllm"].stop()  # one port with nothing behind it
    found = discover_local_servers(timeout=1.0)
    assert [s.provider for s in found] == ["ollama", "lmstudio", "llamacpp"]
    assert {s.source for s in found} == {"default port"}
    windows = {s.provider: s.window for s in found}
    assert windows == {
        "ollama": "4,096 (/api/show num_ctx)",
        "lmstudio": "4,096 (/api/v0/models loaded_context_length)",
        "llamacpp": "4,096 (/props n_ctx)",
    }
    assert found[0].spec == "ollama/loopback-135M.Q4_1"
    with pytest.raises(NoModelConfiguredError):  # a look around chooses nothing
        choose_model(None)


def test_one_server_is_listed_once_under_the_name_it_was_configured_with(
    default_port_servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama-cpp-python on 8000: LLAMACPP_BASE_URL and vLLM's usual port are one server."""
    default_port_servers["llamacpp"].stop()
    on_vllms_port = default_port_servers["vllm"]
    monkeypatch.setenv("LLAMACPP_BASE_URL", on_vllms_port.url.replace("127.0.0.1", "localhost"))
    found = discover_local_servers(timeout=1.0)
    assert [s.provider for s in found] == ["ollama", "lmstudio", "llamacpp"]
    assert found[-1].source == "LLAMACPP_BASE_URL"


@pytest.mark.parametrize(
    ("kind", "spec", "source"),
    [
        ("llamacpp", "llamacpp/smol", "server: /props n_ctx"),
        ("ollama", "ollama/qwen3:0.6b", "server: /api/show num_ctx"),
        ("lmstudio", "lmstudio/qwen", "server: /api/v0/models loaded_context_length"),
        ("vllm", "vllm/qwen", "server: /v1/models max_model_len"),
    ],
)
def test_each_kind_reports_its_window_with_the_source(kind: str, spec: str, source: str) -> None:
    with LLMServer(context_window=4096, window_endpoint=kind) as server:
        model = get_model(spec, base_url=server.url, registry=ModelRegistry(False))
    assert (model.info.context_window, model.info.window_source) == (4096, source)
    assert model.info.window_origin == source  # what labels show


def test_llama_cpp_python_reports_no_window_and_keeps_the_default() -> None:
    with LLMServer(context_window=4096, window_endpoint="llama-cpp-python") as server:
        model = get_model("llamacpp/smol", base_url=server.url, registry=ModelRegistry(False))
        asked = list(server.probes)
    assert model.info.context_window == 128_000 and model.info.window_origin == "provider default"
    # 404, and no /v1/models: llama-cpp-python would end another kernel's running reply
    assert asked == ["/props"]


def test_models_json_and_the_setting_win_over_discovery(agent_dir: Path) -> None:
    with LLMServer(context_window=4096, window_endpoint="llamacpp") as server:
        (agent_dir / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "llamacpp": {
                            "baseUrl": server.openai_base_url,
                            "models": [{"id": "smol", "contextWindow": 8192, "maxTokens": 512}],
                        }
                    }
                }
            )
        )
        listed = get_model("llamacpp/smol", registry=ModelRegistry())
        set_here = get_model(
            "llamacpp/other",
            base_url=server.url,
            context_window=2048,
            registry=ModelRegistry(False),
        )
        assert server.probes == []
    assert listed.info.context_window == 8192 and listed.info.window_origin == "models.json"
    assert (set_here.info.context_window, set_here.info.window_origin) == (2048, "setting")


def test_llama_cpp_python_refusing_required_tool_choice_gets_a_hint_not_retries() -> None:
    from pinb.llm import RetryPolicy

    from .helpers import arun, user

    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    with LLMServer(window_endpoint="llama-cpp-python") as server:
        model = get_model(
            "llamacpp/smol",
            base_url=server.url,
            registry=ModelRegistry(False),
            retry=RetryPolicy(sleep=sleep),
        )
        tools = [{"name": "read", "description": "Read a file.", "parameters": {"type": "object"}}]
        message = arun(model.acomplete([user("read a.txt")], tools=tools, tool_choice="required"))
        assert len(server.requests) == 1 and delays == []  # not sent again 3 times
        server.reply("", tool_calls=[("read", {"path": "a.txt"})])
        named = arun(model.acomplete([user("read a.txt")], tools=tools, tool_choice="read"))
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("500 (the server failed on tool_choice")
    assert "--tool-choice read" in message["errorMessage"]
    assert "chatml-function-calling" in message["errorMessage"]
    assert named["stopReason"] == "toolUse"  # naming the tool works


def test_llama_cpp_python_ends_a_stream_for_any_v1_request_and_window_discovery_sends_none() -> (
    None
):
    import threading
    import time

    from pinb.llm import RetryPolicy
    from pinb.llm.local import list_models

    from .helpers import arun, user

    full = "word " * 40

    def stream_while(server: LLMServer, meanwhile) -> dict:
        model = get_model(
            "llamacpp/smol",
            base_url=server.url,
            registry=ModelRegistry(False),
            discover=False,
            retry=RetryPolicy(max_retries=0),
        )
        server.add(ServerReply(text=full, chunk_size=5, chunk_delay=0.03))
        box: list[dict] = []
        worker = threading.Thread(target=lambda: box.append(arun(model.acomplete([user("go")]))))
        seen = len(server.requests)
        worker.start()
        while len(server.requests) == seen:
            time.sleep(0.01)
        time.sleep(0.1)
        meanwhile()
        worker.join(15)
        return box[0]

    with LLMServer(window_endpoint="llama-cpp-python", interrupt_requests=True) as server:
        # the mode is real: another client's GET /v1/models cuts the reply, ending it as "stop"
        cut = stream_while(server, lambda: list_models(server.openai_base_url, timeout=2))
        # another kernel choosing the same model asks its window at /props only
        forget_discoveries()
        whole = stream_while(
            server,
            lambda: get_model("llamacpp/smol", base_url=server.url, registry=ModelRegistry(False)),
        )
    assert cut["stopReason"] == "stop" and 0 < len(cut["content"][0]["text"]) < len(full)
    assert whole["stopReason"] == "stop" and whole["content"][0]["text"] == full
