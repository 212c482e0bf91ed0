"""Many writers on one file: every turn continues from the file's leaf, turns never interleave,
a torn line is never continued, and a file that moved or cannot be written is one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.core.file.lock_files import record_folder
from pinb.core.file.writers import SessionBusyError, holders
from pinb.errors import SessionFileError
from pinb.memory import remove_session
from tests.pi.reference import PiReference

from ..helpers import assistant, user


def _pi_appends(pi: PiReference, path: Path, *texts: str) -> list[str]:
    """Pi's own SessionManager opens the file (leaf: its last entry) and appends a turn."""
    steps = []
    for i, text in enumerate(texts):
        steps.append({"method": "appendMessage", "args": [user(f"{text}?", ts=100 + i)]})
        steps.append({"method": "appendMessage", "args": [assistant(f"{text}!", ts=101 + i)]})
    built = pi.build(steps, path.parent, "/proj", create={"mode": "open", "path": str(path)})
    return [str(r) for r in built["results"]]


def _started(tmp_path: Path) -> Session:
    session = Session.create("/proj", tmp_path)
    session.append_message(user("first"))
    session.append_message(assistant("one"))
    return session


def _parents(session: Session) -> dict[str, Any]:
    return {str(e.id): e.parent_id for e in session.entries}


def test_a_turn_continues_after_what_pi_appended_meanwhile(
    tmp_path: Path, pi16: PiReference
) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    terminal = _pi_appends(pi16, path, "from the terminal")
    with session.turn("pinb's agent") as turn:
        mine = session.append_message(user("from the kernel"))
    assert mine.parent_id == terminal[-1]  # not the kernel's old leaf
    assert [e.id for e in turn.caught_up] == terminal
    assert "read 2 entries another program (not pinb: e.g. pi in a terminal) appended" in str(
        turn.start_note()
    )
    # Pi resumes where pinb does, and both see one unbranched conversation.
    reopened = pi16.open(path)
    assert reopened["leafId"] == mine.id
    texts = [m["content"][0]["text"] for m in reopened["context"]["messages"]]
    assert texts == ["first", "one", "from the terminal?", "from the terminal!", "from the kernel"]


def test_a_single_write_outside_a_turn_follows_the_file_too(
    tmp_path: Path, pi16: PiReference
) -> None:
    session = _started(tmp_path)
    terminal = _pi_appends(pi16, session.require_path(), "a")
    name = session.set_name("named")
    assert name.parent_id == terminal[-1]


def test_bookkeeping_after_a_move_still_follows_the_file(tmp_path: Path, pi16: PiReference) -> None:
    """goto, then a label: the file's last entry is the label; Pi's next turn hangs off it."""
    session = _started(tmp_path)
    first = session.entries[0].id
    session.branch(str(first))
    session.set_label(str(first), "here")
    terminal = _pi_appends(pi16, session.require_path(), "after the label")
    reply = session.append_message(assistant("kernel"))
    assert reply.parent_id == terminal[-1]


def test_an_explicit_move_in_memory_wins_over_what_others_appended(
    tmp_path: Path, pi16: PiReference
) -> None:
    session = _started(tmp_path)
    first = str(session.entries[0].id)
    session.branch(first, persist=False)  # the user chose this point; the file does not say it
    _pi_appends(pi16, session.require_path(), "elsewhere")
    mine = session.append_message(assistant("from here"))
    assert mine.parent_id == first


def test_what_pi_appends_during_a_turn_is_followed_only_where_it_continues_the_turn(
    tmp_path: Path, pi16: PiReference
) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    with session.turn() as turn:
        asked = session.append_message(user("kernel asks"))
        meanwhile = _pi_appends(pi16, path, "meanwhile")  # Pi takes no lock: off `asked`
        answered = session.append_message(assistant("kernel answers"))
        late = _pi_appends(pi16, path, "late")  # Pi opens after the answer: continues it
    assert answered.parent_id == asked.id  # the turn's own chain, whatever Pi wrote
    assert [e.id for e in turn.others] == meanwhile + late
    assert [e.id for e in turn.side] == meanwhile and [e.id for e in turn.continued] == late
    assert session.leaf_id == late[-1]
    note = str(turn.end_note())
    assert "continued this turn with 2 entries" in note and f"`%pi goto {meanwhile[-1]}`" in note
    assert pi16.open(path)["leafId"] == late[-1] == Session.open(path).leaf_id


def _line(entry_id: str, parent: Any, text: str) -> bytes:
    entry = {"type": "message", "id": entry_id, "parentId": parent,
             "timestamp": "2026-01-01T00:00:00.000Z", "message": user(text)}  # fmt: skip
    return json.dumps(entry).encode() + b"\n"


