"""The real Pi 1.6.0 reads what keep-facts and uncompact write, and continues with them.

- A compaction with pinb's kept-facts section stays Pi's ``compaction``: Pi opens the file
  without rewriting it and builds the same context as pinb, the section in the summary.
- A give-back is one ``custom_message``: Pi builds the same context, the message in it as
  the ``custom`` message it sends the model as a user message.
- ``pi -p --session FILE`` continues the file against the loopback server with the kept
  and given-back facts in its request, and pinb's built-in engine's next turn sends them too.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pinb.core import ExtractiveSummarizer, Session, compact
from pinb.core.compaction.lost import KEPT_FACTS_HEADING
from pinb.core.compaction.uncompact import UNCOMPACT_TYPE, uncompact
from pinb.core.context.tokens import CompactionSettings
from pinb.testing.work import write_work_session
from tests.core.test_pi_conformance import compare
from tests.pi.loop import pi_print
from tests.pi.reference import PiReference

#: A short session (Pi's harness answers with the whole tree, one level per entry) that
#: still compacts most of its work.
SETTINGS = CompactionSettings(keep_recent_tokens=3000)


def _same_context(pi16: PiReference, path: Path) -> dict[str, object]:
    before = path.read_bytes()
    opened = pi16.open(path)
    assert path.read_bytes() == before  # Pi opened it without rewriting it
    ours = json.loads(json.dumps(Session.open(path).build_context().to_wire()))
    assert opened["context"] == ours
    assert not compare(path, "1.6.0", pi16)
    return opened


def test_pi_reads_kept_facts_and_a_give_back_as_pinb_does(
    pi16: PiReference, tmp_path: Path
) -> None:
    session = write_work_session(tmp_path / "s", turns=20)
    path = session.require_path()
    report = compact(session, ExtractiveSummarizer(), settings=SETTINGS)
    assert KEPT_FACTS_HEADING in report.summary
    opened = _same_context(pi16, path)
    summary = next(m for m in opened["context"]["messages"] if m["role"] == "compactionSummary")  # type: ignore[index]
    assert summary["summary"] == report.summary  # the section is in what Pi sends

    plain = write_work_session(tmp_path / "p", turns=20)
    compact(plain, ExtractiveSummarizer(), settings=dataclasses.replace(SETTINGS, keep_facts=False))
    given = uncompact(plain)
    assert given.entry is not None
    opened = _same_context(pi16, plain.require_path())
    last = opened["context"]["messages"][-1]  # type: ignore[index]
    assert last["role"] == "custom" and last["customType"] == UNCOMPACT_TYPE
    assert last["content"] == given.text and last["display"] is True


def test_pi_and_pinb_continue_an_uncompacted_file_with_the_facts(
    pi16: PiReference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pinb.agent import Agent
    from pinb.llm import get_model
    from pinb.testing.llm_server import LLMServer

    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    session = write_work_session(tmp_path / "s", turns=20, cwd=tmp_path)
    path = session.require_path()
    tight = dataclasses.replace(SETTINGS, keep_facts_tokens=300)
    kept = compact(session, ExtractiveSummarizer(), settings=tight)
    assert kept.kept_facts is not None and kept.kept_facts.facts and kept.kept_facts.omitted
    # What the section had no room for is given back.
    given = uncompact(session)
    assert given.entry is not None and given.facts
    with LLMServer() as server:
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"loop": {
            "baseUrl": server.openai_base_url, "api": "openai-completions", "apiKey": "test",
            "models": [{"id": "loop-model", "contextWindow": 400000, "maxTokens": 1000}],
        }}}))  # fmt: skip
        server.reply(text="Pi carries on.", usage={"input": 30000, "output": 5})
        done = pi_print(pi16, agent_dir, tmp_path, path, "Carry on with the next fixture")
        assert done.returncode == 0, done.stderr
        sent = json.dumps(server.requests[-1].body)
        for fact in (*kept.kept_facts.facts[:5], *given.facts[:5]):
            assert json.dumps(fact.line)[1:-1] in sent
        session.refresh()  # Pi appended to the file
        server.reply(text="pinb carries on.", usage={"input": 30000, "output": 5})
        list(Agent(session, get_model("loop/loop-model")).run("And then the next one"))
        sent = json.dumps(server.requests[-1].body)
        for fact in (*kept.kept_facts.facts[:5], *given.facts[:5]):
            assert json.dumps(fact.line)[1:-1] in sent
    assert not compare(path, "1.6.0", pi16)
