"""Forks, clones and session listing (§9), including Pi's fork-across-a-label defect (§12.5)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from pinb.core import Session
from pinb.core.file.listing import (
    list_all_sessions,
    list_sessions,
    most_recent_session,
    read_session_info,
)
from pinb.core.forks import clone_session, create_branched_session, fork_from, fork_session
from pinb.errors import InvalidEntryError
from tests.core.helpers import assistant, user
from tests.samples import CASE_FILES, LEGACY


def _session(tmp_path: Path, pi: str = "1.6") -> tuple[Session, dict[str, str]]:
    session = Session.create(tmp_path / "proj", tmp_path / "s", pi=pi)
    ids = {}
    ids["u1"] = session.append_message(user("first question")).id
    ids["a1"] = session.append_message(assistant("first answer")).id
    ids["l1"] = session.set_label(ids["u1"], "L-u1").id
    ids["u2"] = session.append_message(user("second")).id
    ids["a2"] = session.append_message(assistant("second answer")).id
    session.set_label(ids["a2"], "L-a2")
    return session, ids


def test_branched_session_copies_the_path_and_labels(tmp_path: Path) -> None:
    session, ids = _session(tmp_path, "0.58")
    fork = create_branched_session(session, ids["a1"])
    assert fork.path is not None and fork.path.exists()
    lines = [json.loads(line) for line in fork.path.read_text().splitlines()]
    assert lines[0]["parentSession"] == str(session.path)
    assert [line.get("id") for line in lines[1:3]] == [ids["u1"], ids["a1"]]
    assert lines[1] == session[ids["u1"]].raw  # copied verbatim
    assert lines[3]["type"] == "label" and lines[3]["targetId"] == ids["u1"]
    assert lines[3]["parentId"] == ids["a1"] and len(lines) == 4


def test_fork_across_a_label_v0583_defect_and_pi_1x_fix(tmp_path: Path) -> None:
    old, ids = _session(tmp_path / "old", "0.58")
    broken = create_branched_session(old, ids["a2"])
    assert [m["content"][0]["text"] for m in broken.build_context(ids["a2"]).messages] == [
        "second",
        "second answer",
    ]
    session, ids = _session(tmp_path / "new")
    fixed = create_branched_session(session, ids["a2"])
    texts = [m["content"][0]["text"] for m in fixed.build_context(ids["a2"]).messages]
    assert texts == ["first question", "first answer", "second", "second answer"]
    assert fixed.label(ids["u1"]) == "L-u1" and fixed.label(ids["a2"]) == "L-a2"
    # Pi 1.x keeps the labels' own timestamps.
    assert fixed.index.label_timestamp(ids["u1"]) == session.index.label_timestamp(ids["u1"])


def test_fork_from_a_user_message_returns_its_text(tmp_path: Path) -> None:
    session, ids = _session(tmp_path)
    new, text = fork_session(session, ids["u2"])
    assert text == "second"
    assert [e.id for e in new.entries if e.type == "message"] == [ids["u1"], ids["a1"]]
    root_fork, root_text = fork_session(session, ids["u1"])
    assert root_text == "first question" and root_fork.entries == []
    assert root_fork.parent_session == str(session.path)
    assert root_fork.path is not None and not root_fork.path.exists()  # deferred like Pi
    with pytest.raises(InvalidEntryError):
        fork_session(session, ids["a1"])


def test_clone_copies_up_to_the_leaf(tmp_path: Path) -> None:
    session, ids = _session(tmp_path)
    clone = clone_session(session)
    assert [e.id for e in clone.entries if e.type == "message"] == [
        ids["u1"],
        ids["a1"],
        ids["u2"],
        ids["a2"],
    ]


def test_fork_from_another_project_copies_everything(tmp_path: Path) -> None:
    source = tmp_path / "src.jsonl"
    shutil.copyfile(CASE_FILES["two-leaves"], source)
    new = fork_from(source, tmp_path / "other", sessions_dir=tmp_path / "out")
    assert new.cwd == str(tmp_path / "other") and new.parent_session == str(source.resolve())
    assert [e.raw for e in new.entries] == [e.raw for e in Session.open(source).entries]


def test_listing_fields_and_order(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    older = Session.create(tmp_path, folder)
    older.append_message(user("old question", ts=1_000))
    older.append_message(assistant("a", ts=2_000))
    newer = Session.create(tmp_path, folder)
    newer.append_message(user("new question", ts=5_000))
    newer.append_message(assistant("b", ts=6_000))
    newer.set_name("Named")
    (folder / "junk.jsonl").write_text("not a session\n")
    infos = list_sessions(folder)
    assert [i.id for i in infos] == [newer.id, older.id]
    assert infos[0].name == "Named" and infos[1].name is None
    assert infos[1].first_message == "old question" and infos[1].message_count == 2
    assert infos[0].modified.timestamp() == 6.0
    assert infos[1].all_messages_text == "old question a"


def test_listing_all_projects_and_most_recent(tmp_path: Path, isolated_agent_dir: Path) -> None:
    first = Session.create(tmp_path / "a")
    first.append_message(user("x"))
    first.append_message(assistant("y"))
    second = Session.create(tmp_path / "b")
    second.append_message(user("x"))
    second.append_message(assistant("y"))
    assert {i.id for i in list_all_sessions()} == {first.id, second.id}
    assert first.path is not None
    assert most_recent_session(first.path.parent) == first.path
    later = time.time() + 5
    os.utime(first.path, (later, later))
    assert Session.continue_recent(tmp_path / "a").id == first.id
    assert Session.continue_recent(tmp_path / "c").entries == []


def test_info_of_a_long_legacy_session() -> None:
    path = LEGACY["large-session.jsonl"]
    info = read_session_info(path)
    assert info is not None
    assert info.cwd == "/home/dev/project"
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert info.message_count == sum(1 for line in lines if line["type"] == "message")
    first_user = next(
        line["message"] for line in lines if line.get("message", {}).get("role") == "user"
    )
    assert info.first_message == first_user["content"][0]["text"]
