"""Odd files and failing disks: nothing crashes, nothing is lost, everything odd is reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinb.core import CompactionSettings, Session, prepare_branch_entries, prepare_compaction
from pinb.errors import InvalidEntryError, SessionFileError
from tests.core.helpers import assistant, user
from tests.sessions import Builder, write_case


@pytest.mark.parametrize("pi", ["0.58", "1.6"])
@pytest.mark.parametrize("role", [["user"], {"a": 1}, 5, None])
def test_a_role_of_any_json_type_never_crashes_planning(pi: str, role: object) -> None:
    session = Session.in_memory("/p", pi=pi)
    for _ in range(3):
        session.append_message({"role": role, "content": "x" * 400, "timestamp": 1}, validate=False)
        session.append_message(user("y" * 400))
        session.append_message(assistant("z" * 400))
    context = session.build_context()
    assert len(context.messages) == 9
    context.to_llm()
    plan = prepare_compaction(session.path_to(), CompactionSettings(keep_recent_tokens=10), pi=pi)
    assert plan is not None and plan.messages_to_summarize
    assert len(prepare_branch_entries(session.entries, 0, pi=pi).messages) == 9


def test_structurally_wrong_lines_are_reported_with_their_line(tmp_path: Path) -> None:
    b = Builder()
    b.message(user("fine"))
    b.raw({"type": "message", "parentId": None, "timestamp": "t", "message": user("no id")})
    b.raw({"type": "message", "id": 7, "parentId": None, "timestamp": "t", "message": user("x")})
    b.raw({"type": 3, "id": "t3", "parentId": None, "timestamp": "t"})
    b.raw({"type": "message", "id": "m1", "parentId": None, "timestamp": "t"})
    b.raw(
        {"type": "message", "id": "m2", "parentId": None, "timestamp": "t", "message": {"role": []}}
    )
    b.raw({"type": "label", "id": "l1", "timestamp": "t", "targetId": "e0000001"})
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b.text())
    session = Session.open(path)
    flagged = {p.line: p.message for p in session.problems if p.kind == "malformed-entry"}
    assert sorted(flagged) == [3, 4, 5, 6, 7, 8]
    assert "no id" in flagged[3] and "non-string id" in flagged[4] and "type" in flagged[5]
    assert "no message object" in flagged[6] and "no string role" in flagged[7]
    assert "no parentId" in flagged[8]
    assert all(str(p).startswith(f"{path}:") for p in session.problems)
    assert len(session.entries) == 7  # kept, as Pi keeps them


def test_a_header_from_a_future_version_is_read_but_not_appended_to(tmp_path: Path) -> None:
    path = write_case("linear", tmp_path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 9
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    before = path.read_bytes()
    session = Session.open(path)
    assert [p.kind for p in session.problems] == ["unknown-version"]
    assert session.problems[0].line == 1
    assert len(session.build_context().messages) == 4
    with pytest.raises(SessionFileError, match="version 9"):
        session.append_message(user("more"))
    assert path.read_bytes() == before


def test_a_short_write_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """A file-size limit (or a full disk) stops the write part-way: pinb cuts it back."""
    path = write_case("linear", tmp_path)
    script = f"""
import resource, sys
from pinb.core import Session
from pinb.errors import SessionFileError
path = {str(path)!r}
session = Session.open(path)
size = len(open(path, "rb").read())
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 20, hard))
leaf = session.leaf_id
try:
    session.append_message({{"role": "user", "content": "x" * 500, "timestamp": 1}})
except SessionFileError as exc:
    print("refused:", exc)
