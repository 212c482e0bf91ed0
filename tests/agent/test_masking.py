"""The agent masks before summarizing (strategy "mask-first"), and offers ``recall`` once something is hidden."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.agent import Agent, AgentConfig, CompactionDone, MaskingDone
from pinb.agent.tools import read_only_tools
from pinb.core import CompactionSettings, ExtractiveSummarizer, Session
from pinb.core.compaction.masking import MASK_PREFIX
from pinb.llm import ModelRegistry, get_model
from pinb.testing import ScriptedLLM
from pinb.testing.generate import tool_heavy_session
from pinb.testing.llm_server import LLMServer

WINDOW = 64_000
MASK_FIRST = CompactionSettings(strategy="mask-first")
#: What a server counting close to chars/4 reports for the masked context (~45k).
UNDER = {"input": 45_000, "output": 10, "cacheRead": 0, "cacheWrite": 0}


def _texts(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False)


@pytest.fixture
def heavy(tmp_path: Path) -> Session:
    # ~61k tokens reported by the last reply: over the 47,616 threshold of a 64k window.
    return Session.open(tool_heavy_session(tmp_path, turns=40, result_chars=6_000))


def test_mask_first_masks_instead_of_asking_for_a_summary(heavy: Session) -> None:
    llm = ScriptedLLM(context_window=WINDOW).reply("next step done", usage=UNDER)
    before = len(heavy.entries)
    events = list(Agent(heavy, llm, config=AgentConfig(compaction=MASK_FIRST)).run("go on"))
    masking = [e for e in events if isinstance(e, MaskingDone)]
    assert len(masking) == 1 and not any(isinstance(e, CompactionDone) for e in events)
    report = masking[0].report
    assert report is not None and report.written and report.reaches
    assert report.summary_calls_avoided == 1 and report.reason == "threshold"
    assert masking[0].text.startswith(f"masked {len(report.masked)} old tool results")
    assert len(llm.calls) == 1  # the prompt's request only: no summary was asked for
    sent = llm.calls[0].messages
    assert sum(MASK_PREFIX in _texts([m]) for m in sent) == len(report.masked)
    new = [e.type for e in heavy.entries[before:]]
    edits = [i for i, kind in enumerate(new) if kind == "context_edit"]
    assert len(edits) == len(report.masked) and edits == list(range(edits[0], edits[-1] + 1))
    assert "compaction" not in new


def test_with_pis_strategy_the_agent_summarizes(heavy: Session) -> None:
    llm = ScriptedLLM(context_window=WINDOW).reply("next step done")
    agent = Agent(heavy, llm, summarizer=ExtractiveSummarizer())
    events = list(agent.run("go on"))
    assert any(isinstance(e, CompactionDone) for e in events)
    assert not any(isinstance(e, MaskingDone) for e in events)
    assert not any(e.type == "context_edit" for e in heavy.entries)


def test_when_masking_cannot_get_there_a_summary_is_written_and_no_mask(heavy: Session) -> None:
    llm = ScriptedLLM(context_window=WINDOW).reply("next step done")
    # The last 30,000 tokens are never masked, and the threshold is 25,600.
    settings = CompactionSettings(strategy="mask-first", keep_recent_tokens=30_000,
                                  threshold_percent=40)  # fmt: skip
    agent = Agent(
        heavy, llm, config=AgentConfig(compaction=settings), summarizer=ExtractiveSummarizer()
    )
    events = list(agent.run("go on"))
    done = [e for e in events if isinstance(e, CompactionDone)]
    assert len(done) == 1 and "masking is not enough" in done[0].report.masking_note
    assert not any(e.type == "context_edit" for e in heavy.entries)


def test_recall_is_offered_only_once_something_is_hidden(tmp_path: Path) -> None:
    small = Session.open(tool_heavy_session(tmp_path, turns=3, result_chars=400))
    llm = ScriptedLLM(context_window=WINDOW).reply("ok").reply("ok again").reply("no tools")
    agent = Agent(small, llm, read_only_tools(tmp_path))
    agent.prompt("hello")
    assert "recall" not in [t.name for t in llm.calls[0].tools]
    small.append_compaction("earlier work", str(small.path_to()[5].id), 100)
    agent.prompt("and now")
    assert "recall" in [t.name for t in llm.calls[1].tools]
    Agent(small, llm).prompt("without tools")  # --no-tools: the caller asked for none
    assert llm.calls[2].tools == []
    # Named where the model sees it: the system prompt's tool list, from the description.
    assert "- recall: Read back what this session's compactions summarized" in (
        llm.calls[1].system_prompt or ""
    )


def _masked(heavy: Session) -> tuple[str, str]:
    """Mask the session (as the agent would) and return a masked entry id and its text."""
    llm = ScriptedLLM(context_window=WINDOW).reply("masked", usage=UNDER)
    list(Agent(heavy, llm, config=AgentConfig(compaction=MASK_FIRST)).run("first"))
    edit = next(e for e in heavy.entries if e.type == "context_edit")
    target = heavy[edit.raw["targetId"]]
    return str(target.id), target.message["content"][0]["text"]  # type: ignore[index]


def test_the_model_recalls_a_masked_result_and_the_next_request_carries_it(
    heavy: Session,
) -> None:
    target, original = _masked(heavy)
    llm = ScriptedLLM(context_window=WINDOW)
    llm.reply_tool_call("recall", {"query": target}).reply("I read it back", usage=UNDER)
    agent = Agent(heavy, llm, read_only_tools(), config=AgentConfig(compaction=MASK_FIRST))
    end = agent.prompt("what was there?")
    assert end.stop_reason == "stop"
    result = heavy.path_to()[-2].message
    assert result is not None and result["toolName"] == "recall" and not result["isError"]
    text = result["content"][0]["text"]
    entry = heavy[target]
    assert text.startswith(f"{heavy.path}:{entry.line}#{target} (read result, masked by edit ")
    assert original in text
    assert original in _texts(llm.calls[1].messages)  # the next request carries it


def test_recall_searches_words_in_what_a_compaction_summarized(heavy: Session) -> None:
    from pinb.core import compact

    compact(heavy, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=8_000))
    llm = ScriptedLLM(context_window=WINDOW)
    llm.reply_tool_call("recall", {"query": "marker-2"}).reply("found")
    Agent(heavy, llm, read_only_tools()).prompt("find step 2's output")
    text = heavy.path_to()[-2].message["content"][0]["text"]  # type: ignore[index]
    first = text.splitlines()[0]
    assert "summarized by compaction " in first and first.startswith(f"{heavy.path}:")
    assert "marker-2 " in text and "marker-3 " not in text


def test_recall_through_the_loopback_server(heavy: Session) -> None:
    target, original = _masked(heavy)
    with LLMServer() as server:
        model = get_model(
            "llamacpp/smol",
            base_url=server.openai_base_url,
            registry=ModelRegistry(False),
            context_window=WINDOW,
            timeout=5.0,
        )
        server.reply(tool_calls=[("recall", {"query": target})])
        server.reply("the original was read back")
        agent = Agent(heavy, model, read_only_tools(), config=AgentConfig(compaction=MASK_FIRST))
        end = agent.prompt("look back")
        assert end.stop_reason == "stop"
        first, second = server.requests[-2].body, server.requests[-1].body
        assert "recall" in [t["function"]["name"] for t in first["tools"]]
        assert original not in json.dumps(first, ensure_ascii=False)  # masked when asked
        assert original in json.dumps(second, ensure_ascii=False)  # given back by recall
        assert f"#{target} (read result, masked by edit" in json.dumps(second)
