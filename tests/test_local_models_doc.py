"""docs/local-models.md step by step: each server's section against the loopback server in its mode.

The shell steps of a section (``export X_BASE_URL=...``) and its notebook steps (``%pi``
lines) are read from the document itself, the address moved to the loopback server's,
and run in a real IPython shell; then each server's quirk is checked the way the section
says it behaves.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.agent.pi.limits import PI_CONTEXT_MARGIN, pi_output_limit
from pinb.llm.config.catalog import BUILTIN_PROVIDERS
from pinb.llm.config.discover import forget_discoveries
from pinb.llm.limits import UNREPORTED_WINDOW_OUTPUT
from pinb.notebook.live import AssistantReply, RunFailedError
from pinb.testing.llm_server import LLMServer, ServerReply, ToolCallScript
from pinb.testing.llm_wire import prompt_tokens
from tests.shells import pi_shell

DOC = Path(__file__).resolve().parents[1] / "docs" / "local-models.md"
_VARIABLES = (
    "OLLAMA_HOST",
    "OLLAMA_BASE_URL",
    "LMSTUDIO_BASE_URL",
    "LLAMACPP_BASE_URL",
    "VLLM_BASE_URL",
)


def _sections() -> dict[str, str]:
    text = DOC.read_text()
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _blocks(section: str, language: str) -> list[str]:
    """The fenced blocks of ``section`` in ``language`` ("" for plain ones), in order."""
    found = re.findall(r"^ *```(\w*)\n(.*?)^ *```$", section, flags=re.MULTILINE | re.DOTALL)
    return [body for lang, body in found if lang == language]


def _steps(title: str) -> tuple[dict[str, str], list[str]]:
    section = _sections()[title]
    exports = dict(re.findall(r"^export (\w+)=(\S+)", _blocks(section, "bash")[0], re.MULTILINE))
    magics = [line for line in _blocks(section, "")[0].splitlines() if line.startswith("%")]
    return exports, magics


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    forget_discoveries()
    with pi_shell() as ip:
        yield ip
    forget_discoveries()


def _follow(shell, monkeypatch, title: str, server: LLMServer) -> str:
    """Run a section's steps with its address moved to ``server``; what they printed."""
    exports, magics = _steps(title)
    assert exports and magics, f"section {title!r} lost its steps"
    for name, url in exports.items():
        monkeypatch.setenv(name, re.sub(r"^http://[^/]+", server.url, url))
    with capture_output() as captured:
        for line in magics:
            name, _, rest = line.lstrip("%").partition(" ")
            shell.run_line_magic(name, rest)
    return captured.stdout


def _a_cell_fits(shell, server: LLMServer, window: int) -> None:
    server.add(ServerReply(text="Two files.", no_usage=True))
    with capture_output():
        reply = shell.run_cell_magic("pi", "--no-tools", "what is here?")
    assert isinstance(reply, AssistantReply) and reply.text == "Two files."
    body = server.requests[-1].body
    assert prompt_tokens(body) + body["max_tokens"] <= window


@pytest.mark.parametrize(
    ("title", "mode", "source"),
    [
        ("llama-server (llama.cpp)", "llamacpp", "/props n_ctx"),
        ("Ollama", "ollama", "/api/show num_ctx"),
        ("LM Studio", "lmstudio", "/api/v0/models loaded_context_length"),
        ("vLLM", "vllm", "/v1/models max_model_len"),
    ],
)
def test_a_server_that_tells_its_window(shell, monkeypatch, title, mode, source) -> None:
    with LLMServer(context_window=4096, window_endpoint=mode) as server:
        printed = _follow(shell, monkeypatch, title, server)
        assert f"window 4,096 (server: {source})" in printed, printed
        _a_cell_fits(shell, server, 4096)


