"""Issue 43 as a user meets it: cells in a real IPython shell against a server that behaves as
llama-cpp-python 0.3 with ``--n_ctx 4096`` (`LLMServer.llama_cpp_python`), every request logged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.core import Session
from pinb.llm.config.discover import forget_discoveries
from pinb.llm.limits import UNREPORTED_WINDOW_OUTPUT
from pinb.notebook.live import AssistantReply
from pinb.testing import LLMServer
from pinb.testing.llm_server import ServerReply
from pinb.testing.llm_wire import prompt_tokens
from tests.shells import pi_shell

N_CTX = 4096
#: What ``%pi model --discover`` offers for SmolLM2's GGUF file: what the user types.
SPEC = "llamacpp/SmolLM2-135M-Instruct.Q4_1"


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer.llama_cpp_python(
        N_CTX, model_id="/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    ) as running:
        monkeypatch.setenv("LLAMACPP_BASE_URL", running.url)
        yield running


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    forget_discoveries()
    with pi_shell() as ip:
        yield ip
    forget_discoveries()


def _cell(shell: InteractiveShell, prompt: str) -> AssistantReply:
    with capture_output():
        reply = shell.run_cell_magic("pi", "--no-tools", prompt)
    assert isinstance(reply, AssistantReply), reply
    return reply


def test_the_first_request_fits_a_server_that_does_not_say_its_window(
    shell: InteractiveShell, server: LLMServer
) -> None:
    with capture_output() as captured:
        shell.run_line_magic("pi", f"model {SPEC}")
    line = captured.stdout.strip()
    assert "\n" not in line
    assert "window 128,000 (provider default)" in line  # nobody knows the window ...
    assert f"max out {UNREPORTED_WINDOW_OUTPUT:,}" in line  # ... so little is asked for
    assert "the server does not say its window, so replies are limited to 1,024 tokens" in line
    assert server.probes == ["/props"]  # the server the user configured, asked once, there
    server.add(ServerReply(text="Hello.", no_usage=True))
    assert _cell(shell, "hello").text == "Hello."
    body = server.requests[-1].body
    assert body["max_tokens"] == UNREPORTED_WINDOW_OUTPUT  # never 16,384 against n_ctx 4096
    assert prompt_tokens(body) + body["max_tokens"] <= N_CTX


def test_replies_are_stored_and_sent_back_as_the_server_returned_them(
    shell: InteractiveShell, server: LLMServer
) -> None:
    """The template escapes what the model is shown; pinb neither escapes nor unescapes."""
    shell.run_line_magic("pi", f"model {SPEC} --window {N_CTX}")
    replies = [f"It's <b>{turn}</b> & 'quoted' \"too\"" for turn in range(5)]
    for turn, text in enumerate(replies):
        server.add(ServerReply(text=text, no_usage=True))
        assert _cell(shell, f"question {turn} with ' & <").text == text
    last = server.requests[-1]
    sent_back = [m["content"] for m in last.body["messages"] if m["role"] == "assistant"]
    assert sent_back == replies[:-1]  # as returned, turn after turn
    user_sent = [m["content"] for m in last.body["messages"] if m["role"] == "user"]
    assert user_sent[-1] == "question 4 with ' & <"
    # The server's template showed the model one level of entities, never more.
    assert last.rendered is not None
    assert "It&#39;s &lt;b&gt;0&lt;/b&gt; &amp; &#39;quoted&#39; &#34;too&#34;" in last.rendered
    assert "&amp;#39;" not in last.rendered and "&amp;amp;" not in last.rendered
    # And the file holds what the server returned.
    path = shell.magics_manager.registry["PiMagics"].session.path
    saved = [
        block["text"]
        for entry in Session.open(path).entries
        if entry.role == "assistant"
        for block in (entry.message or {}).get("content", [])
        if block.get("type") == "text"
    ]
    assert saved == replies
    assert "&#39;" not in Path(path).read_text() and "&amp;" not in Path(path).read_text()


def test_it_reads_max_tokens_only_and_a_request_with_only_max_completion_tokens_has_no_limit(
    server: LLMServer,
) -> None:
    """What llama-cpp-python 0.3's request schema makes of Pi's field (it has no such field)."""
    import httpx

    server.writes_to_limit = True
    prompt = {"role": "user", "content": "x" * 400}  # 100 tokens by the server's count
    for field, wrote in (("max_tokens", 8), ("max_completion_tokens", N_CTX - 100)):
        body = {"model": "m", "messages": [prompt], field: 8}
        answer = httpx.post(f"{server.openai_base_url}/chat/completions", json=body, timeout=30)
        text = answer.json()["choices"][0]["message"]["content"]
        assert len(text) == wrote * 4, field  # max_completion_tokens: 8 writes to the window
    assert json.loads(json.dumps(server.requests[-1].body))["max_completion_tokens"] == 8
