"""Removing a session: to the trash, forks relinked to its parent atomically, memory flagged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pinb.core.paths import agent_dir
from pinb.core.session import Session
from pinb.memory import MemoryStore, SessionRemovalError, find_forks, remove_session
from pinb.memory.sessions import relink_parent


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
    c_before, d_before = _lines(c), d.read_bytes()
    c_inode = os.stat(c).st_ino
    c_entries = [entry.raw for entry in Session.open(c).entries]

    removed = remove_session(b)

    # B is in the trash, not destroyed, with a note saying where it came from
    assert not b.exists()
    assert removed.trash_path.is_file()
    assert removed.trash_path.is_relative_to(agent_dir() / "trash")
    assert removed.trash_path.read_bytes().startswith(b'{"type":"session"')
    note = json.loads(removed.trash_path.with_name(removed.trash_path.name + ".removed.json").read_text())
    assert note["originalPath"] == str(b) and note["parentSession"] == str(a)
    assert sorted(removed.relinked) == sorted([c, e])

    # C (and E in another project) now name A; only the header line changed
    c_after = _lines(c)
    header = json.loads(c_after[0])
    assert header["parentSession"] == str(a)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession", "metadata"]
    assert header["metadata"] == {"app": "desk"}
    assert c_after[1:] == c_before[1:]
    assert json.loads(_lines(e)[0])["parentSession"] == str(a)
    # written atomically: a new inode from the rename, no temp file left behind
    assert os.stat(c).st_ino != c_inode
    assert not [p for p in c.parent.iterdir() if "pinb-tmp" in p.name]
    # C still opens, its entries unchanged; D (a grandchild) untouched
    reopened = Session.open(c)
    assert reopened.parent_session == str(a)
    assert [entry.raw for entry in reopened.entries] == c_entries
    assert reopened.problems == []
    assert d.read_bytes() == d_before

    # memory records citing B keep their text and know the source is gone
    assert removed.memory_marked == 1 and removed.memory_error is None
    assert store.get(cited.id).source_deleted and store.get(cited.id).text == "from B"
    assert not store.get(other.id).source_deleted
    assert "Relinked fork" in removed.summary()


def test_removing_a_root_drops_the_field(chain: dict[str, Path], write_session) -> None:
    removed = remove_session(chain["a"])
    assert removed.parent_session is None and removed.relinked == [chain["b"]]
    header = json.loads(_lines(chain["b"])[0])
    assert "parentSession" not in header
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert Session.open(chain["b"]).parent_session is None
    # the same name removed twice: the first copy in the trash is kept
    again = write_session("/home/dev/proj", "aaaa-root")
    assert again == chain["a"]
    second = remove_session(again)
    assert second.trash_path != removed.trash_path
    assert second.trash_path.exists() and removed.trash_path.exists()


def test_refuses_files_that_are_not_sessions(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": "world"}\n')
    with pytest.raises(SessionRemovalError, match="refusing"):
        remove_session(notes)
    assert notes.read_text() == '{"hello": "world"}\n'
    with pytest.raises(SessionRemovalError, match="no such"):
        remove_session(tmp_path / "missing.jsonl")


def test_relink_keeps_bytes_around_the_header(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    body = b'\n{"type":"message","id":"x","parentId":null,"timestamp":"t","message":{}}\r\n'
    path.write_bytes(
        b'\xef\xbb\xbf{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/",'
        b'"parentSession":"/old.jsonl"}\r' + body
    )
    relink_parent(path, "/new.jsonl")
    assert path.read_bytes() == (
        b'\xef\xbb\xbf{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/",'
        b'"parentSession":"/new.jsonl"}\r' + body
    )


def test_memory_problems_do_not_undo_a_removal(chain: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"x" * 4096)
    removed = remove_session(chain["d"], store=MemoryStore(broken))
    assert removed.trash_path.exists() and not chain["d"].exists()
    assert removed.memory_error and "damaged" in removed.memory_error
