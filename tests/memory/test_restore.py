"""``pinb rm`` that rewrites nothing, ``pinb restore`` undoing it, and a conversation Pi went on with."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pinb.cli.memory import add_parser
from pinb.core.file.paths import sessions_root
from pinb.core.session import Session
from pinb.memory import MemoryStore, remove_session
from pinb.memory.sessions import SessionRemovalError, removed_sessions, restore_session


def _parent_of(path: Path) -> str | None:
    value = json.loads(path.read_bytes().split(b"\n", 1)[0]).get("parentSession")
    return value if isinstance(value, str) else None


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    import argparse

    parser = argparse.ArgumentParser(prog="pinb")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = int(args.func(args))
    return code, capsys.readouterr().out


def test_rm_rewrites_no_fork_anywhere(write_session, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "deep").mkdir(parents=True)
    x = notes / "x.jsonl"
    inner = write_session("/home/dev/proj", "iiii-in-sessions")
    inner.rename(x)  # a session kept in ~/notes
    sibling = notes / "y.jsonl"
    sibling.write_bytes(write_session("/home/dev/proj", "yyyy-sibling", parent=x).read_bytes())
    deep = notes / "deep" / "z.jsonl"
    deep.write_bytes(write_session("/home/dev/proj", "zzzz-deep", parent=x).read_bytes())
    managed = write_session("/home/dev/proj", "mmmm-managed", parent=x)
    managed.chmod(0o600)
    before = {p: (p.read_bytes(), os.stat(p)) for p in (sibling, deep, managed)}

    result = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "rm", str(x)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert not x.exists()
    after = {p: (p.read_bytes(), os.stat(p)) for p in (sibling, deep, managed)}
    for path, (data, st) in before.items():
        assert after[path][0] == data and after[path][1].st_ino == st.st_ino
    assert stat.S_IMODE(os.stat(managed).st_mode) == 0o600
    assert _parent_of(managed) == str(x)  # still names the removed file
    assert f"Fork {managed} still names it" in result.stdout
    assert f"Fork {sibling} still names it" in result.stdout
    assert str(deep) not in result.stdout  # ~/notes is not searched recursively


def test_restore_undoes_a_removal(write_session, store: MemoryStore) -> None:
    a = write_session("/home/dev/proj", "aaaa-root")
    b = write_session("/home/dev/proj", "bbbb-middle", parent=a)
    c = write_session("/home/dev/proj", "cccc-leaf", parent=b)
    b_bytes, c_bytes = b.read_bytes(), c.read_bytes()
    cited = store.save("from B", project="p", source_session=b)
    removed = remove_session(b, store=store)
    assert _parent_of(c) == str(b) and store.get(cited.id).source_deleted

    [listed] = removed_sessions()
    assert listed.original_path == b and listed.trash_path == removed.trash_path
    assert listed.forks == [c]
    restored = restore_session("bbbb-middle", store=store)

    assert b.read_bytes() == b_bytes and not removed.trash_path.exists()
    assert c.read_bytes() == c_bytes  # nothing to undo: the fork was never touched
    assert not store.get(cited.id).source_deleted and restored.memory_restored == 1
    assert removed_sessions() == []
    with pytest.raises(SessionRemovalError, match="no removed session matches"):
        restore_session(b)


def test_restore_never_overwrites_a_file_in_the_way(write_session) -> None:
    a = write_session("/home/dev/proj", "aaaa-root")
    b = write_session("/home/dev/proj", "bbbb-middle", parent=a)
    removed = remove_session(b)
    for newcomer in (b"not the removed session\n", b_header_of(a)):
        b.write_bytes(newcomer)
        with pytest.raises(SessionRemovalError, match="already exists"):
            restore_session(b)
        assert b.read_bytes() == newcomer and removed.trash_path.exists()
    b.unlink()
    restore_session(removed.trash_path)
    assert Session.open(b).problems == []


def b_header_of(path: Path) -> bytes:
    """Another session's whole file: a header, so not a continuation of the removed one."""
    return path.read_bytes()


def test_restore_takes_back_what_pi_wrote_to_the_old_path(write_session, pi16) -> None:
    """A Pi pinb could not see went on appending after `pinb rm`: nothing is lost."""
    a = write_session("/home/dev/proj", "aaaa-root")
    original = Session.open(a)
    leaf = original.leaf_id
    remove_session(a)
    # What Pi's appendFileSync leaves at the old path: entries, no header.
    more = [
        {"type": "message", "id": "pi000001", "parentId": leaf,
         "timestamp": "2025-03-01T10:05:00.000Z",
         "message": {"role": "user", "content": "and then?", "timestamp": 1}},
        {"type": "message", "id": "pi000002", "parentId": "pi000001",
         "timestamp": "2025-03-01T10:05:01.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "then this"}],
                     "api": "x", "provider": "x", "model": "x", "usage": {"input": 1,
                     "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                              "total": 0}}, "stopReason": "stop", "timestamp": 2}},
    ]  # fmt: skip
    fragment = b"".join(json.dumps(e).encode() + b"\n" for e in more)
    a.write_bytes(fragment)

    restored = restore_session(a)

    assert restored.appended == 2 and restored.kept_as is not None
    assert restored.kept_as.read_bytes() == fragment
    session = Session.open(a)
    assert session.problems == [] and session.leaf_id == "pi000002"
    assert [m["role"] for m in session.build_context().messages][-2:] == ["user", "assistant"]
    assert pi16.open(a)["leafId"] == "pi000002"  # Pi reads the restored file the same way
    assert "Added 2 line(s)" in restored.summary()


def test_restore_reports_forks_an_older_pinb_relinked(write_session) -> None:
    a = write_session("/home/dev/proj", "aaaa-root")
    b = write_session("/home/dev/proj", "bbbb-middle", parent=a)
    c = write_session("/home/dev/proj", "cccc-leaf", parent=a)  # as an older pinb left it
    removed = remove_session(b)
    note_path = removed.trash_path.with_name(removed.trash_path.name + ".removed.json")
    note = json.loads(note_path.read_text())
    note["relinked"] = [str(c)]
    note_path.write_text(json.dumps(note))
    c_bytes = c.read_bytes()
    restored = restore_session(b)
    assert restored.left_alone == [c] and c.read_bytes() == c_bytes
    assert "left as it is" in restored.summary()


def test_pinb_restore_lists_and_restores(write_session, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_session("/home/dev/proj", "aaaa-root")
    assert _cli(["restore"], capsys) == (0, "the trash is empty\n")
    assert _cli(["rm", str(a)], capsys)[0] == 0
    code, out = _cli(["restore", "--list"], capsys)
    assert code == 0 and str(a) in out
    code, out = _cli(["restore", str(a)], capsys)
    assert code == 0 and out.startswith("Restored ") and a.exists()
    assert sessions_root() in a.parents
