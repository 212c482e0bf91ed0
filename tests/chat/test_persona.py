"""The persona in a real chat document (jupyterlab-chat's ``YChat``) with Jupyter AI's persona
manager, answering with pinb's agent over the loopback model server."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path
from typing import Any

import mistune
import pytest

from pinb.chat.link import METADATA_KEY, link_chat, read_link, record_path
from pinb.chat.turns import CHAT_TYPE, chat_turns
from pinb.core import Session
from pinb.core.context.accounting import context_usage
from pinb.core.file.writers import holders
from pinb.llm.window import resolve_window
from pinb.testing.llm_server import LLMServer
from tests.chat.room import PERSONA_ID, ChatRoom
from tests.pi.loop import KEY, MODEL
from tests.pi.reference import PiReference

DEADLINE = 120.0


def run(scenario: Any) -> Any:
    return asyncio.run(asyncio.wait_for(scenario, DEADLINE))


def _session_of(room: ChatRoom) -> Path:
    link = read_link(room.path, room.chat.get_metadata().get(METADATA_KEY))
    assert link is not None
    return link.session


def test_the_entry_point_brings_the_persona_with_its_commands(project: Path) -> None:
    async def scenario() -> None:
        room = ChatRoom(project)
        persona = room.persona
        assert persona.name == "Pi" and persona.id == PERSONA_ID
        assert type(persona).__module__ == "pinb.chat.persona"
        commands = {c.name for c in persona.get_slash_commands()}
        assert {"/tree", "/context", "/tokens", "/compact", "/kept", "/session"} <= commands
        engine = {s.id: s for s in persona.get_setting_configurations()}["engine"]
        assert engine.current == "pinb" and [o.id for o in engine.options] == ["pinb", "pi"]
        assert Path(persona.defaults.avatar_path).read_text().startswith("<svg")
        assert room.chat.get_users()[PERSONA_ID].bot
        await room.close()

    run(scenario())


def test_a_reply_streams_with_its_tool_call_and_the_cells_footer(
    project: Path, loop_server: LLMServer
) -> None:
    loop_server.reply(tool_calls=[("ls", {"path": "."})], usage={"input": 900, "output": 20})
    answer = "The folder holds **analysis.ipynb** and the chat. " * 6
    loop_server.reply(text=answer, usage={"input": 1200, "output": 80}, chunk_delay=0.02)

    async def scenario() -> tuple[list[str], Any, ChatRoom]:
        room = ChatRoom(project)
        room.persona.model = MODEL
        bodies: list[str] = []
        room.chat.ymessages.observe_deep(
            lambda events: bodies.extend(
                m["body"] for m in room.chat.ymessages.to_py() if m["sender"] == PERSONA_ID
            )
        )
        reply = await room.say("@Pi what is in this folder?")
        await room.close()
        return bodies, reply, room

    bodies, reply, room = run(scenario())
    # Streamed: the message was written with part of the answer before the whole of it.
    partial = [
        b for b in dict.fromkeys(bodies) if "The folder holds" in b and "context now" not in b
    ]
    assert partial, "no partial reply was written while the answer streamed"
    body = reply.body
    assert "- `ls` `.` — ✓" in body  # the call on one line, not its output
    assert body.count("The folder holds **analysis.ipynb** and the chat.") == 6
    # The mention is not part of the prompt the model got.
    sent = json.dumps(loop_server.requests[0].body)
    assert "what is in this folder?" in sent and "@Pi" not in sent
    # The footer: the run's bill, and the context by the one account against the one window.
    path = _session_of(room)
    session = Session.open(path)
    from pinb.llm import get_model

    window = resolve_window(model=get_model(MODEL))
    usage = context_usage(
        session.current_context(), window=window.tokens, window_source=window.source
    )
    assert window.tokens == 32000
    footer = body.rsplit("---", 1)[1]
    plain = footer.replace("\\", "")
    assert "loop/loop-model · this run (2 requests): input 2,100 · output 100" in plain
    assert f"context now: {usage.describe()}" in plain


def test_a_chat_turn_is_marked_in_the_session_and_pi_reads_the_file_the_same(
    project: Path, loop_server: LLMServer, pi16: PiReference
) -> None:
    loop_server.reply(text="first answer").reply(text="second answer")

    async def scenario() -> ChatRoom:
        room = ChatRoom(project)
        room.persona.model = MODEL
        await room.say("first question")
        await room.say("second question")
        await room.close()
        return room

    room = run(scenario())
    path = _session_of(room)
    session = Session.open(path)
    marks = chat_turns(session)
    assert len(marks) == 2
    assert marks[0].raw["data"]["chat"] == "demo.chat" and marks[0].raw["data"]["sender"] == "Ada"
    # Each mark follows its turn on the one path and names the turn's prompt.
    path_ids = [e.id for e in session.path_to()]
    users = [e for e in session.path_to() if e.role == "user"]
    for mark, user, answer in zip(marks, users, ("first answer", "second answer"), strict=True):
        assert mark.raw["data"]["entry"] == user.id
        reply = session.get(path_ids[path_ids.index(mark.id) - 1])
        assert reply.role == "assistant" and reply.message["content"][0]["text"] == answer
    assert session.problems == []
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(path)["context"] == ours
    assert all(m.get("customType") != CHAT_TYPE for m in ours["messages"])


def _rendered(markdown: str) -> str:
    """HTML a Markdown renderer that lets raw HTML through (as marked does) makes of it."""
    return str(mistune.create_markdown(escape=False)(markdown))


def test_model_and_tool_text_stays_text(project: Path, loop_server: LLMServer) -> None:
    hostile = (
        '<img src=x onerror="alert(1)"> <script>alert(2)</script> '
        "[click](javascript:alert(3)) <a href='javascript:alert(4)'>x</a>"
    )
    (project / "evil<b>.txt").write_text("nothing")
    loop_server.reply(tool_calls=[("bash", {"command": f"echo '{hostile}'; exit 3"})])
    loop_server.reply(text=f"Here it is: {hostile}\n\n```html\n<b>code keeps its markup</b>\n```")

    async def scenario() -> Any:
        room = ChatRoom(project)
        room.persona.model = MODEL
        reply = await room.say("show me")
        await room.close()
        return reply

    body = run(scenario()).body
    html = _rendered(body)
    for tag in ("<img", "<script", "<a href='javascript", 'href="javascript'):
        assert tag not in html, tag
    assert "&lt;img src=x" in html  # shown as text
    assert "&lt;b&gt;code keeps its markup&lt;/b&gt;" in html  # inside the fence: text
    assert "— ✗" in body  # the command failed: said on its line


def test_no_key_reaches_the_chat(
    project: Path, loop_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key the user configured never lands in the chat file, even when the model says it."""
    from jupyterlab_chat.websocket_model import WsChatModel

    loop_server.reply(text=f"your key is {KEY}, and the server said {KEY}")

    async def scenario() -> None:
        chat = WsChatModel("keys.chat", project)
        chat.load_from_file()
        room = ChatRoom(project, "keys.chat", chat=chat)
        room.persona.model = MODEL
        reply = await room.say("what is my key?")
        assert KEY not in reply.body and "***" in reply.body
        await room.close()

    run(scenario())
    saved = (project / "keys.chat").read_text()
    assert KEY not in saved and "your key is ***" in saved
    assert KEY not in json.dumps(json.loads(saved)["metadata"])