def test_a_stale_pi_that_appends_after_the_turn_is_left_on_a_branch_of_its_own(
    tmp_path: Path, pi16: PiReference
) -> None:
    """A Pi that read the file before the turn appends off its old leaf, after the turn."""
    session = _started(tmp_path)
    path = session.require_path()
    stale = session.leaf_id
    with session.turn() as turn:
        session.append_message(user("kernel asks"))
        answered = session.append_message(assistant("kernel answers"))
        with open(path, "ab") as handle:  # what Pi's appendFileSync writes, off its old leaf
            handle.write(_line("pistale1", stale, "stale Pi"))
    assert [e.id for e in turn.side] == ["pistale1"] and not turn.continued
    assert "`%pi goto pistale1`" in str(turn.end_note())
    # A marker makes the file resume at the turn's answer, for Pi as for pinb.
    assert Session.open(path).leaf_id == answered.id == session.leaf_id
    texts = [m["content"][0]["text"] for m in pi16.open(path)["context"]["messages"]]
    assert texts[-1] == "kernel answers" and "stale Pi" not in texts
    assert _parents(Session.open(path))["pistale1"] == stale  # whole, where Pi put it


def test_a_torn_last_line_is_closed_off_never_continued(tmp_path: Path, pi16: PiReference) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    whole = path.read_bytes()
    with open(path, "ab") as handle:  # a writer that stopped mid-line (a full disk)
        handle.write(b'{"type":"message","id":"torn0001","parentId":"x","mess')
    entry = session.append_message(user("after the crash"))
    data = path.read_bytes()
    assert data.startswith(whole + b'{"type":"message","id":"torn0001","parentId":"x","mess\n')
    assert entry.parent_id == session.entries[-2].id  # the last whole entry
    torn = [p for p in session.problems if p.kind == "torn-line"]
    assert torn and torn[0].line == whole.count(b"\n") + 1
    reopened = pi16.open(path)
    assert reopened["leafId"] == entry.id and reopened["entryCount"] == 3
    assert Session.open(path).build_context().messages == session.build_context().messages


def test_a_torn_line_is_closed_off_at_the_start_of_a_turn(tmp_path: Path) -> None:
    """Before another program's turn (the Pi engine), not only before pinb's own line."""
    session = _started(tmp_path)
    path = session.require_path()
    with open(path, "ab") as handle:
        handle.write(b'{"type":"mess')
    with session.turn():
        assert path.read_bytes().endswith(b'{"type":"mess\n')


def test_another_pinb_writer_mid_turn_is_a_clear_busy_never_a_hang(tmp_path: Path) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from pinb.core import Session
        s = Session.open(Path(sys.argv[1]))
        with s.turn("pinb's agent"):
            print("in", flush=True)
            sys.stdin.readline()
        """
    )
    other = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None and other.stdout.readline() == "in\n"
        with pytest.raises(SessionBusyError) as caught, session.turn(wait=0.3):
            pass
        # Who holds it (a plain Python program here), what it runs, its pid, in one line.
        assert caught.value.line().startswith(
            "busy: a Python process (-c) using pinb is running a turn on this session "
            f"(pinb's agent, pid {other.pid}, since "
        )
        assert "\n" not in str(caught.value)
        # The turn's holder, and (its command line names the file) the process itself.
        assert {h.kind for h in holders(path)} == {"turn", "process"}
        assert other.stdin is not None
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.wait(timeout=60) == 0
    finally:
        other.kill()
        other.wait()
    session.append_message(user("my turn now"))  # the lock is free again


def test_a_dead_writers_turn_lock_is_taken_over(tmp_path: Path) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    script = (
        "import sys, time; from pinb.core.file.writers import TurnLock; from pathlib import Path; "
        "TurnLock(Path(sys.argv[1]), 'x').acquire(); print('in', flush=True); time.sleep(120)"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert other.stdout is not None and other.stdout.readline() == "in\n"
    other.kill()
    other.wait()
    session.append_message(user("taken over"))
    assert holders(path) == []


def test_a_file_replaced_with_more_is_read_again(tmp_path: Path) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    extra = {"type": "message", "id": "aaaa0003", "parentId": str(session.leaf_id),
             "timestamp": "2026-01-01T00:00:00.000Z", "message": user("rewritten in")}  # fmt: skip
    replacement = path.with_name("tmp")
    replacement.write_bytes(path.read_bytes() + json.dumps(extra).encode() + b"\n")
    os.replace(replacement, path)  # a new inode, as a whole-file rewrite makes
    mine = session.append_message(assistant("after"))
    assert mine.parent_id == "aaaa0003"
    # Without the entries pinb had read, it is a different file: say so.
    path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")
    os.replace(path, path)  # same inode: shorter is a replacement too
    with pytest.raises(SessionFileError, match="no longer holds"):
        session.append_message(user("lost?"))


def test_a_moved_file_is_one_clear_line(tmp_path: Path) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    shutil.move(path, tmp_path / "elsewhere.jsonl")
    with pytest.raises(SessionFileError, match="the session file is gone") as caught:
        session.append_message(user("where?"))
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_file_pinb_rm_moved_says_where_it_went(tmp_path: Path) -> None:
    session = Session.create("/proj")  # in the sessions folder, where pinb rm works
    session.append_message(user("first"))
    path = session.require_path()
    removed = remove_session(path)
    with pytest.raises(SessionFileError, match="moved to the trash") as caught:
        session.append_message(user("where?"))
    assert str(removed.trash_path) in str(caught.value) and "pinb restore" in str(caught.value)


_SMALL_DISK = """
import json, os, subprocess, sys
from pathlib import Path
from pinb.core import Session
from pinb.errors import PinbError
disk = Path(sys.argv[1])
out = {}
def attempt(name, action):
    try:
        action()
        out[name] = "ok"
    except PinbError as exc:
        out[name] = str(exc)
