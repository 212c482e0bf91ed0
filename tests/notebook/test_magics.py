"""%%pi and %pi end to end: a real IPython shell, the loopback LLM server, real session files."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pinb.core import Session
from pinb.errors import EntryNotFoundError
from pinb.notebook import PiMagics
from pinb.notebook.live import AssistantReply
from pinb.testing import LLMServer
from tests.shells import pi_shell

KEY = "sk-test-key-that-must-never-leak-0123456789"


@pytest.fixture()
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    with pi_shell() as ip:
        yield ip


@pytest.fixture()
def server(isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """A loopback server configured as Pi's models.json provider 'loop' (small window)."""
    with LLMServer() as srv:
        monkeypatch.setenv("LOOP_KEY", KEY)
        (isolated_agent_dir / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "loop": {
                            "baseUrl": srv.openai_base_url,
                            "api": "openai-completions",
                            "apiKey": "LOOP_KEY",
                            "models": [{"id": "tiny", "contextWindow": 4000, "maxTokens": 1000}],
                        }
                    }
                }
            )
        )
        yield srv


def _magics(ip: InteractiveShell) -> PiMagics:
    return ip.magics_manager.registry["PiMagics"]  # type: ignore[no-any-return]


def _session_file(ip: InteractiveShell) -> Path:
    session = _magics(ip).session
    assert session is not None and session.path is not None
    return session.path


def test_a_cell_edits_a_file_through_tools(
    shell: InteractiveShell, server: LLMServer, tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text("print('helo')\n")
    server.reply(
        "Fixing the typo.",
        tool_calls=[("edit", {"path": "app.py", "oldText": "helo", "newText": "hello"})],
    )
    server.reply("Done: **fixed** the greeting in `app.py`.", usage={"input": 300, "output": 20})
    shell.user_ns["target"] = "app.py"
    with capture_output() as captured:
        reply = shell.run_cell_magic("pi", "--model loop/tiny", "Fix the typo in {target}")
    assert (tmp_path / "app.py").read_text() == "print('hello')\n"
    assert isinstance(reply, AssistantReply) and "fixed" in reply.text
    bundle = reply._repr_mimebundle_()
    assert "<strong>fixed</strong>" in bundle["text/html"]
    # The footer says what the run was billed and, apart, how full the context is now:
    # Pi's measure (the last reported usage), the same figure %pi context shows.
    plain = bundle["text/plain"]
    assert f"this run (2 requests): input {int(reply.end.usage['input']):,}" in plain
    assert reply.end.usage["input"] >= 300
    assert reply.context is not None and reply.context.measure == "usage+estimate"
    assert reply.context.tokens == reply.end.messages[-1]["usage"]["totalTokens"]
    assert f"context now: {reply.context.describe()}" in plain
    assert "of a 4,000 window" in plain
    assert server.requests[0].body["messages"][-1]["content"] == "Fix the typo in app.py"
    shown = " ".join(str(o.data) for o in captured.outputs)
    assert "edit" in shown and "Successfully replaced text in app.py" in shown
    # The file is a Pi session in Pi's folder for the cwd, and reads back as expected.
    path = _session_file(shell)
    assert path.parent.name == "--" + str(tmp_path).lstrip("/").replace("/", "-") + "--"
    session = Session.open(path)
    assert session.problems == []
    roles = [m["role"] for m in session.build_context().messages]
    assert roles == ["system", "user", "assistant", "toolResult", "assistant"]
    assert [e.type for e in session.entries][:2] == ["model_change", "thinking_level_change"]
    assert KEY not in path.read_text() and KEY not in shown and KEY not in str(bundle)


def test_auto_compaction_at_a_small_window(shell: InteractiveShell, server: LLMServer) -> None:
    for i in range(3):
        server.reply(f"answer {i} " + "w" * 1500, usage={"input": 900 * (i + 1), "output": 400})
    server.reply("## Goal\nthe summary")  # written after the third cell passed the threshold
    server.reply("answer 3", usage={"input": 900, "output": 4})
    for i in range(4):
        reply = shell.run_cell_magic(
            "pi", "--model loop/tiny --no-tools", f"question {i} " + "q" * 600
        )
        assert isinstance(reply, AssistantReply) and reply.text.startswith(f"answer {i}")
    session = Session.open(_session_file(shell))
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert compactions, "the context passed the threshold of the 4000-token window"
    summary_requests = [r for r in server.requests if "<conversation>" in json.dumps(r.body)]
    assert summary_requests  # the summary was written by the model through the server
    # Pi 1.x: the prompt's checkpoint, then the summary
    assert [m["role"] for m in session.build_context().messages][:2] == [
        "system",
        "compactionSummary",
    ]


def test_overflow_error_compacts_and_retries(shell: InteractiveShell, server: LLMServer) -> None:
    server.reply("first " + "a" * 3000)
    server.reply("second " + "b" * 3000)
    shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "one " + "x" * 2000)
    shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "two " + "y" * 2000)
    server.overflow()
    server.reply("## Goal\nsummary of the talk")  # the compaction summary
    server.reply("retried answer")
    reply = shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "three")
    assert isinstance(reply, AssistantReply) and reply.text == "retried answer"
    entries = Session.open(_session_file(shell)).path_to()
    tail = [
        e.type if e.type != "message" else e.message.get("stopReason", e.role) for e in entries
    ][-5:]  # type: ignore[union-attr]
    assert tail == ["user", "error", "context_edit", "compaction", "stop"]


