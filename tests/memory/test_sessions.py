"""Removing a session: to the trash, never from under a writer, forks left whole, memory flagged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinb.analysis.lineage import FORK, LINKED, session_lineage
from pinb.core.file.paths import agent_dir
from pinb.core.session import Session
from pinb.memory import (
    MemoryStore,
    SessionHeldError,
    SessionRemovalError,
    find_forks,
    remove_session,
)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


@pytest.fixture
def chain(write_session, tmp_path: Path) -> dict[str, Path]:
    """A <- B <- C <- D in one project, plus E forked from B into another project."""
    a = write_session("/home/dev/proj", "aaaa-root")
    b = write_session("/home/dev/proj", "bbbb-middle", parent=a)
    # C: unknown header fields and hand-written entry formatting must survive
    c = write_session(
        "/home/dev/proj",
        "cccc-leaf",
        parent=b,
        extra_header={"metadata": {"app": "desk"}},
        tail=b'{"type": "label", "id": "cccclab1", "parentId": "ccccu001", '
        b'"timestamp": "2025-03-01T10:00:03.000Z", "targetId": "ccccu001", "label": "x"}\n',
    )
    d = write_session("/home/dev/proj", "dddd-grandchild", parent=c)
    e = write_session("/home/dev/other", "eeee-elsewhere", parent=b)
    return {"a": a, "b": b, "c": c, "d": d, "e": e}


def test_find_forks_reads_headers_across_projects(chain: dict[str, Path]) -> None:
    assert sorted(find_forks(chain["b"])) == sorted([chain["c"], chain["e"]])
    assert find_forks(chain["d"]) == []


def test_remove_middle_of_a_three_level_chain(chain: dict[str, Path], store: MemoryStore) -> None:
    a, b, c, d, e = (chain[k] for k in "abcde")
    cited = store.save("from B", project="p", source_session=b, source_entry="bbbba001")
    other = store.save("from A", project="p", source_session=a, source_entry="aaaaa001")
    before = {path: (path.read_bytes(), os.stat(path).st_ino) for path in (c, d, e)}

    removed = remove_session(b)

    # B is in the trash, not destroyed, with a note saying where it came from
    assert not b.exists()
    assert removed.trash_path.is_file()
    assert removed.trash_path.is_relative_to(agent_dir() / "trash")
    assert removed.trash_path.read_bytes().startswith(b'{"type":"session"')
    note = json.loads(
        removed.trash_path.with_name(removed.trash_path.name + ".removed.json").read_text()
    )
    assert note["originalPath"] == str(b) and note["parentSession"] == str(a)
    assert sorted(note["forks"]) == sorted([str(c), str(e)])
    assert sorted(removed.forks) == sorted([c, e])

    # No fork is rewritten (Pi may be appending to one): same bytes, same inode.
    assert {path: (path.read_bytes(), os.stat(path).st_ino) for path in (c, d, e)} == before
    # Their lineage follows the note into the trash: what parentSession named is found.
    for fork in (c, e):
        lineage = session_lineage(Session.open(fork))
        assert lineage.parent_session == str(removed.trash_path)
        assert lineage.relation in (LINKED, FORK) and "in the trash" in lineage.note
        assert lineage.root_session == str(a)  # and on through the removed file's own parent
    assert session_lineage(Session.open(d)).root_session == str(a)

    # memory records citing B keep their text and know the source is gone
    assert removed.memory_marked == 1 and removed.memory_error is None
    assert store.get(cited.id).source_deleted and store.get(cited.id).text == "from B"
    assert not store.get(other.id).source_deleted
    assert f"Fork {c} still names it" in removed.summary()


def test_removing_the_same_name_twice_keeps_both(chain: dict[str, Path], write_session) -> None:
    removed = remove_session(chain["a"])
    assert removed.parent_session is None and removed.forks == [chain["b"]]
    again = write_session("/home/dev/proj", "aaaa-root")
    assert again == chain["a"]
    second = remove_session(again)
    assert second.trash_path != removed.trash_path
    assert second.trash_path.exists() and removed.trash_path.exists()


_HOLD = """
import sys, time
from pathlib import Path
from pinb.core.file.writers import SessionHold, TurnLock
what, path = sys.argv[1], Path(sys.argv[2])
if what == "hold":
    SessionHold(path, "a notebook kernel (its current session)").acquire()
else:
    TurnLock(path, "pinb's agent").acquire()
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("how", ["hold", "turn", "argv"])
def test_rm_refuses_a_session_someone_holds_and_says_who(chain: dict[str, Path], how: str) -> None:
    b = chain["b"]
    if how == "argv":  # what `pi --session FILE` in a terminal looks like from outside
        argv = [sys.executable, "-c", "import time; print('held', flush=True); time.sleep(120)",
                "--session", str(b)]  # fmt: skip
    else:
        argv = [sys.executable, "-c", _HOLD, how, str(b)]
    holder = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(SessionHeldError) as caught:
            remove_session(b, timeout=0.2)
        message = str(caught.value)
        assert f"pid {holder.pid}" in message
        expected = {"hold": "a notebook kernel", "turn": "(pinb's agent, pid",
                    "argv": "a process naming this file"}[how]  # fmt: skip
        assert expected in message
        assert b.exists() and not (agent_dir() / "trash").exists()
    finally:
        holder.kill()
        holder.wait()
    # A dead holder holds nothing: its mark is taken over (or tidied away).
    removed = remove_session(b)
    assert removed.trash_path.exists() and not b.exists()
    if how == "hold":
        assert not list((b.parent / ".pinb-locks").glob("*.open"))


def test_refuses_files_that_are_not_sessions(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": "world"}\n')
    with pytest.raises(SessionRemovalError, match="refusing"):
        remove_session(notes)
    assert notes.read_text() == '{"hello": "world"}\n'
    with pytest.raises(SessionRemovalError, match="no such"):
        remove_session(tmp_path / "missing.jsonl")


def test_memory_problems_do_not_undo_a_removal(chain: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"x" * 4096)
    removed = remove_session(chain["d"], store=MemoryStore(broken))
    assert removed.trash_path.exists() and not chain["d"].exists()
    assert removed.memory_error and "damaged" in removed.memory_error
