"""Pi 1.6's own output limit, worked out by pinb before a Pi cell, against what the real Pi sends.

Each window is a models.json entry for the loopback server; the real Pi 1.6.0 runs a cell on
it, and the limit its next request carries (``max_completion_tokens``) is compared with
:func:`pinb.agent.pi.limits.pi_reply_room`'s, computed from the file before the request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinb.agent.events import AgentEvent
from pinb.agent.pi.engine import PiEngine, reread
from pinb.agent.pi.limits import PiCannotFitError, pi_output_limit, pi_reply_room
from pinb.core import Session
from pinb.testing.llm_wire import ServerReply
from tests.pi.loop import PiLoop

pytestmark = pytest.mark.slow  # the real Pi: scheduled first (tests/conftest.py)

SPEC = "local/small"


def _models(loop: PiLoop, window: int, max_tokens: int = 1000) -> None:
    model = {"id": "small", "contextWindow": window, "maxTokens": max_tokens}
    provider = {
        "baseUrl": loop.server.openai_base_url,
        "api": "openai-completions",
        "apiKey": "none",
        "models": [model],
    }
    (loop.agent_dir / "models.json").write_text(json.dumps({"providers": {"local": provider}}))


def _run(engine: PiEngine, session: Session, prompt: str) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    engine.run(session, prompt, cwd=Path(session.cwd or "."), model=SPEC, thinking=None,
               show=events.append)  # fmt: skip
    return events


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_the_clamp_restated_keeps_pis_constants() -> None:
    # Pi's own figures, read in pi-ai/dist/api/simple-options.js:
    assert pi_output_limit(4096, 10, 16_384) == 1  # 4,096 - 10 - 4,096 < 1
    assert pi_output_limit(8192, 2000, 16_384) == 8192 - 2000 - 4096  # the fixed margin only
    # Under 32,768 of room after the 15 % margin, only the 4,096 is kept, up to 32,768:
    assert pi_output_limit(100_000, 60_000, 64_000) == 32_768  # not 100k - 60k - 9k = 31,000
    assert pi_output_limit(200_000, 50_000, 200_000) == 200_000 - 50_000 - 7_500  # 15 % kept
    assert pi_output_limit(0, 10, 512) == 512  # no window known: the model's own


@pytest.mark.parametrize(
    ("window", "usage"),
    [(6144, None), (6400, None), (6400, {"input": 1700, "output": 5}), (40_000, None)],
)
def test_the_limit_pinb_predicts_is_the_one_pi_sends(
    pi_loop: PiLoop, project: Path, window: int, usage: dict[str, int] | None
) -> None:
    _models(pi_loop, window)
    engine = PiEngine()
    try:
        session = Session.create(project, project / "sessions")
        first = ServerReply(text="first answer", usage=usage, no_usage=usage is None)
        pi_loop.server.add(first)
        _run(engine, session, "hi")
        session = reread(session)  # Pi's system prompt is in the file now
        prompt = "and a second question, somewhat longer than the first one"
        room = pi_reply_room(
            session.current_context().messages, prompt, spec=SPEC, window=window, max_tokens=1000
        )
        pi_loop.server.add(ServerReply(text="second answer", no_usage=True))
        _run(engine, session, prompt)
    finally:
        engine.close()
    sent = pi_loop.server.requests[-1].body["max_completion_tokens"]
    assert sent == room.limit.tokens, (window, room)
    # the window, not the model's 1,000, set it on the small windows
    assert (sent < 1000) is (window < 40_000)


def test_a_window_pi_cannot_answer_on_stops_the_cell_before_any_request(
    pi_loop: PiLoop, project: Path
) -> None:
    _models(pi_loop, 4096, max_tokens=1024)
    engine = PiEngine()
    try:
        session = Session.create(project, project / "sessions")
        with pytest.raises(PiCannotFitError) as info:
            _run(engine, session, "hello")
    finally:
        engine.close()
    assert pi_loop.server.requests == []  # stopped before Pi sent anything
    line = str(info.value)
    assert "\n" not in line
    assert "at most 1 token (max_completion_tokens)" in line
    assert "keeps 4,096 tokens free" in line and "4,096-token window" in line
    assert "--n_ctx" in line and "`%%pi --engine pinb`" in line


def _with_history(session_dir: Path, project: Path, chars: int) -> Session:
    """A session whose one earlier turn is ``chars`` characters long (written by pinb, from
    a server that reported no usage, as llama-cpp-python streams)."""
    from pinb.testing.messages import assistant, user

    session = Session.create(project, session_dir)
    session.append_message(user("tell me"))
    session.append_message(assistant("x" * chars, total=0))
    return session


def test_a_context_too_large_for_pi_says_compact_it_not_enlarge_the_window(
    pi_loop: PiLoop, project: Path
) -> None:
    _models(pi_loop, 8192)
    session = _with_history(project / "sessions", project, chars=20_000)  # ~5,700 by Pi's count
    room: Any = pi_reply_room(
        session.current_context().messages, "next", spec=SPEC, window=8192, max_tokens=1000
    )
    assert room.starved
    engine = PiEngine()
    try:
        with pytest.raises(PiCannotFitError) as info:
            _run(engine, session, "next")
    finally:
        engine.close()
    assert not [r for r in pi_loop.server.requests if r.path.endswith("/chat/completions")]
    assert "The context is what has grown" in str(info.value)
    assert "`%%pi --engine pinb`" in str(info.value)


def test_after_a_compaction_the_kept_replies_old_usage_no_longer_counts(
    pi_loop: PiLoop, project: Path
) -> None:
    # A long session compacted by pinb: the kept replies still carry the usage they
    # reported when the whole conversation was sent (~30,000 here). Pi's request estimate
    # drops a reply older than a message before it (the compaction summary), so its limit
    # is the model's own; counting that usage would stop the cell as if the window were full.
    from pinb.core import ExtractiveSummarizer, compact
    from pinb.core.context.tokens import CompactionSettings
    from pinb.testing.work import write_work_session

    _models(pi_loop, 32_000)
    session = write_work_session(project / "sessions", turns=20, cwd=project)
    compact(session, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=3000))
    kept = session.current_context().messages
    stale = max(
        (m["usage"]["totalTokens"] for m in kept if m.get("role") == "assistant"), default=0
    )
    assert stale > 28_000 - 4096  # counted, it would leave no room for a reply
    room = pi_reply_room(kept, "where were we?", spec=SPEC, window=32_000, max_tokens=1000)
    assert not room.starved
    engine = PiEngine()
    try:
        pi_loop.server.add(ServerReply(text="Pi read it.", no_usage=True))
        _run(engine, session, "where were we?")
    finally:
        engine.close()
    assert pi_loop.server.requests[-1].body["max_completion_tokens"] == room.limit.tokens == 1000