def test_interrupt_mid_stream_saves_an_aborted_reply(
    shell: InteractiveShell, server: LLMServer
) -> None:
    server.reply("slow " * 200, chunk_delay=0.02)

    def interrupt_mid_stream() -> None:  # once the reply streams, however loaded the machine
        deadline = time.monotonic() + 20
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_mid_stream, daemon=True).start()
    with capture_output() as captured:
        result = shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "talk slowly")
    assert result is None and "interrupted" in captured.stdout
    session = Session.open(_session_file(shell))
    last = session.entries[-1].message
    assert last is not None and last["stopReason"] == "aborted" and last["content"]
    server.reply("still works")
    reply = shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "next")
    assert isinstance(reply, AssistantReply) and reply.text == "still works"


def test_goto_with_summary_then_a_new_prompt(shell: InteractiveShell, server: LLMServer) -> None:
    server.reply("Plan A it is.")
    server.reply("Plan A failed.")
    shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "Try plan A")
    shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "And then?")
    session = _magics(shell).current_session()
    first_reply = next(e for e in session.entries if e.role == "assistant")
    server.reply("Abandoned plan A: it failed.")  # the branch summary
    with capture_output() as captured:
        shell.run_line_magic("pi", f"goto {first_reply.id} --summarize focus on failures")
    assert "branch summary" in captured.stdout
    assert "Additional focus: focus on failures" in json.dumps(server.requests[-1].body)
    server.reply("Plan B then.")
    shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "Try plan B")
    reopened = Session.open(_session_file(shell))
    roles = [m["role"] for m in reopened.build_context().messages]
    assert roles == ["system", "user", "assistant", "branchSummary", "user", "assistant"]