msg = {"role": "user", "content": [{"type": "text", "text": "x" * 2000}], "timestamp": 1}
# 1. A first write on a full disk: one clear line, and no half-written file left behind.
fill = disk / "fill"
def fill_up():
    try:
        with open(fill, "ab") as handle:
            while True:
                handle.write(b"\\0" * 4096)
                handle.flush()
    except OSError:
        pass
fill_up()
first = Session.create("/proj", disk / "s")
attempt("first", lambda: first.append_message(msg))
out["left"] = sorted(p.name for p in (disk / "s").glob("*")) if (disk / "s").exists() else []
# 2. An append on a full disk leaves the file exactly as it was.
fill.unlink()
session = Session.create("/proj", disk / "t")
session.append_message(msg)
session.append_message({"role": "user", "content": "y", "timestamp": 2})
path = session.require_path()
before = path.read_bytes()
fill_up()
attempt("append", lambda: session.append_message(msg))
out["unchanged"] = path.read_bytes() == before
fill.unlink()
# 3. A read-only file system.
subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
attempt("readonly", lambda: session.append_message(msg))
cli = subprocess.run([sys.executable, "-m", "pinb.cli", "goto", str(path), str(session.entries[0].id)],
                     capture_output=True, text=True)
out["cli"] = [cli.returncode, cli.stderr + cli.stdout]
print(json.dumps(out))
"""


def test_a_full_disk_and_a_read_only_file_system_are_one_clear_line(tmp_path: Path) -> None:
    """On a real small file system (a tmpfs in a mount namespace of its own)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    script = tmp_path / "scenario.py"
    script.write_text(_SMALL_DISK)
    shell = f"mount -t tmpfs -o size=256k tmpfs {disk} && exec {sys.executable} {script} {disk}"
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", shell],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert "could not write the new session file: No space left on device" in out["first"]
    assert "disk is full" in out["first"] and out["left"] == []
    assert "could not append to the session: only " in out["append"]
    assert "written (No space left on device)" in out["append"]
    assert out["append"].endswith("nothing was recorded (is the disk full?)")
    assert out["unchanged"] is True
    assert "Read-only file system" in out["readonly"]
    code, stderr = out["cli"]
    assert code != 0 and "Read-only file system" in stderr, stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1


# -- who wrote what, and the path another writer leaves ---------------------------------------


def _appends_under(path: Path, parent: Any, *texts: str, prefix: str = "term") -> list[str]:
    """What ``pi --session FILE`` writes when it loaded the file at ``parent``: its turns
    under that old leaf, whatever was appended since (Pi keeps its leaf in memory)."""
    ids = []
    with open(path, "ab") as handle:
        for text in texts:
            for message in (user(f"{text}?"), assistant(f"{text}!")):
                entry_id = f"{prefix}{len(ids):04d}"
                entry = {"type": "message", "id": entry_id, "parentId": parent,
                         "timestamp": "2026-01-01T00:00:00.000Z", "message": message}  # fmt: skip
                handle.write(json.dumps(entry).encode() + b"\n")
                ids.append(entry_id)
                parent = entry_id
    return ids


def _turn(session: Session, text: str) -> Any:
    with session.turn("pinb's agent", role="cell", who="a notebook cell", long=True) as turn:
        session.append_message(user(text))
        session.append_message(assistant(f"{text} answered"))
    return turn


