"""Fork- and sub-agent-aware accounting: copied rows are marked, copied history counted once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pinb.analysis import dask as pdask
from pinb.analysis.frames import (
    compactions_frame,
    entries_frame,
    messages_frame,
    sessions_frame,
    tool_calls_frame,
)
from pinb.analysis.lineage import FORK, LINKED, ORPHAN, ROOT, SUBAGENT, session_lineage
from pinb.analysis.totals import (
    BRANCH_RULE,
    DEDUPE_RULE,
    NO_DEDUPE_RULE,
    usage_totals,
)
from pinb.core import Session
from pinb.core.forks import clone_session, fork_session
from pinb.errors import UsageError
from pinb.testing.story import write_story_session
from tests.sessions import set_parent_session

from .builders import assistant, user


def _users(session: Session) -> list[str]:
    return [e.id for e in session.entries if e.role == "user"]


def _cost(session: Session) -> float:
    return sum(
        e.message["usage"]["cost"]["total"]
        for e in session.entries
        if e.role == "assistant" and e.message is not None
    )


def _grow(session: Session, *costs: float) -> None:
    """Append a user question and a costed answer per cost (new history, not copied)."""
    for i, cost in enumerate(costs):
        session.append_message(user(f"follow-up {i}"))
        session.append_message(assistant(f"answer {i}", total=100, cost=cost))


@pytest.fixture
def family(tmp_path: Path) -> dict[str, Session]:
    """A story session, a fork of it, a clone of it and a fork of the clone, each grown."""
    folder = tmp_path / "sessions" / "--home-dev-textstats--"
    parent = write_story_session(folder, seed=3)
    fork, _ = fork_session(parent, _users(parent)[2])
    _grow(fork, 0.5)
    clone = clone_session(parent)
    _grow(clone, 0.25, 0.125)
    grandchild = clone_session(clone)
    _grow(grandchild, 1.0)
    return {"parent": parent, "fork": fork, "clone": clone, "grandchild": grandchild}


def _path(session: Session) -> str:
    assert session.path is not None
    return str(session.path)


def test_a_fork_marks_what_it_copied_in_every_frame(family: dict[str, Session]) -> None:
    parent, fork = family["parent"], family["fork"]
    entries = entries_frame(_path(fork))
    # Everything up to the fork point is a copy; the two appended messages are not.
    assert entries.copied.tolist() == [True] * (len(entries) - 2) + [False, False]
    assert set(entries.parent_session) == {_path(parent)}
    assert set(entries.root_session) == {_path(parent)}
    assert not entries_frame(_path(parent)).copied.any()
    assert set(entries_frame(_path(parent)).root_session) == {_path(parent)}
    # The other frames agree with the entries frame, entry by entry.
    copied = dict(zip(entries.id, entries.copied, strict=True))
    messages = messages_frame(_path(fork))
    assert messages.copied.tolist() == [copied[i] for i in messages.entry_id]
    calls = tool_calls_frame(_path(fork))
    assert len(calls) > 0 and calls.copied.all()
    assert calls.copied.tolist() == [copied[i] for i in calls.entry_id]
    assert list(compactions_frame(_path(fork)).columns[-3:]) == [
        "copied",
        "parent_session",
        "root_session",
    ]


def test_sessions_frame_says_how_each_session_is_related(family: dict[str, Session]) -> None:
    frame = sessions_frame(Path(_path(family["parent"])).parent).set_index("path")
    parent, clone, grandchild = (_path(family[k]) for k in ("parent", "clone", "grandchild"))
    assert frame.loc[parent, "relation"] == ROOT and frame.loc[parent, "copied_entries"] == 0
    assert frame.loc[clone, "relation"] == FORK
    assert frame.loc[clone, "copied_entries"] == len(family["clone"].entries) - 4
    # A fork of a fork copies from its own parent and roots at the first session.
    assert frame.loc[grandchild, "parent_session"] == clone
    assert frame.loc[grandchild, "root_session"] == parent
    assert frame.loc[grandchild, "parent_session_path"] == clone  # as written


def test_copied_history_is_counted_once(family: dict[str, Session]) -> None:
    folder = Path(_path(family["parent"])).parent
    original = _cost(family["parent"])
    grown = 0.5 + 0.25 + 0.125 + 1.0
    totals = usage_totals(folder)
    assert totals.cost.sum() == pytest.approx(original + grown)
    assert totals.attrs["rule"] == DEDUPE_RULE and totals.attrs["dedupe"] is True
    # Without deduplication every file counts its copies again, as per-file sums do.
    naive = usage_totals(folder, dedupe=False)
    assert naive.attrs["rule"] == NO_DEDUPE_RULE
    assert naive.cost.sum() == pytest.approx(sessions_frame(folder).cost.sum())
    assert naive.cost.sum() > original * 3
    # Each session keeps its own new history; its copies are skipped, and counted as such.
    by_session = totals.set_index("session")
    assert by_session.loc[_path(family["parent"]), "cost"] == pytest.approx(original)
    assert by_session.loc[_path(family["clone"]), "cost"] == pytest.approx(0.375)
    assert by_session.loc[_path(family["grandchild"]), "cost"] == pytest.approx(1.0)
    assert by_session.loc[_path(family["grandchild"]), "copies_skipped"] > 0
    assert by_session.records.sum() + by_session.copies_skipped.sum() == naive.records.sum()
    # Every grouping adds up to the same deduplicated total.
    for by in ("model", "project", "day", "root", "branch", ("project", "model")):
        assert usage_totals(folder, by).cost.sum() == pytest.approx(original + grown), by
    assert usage_totals(folder, "root").root_session.tolist() == [_path(family["parent"])]


def test_each_record_counts_for_the_first_branch_that_holds_it(tmp_path: Path) -> None:
    session = Session.create("/p", tmp_path)
    session.append_message(user("start"))
    a1 = session.append_message(assistant("shared", total=10, cost=0.01)).id
    session.append_message(user("one way"))
    first_leaf = session.append_message(assistant("first", total=10, cost=0.02)).id
    session.branch(a1)
    session.append_message(user("other way"))
    second_leaf = session.append_message(assistant("second", total=10, cost=0.04)).id
    totals = usage_totals(tmp_path, "branch").set_index("branch")
    assert totals.loc[first_leaf, "cost"] == pytest.approx(0.03)  # the shared answer too
    assert totals.loc[second_leaf, "cost"] == pytest.approx(0.04)
    assert totals.records.sum() == 3
    assert totals.attrs["rule"] == f"{DEDUPE_RULE}; {BRANCH_RULE}"


def test_usage_entries_and_tool_results_count_as_pi_counts_them(tmp_path: Path) -> None:
    session = Session.create("/p", tmp_path)
    session.append_message(user("go"))
    session.append_message(assistant("calling", total=10, cost=0.01))
    usage = {"input": 5, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 6,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.2}}  # fmt: skip
    session.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "subagent",
            "isError": False,
            "content": [{"type": "text", "text": "done"}],
            "usage": usage,
            "timestamp": 2,
        }
    )
    session.append_usage("cache_warm", "anthropic", "claude-test", usage)
    totals = usage_totals(tmp_path, "model")
    assert totals.cost.sum() == pytest.approx(0.41)
    assert totals.records.sum() == 3


def test_a_missing_parent_marks_nothing_and_says_so(
    family: dict[str, Session], tmp_path: Path
) -> None:
    parent, clone = Path(_path(family["parent"])), family["clone"]
    away = tmp_path / "elsewhere" / "moved.jsonl"
    away.parent.mkdir()
    shutil.move(parent, away)
    lineage = session_lineage(Session.open(_path(clone)))
    assert lineage.relation == ORPHAN and lineage.parent_missing
    assert "not found" in lineage.note
    assert not entries_frame(_path(clone)).copied.any()
    frame = sessions_frame(parent.parent).set_index("path")
    assert frame.loc[_path(clone), "relation"] == ORPHAN
    assert pd.isna(frame.loc[_path(clone), "parent_session"])
    # The totals say which parents were not found; the copies still match the moved
    # original when it is among the sources, so nothing is counted twice.
    totals = usage_totals([parent.parent, away])
    assert (_path(clone), str(parent)) in totals.attrs["unresolved"]
    original = _cost(family["parent"])
    assert totals.cost.sum() == pytest.approx(original + 0.5 + 0.25 + 0.125 + 1.0)
    assert totals.set_index("session").loc[str(away), "cost"] == pytest.approx(original)


def test_a_parent_reference_resolves_relative_and_by_file_name(
    family: dict[str, Session],
) -> None:
    parent, clone = Path(_path(family["parent"])), Path(_path(family["clone"]))
    for reference in (
        parent.name,  # relative to the fork's folder
        f"../{parent.parent.name}/{parent.name}",
        f"/home/someone-else/.pi/agent/sessions/--p--/{parent.name}",  # another machine
    ):
        set_parent_session(clone, reference)
        lineage = session_lineage(Session.open(clone))
        assert lineage.relation == FORK, reference
        assert lineage.parent_session == str(parent)
        assert lineage.parent_reference == reference


def _strip_thinking(path: Path) -> None:
    """Rewrite a file as pi-subagents does for a forked child: signed thinking removed."""
    lines = path.read_text().splitlines()
    out = []
    for line in lines:
        value = json.loads(line)
        message = value.get("message") if isinstance(value, dict) else None
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message["content"] = [b for b in message["content"] if b.get("type") != "thinking"]
        out.append(json.dumps(value))
    path.write_text("\n".join(out) + "\n")


def test_sub_agent_sessions_in_their_parents_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    parent = write_story_session(folder, seed=5)
    stem = Path(_path(parent)).stem
    # A fresh sub-agent (pi-subagents: <folder>/<stem>/<run>/run-0/) names no parent.
    fresh = Session.create("/home/dev/textstats", folder / stem / "a1b2" / "run-0")
    fresh.append_message(user("scout the repo"))
    fresh.append_message(assistant("found it", total=50, cost=0.07))
    # A forked sub-agent (pi-subagents: <folder>/<stem>/forks/) copies the parent's path.
    forked = clone_session(parent, sessions_dir=folder / stem / "forks")
    _grow(forked, 0.3)
    _strip_thinking(Path(_path(forked)))
    frame = sessions_frame(folder).set_index("path")
    assert frame.loc[_path(fresh), "relation"] == SUBAGENT
    assert frame.loc[_path(fresh), "parent_session"] == _path(parent)
    assert frame.loc[_path(fresh), "root_session"] == _path(parent)
    assert frame.loc[_path(fresh), "copied_entries"] == 0
    assert frame.loc[_path(forked), "relation"] == SUBAGENT
    # Stripped thinking does not hide the copies: they are matched by id and time.
    assert frame.loc[_path(forked), "copied_entries"] == len(forked.entries) - 2
    totals = usage_totals(folder, "root")
    assert totals.cost.sum() == pytest.approx(_cost(parent) + 0.07 + 0.3)
    assert totals.root_session.tolist() == [_path(parent)]


def test_a_linked_session_copies_nothing(tmp_path: Path) -> None:
    parent = Session.create("/p", tmp_path)
    first = parent.append_message(user("first question")).id
    parent.append_message(assistant("first answer", total=10, cost=0.01))
    # Pi's /fork at the very first message starts an empty session naming its parent.
    child, _ = fork_session(parent, first)
    child.append_message(user("a new start"))
    lineage = session_lineage(Session.open(_path(child)))
    assert lineage.relation == LINKED and lineage.parent_session == _path(parent)
    assert lineage.copied_count(child.entries) == 0


def test_labels_a_fork_recreates_are_copies(tmp_path: Path) -> None:
    parent = write_story_session(tmp_path, seed=7)
    parent.set_label(_users(parent)[1], "milestone")
    clone = clone_session(parent)
    entries = entries_frame(_path(clone))
    labels = entries[entries.type == "label"]
    assert len(labels) >= 1 and labels.copied.all()
    assert not set(labels.id) & set(entries_frame(_path(parent)).id)  # with new ids


def test_pi_own_fork_is_marked_as_copied(pi16: Any, tmp_path: Path) -> None:
    steps = [
        {"method": "appendMessage", "args": [user("Hello")]},
        {"method": "appendMessage", "args": [assistant("Hi", total=20, cost=0.5)]},
        {"method": "appendLabelChange", "args": [{"$ref": 1}, "greeting"]},
        {"method": "appendMessage", "args": [user("More")]},
        {"method": "appendMessage", "args": [assistant("Sure", total=30, cost=0.25)]},
        {"method": "createBranchedSession", "args": [{"$ref": 4}]},
    ]
    built = pi16.build(steps, dir=str(tmp_path / "s"), cwd="/home/dev/proj")
    branched = Path(built["file"])
    entries = entries_frame(branched)
    assert entries.copied.all() and len(entries) == 5  # four messages and the label
    assert set(entries.parent_session) == {str(Session.open(branched).parent_session)}
    assert usage_totals(tmp_path / "s").cost.sum() == pytest.approx(0.75)


def test_dask_frames_mark_copies_like_pandas(family: dict[str, Session]) -> None:
    folder = Path(_path(family["parent"])).parent
    files = sorted(folder.glob("*.jsonl"))
    result = pdask.read_entries(files, files_per_partition=1).compute(scheduler="sync")
    expected = pd.concat([entries_frame(p) for p in files], ignore_index=True)
    pd.testing.assert_frame_equal(result.reset_index(drop=True), expected)
    sessions = pdask.read_sessions(files).compute(scheduler="sync")
    assert sorted(sessions.relation) == sorted([ROOT, FORK, FORK, FORK])


def test_sessions_behind_a_url_find_their_parent_there(family: dict[str, Session]) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    root = "/pinb-test-accounting"
    for session in family.values():
        fs.pipe(f"{root}/p/{Path(_path(session)).name}", Path(_path(session)).read_bytes())
    try:
        remote = pdask.read_sessions(f"memory://{root}").compute(scheduler="sync")
        # Headers name the local files; the file name finds each parent beside its fork.
        parent_url = f"memory://{root}/p/{Path(_path(family['parent'])).name}"
        assert sorted(remote.relation) == sorted([ROOT, FORK, FORK, FORK])
        assert set(remote.root_session) == {parent_url}
        local = sessions_frame(Path(_path(family["parent"])).parent)
        assert sorted(remote.copied_entries) == sorted(local.copied_entries)
    finally:
        fs.rm(root, recursive=True)


def test_bad_groupings_and_no_sessions(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown grouping"):
        usage_totals(tmp_path, "week")
    with pytest.raises(UsageError):
        usage_totals(tmp_path, ())
    empty = usage_totals(tmp_path)
    assert len(empty) == 0 and "records" in empty.columns
    (tmp_path / "junk.jsonl").write_text("not a session\n")
    with pytest.warns(UserWarning, match="1 file"):
        assert len(usage_totals(tmp_path)) == 0


def test_a_cycle_of_parents_ends_the_walk(family: dict[str, Session]) -> None:
    clone, grandchild = Path(_path(family["clone"])), Path(_path(family["grandchild"]))
    set_parent_session(clone, str(grandchild))  # clone -> grandchild -> clone
    lineage = session_lineage(Session.open(grandchild))
    assert lineage.relation == FORK and lineage.parent_session == str(clone)
    assert lineage.root_session in (str(clone), str(grandchild))
    set_parent_session(clone, str(clone))  # a session naming itself is not its own parent
    assert session_lineage(Session.open(clone)).relation == ORPHAN