def test_offline_demo_model_needs_no_provider(shell: InteractiveShell, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\nremember the milk\n")
    with capture_output():
        reply = shell.run_cell_magic("pi", "--model offline", "What is in notes.md?")
    assert isinstance(reply, AssistantReply)
    # It read the file (the cell showed the tool's output) and says so without repeating it.
    assert reply.text.startswith("[offline demo model") and "The file has 2 line(s)" in reply.text
    assert "remember the milk" not in reply.text
    results = [e for e in _magics(shell).current_session().entries if e.role == "toolResult"]
    assert len(results) == 1 and "remember the milk" in str(results[0].message)


def test_without_any_provider_the_error_says_how_to_configure(shell: InteractiveShell) -> None:
    with pytest.raises(Exception) as info:
        shell.run_cell_magic("pi", "", "hello")
    assert "ANTHROPIC_API_KEY" in str(info.value) and "--model offline" in str(info.value)
    assert info.value._render_traceback_() == [f"NoModelConfiguredError: {info.value}"]  # type: ignore[attr-defined]


def test_missing_key_names_the_variable(shell: InteractiveShell) -> None:
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        shell.run_cell_magic("pi", "--model openai/gpt-4o", "hello")


def test_session_commands(
    shell: InteractiveShell, tmp_path: Path, isolated_agent_dir: Path
) -> None:
    (isolated_agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 10}})
    )
    with capture_output():
        shell.run_cell_magic("pi", "--model offline --no-tools", "first question")
        shell.run_cell_magic("pi", "--model offline --no-tools", "second question")
    session = _magics(shell).current_session()
    tree = shell.run_line_magic("pi", "tree")
    assert sorted(tree._repr_mimebundle_()) == ["image/svg+xml", "text/plain"]  # a picture
    assert (
        "first question" in shell.run_line_magic("pi", "context")._repr_mimebundle_()["text/html"]
    )
    assert shell.run_line_magic("pi", "tokens")._repr_mimebundle_()["text/plain"]
    first_user = next(e for e in session.entries if e.role == "user")
    shell.run_line_magic("pi", f"label {first_user.id} start")
    assert session.label(first_user.id) == "start"
    shell.run_line_magic("pi", "name My notebook chat")
    assert session.name == "My notebook chat"
    with pytest.raises(Exception, match="did you mean"):
        shell.run_line_magic("pi", f"goto {first_user.id[:-1]}x")
    view = shell.run_line_magic("pi", "compact --offline")
    assert "Extractive summary" in view._repr_mimebundle_()["text/html"]
    assert session.entries[-1].type == "compaction"
    with capture_output() as captured:
        shell.run_line_magic("pi", "fork")
    assert "cloned the branch" in captured.stdout and _magics(shell).session is not session
    with capture_output() as captured:
        shell.run_line_magic("pi", "tools -bash +python")
    assert "python" in captured.stdout and "bash" not in captured.stdout.split("tools:")[1]
    shell.run_line_magic("pi", "thinking high")
    assert _magics(shell).thinking == "high"
    target = tmp_path / "out.md"
    with capture_output():
        shell.run_line_magic("pi", f"export md {target}")
    assert "first question" in target.read_text()
    with pytest.raises(Exception, match="unknown command"):
        shell.run_line_magic("pi", "frobnicate")
    with capture_output() as captured:
        shell.run_line_magic("pi", "help")
    assert "%pi goto" in captured.stdout


def test_python_tool_runs_in_the_kernel(shell: InteractiveShell, server: LLMServer) -> None:
    shell.user_ns["numbers"] = [1, 2, 3]
    shell.run_line_magic("pi", "tools +python")
    server.reply("", tool_calls=[("python", {"code": "total = sum(numbers)\ntotal * 10"})])
    server.reply("The total times ten is 60.")
    shell.run_cell_magic("pi", "--model loop/tiny", "compute")
    assert shell.user_ns["total"] == 6
    result = next(e for e in Session.open(_session_file(shell)).entries if e.role == "toolResult")
    assert result.message["content"][0]["text"] == "60"  # type: ignore[index]


def test_config_traitlets(shell: InteractiveShell) -> None:
    shell.run_line_magic("config", "PiMagics.model = 'offline'")
    with capture_output():
        reply = shell.run_cell_magic("pi", "--no-tools", "hi")
    assert isinstance(reply, AssistantReply) and reply.message["provider"] == "pinb"  # type: ignore[index]


def test_interpolation_of_dataframes(shell: InteractiveShell) -> None:
    import pandas as pd

    from pinb.notebook.interpolate import interpolate

    frame = pd.DataFrame({"a": range(100), "b": ["x"] * 100})
    text = interpolate("Look at {df} and {missing} and {{literal}} and {df.shape}", {"df": frame})
    assert "DataFrame (100×2)" in text and "{missing}" in text and "{literal}" in text
    assert "(100, 2)" in text and len(text) < 4000


def test_memory_commands(shell: InteractiveShell, tmp_path: Path) -> None:
    with capture_output() as captured:
        shell.run_line_magic("pi", "memory save The build uses uv --kind decision")
        shell.run_line_magic("pi", "memory observe on")
    assert "observation on" in captured.stdout
    view = shell.run_line_magic("pi", "memory")
    assert "The build uses uv" in view._repr_mimebundle_()["text/html"]
    with capture_output():
        reply = shell.run_cell_magic("pi", "--model offline --no-tools", "hello")
    assert isinstance(reply, AssistantReply)


