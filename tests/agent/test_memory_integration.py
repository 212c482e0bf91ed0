"""Memory inside agent runs: the tools through the loopback server, observation before compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pinb.agent import Agent, AgentConfig
from pinb.agent.tools.memory import memory_tools
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.llm import get_model
from pinb.memory import MemoryObserver, MemoryStore, project_id
from pinb.testing import LLMServer, ScriptedLLM


def test_memory_tools_in_a_run_through_the_loopback_server(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    session = Session.create(tmp_path, tmp_path / "sessions")
    with LLMServer() as server:
        server.reply(
            "",
            tool_calls=[
                ("memory_save", {"text": "The API uses snake_case JSON keys", "kind": "fact"})
            ],
        )
        server.reply("", tool_calls=[("memory_recall", {"query": "snake_case"})])
        server.reply("Noted and recalled.")
        model = get_model("openai/gpt-4o", base_url=server.openai_base_url, api_key="test-key")
        end = Agent(session, model, memory_tools(store), cwd=tmp_path).prompt(
            "remember our JSON style"
        )
        tools_offered = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert end.stop_reason == "stop"
    assert {"memory_save", "memory_recall", "memory_forget"} <= set(tools_offered)
    results = [e.message for e in session.entries if e.role == "toolResult"]
    assert [r["toolName"] for r in results] == ["memory_save", "memory_recall"]  # type: ignore[index]
    assert not any(r["isError"] for r in results)  # type: ignore[index]
    assert "snake_case" in json.dumps(results[1]["content"])  # type: ignore[index]
    saved = store.records(project=project_id(tmp_path))
    assert [r.text for r in saved] == ["The API uses snake_case JSON keys"]
    assert saved[0].source_session == str(session.path)


def test_observation_runs_before_compaction_with_the_messages_it_drops(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    seen: list[list[Any]] = []

    class Recording(ExtractiveSummarizer):
        def summarize(self, conversation: str, **options: Any) -> str:
            seen.append([conversation])
            return "- [decision] Always keep the public API in snake_case"

    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM()
    for i in range(4):
        llm.reply(f"answer {i} " + "w" * 1600)
    observer = MemoryObserver(Recording(), store=store, cwd=tmp_path)
    agent = Agent(
        session,
        llm,
        summarizer=ExtractiveSummarizer(),
        config=AgentConfig(compaction=CompactionSettings(keep_recent_tokens=500)),
        observer=observer,
    )
    for i in range(4):
        agent.prompt(f"question {i} about snake_case")
    llm.reply_overflow().reply("fine")
    agent.prompt("one more")
    assert any(e.type == "compaction" for e in session.entries)
    assert seen and "question 0" in seen[0][0]  # observed what the compaction summarized
    notes = store.records(project=project_id(tmp_path), kinds=["observation"])
    assert notes and notes[0].text == "Always keep the public API in snake_case"


def test_a_failing_observer_never_breaks_the_run(tmp_path: Path) -> None:
    class Broken:
        def before_compaction(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("observer down")

        end_of_run = before_compaction

    session = Session.in_memory(tmp_path)
    llm = ScriptedLLM().reply("hello")
    assert Agent(session, llm, observer=Broken()).prompt("hi").stop_reason == "stop"