def test_stop_saves_the_partial_reply_as_aborted(
    project: Path, loop_server: LLMServer, pi16: PiReference
) -> None:
    loop_server.reply(text="a slow and careful answer " * 60, chunk_delay=0.05)

    async def scenario() -> tuple[Any, ChatRoom]:
        room = ChatRoom(project)
        room.persona.model = MODEL
        started = asyncio.Event()
        room.chat.ymessages.observe_deep(
            lambda events: (
                started.set()
                if any(
                    m["sender"] == PERSONA_ID and "a slow and careful" in m["body"]
                    for m in room.chat.ymessages.to_py()
                )
                else None
            )
        )
        talking = asyncio.ensure_future(room.say("take your time"))
        await started.wait()
        assert room.persona.processing
        await room.persona.cancel_response()  # what the chat's stop button calls
        reply = await talking
        await room.close()
        return reply, room

    reply, room = run(scenario())
    assert "stopped: the partial reply is saved as aborted" in reply.body.replace("\\", "")
    path = _session_of(room)
    session = Session.open(path)
    last = [e for e in session.path_to() if e.role == "assistant"][-1].message
    assert last["stopReason"] == "aborted"
    assert session.path_to()[-1].raw["customType"] == CHAT_TYPE  # the turn is the chat's
    saved = last["content"][0]["text"]
    assert saved.startswith("a slow and careful") and len(saved) < len(
        "a slow and careful answer " * 60
    )
    ours = json.loads(json.dumps(session.build_context().to_wire()))
    assert pi16.open(path)["context"] == ours