def test_help_is_the_magic_docstring(shell: InteractiveShell) -> None:
    doc = shell.find_line_magic("pi").__doc__
    assert "%pi goto ID" in doc and "%pi memory observe" in doc


def test_agents_md_files_reach_the_system_prompt(tmp_path: Path, isolated_agent_dir: Path) -> None:
    from pinb.agent import build_system_prompt, context_files

    (isolated_agent_dir / "AGENTS.md").write_text("global rule")
    project = tmp_path / "proj" / "sub"
    project.mkdir(parents=True)
    (tmp_path / "proj" / "CLAUDE.md").write_text("project rule")
    (project / "AGENTS.md").write_text("sub rule")
    (project / "CLAUDE.md").write_text("ignored: AGENTS.md wins in a folder")
    files = context_files(project)
    assert files == [
        isolated_agent_dir / "AGENTS.md",
        tmp_path / "proj" / "CLAUDE.md",
        project / "AGENTS.md",
    ]
    prompt = build_system_prompt(project)
    assert prompt.index("global rule") < prompt.index("project rule") < prompt.index("sub rule")
    assert "ignored" not in prompt


def test_compare_ledger_and_whatif_commands(shell: InteractiveShell, tmp_path: Path) -> None:
    from pinb.analysis.compare import BranchComparison
    from pinb.testing.story import write_story_session

    story = write_story_session(tmp_path / "story", context_window=5_000)
    assert story.path is not None
    shell.run_line_magic("pi", f"open {story.path}")
    magics = shell.magics_manager.registry["PiMagics"]
    path = {e.id for e in story.path_to()}
    wrong = [e for e in story.entries if e.id not in path and e.type == "message"][-1]
    compared = shell.run_line_magic("pi", f"compare {wrong.id[:6]} {story.leaf_id}")
    assert isinstance(compared, BranchComparison)
    assert compared.a.leaf_id == wrong.id and compared.b.leaf_id == story.leaf_id
    assert "common ancestor" in compared._repr_mimebundle_()["text/plain"]
    # A fork's branch compares across files.
    fork = story.clone()
    assert fork.path is not None
    across = shell.run_line_magic(
        "pi", f"compare {story.leaf_id} {fork.leaf_id} --other {fork.path}"
    )
    assert across.relation == "b forked from a"
    ledger = shell.run_line_magic("pi", "ledger")
    assert len(ledger.records) == sum(1 for e in story.entries if e.type == "compaction") > 0
    replay = shell.run_line_magic("pi", "whatif --keep 500 2000")
    text = replay._repr_mimebundle_()["text/plain"]
    assert "keep 500" in text and "keep 2,000" in text
    assert magics.current_session().path == story.path
    with pytest.raises(EntryNotFoundError, match="nosuchid not found"):
        shell.run_line_magic("pi", "compare nosuchid")


def test_footer_context_and_tokens_tell_one_story(
    shell: InteractiveShell, server: LLMServer
) -> None:
    # The figures the issue saw disagree (1,627 / ~109 / 976; 32,000 / 128,000 assumed)
    # now come from one account: the same tokens, measure and window in every place.
    server.reply("A first answer with some words in it.", usage={"input": 700, "output": 30})
    server.reply("A second answer.", usage={"input": 900, "output": 12})
    shell.run_cell_magic("pi", "--model loop/tiny --no-tools", "first question")
    reply = shell.run_cell_magic("pi", "--no-tools", "second question")
    context = shell.run_line_magic("pi", "context")
    tokens = shell.run_line_magic("pi", "tokens")
    assert reply.context is not None and context.usage is not None and tokens.usage is not None
    for usage in (context.usage, tokens.usage):
        assert usage.tokens == reply.context.tokens == 912
        assert usage.measure == reply.context.measure
        assert (usage.window, usage.window_source) == (4_000, "models.json")
    assert reply.context.describe() in tokens.to_text()
    assert "4,000" in context.to_text() and "128,000" not in context.to_text()
    totals = shell.run_line_magic("pi", "totals model")
    frame = totals.totals
    assert frame["output"].sum() == 42 and frame["input"].sum() == 1_600