assert session.leaf_id == leaf
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
session.append_message({{"role": "user", "content": "after", "timestamp": 2}})
"""
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=Path.cwd()
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "written" in done.stdout
    after = path.read_bytes()
    assert after.startswith(before)
    reopened = Session.open(path)
    assert reopened.problems == []
    assert reopened.entries[-1].message == {"role": "user", "content": "after", "timestamp": 2}
    assert reopened.entries[-1].parent_id == Session.open(path).entries[-2].id


def test_a_session_id_never_escapes_the_sessions_folder(tmp_path: Path) -> None:
    for bad in ("../../../escaped", "a/b", "", ".hidden", "x\x00y"):
        with pytest.raises(InvalidEntryError, match="invalid session id"):
            Session.create(tmp_path, tmp_path / "s", session_id=bad)
    fine = Session.create(tmp_path, tmp_path / "s", session_id="my-run.2")
    assert fine.path is not None and fine.path.parent == tmp_path / "s"


def test_upgrading_an_old_file_keeps_its_mode_and_its_symlink(tmp_path: Path) -> None:
    real = write_case("v1-legacy", tmp_path)
    real.chmod(0o600)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    session = Session.open(link)
    session.append_message(user("after the upgrade"))
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert (real.stat().st_mode & 0o777) == 0o600
    assert json.loads(real.read_text().splitlines()[0])["version"] == 3


def test_legacy_files_get_the_same_ids_every_time(tmp_path: Path) -> None:
    path = write_case("v1-legacy", tmp_path)
    first = [e.id for e in Session.open(path).entries]
    assert first == [e.id for e in Session.open(path).entries]
    assert len(set(first)) == len(first)
    # So an id printed once can be used again: as a leaf, and by navigation.
    session = Session.open(path)
    assert session.build_context(first[1]).messages[-1]["content"][0]["text"] == "Old answer."


def test_a_parent_loop_through_a_duplicate_id_gives_a_finite_tree(tmp_path: Path) -> None:
    b = Builder()
    b.message(user("a"))  # e0000001
    b.message(assistant("b"))  # e0000002, child of e0000001
    # A later line reuses e0000001 under e0000002: e0000001 -> e0000002 -> e0000001 ...
    b.message(user("again"), id="e0000001", parent="e0000002")
    path = tmp_path / "loop.jsonl"
    path.write_bytes(b.text())
    session = Session.open(path)
    nodes = [node for root in session.tree() for node, _ in root.walk()]
    assert len(nodes) < 10
    assert any(p.kind == "cycle" for p in session.problems)


def test_reading_never_writes_even_without_a_final_newline(tmp_path: Path) -> None:
    """Pi 1.x appends the missing newline when it opens a file; pinb only when it appends."""
    path = write_case("no-final-newline", tmp_path)
    before = path.read_bytes()
    Session.open(path).build_context()
    assert path.read_bytes() == before
    session = Session.open(path)
    session.append_message(user("next"))
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and json.loads(lines[-2])["message"]["content"] == [
        {"type": "text", "text": "next"}
    ]
    assert os.path.getsize(path) == len(before) + 1 + len(lines[-2]) + 1


@pytest.mark.parametrize(
    "line",
    [
        '{"a":"\\ud83d"}',  # a lone surrogate: JSON.parse keeps it
        '{"a":"\\ud83d\\ude00 ü"}',
        '{"a":1e400}',  # Infinity in JavaScript
        '{"a":NaN}',  # refused by JSON.parse
        '{"a":1,"a":2,"b":3}',
        '{"a":12345678901234567890123}',  # beyond 64 bits: a double, as in JavaScript
        '{"a":-0,"b":0.1,"c":9007199254740993}',
        '\ufeff{"a":1}',  # a byte-order mark is not JSON whitespace
        '{"a":1}\r',
        '{"a":"\u2028\u2029"}',
        "[" * 3000 + "]" * 3000,
        '{"a":"\\u0000"}',
    ],
)
def test_the_fast_line_parser_reads_as_json_parse(line: str) -> None:
    from pinb.core.js.wire import dumps, loads, loads_line

    try:
        exact = dumps(loads(line))
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)):
            loads_line(line.encode("utf-8", "surrogatepass"))
        return
    assert dumps(loads_line(line.encode("utf-8", "surrogatepass"))) == exact


@pytest.mark.parametrize("seed", range(12))
def test_the_kept_context_of_the_leaf_always_equals_a_fresh_build(seed: int) -> None:
    """Appends extend the leaf's context in place; it must never drift from a rebuild."""
    import random

    from pinb.core import build_session_context

    rng = random.Random(seed)
    session = Session.in_memory("/p", pi=rng.choice(["1.6", "1.6", "0.58"]))
    for step in range(80):
        ids = [e.id for e in session.entries if not e.is_navigation]
        op = rng.random()
        if op < 0.35 or not ids:
            session.append_message(
                user(f"u{step}") if rng.random() < 0.5 else assistant(f"a{step}")
            )
        elif op < 0.45:
            session.append_thinking_level_change(rng.choice(["low", "high"]))
        elif op < 0.5:
            session.append_model_change("openai", f"gpt-{step}")
        elif op < 0.55:
            session.append_custom_message("note", f"n{step}")
        elif op < 0.6:
            session.branch(rng.choice(ids))
        elif op < 0.65 and session.pi.value == "1.6.0":
            editable = [e for e in session.path_to() if e.role in ("user", "assistant")]
            if editable:
                target = rng.choice(editable).id
                session.append_context_edit(target, None if rng.random() < 0.5 else f"e{step}")
        elif op < 0.7:
            path = [e for e in session.path_to() if e.type == "message"]
            if path:
                session.append_compaction(f"s{step}", rng.choice(path).id, 10)
        elif op < 0.75:
            session.branch_with_summary(rng.choice(ids), f"summary {step}")
        elif op < 0.8:
            session.set_label(rng.choice(ids), f"l{step}")
        elif op < 0.85:
            session.reset_leaf()
        else:
            session.append_custom("state", {"n": step})
        kept = session.build_context()
        fresh = build_session_context(session.index, session.leaf_id, pi=session.pi)
        assert kept.to_wire() == fresh.to_wire(), f"seed {seed} step {step}"
        assert [id(e) for e in kept.sources] == [id(e) for e in fresh.sources]
        assert kept.to_llm() == fresh.to_llm()


def test_the_kept_context_follows_system_messages() -> None:
    from pinb.core.context.build import current_system_message

    session = Session.in_memory("/p")
    session.append_message(user("hi"))
    assert session.build_context().system_message() is None
    for step in range(3):
        session.append_message(
            {"role": "system", "content": "", "sections": {f"s{step}": "x"}, "timestamp": step},
            validate=False,
        )
        session.append_message(assistant("ok"))
        kept = session.build_context()
        assert kept.system_message() == current_system_message(kept.messages)
        assert kept.to_llm(system=False) == [m for m in kept.to_llm() if m["role"] != "system"]
