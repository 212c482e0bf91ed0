"""pinb and the real Pi continue each other's sessions: files, contexts, and the ``pi`` CLI.

- Pi reads what pinb writes: files made through every writing path of pinb's public API
  are opened by Pi 1.6.0's (or v0.58.3's) ``SessionManager``, which must not rewrite them,
  and every conformance answer about them equals pinb's.
- pinb reads what Pi writes: sessions made through Pi's own ``SessionManager`` API are
  opened by pinb with Pi's context and tree, every line is re-serialized byte for byte,
  and an append by either side is read correctly by the other.
- The real ``pi`` CLI continues a session pinb's agent wrote, against pinb's loopback LLM
  server (configured through the ``models.json`` both read), and pinb continues after it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pinb.core import CompactionSettings, ExtractiveSummarizer, Session, compact, navigate
from pinb.core.file.write import serialize_line
from pinb.core.forks import fork_from
from tests.core.helpers import assistant, tool_result, user
from tests.core.test_pi_conformance import compare
from tests.pi.loop import pi_print
from tests.pi.reference import PiReference
from tests.sessions import write_case

# --- Pi reads what pinb writes --------------------------------------------------------------


def _conversation(session: Session) -> None:
    session.append_model_change("anthropic", "claude-sonnet-4-5")
    session.append_thinking_level_change("medium")
    first = session.append_message(user("Fix the failing test in app.py"))
    call = session.append_message(assistant("", tool_calls=[("c1", "read", {"path": "app.py"})]))
    session.append_message(tool_result("c1", "read", "def add(a, b): return a - b"))
    session.append_message(
        {
            "role": "bashExecution",
            "command": "pytest -q",
            "output": "1 failed",
            "exitCode": 1,
            "cancelled": False,
            "truncated": False,
            "timestamp": 4,
        }
    )
    session.append_custom("ext-state", {"step": 1})
    session.append_custom_message("reminder", "Keep the diff small.", display=False)
    session.set_label(first.id, "start")
    session.set_label(call.id, "read")
    session.set_label(call.id, None)
    session.set_name("  Fix\r\nthe test ")
    session.append_message(assistant("Fixed: add returns a + b."))


def _writes_a_conversation(folder: Path, pi: str) -> list[Path]:
    session = Session.create("/home/dev/proj", folder, pi=pi)
    _conversation(session)
    assert session.path is not None
    return [session.path]


def _writes_a_compaction(folder: Path, pi: str) -> list[Path]:
    session = Session.create("/home/dev/proj", folder, pi=pi)
    if pi == "1.6":
        session.append_message(
            {
                "role": "system",
                "content": "",
                "sections": {"base": "You fix tests."},
                "timestamp": 1,
            }
        )
    for i in range(6):
        session.append_message(user(f"request {i} " + "detail " * 80))
        session.append_message(assistant(f"answer {i} " + "words " * 80))
    compact(session, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=200))
    session.append_message(user("after the compaction"))
    if pi == "1.6":
        session.append_compaction("Everything so far.", None, 5000)  # retain-none
        session.append_message(user("after keeping nothing"))
    assert session.path is not None
    return [session.path]


def _writes_navigation(folder: Path, pi: str) -> list[Path]:
    session = Session.create("/home/dev/proj", folder, pi=pi)
    _conversation(session)
    ids = [e.id for e in session.entries if e.type == "message"]
    session.branch(ids[1])  # a move with no append: the inert marker
    moved = Session.create("/home/dev/proj", folder, pi=pi)
    _conversation(moved)
    target = next(e.id for e in moved.entries if e.type == "message")
    navigate(moved, target, summarize=True, summarizer=ExtractiveSummarizer(), label="back")
    moved.append_message(user("a new direction"))
    assert session.path is not None and moved.path is not None
    return [session.path, moved.path]


def _writes_edits_and_usage(folder: Path, pi: str) -> list[Path]:
    session = Session.create("/home/dev/proj", folder, pi=pi)
    _conversation(session)
    messages = [e for e in session.entries if e.type == "message"]
    session.append_context_edit(messages[2].id, "[tool output removed]")
    session.append_context_edit(messages[0].id, None)
    session.append_usage("cache_warm", "anthropic", "claude-sonnet-4-5", {"input": 0, "output": 1,
                         "cacheRead": 900, "cacheWrite": 0, "totalTokens": 901}, "idle")  # fmt: skip
    session.append_message(user("what did the edits change?"))
    assert session.path is not None
    return [session.path]


def _writes_forks(folder: Path, pi: str) -> list[Path]:
    session = Session.create("/home/dev/proj", folder, pi=pi)
    _conversation(session)
    again = session.append_message(user("another request"))
    session.append_message(assistant("another answer"))
    forked, text = session.fork(again.id)  # Pi's /fork: the path before that message
    assert text == "another request"
    clone = session.clone()
    assert session.path is not None
    copied = fork_from(session.path, "/home/dev/other", sessions_dir=folder / "other", pi=pi)
    paths = [forked.path, clone.path, copied.path]
    assert all(p is not None and p.exists() for p in paths)
    return [session.path, *paths]  # type: ignore[list-item]


def _writes_an_upgraded_legacy_file(folder: Path, pi: str) -> list[Path]:
    folder.mkdir(parents=True)
    path = write_case("v1-legacy", folder)
    session = Session.open(path, pi=pi)
    session.append_message(user("continued after the upgrade"))
    return [path]


def _writes_masks(folder: Path, pi: str) -> list[Path]:
    from pinb.core.compaction.masking import plan_masking, write_masks
    from pinb.testing.generate import tool_heavy_session

    # pinb compact --mask: every old result masked; then a compaction over the masked span.
    masked = tool_heavy_session(folder / "masked", turns=12, result_chars=3_000)
    session = Session.open(masked)
    write_masks(session, plan_masking(session, CompactionSettings(keep_recent_tokens=2_000)))
    compacted = tool_heavy_session(folder / "compacted", turns=12, result_chars=3_000)
    session = Session.open(compacted)
    write_masks(session, plan_masking(session, CompactionSettings(keep_recent_tokens=2_000)))
    session.append_message(user("go on"))
    session.append_message(assistant("going on"))
    compact(session, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=1_500))
    return [masked, compacted]


WRITERS: dict[str, Callable[[Path, str], list[Path]]] = {
    "conversation": _writes_a_conversation,
    "compaction": _writes_a_compaction,
    "navigation": _writes_navigation,
    "edits-and-usage": _writes_edits_and_usage,
    "masks": _writes_masks,
    "forks": _writes_forks,
    "legacy-upgrade": _writes_an_upgraded_legacy_file,
}
RELEASES = {"1.6": ("pi16", "1.6.0"), "0.58": ("pi058", "0.58.3")}


@pytest.mark.parametrize("pi", list(RELEASES))
@pytest.mark.parametrize("writer", list(WRITERS))
def test_pi_reads_what_pinb_writes(
    writer: str, pi: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if writer in ("edits-and-usage", "masks") and pi == "0.58":
        return  # context edits and usage entries are Pi 1.x's; pinb refuses them for 0.58
    fixture, version = RELEASES[pi]
    reference: PiReference = request.getfixturevalue(fixture)
    files = WRITERS[writer](tmp_path / "sessions", pi)
    assert files
    for path in files:
        before = path.read_bytes()
        opened = reference.open(path)
        assert path.read_bytes() == before, f"Pi {version} rewrote {path.name}"
        session = Session.open(path, pi=pi)
        ours = json.loads(json.dumps(session.build_context().to_wire()))
        assert opened["context"] == ours, f"{writer}: Pi's context of {path.name} differs"
        if pi == "1.6":
            assert opened["sessionName"] == session.name
        found = compare(path, version, reference)
        assert not found, f"{writer} ({version}): " + "\n".join(found[:20])


def test_what_pi_refuses_pinb_refuses_to_write(pi16: PiReference, tmp_path: Path) -> None:
    """A file Pi 1.x cannot open is not continued by pinb either (nor silently repaired)."""
    path = write_case("bom-before-header", tmp_path)
    with pytest.raises(Exception, match="byte-order mark"):
        Session.open(path)
    with pytest.raises(Exception, match="not a valid pi session"):
        pi16.open(path)


# --- pinb reads what Pi writes --------------------------------------------------------------


def _message(role: str, text: str, ts: int) -> dict[str, Any]:
    if role == "assistant":
        return assistant(text, ts=ts)
    return {"role": role, "content": text, "timestamp": ts}


PI_SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "messages-and-settings": [
        {"method": "appendModelChange", "args": ["anthropic", "claude-sonnet-4-5"]},
        {"method": "appendThinkingLevelChange", "args": ["high"]},
        {"method": "appendMessage", "args": [_message("user", "Hello", 1)]},
        {
            "method": "appendMessage",
            "args": [assistant("", tool_calls=[("c", "read", {"path": "a.py"})])],
        },
        {"method": "appendMessage", "args": [tool_result("c", "read", "print('hi')")]},
        {"method": "appendCustomEntry", "args": ["ext", {"k": 1}]},
        {"method": "appendCustomMessageEntry", "args": ["note", "A note", True, {"d": 1}]},
        {"method": "appendLabelChange", "args": [{"$ref": 2}, "first"]},
        {"method": "appendSessionInfo", "args": ["Named\nby Pi "]},
        {"method": "appendMessage", "args": [_message("assistant", "Done.", 9)]},
    ],
    "branches-and-summaries": [
        {"method": "appendMessage", "args": [_message("user", "Plan", 1)]},
        {"method": "appendMessage", "args": [_message("assistant", "Three steps.", 2)]},
        {"method": "appendMessage", "args": [_message("user", "Step one", 3)]},
        {"method": "appendMessage", "args": [_message("assistant", "Done one.", 4)]},
        {"method": "branch", "args": [{"$ref": 1}]},
        {"method": "appendMessage", "args": [_message("user", "Other way", 5)]},
        {
            "method": "branchWithSummary",
            "args": [{"$ref": 1}, "Tried another way.", {"readFiles": [], "modifiedFiles": []}],
        },
        {"method": "appendMessage", "args": [_message("user", "Back again", 6)]},
        {"method": "resetLeaf", "args": []},
        {"method": "appendMessage", "args": [_message("user", "A new root", 7)]},
    ],
    "compaction-and-edits": [
        {
            "method": "appendMessage",
            "args": [
                {"role": "system", "content": "", "sections": {"base": "Be brief."}, "timestamp": 1}
            ],
        },
        {"method": "appendMessage", "args": [_message("user", "One " * 50, 2)]},
        {"method": "appendMessage", "args": [_message("assistant", "Two " * 50, 3)]},
        {"method": "appendMessage", "args": [_message("user", "Three", 4)]},
        {
            "method": "appendCompaction",
            "args": [
                "Summary of one and two.",
                {"$ref": 3},
                400,
                {"readFiles": ["a"], "modifiedFiles": []},
            ],
        },
        {"method": "appendMessage", "args": [_message("assistant", "Four", 5)]},
        {"method": "appendContextEdit", "args": [{"$ref": 5}, {"content": "Four (edited)"}]},
        {"method": "appendContextEdit", "args": [{"$ref": 3}, None]},
        {
            "method": "appendUsage",
            "args": [
                "cache_warm",
                "anthropic",
                "claude-sonnet-4-5",
                {
                    "input": 0,
                    "output": 1,
                    "cacheRead": 800,
                    "cacheWrite": 0,
                    "totalTokens": 801,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "idle",
            ],
        },
        {"method": "appendCompaction", "args": ["Keep nothing.", {"$undefined": True}, 900]},
        {"method": "appendMessage", "args": [_message("user", "Five", 6)]},
    ],
}


@pytest.mark.parametrize("script", list(PI_SCRIPTS))
def test_pinb_reads_what_pi_writes(script: str, pi16: PiReference, tmp_path: Path) -> None:
    built = pi16.build(PI_SCRIPTS[script], dir=str(tmp_path / "s"), cwd="/home/dev/proj")
    path = Path(built["file"])
    opened = pi16.open(path)
    session = Session.open(path)
    assert json.loads(json.dumps(session.build_context().to_wire())) == opened["context"]
    assert session.name == opened["sessionName"]
    # Every line Pi wrote is what pinb would write for the same value, byte for byte.
    lines = path.read_bytes().split(b"\n")
    assert serialize_line(session.header) == lines[0] + b"\n"
    for entry in session.entries:
        assert serialize_line(entry.raw) == lines[entry.line - 1] + b"\n"
    assert not compare(path, "1.6.0", pi16)
    # pinb continues the file; Pi reads the continuation as pinb sees it.
    before = path.read_bytes()
    session.append_message(user("continued by pinb"))
    assert path.read_bytes().startswith(before)
    again = pi16.open(path)
    assert again["context"] == json.loads(json.dumps(session.build_context().to_wire()))


def test_pinb_reads_pi_forks_and_branched_copies(pi16: PiReference, tmp_path: Path) -> None:
    steps = PI_SCRIPTS["messages-and-settings"] + [
        {"method": "createBranchedSession", "args": [{"$ref": 3}]},
    ]
    built = pi16.build(steps, dir=str(tmp_path / "s"), cwd="/home/dev/proj")
    branched = Path(built["file"])  # the manager now holds the branched copy
    session = Session.open(branched)
    assert (
        json.loads(json.dumps(session.build_context().to_wire())) == pi16.open(branched)["context"]
    )
    assert session.parent_session is not None
    assert not compare(branched, "1.6.0", pi16)


# --- the real pi CLI and pinb's agent continue each other --------------------------------


def test_the_pi_cli_and_pinb_continue_each_other(
    pi16: PiReference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pinb.agent import Agent
    from pinb.llm import get_model
    from pinb.testing.llm_server import LLMServer

    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    with LLMServer() as server:
        # One models.json for both: Pi reads it, and so does pinb's model registry.
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"loop": {
            "baseUrl": server.openai_base_url, "api": "openai-completions", "apiKey": "test",
            "models": [{"id": "loop-model", "contextWindow": 32000, "maxTokens": 1000}],
        }}}))  # fmt: skip
        session = Session.create(project)
        model = get_model("loop/loop-model")
        server.reply(text="pinb's first answer", usage={"input": 12, "output": 4})
        list(Agent(session, model).run("first question from pinb"))
        assert session.path is not None and session.path.exists()

        server.reply(text="Pi's answer", usage={"input": 30, "output": 5})
        done = pi_print(pi16, agent_dir, project, session.path, "second question, in the pi CLI")
        assert done.returncode == 0, done.stderr
        assert "Pi's answer" in done.stdout
        sent = json.dumps(server.requests[-1].body)
        assert "first question from pinb" in sent and "pinb's first answer" in sent

        session.refresh()  # Pi appended to the file pinb has open
        texts = [_text(m) for m in session.build_context().messages]
        assert texts[-2:] == ["second question, in the pi CLI", "Pi's answer"]

        server.reply(text="pinb again", usage={"input": 50, "output": 3})
        list(Agent(session, model).run("third question from pinb"))
        sent = json.dumps(server.requests[-1].body)
        assert "second question, in the pi CLI" in sent and "Pi's answer" in sent

        server.reply(text="Pi again", usage={"input": 70, "output": 3})
        done = pi_print(pi16, agent_dir, project, session.path, "fourth, in Pi")
        assert done.returncode == 0, done.stderr
        assert "third question from pinb" in json.dumps(server.requests[-1].body)
        assert not compare(session.path, "1.6.0", pi16)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def test_the_pi_cli_continues_a_file_pinb_masked(
    pi16: PiReference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from pinb.core.compaction.masking import MASK_PREFIX
    from pinb.testing.generate import tool_heavy_session
    from pinb.testing.llm_server import LLMServer

    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    path = tool_heavy_session(tmp_path / "sessions", turns=40, result_chars=6_000, cwd=project)
    masked = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "compact", str(path), "--mask", "--window", "64000",
         "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert masked.returncode == 0, masked.stderr
    report = json.loads(masked.stdout)
    first = Session.open(path)[report["masked"][0]["entryId"]].message
    assert first is not None
    original = first["content"][0]["text"]
    # Pi builds the same context from the masked file as pinb.
    opened = pi16.open(path)
    assert opened["context"] == json.loads(json.dumps(Session.open(path).build_context().to_wire()))
    with LLMServer() as server:
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"loop": {
            "baseUrl": server.openai_base_url, "api": "openai-completions", "apiKey": "test",
            "models": [{"id": "loop-model", "contextWindow": 64000, "maxTokens": 1000}],
        }}}))  # fmt: skip
        server.reply(text="Pi continues", usage={"input": 40_000, "output": 5})
        done = pi_print(pi16, agent_dir, project, path, "what is left to do?")
        assert done.returncode == 0, done.stderr
        assert "Pi continues" in done.stdout
        sent = json.dumps(server.requests[-1].body, ensure_ascii=False)
        assert sent.count(MASK_PREFIX) == len(report["masked"])  # Pi sent the placeholders
        assert original not in sent  # and not what they stand for
    session = Session.open(path)
    texts = [_text(m) for m in session.build_context().messages]
    assert texts[-2:] == ["what is left to do?", "Pi continues"]
    assert not compare(path, "1.6.0", pi16)