def _texts(session: Session) -> list[str]:
    return [e.message["content"][0]["text"] for e in session.path_to() if e.role == "user"]


def test_a_turn_says_which_of_its_turns_another_writers_entries_left_off_the_path(
    tmp_path: Path, pi16: PiReference
) -> None:
    """The rule: the path to where the session stood, against the path that continues."""
    session = _started(tmp_path)
    path = session.require_path()
    stale = str(session.leaf_id)  # where `pi --session` loaded the file
    for i in range(3):
        _turn(session, f"kernel {i}")
    mine = str(session.leaf_id)
    gone = [str(e.id) for e in session.path_to()][2:]
    terminal = _appends_under(path, stale, "terminal")
    turn = _turn(session, "kernel 3")
    change = turn.change
    assert change is not None
    assert change.old_leaf == mine and change.fork == stale and change.turns == 3
    assert [str(e.id) for e in change.left] == gone  # all three turns, six entries
    assert [[str(e.id) for e in a.entries] for a in change.appended] == [terminal]
    assert turn.start_note() == (
        "another program (not pinb: e.g. pi in a terminal) appended 2 entries under "
        f"{stale}, leaving 3 of your turns (6 entries) off the path (last: {mine}); "
        f"`%pi goto {mine}` goes back to them"
    )
    # The file resumes where pinb continued, for Pi as for pinb: the terminal's path.
    assert _texts(session) == ["first", "terminal?", "kernel 3"]
    assert pi16.open(path)["leafId"] == session.leaf_id
    # `%pi goto` the old leaf: the three turns are the context again, and stay so.
    session.navigate(mine)
    turn = _turn(session, "kernel 4")
    assert turn.change is None and turn.start_note() is None
    assert _texts(session) == ["first", "kernel 0", "kernel 1", "kernel 2", "kernel 4"]
    texts = [m["content"][0]["text"] for m in pi16.open(path)["context"]["messages"]]
    assert texts[-3:] == ["kernel 2 answered", "kernel 4", "kernel 4 answered"]


def test_a_change_a_label_did_not_show_is_said_by_the_next_turn(tmp_path: Path) -> None:
    """A write nobody shows (a label, `%pi name`) catches up too: it leaves the line to the
    next turn that shows its notes, never swallows it."""
    session = _started(tmp_path)
    stale = str(session.leaf_id)
    _turn(session, "kernel 0")
    mine = str(session.leaf_id)
    _appends_under(session.require_path(), stale, "terminal")
    session.set_name("named meanwhile")  # a turn of its own, whose notes no one asks for
    assert _turn(session, "next").start_note() == (
        "another program (not pinb: e.g. pi in a terminal) appended 2 entries under "
        f"{stale}, leaving 1 of your turns (2 entries) off the path (last: {mine}); "
        f"`%pi goto {mine}` goes back to them"
    )
    assert _turn(session, "and then").start_note() is None  # said once


def test_what_others_append_after_the_leaf_is_no_change_of_path(tmp_path: Path) -> None:
    session = _started(tmp_path)
    _appends_under(session.require_path(), session.leaf_id, "after")
    turn = _turn(session, "next")
    assert turn.change is None and len(turn.caught_up) == 2
    assert "continued after them" in str(turn.start_note())


_WRITER = """
import sys
from pathlib import Path
from pinb.core import Session
session = Session.open(Path(sys.argv[1]))
with session.turn("pinb's agent", role=sys.argv[2], who=sys.argv[3], long=True):
    session.append_message({"role": "user", "content": sys.argv[4], "timestamp": 5})
"""


def _pinb_turn_elsewhere(path: Path, role: str, who: str, text: str) -> None:
    """A turn of another pinb writer (the chat panel, a kernel), in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, str(path), role, who, text],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_the_turn_lock_keeps_who_wrote_each_turn_for_the_next_writer(tmp_path: Path) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    _pinb_turn_elsewhere(path, "chat", "the chat panel (analysis.chat)", "from the chat")
    assert "read 1 entry the chat panel (analysis.chat) appended to this session" in str(
        _turn(session, "a cell").start_note()
    )
    # A pinb turn, then Pi's lines after it: each named, in the order they came.
    _pinb_turn_elsewhere(path, "chat", "the chat panel (analysis.chat)", "chat again")
    _appends_under(path, Session.open(path).leaf_id, "terminal")
    note = str(_turn(session, "another cell").start_note())
    assert note == (
        "read 3 entries others (1 by the chat panel (analysis.chat), 2 by another program "
        "(not pinb: e.g. pi in a terminal)) appended to this session; this turn continued "
        "after them"
    )
    # The last turns are kept, and nobody holds the lock between turns. The session is
    # among the user's own files (not the sessions folder), so its lock file is gone and
    # the turns are in its private folder instead.
    assert not (path.parent / ".pinb-locks").exists()
    private = record_folder(path)
    try:
        lock_note = json.loads((private.path / f"{path.name}.turns").read_text())
    finally:
        private.close()
    assert set(lock_note) == {"turns"}
    kept = [(t["role"], t["who"], t["pid"]) for t in lock_note["turns"]]
    assert [k[:2] for k in kept[-4:]] == [
        ("chat", "the chat panel (analysis.chat)"),
        ("cell", "a notebook cell"),
        ("chat", "the chat panel (analysis.chat)"),
        ("cell", "a notebook cell"),
    ]
    assert kept[-1][2] == os.getpid() != kept[-2][2]


_GOTO = """
import sys
from pathlib import Path
from pinb.core import Session
session = Session.open(Path(sys.argv[1]))
with session.turn("%pi goto", role="cell", who="a notebook cell"):
    session.navigate(sys.argv[2])