def test_the_commands_show_the_sessions_memory(project: Path, loop_server: LLMServer) -> None:
    for i in range(4):
        loop_server.reply(text=f"answer {i} " + "words " * 200, usage={"input": 500, "output": 60})
    for _ in range(2):  # the summary (and a split turn's prefix) of the compaction
        loop_server.reply(text="## Goal\nAnswer four questions.\n\n## Progress\nThree answered.")
    commands = ("/tree", "/context", "/tokens", "/kept", "/compact keep the numbers", "/kept")

    async def scenario() -> tuple[list[Any], Path]:
        room = ChatRoom(project)
        room.persona.model = MODEL
        for i in range(4):
            await room.say(f"question {i} " + "detail " * 200)
        answers = [await room.say(command) for command in commands]
        await room.close()
        return answers, _session_of(room)

    (tree, context, tokens, nothing, compacted, kept), path = run(scenario())
    assert tree.body.count("pinb.chat") == 4  # each chat turn's row
    picture = re.search(r"\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", tree.body)
    assert picture is not None
    assert base64.b64decode(picture.group(1)).startswith(b"\x89PNG")

    def html(message: Any) -> str:
        return str(message.mime_model["data"]["text/html"])

    session = Session.open(path)
    assert "Context at leaf" in html(context) and "ContextPathView" in context.body
    assert "Context tokens" in html(tokens) and "ContextBreakdown" in tokens.body
    assert nothing.mime_model is None and nothing.body.startswith("Nothing is compacted")
    compaction = session.current_context().compaction
    assert compaction is not None
    for answer in (compacted, kept):
        assert f"Compaction {compaction.id}" in html(answer)
        assert "<script" not in html(answer)
    # The figures are the one account's: the footer of the last turn and /tokens agree.
    assert "context:" in tokens.body


def test_the_chat_follows_a_link_the_notebook_made(project: Path, loop_server: LLMServer) -> None:
    loop_server.reply(text="on the chat's own session").reply(text="on the notebook's session")
    notebook_session = Session.create(project)
    notebook_session.append_message({"role": "user", "content": "from a cell", "timestamp": 1})
    notebook_path = notebook_session.require_path()

    async def scenario() -> tuple[ChatRoom, Any]:
        room = ChatRoom(project)
        room.persona.model = MODEL
        first = await room.say("hello")
        assert "started a new session for this chat" in first.body.replace("\\", "")
        own = _session_of(room)
        assert own.exists() and own != notebook_path
        assert any(
            h.what.endswith("the chat panel (demo.chat)") for h in holders(own, include_self=True)
        )
        # `%pi chat` in the notebook: a record beside the chat, while the chat is open.
        link_chat(room.path, notebook_path, notebook=project / "analysis.ipynb")
        second = await room.say("and now?")
        await room.close()
        return room, second

    room, second = run(scenario())
    assert "this chat now continues" in second.body.replace("\\", "")
    metadata = room.chat.get_metadata()[METADATA_KEY]
    assert metadata["session"] == str(notebook_path) and metadata["notebook"] == "analysis.ipynb"
    session = Session.open(notebook_path)
    texts = [e.message["content"] for e in session.path_to() if e.role == "user"]
    assert texts[0] == "from a cell" and texts[-1][0]["text"] == "and now?"
    assert record_path(room.path).exists()
    assert not any("the chat panel" in h.what for h in holders(notebook_path, include_self=True))


def test_session_commands_pick_a_session_in_the_chat(project: Path, loop_server: LLMServer) -> None:
    other = Session.create(project)
    other.append_message({"role": "user", "content": "elsewhere", "timestamp": 1})
    other_path = other.require_path()

    async def scenario() -> list[str]:
        room = ChatRoom(project)
        answers = []
        for command in (
            f"/session open {other_path}",
            "/session",
            "/session new",
            "/help",
            "/session open nowhere.jsonl",
        ):
            answers.append((await room.say(command)).body.replace("\\", ""))
        await room.close()
        return answers

    opened, shown, new, helped, missing = run(scenario())
    assert "Now continuing it." in opened and other_path.name in opened
    assert "1 entry" in shown and "Linked by the chat." in shown
    assert "Started a new session." in new and "written at its first message" in new
    assert "offline" in helped and "/compact" in helped
    # Named as typed, not as the server's folder: one line.
    assert missing == (
        "**error:** nowhere.jsonl: no such file; `/session new` starts a new session"
    )


