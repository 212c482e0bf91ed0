"""``pinb rm`` that respects modes, symlinks and folders it does not own; ``pinb restore`` undoing it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pinb.core.paths import sessions_root
from pinb.core.session import Session
from pinb.memory import MemoryStore, remove_session
from pinb.memory.cli import add_parser
from pinb.memory.restore import removed_sessions, restore_session
from pinb.memory.sessions import SessionRemovalError


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


def test_relinking_keeps_a_private_mode_and_a_symlink(write_session, tmp_path: Path) -> None:
    a = write_session("/home/dev/proj", "aaaa-root")
    b = write_session("/home/dev/proj", "bbbb-private", parent=a)
    b.chmod(0o600)
    # C lives elsewhere; the sessions folder holds a symlink to it.
    real_c = write_session("/home/dev/proj", "cccc-linked", parent=a)
    elsewhere = tmp_path / "elsewhere" / real_c.name
    elsewhere.parent.mkdir()
    real_c.rename(elsewhere)
    real_c.symlink_to(elsewhere)

    removed = remove_session(a)

    assert sorted(removed.relinked) == sorted([b, real_c])
    assert stat.S_IMODE(b.stat().st_mode) == 0o600  # was reset to 0644 before
    assert real_c.is_symlink() and os.readlink(real_c) == str(elsewhere)
    assert _parent_of(elsewhere) is None and _parent_of(b) is None
    assert Session.open(real_c).problems == []


def test_rm_outside_the_sessions_folder_rewrites_nothing_there(write_session, tmp_path: Path) -> None:
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
    before = {p: p.read_bytes() for p in (sibling, deep)}

    result = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "rm", str(x)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert not x.exists()
    assert _parent_of(managed) is None  # the fork in the sessions folder is relinked
    assert {p: p.read_bytes() for p in (sibling, deep)} == before  # nothing rewritten outside
    assert f"Fork {sibling} is outside the sessions folder" in result.stdout
    assert str(deep) not in result.stdout  # ~/notes is not searched recursively


def test_restore_undoes_a_removal(write_session, store: MemoryStore) -> None:
    a = write_session("/home/dev/proj", "aaaa-root")
    b = write_session("/home/dev/proj", "bbbb-middle", parent=a)
    c = write_session("/home/dev/proj", "cccc-leaf", parent=b)
    e = write_session("/home/dev/other", "eeee-elsewhere", parent=b)
    b_bytes = b.read_bytes()
    cited = store.save("from B", project="p", source_session=b)
    removed = remove_session(b, store=store)
    assert _parent_of(c) == str(a) and store.get(cited.id).source_deleted

    [listed] = removed_sessions()
    assert listed.original_path == b and listed.trash_path == removed.trash_path
    restored = restore_session("bbbb-middle", store=store)

    assert b.read_bytes() == b_bytes and not removed.trash_path.exists()
    assert sorted(restored.relinked) == sorted([c, e])
    assert _parent_of(c) == str(b) and _parent_of(e) == str(b)
    assert not store.get(cited.id).source_deleted and restored.memory_restored == 1
    assert removed_sessions() == []
    with pytest.raises(SessionRemovalError, match="no removed session matches"):
        restore_session(b)


def test_restore_never_overwrites_and_respects_later_edits(write_session) -> None:
    a = write_session("/home/dev/proj", "aaaa-root")
    b = write_session("/home/dev/proj", "bbbb-middle", parent=a)
    c = write_session("/home/dev/proj", "cccc-leaf", parent=b)
    removed = remove_session(b)
    newcomer = b"not the removed session\n"
    b.write_bytes(newcomer)
    with pytest.raises(SessionRemovalError, match="already exists"):
        restore_session(b)
    assert b.read_bytes() == newcomer and removed.trash_path.exists()
    b.unlink()
    # The user pointed C somewhere else meanwhile: restoring leaves that choice alone.
    from pinb.memory.sessions import relink_parent

    relink_parent(c, "/somewhere/else.jsonl")
    restored = restore_session(removed.trash_path)
    assert restored.left_alone == [c] and _parent_of(c) == "/somewhere/else.jsonl"
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