def test_llama_cpp_python_step_by_step(shell, monkeypatch, isolated_agent_dir: Path) -> None:
    title = "llama-cpp-python"
    section = _sections()[title]
    assert "--interrupt_requests False" in section and "chatml-function-calling" in section
    with LLMServer(context_window=4096, window_endpoint=title, overflow_style="drop") as server:
        printed = _follow(shell, monkeypatch, title, server)
        assert "window 128,000 (provider default)" in printed  # it does not say
        # ... so replies are asked small, as the section says, in pinb's one number for it
        assert f"replies are limited to {UNREPORTED_WINDOW_OUTPUT:,} tokens" in printed
        assert f"at most {UNREPORTED_WINDOW_OUTPUT:,} tokens" in section
        assert server.probes == ["/props"]  # and /v1/models is not asked
        # tool choice: "required" is refused with an empty 500, and the error says what works
        with pytest.raises(RunFailedError) as info, capture_output():
            shell.run_cell_magic("pi", "--tool-choice required", "read a.txt")
        assert len(server.requests) == 1
        assert "--tool-choice read" in str(info.value)
        Path("a.txt").write_text("hello")
        server.reply("", tool_calls=[ToolCallScript("read", {"path": "a.txt"})])
        server.reply("It says hello.")
        with capture_output():
            reply = shell.run_cell_magic("pi", "--tool-choice read", "read a.txt")
        assert isinstance(reply, AssistantReply) and reply.text == "It says hello."
        # the window in models.json, as the section shows it
        snippet = json.loads(_blocks(section, "json")[0].replace("\n  ", " "))
        provider = snippet["providers"]["llamacpp"]
        provider["baseUrl"] = server.openai_base_url
        (isolated_agent_dir / "models.json").write_text(json.dumps(snippet))
        monkeypatch.delenv("LLAMACPP_BASE_URL")
        with capture_output() as captured:
            shell.run_line_magic("pi", "model llamacpp/smollm2")
        assert "window 4,096 (models.json)" in captured.stdout
        _a_cell_fits(shell, server, 4096)


def test_discover_asks_the_usual_ports_and_chooses_nothing(shell, monkeypatch) -> None:
    with socket.socket() as probe:  # a port with nothing behind it
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    for name in ("ollama", "lmstudio", "llamacpp", "vllm"):
        moved = dataclasses.replace(BUILTIN_PROVIDERS[name], base_url=dead)
        monkeypatch.setitem(BUILTIN_PROVIDERS, name, moved)
    line = _blocks(DOC.read_text().split("\n## ", 1)[0], "")[0].strip()  # the introduction's
    assert line == "%pi model --discover"
    with capture_output() as captured:
        shell.run_line_magic("pi", line.lstrip("%").partition(" ")[2])
    assert "No local server answered on the usual ports" in captured.stdout
    assert shell.magics_manager.registry["PiMagics"]._model is None


def test_your_own_pi_on_the_same_model_step_by_step(shell, monkeypatch, pi_loop) -> None:
    """The section's steps with the real Pi 1.6.0: one models.json, Pi's settings fitted."""
    section = _sections()["Your own Pi on the same model"]
    server = pi_loop.server
    exports, magics = _steps("Your own Pi on the same model")
    for name, url in exports.items():
        monkeypatch.setenv(name, re.sub(r"^http://[^/]+", server.url, url))
    with capture_output() as captured:
        for line in magics:
            name, _, rest = (
                line.replace("http://127.0.0.1:8000", server.url).lstrip("%").partition(" ")
            )
            shell.run_line_magic(name, rest)
    assert "Pi compacts above 6,144 tokens and keeps 2,048" in captured.stdout
    # Pi's floor as the section states it is the rule pinb restates from Pi's code
    assert f"keeps {PI_CONTEXT_MARGIN:,} tokens free" in section
    assert pi_output_limit(4096, 1500, 16_384) == 1 and "`max_completion_tokens: 1`" in section
    assert pi_output_limit(8192, 1500, 2048) == 2048
    assert '"reserveTokens": 2048, "keepRecentTokens": 2048' in section
    settings = json.loads((pi_loop.agent_dir / "settings.json").read_text())
    assert settings["compaction"]["modelOverrides"]["llamacpp/smollm2"] == {
        "reserveTokens": 2048, "keepRecentTokens": 2048,
    }  # fmt: skip
    for engine in ("pi", "pinb"):
        server.add(ServerReply(text=f"Hello from {engine}.", no_usage=True))
        with capture_output() as captured:
            reply = shell.run_cell_magic(
                "pi", f"--engine {engine} --model llamacpp/smollm2", "hello"
            )
        assert isinstance(reply, AssistantReply) and reply.text == f"Hello from {engine}."
        said = captured.stdout + reply._repr_mimebundle_()["text/plain"]
        assert "do not fit" not in said
        if engine == "pi":
            assert "compacts above 6,144" in said  # Pi's own threshold, as the section says
        assert server.requests[-1].body["model"] == "smollm2"
        assert server.requests[-1].path == "/v1/chat/completions"  # both at the same URL
    shell.magics_manager.registry["PiMagics"].pi_engine.close()