@pytest.mark.parametrize("mentions", [[PERSONA_ID], []], ids=["listed", "typed"])
def test_a_mention_is_answered_when_the_picker_names_no_one(
    project: Path, mentions: list[str]
) -> None:
    """The manager routes by the persona picker only; a message that mentions Pi (listed by
    the chat input, or only typed) is answered all the same, once."""

    async def scenario() -> list[Any]:
        room = ChatRoom(project)
        await room.say("@Pi hello", to_persona=False, mentions=mentions)
        await room.say("hello to no one", to_persona=False, mentions=[])
        replies = [m for m in room.chat.get_messages() if m.sender == PERSONA_ID]
        await room.close()
        return replies

    replies = run(scenario())
    assert len(replies) == 1 and "offline demo model" in replies[0].body


def test_compact_mask_and_kept_in_the_chat_show_what_was_masked(
    project: Path, loop_server: LLMServer
) -> None:
    from pinb.testing.generate import tool_heavy_session

    path = tool_heavy_session(project / "sessions", turns=40, result_chars=6_000, cwd=project)
    before = path.read_bytes()

    async def scenario() -> list[Any]:
        room = ChatRoom(project)
        room.persona.model = MODEL
        link_chat(room.path, path, notebook=project / "analysis.ipynb")
        answers = [await room.say(command) for command in ("/compact --mask", "/kept")]
        await room.close()
        return answers

    compacted, kept = run(scenario())
    appended = [json.loads(x)["type"] for x in path.read_bytes()[len(before) :].splitlines()]
    edits = appended.count("context_edit")
    assert edits and "compaction" not in appended
    assert f"Masked {edits} old tool results" in str(compacted.mime_model["data"]["text/html"])
    assert kept.body.startswith("```") and f"{edits} old tool results masked" in kept.body
    assert "<script" not in str(kept.mime_model["data"]["text/html"])


def test_uncompact_gives_back_what_the_compaction_lost_and_kept_shows_it(
    project: Path, loop_server: LLMServer
) -> None:
    from pinb.core.compaction.uncompact import UNCOMPACT_TYPE

    for i in range(4):
        loop_server.reply(text=f"answer {i} " + "words " * 200, usage={"input": 500, "output": 60})
    for _ in range(2):  # the summary (and a split turn's prefix): it keeps none of the rules
        loop_server.reply(text="## Goal\nAnswer four questions.")
    rules = (
        "Never rename the exported fixtures.",
        "Always keep the changelog sorted by date.",
        "Don't reformat the vendored parser module.",
        "Only edit files under the scripts folder.",
    )

    async def scenario() -> tuple[list[Any], Path]:
        room = ChatRoom(project)
        room.persona.model = MODEL
        room.persona.keep_facts = False  # Pi's exact summary: the loss stays to give back
        for rule in rules:
            await room.say(f"{rule} " + "detail " * 200)
        answers = [
            await room.say(command)
            for command in ("/compact", "/uncompact --dry-run", "/uncompact", "/uncompact", "/kept")
        ]
        await room.close()
        return answers, _session_of(room)

    (compacted, dry, given, again, kept), path = run(scenario())
    session = Session.open(path)
    compaction = session.current_context().compaction
    assert compaction is not None and "Kept facts" not in compaction.raw["summary"]
    assert f"Compaction {compaction.id}" in str(compacted.mime_model["data"]["text/html"])
    assert "would give back" in dry.body and "dry run: nothing written" in dry.body
    entries = [e for e in session.entries if e.raw.get("customType") == UNCOMPACT_TYPE]
    assert len(entries) == 1, "given back once; the second time nothing was still lost"
    entry = entries[0]
    assert entry.type == "custom_message" and entry.raw["details"]["compactionId"] == compaction.id
    assert "gave back" in given.body and f"in entry {entry.id}" in given.body
    lost_rules = [r for r in rules if r in entry.raw["content"]]
    assert lost_rules, "the summary kept none of the user's rules"
    assert "nothing to give back" in again.body
    assert f"given back in {entry.id}" in kept.body
    assert "What pinb kept and gave back" in str(kept.mime_model["data"]["text/html"])
