"""The persona with the user's own Pi as its engine: the real Pi 1.6.0 over RPC (fixture ``pi_loop``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pinb.chat.link import METADATA_KEY, read_link
from pinb.chat.turns import chat_turns
from pinb.core import Session
from tests.chat.room import PERSONA_ID, ChatRoom
from tests.pi.loop import MODEL, PiLoop
from tests.pi.reference import PiReference

DEADLINE = 240.0


def run(scenario: Any) -> Any:
    return asyncio.run(asyncio.wait_for(scenario, DEADLINE))


def _pi_room(project: Path) -> ChatRoom:
    room = ChatRoom(project)
    room.persona.engine = "pi"
    room.persona.pi_model = MODEL
    return room


def test_pi_answers_in_the_chat_on_the_linked_session(
    project: Path, pi_loop: PiLoop, pi16: PiReference
) -> None:
    server = pi_loop.server
    server.reply(text="Pi here: the chat's first answer.")
    server.reply(tool_calls=[("bash", {"command": "echo from-pi-bash"})])
    server.reply(text="The command printed **from-pi-bash**.")

    async def scenario() -> tuple[Any, Any, ChatRoom]:
        room = _pi_room(project)
        first = await room.say("hello Pi")
        second = await room.say("run `echo from-pi-bash`")
        await room.close()  # stops Pi's process
        return first, second, room

    first, second, room = run(scenario())
    assert "Pi here: the chat's first answer." in first.body
    footer = first.body.rsplit("---", 1)[1].replace("\\", "")
    assert "your Pi · loop/loop-model · this run (1 request)" in footer
    assert "of a 32,000 window (Pi's model)" in footer
    assert "- `bash` `echo from-pi-bash` — ✓ 1 line" in second.body
    link = read_link(room.path, room.chat.get_metadata()[METADATA_KEY])
    assert link is not None
    session = Session.open(link.session)
    marks = chat_turns(session)
    assert [m.raw["data"]["engine"] for m in marks] == ["pi", "pi"]
    # Each mark follows its turn (Pi wrote the new session's file itself) and names its prompt.
    ids = [e.id for e in session.path_to()]
    users = [e.id for e in session.path_to() if e.role == "user"]
    assert [m.raw["data"]["entry"] for m in marks] == users
    order = [
        ids.index(users[0]),
        ids.index(marks[0].id),
        ids.index(users[1]),
        ids.index(marks[1].id),
    ]
    assert order == sorted(order)
    assert session.problems == []
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(link.session)["context"] == ours


def test_stop_aborts_pi_and_its_partial_reply_is_saved(
    project: Path, pi_loop: PiLoop, pi16: PiReference
) -> None:
    server = pi_loop.server
    server.reply(text="ready")
    server.reply(text="a long answer from Pi " * 80, chunk_delay=0.05)

    async def scenario() -> tuple[Any, ChatRoom]:
        room = _pi_room(project)
        await room.say("start")
        started = asyncio.Event()

        def seen(events: Any) -> None:
            if any(
                m["sender"] == PERSONA_ID and "a long answer from Pi" in m["body"]
                for m in room.chat.ymessages.to_py()
            ):
                started.set()

        room.chat.ymessages.observe_deep(seen)
        talking = asyncio.ensure_future(room.say("take your time"))
        await started.wait()
        await room.persona.cancel_response()
        reply = await talking
        await room.close()
        return reply, room

    reply, room = run(scenario())
    assert "stopped: the partial reply is saved as aborted" in reply.body.replace("\\", "")
    link = read_link(room.path, room.chat.get_metadata()[METADATA_KEY])
    assert link is not None
    session = Session.open(link.session)
    last = [e for e in session.path_to() if e.role == "assistant"][-1].message
    assert last["stopReason"] == "aborted"
    text = "".join(b.get("text", "") for b in last["content"] if b.get("type") == "text")
    assert text.startswith("a long answer from Pi") and len(text) < len(
        "a long answer from Pi " * 80
    )
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(link.session)["context"] == ours


def test_compact_and_kept_with_pis_own_compaction(
    project: Path, pi_loop: PiLoop, pi16: PiReference
) -> None:
    # Pi's own settings: keep little, so a short conversation has something to summarize.
    (pi_loop.agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 20}})
    )
    server = pi_loop.server
    for i in range(3):
        server.reply(text=f"answer {i}: " + "detail " * 40)
    for _ in range(2):  # Pi's summary, and the summary of a split turn's prefix
        server.reply(text="## Goal\nThree questions.\n\n## Progress\nAnswered.")

    async def scenario() -> tuple[Any, Any, ChatRoom]:
        room = _pi_room(project)
        for i in range(3):
            await room.say(f"question {i} " + "words " * 40)
        compacted = await room.say("/compact")
        kept = await room.say("/kept")
        await room.close()
        return compacted, kept, room

    compacted, kept, room = run(scenario())
    link = read_link(room.path, room.chat.get_metadata()[METADATA_KEY])
    assert link is not None
    session = Session.open(link.session)
    compaction = session.current_context().compaction
    assert compaction is not None  # Pi wrote it
    for answer in (compacted, kept):
        assert f"Compaction {compaction.id}" in answer.mime_model["data"]["text/html"]
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(link.session)["context"] == ours


def test_compact_mask_with_pi_as_the_engine_masks_and_pi_sends_the_placeholders(
    project: Path, pi_loop: PiLoop, pi16: PiReference
) -> None:
    from pinb.chat.link import link_chat
    from pinb.core.compaction.masking import MASK_PREFIX
    from pinb.testing.generate import tool_heavy_session

    # Pi's own settings as they are (no fitting with Pi as the engine): keep 4,000.
    (pi_loop.agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 4_000}})
    )
    path = tool_heavy_session(project / "sessions", turns=20, result_chars=3_000, cwd=project)
    before = path.read_bytes()
    pi_loop.server.reply(text="Pi carries on")

    async def scenario() -> tuple[Any, Any]:
        room = _pi_room(project)
        link_chat(room.path, path, notebook=project / "analysis.ipynb")
        masked = await room.say("/compact --mask")
        answer = await room.say("what is left?")
        await room.close()
        return masked, answer

    masked, answer = run(scenario())
    assert "Pi carries on" in answer.body
    added = [json.loads(x) for x in path.read_bytes()[len(before) :].splitlines()]
    edits = [e for e in added if e["type"] == "context_edit"]
    assert edits and "compaction" not in {e["type"] for e in added}
    assert "Masked" in masked.mime_model["data"]["text/html"]
    sent = json.dumps(pi_loop.server.requests[-1].body, ensure_ascii=False)
    assert sent.count(MASK_PREFIX) == len(edits)  # Pi read the edits from the file
    assert "--mask" not in sent
    ours = json.loads(json.dumps(Session.open(path).build_context().to_wire()))
    assert pi16.open(path)["context"] == ours