"""


def test_another_writers_goto_that_moves_the_file_back_is_said_too(tmp_path: Path) -> None:
    """Nothing new on the path, only a navigation marker: who moved it, and where to."""
    session = _started(tmp_path)
    path = session.require_path()
    earlier = str(session.leaf_id)
    for i in range(2):
        _turn(session, f"kernel {i}")
    mine = str(session.leaf_id)
    done = subprocess.run(
        [sys.executable, "-c", _GOTO, str(path), earlier], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    turn = _turn(session, "after the move")
    assert turn.start_note() == (
        f"a notebook cell moved the path to {earlier}, leaving 2 of your turns (4 entries) off "
        f"the path (last: {mine}); `%pi goto {mine}` goes back to them"
    )
    assert _texts(session) == ["first", "after the move"]


def test_a_session_just_opened_is_told_what_left_the_path_pinb_last_stood_on(
    tmp_path: Path,
) -> None:
    """`pinb compact`, `%pi open`: the turn lock's record says where pinb's last turn left
    the file, and what another program appended after it took the path elsewhere."""
    session = _started(tmp_path)
    path = session.require_path()
    stale = session.leaf_id
    for i in range(2):
        _turn(session, f"kernel {i}")
    mine = str(session.leaf_id)
    _appends_under(path, stale, "terminal")
    fresh = Session.open(path)
    with fresh.turn("pinb compact") as turn:
        turn.goto = f"pinb goto {path}"
    assert turn.change is not None and turn.change.old_leaf == mine
    assert turn.start_note() == (
        f"another program (not pinb: e.g. pi in a terminal) appended 2 entries under {stale}, "
        f"leaving 2 of your turns (4 entries) off the path (last: {mine}); "
        f"`pinb goto {path} {mine}` goes back to them"
    )
    with Session.open(path).turn() as again:  # said once: that turn stood on the new path
        pass
    assert again.change is None


def test_a_turn_that_waits_on_a_model_is_busy_at_once_a_short_one_is_waited_for(
    tmp_path: Path,
) -> None:
    session = _started(tmp_path)
    path = session.require_path()
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from pinb.core import Session
        s = Session.open(Path(sys.argv[1]))
        with s.turn("pinb's agent", long=sys.argv[2] == "long"):
            print("in", flush=True)
            sys.stdin.readline()
        """
    )
    for how in ("long", "short"):
        other = subprocess.Popen(
            [sys.executable, "-c", script, str(path), how],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert other.stdout is not None and other.stdout.readline() == "in\n"
            started = time.monotonic()
            with pytest.raises(SessionBusyError), session.turn(wait=20):
                pass
            waited = time.monotonic() - started
        finally:
            other.kill()
            other.wait()
        # A model turn: no wait (20 s would only delay the same answer); a short one: the
        # whole wait, in case it ends.
        assert waited < 10 if how == "long" else waited >= 20


def test_a_goto_target_that_is_your_message_says_what_goto_does_with_it(tmp_path: Path) -> None:
    """goto on a user message stands before it and gives its text (as Pi's /tree does)."""
    session = _started(tmp_path)
    stale = session.leaf_id
    with session.turn(role="cell", who="a notebook cell"):
        asked = session.append_message(user("never answered"))
    _appends_under(session.require_path(), stale, "terminal")
    line = str(_turn(session, "next").start_note())
    assert line.endswith(
        f"(last: {asked.id}); `%pi goto {asked.id}` goes back to them (to just before that "
        "last message, whose text it gives to send again)"
    )
    assert "leaving 1 of your turns (1 entry) off the path" in line
