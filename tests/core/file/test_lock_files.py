"""Lock and mark files cannot be turned against the user: what a repository or another user
puts where a lock goes is refused in one line and left intact, the fallback folder is
private, nothing is left beside the user's files, and removing lock files keeps turns
exclusive."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pinb.core import Session
from pinb.core.file.lock_files import LOCK_FOLDER, LockFileRefusedError
from pinb.core.file.paths import sessions_root
from pinb.core.file.writers import SessionHold, TurnLock, holders

from ..helpers import assistant, user

NOBODY = 65534


def _env() -> dict[str, str]:
    """This process's environment as it is now (the test's agent folder, temp folder)."""
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def _session(folder: Path) -> Path:
    """A session file in ``folder`` that no pinb has written there yet: written in the
    agent's sessions folder (where lock files stay, and no private folder of kept turns is
    made), then moved, as a user who has not run pinb on it has it."""
    folder.mkdir(parents=True, exist_ok=True)
    scratch = sessions_root() / "--scratch--"
    scratch.mkdir(parents=True, exist_ok=True)
    session = Session.create("/proj", scratch)
    session.append_message(user("first"))
    session.append_message(assistant("one"))
    written = session.require_path()
    return Path(shutil.move(written, folder / written.name))


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own, shared like /tmp (mode 1777), where the fallback
    lock folder goes (here and in the processes the test starts); no $XDG_RUNTIME_DIR."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return folder


def _read_only_session(tmp_path: Path) -> Path:
    """A session in a folder whose mode says read-only: its locks go to the fallback."""
    path = _session(tmp_path / "shared")
    path.parent.chmod(0o555)
    return path


def _key(path: Path) -> str:
    info = os.stat(path)
    return f"{info.st_dev}-{info.st_ino}"


def _as_nobody(script: str, cwd: Path) -> None:
    """Run ``script`` (sh) as the user nobody, in ``cwd``: what another local user does."""
    result = subprocess.run(
        ["/bin/sh", "-c", script],
        cwd=cwd,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


# -- what a repository ships beside its session -------------------------------------------------


def test_a_shipped_link_in_place_of_the_turn_lock_leaves_the_notebook_intact(
    tmp_path: Path,
) -> None:
    """A repository with ``.pinb-locks/x.jsonl.turn -> ../analysis.ipynb``: the append is
    refused in one line naming the link, and the notebook and the session keep every byte."""
    repo = tmp_path / "repo"
    path = _session(repo)
    notebook = repo / "analysis.ipynb"
    notebook.write_text(json.dumps({"cells": [{"source": "print('my work')"}]}))
    before = notebook.read_bytes()
    (repo / LOCK_FOLDER).mkdir()
    link = repo / LOCK_FOLDER / f"{path.name}.turn"
    link.symlink_to("../analysis.ipynb")
    session_before = path.read_bytes()
    with pytest.raises(LockFileRefusedError) as caught:
        Session.open(path).append_message(user("again"))
    message = _one_line(caught.value)
    assert message.startswith(f"{link}: ") and "symbolic link" in message
    assert "remove it" in message
    assert notebook.read_bytes() == before
    assert path.read_bytes() == session_before and link.is_symlink()
    # The command line says the same in one line, without a traceback.
    first = str(Session.open(path).entries[0].id)
    cli = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "goto", str(path), first],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert cli.returncode != 0 and "Traceback" not in cli.stderr
    assert cli.stderr.strip().splitlines() == [cli.stderr.strip()]
    assert str(link) in cli.stderr and "symbolic link" in cli.stderr
    assert notebook.read_bytes() == before and path.read_bytes() == session_before


@pytest.mark.parametrize("kind", ["a symbolic link", "a file"])
def test_a_lock_folder_that_is_not_a_real_folder_is_refused(tmp_path: Path, kind: str) -> None:
    repo = tmp_path / "repo"
    path = _session(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / f"{path.name}.turn"  # what the link would have had pinb truncate
    victim.write_text("someone's data\n")
    shipped = repo / LOCK_FOLDER
    if kind == "a symbolic link":
        shipped.symlink_to(elsewhere)
    else:
        shipped.write_text("a file of the repository's\n")
    with pytest.raises(LockFileRefusedError) as caught:
        Session.open(path).append_message(user("again"))
    message = _one_line(caught.value)
    assert message.startswith(f"{shipped}: ") and f"it is {kind}, not a folder" in message
    assert victim.read_text() == "someone's data\n" and sorted(elsewhere.iterdir()) == [victim]
    if kind == "a file":
        assert shipped.read_text() == "a file of the repository's\n"


@pytest.mark.parametrize("kind", ["fifo", "hard link", "another user's", "folder"])
def test_what_is_not_pinbs_own_lock_file_is_refused_and_left_as_it_is(
    tmp_path: Path, kind: str
) -> None:
    """Looked at before it is opened (a FIFO never blocks an open or a read), and through
    the descriptor after: only a regular file of this user's with one name is written."""
    repo = tmp_path / "repo"
    path = _session(repo)
    (repo / LOCK_FOLDER).mkdir()
    lock = repo / LOCK_FOLDER / f"{path.name}.turn"
    work = repo / "work.txt"
    work.write_text("the user's work\n")
    expected = {
        "fifo": "a named pipe (FIFO), not a lock file pinb made",
        "hard link": "it has 2 names (hard links)",
        "another user's": f"it belongs to another user (uid {NOBODY})",
        "folder": "it is a folder, not a lock file pinb made",
    }[kind]
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "hard link":
        os.link(work, lock)
    elif kind == "another user's":
        lock.write_text("theirs\n")
        os.chown(lock, NOBODY, NOBODY)
    else:
        lock.mkdir()
    # In a process of its own, so that a hang fails the test instead of stopping the suite.
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from pinb.core import Session
        from pinb.core.file.writers import holders
        from pinb.errors import PinbError
        path = Path(sys.argv[1])
        print(len(holders(path)))
        try:
            Session.open(path).append_message({"role": "user", "content": "x", "timestamp": 3})
        except PinbError as exc:
            print(type(exc).__name__, exc)
        """
    )
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed, refusal = done.stdout.strip().split("\n")
    assert listed == "0"  # nobody's lock: not a holder, and not removed
    assert refusal.startswith(f"LockFileRefusedError {lock}: ") and expected in refusal
    assert path.read_bytes() == before
    assert work.read_text() == "the user's work\n"
    info = os.lstat(lock)
    if kind == "fifo":
        assert stat.S_ISFIFO(info.st_mode)
    elif kind == "hard link":
        assert info.st_nlink == 2
    elif kind == "another user's":
        assert info.st_uid == NOBODY and lock.read_text() == "theirs\n"
    else:
        assert stat.S_ISDIR(info.st_mode)


# -- the fallback folder ------------------------------------------------------------------------


def test_another_users_fallback_folder_is_refused_and_the_victims_file_kept(
    tmp_path: Path, private_tmp: Path
) -> None:
    """Another local user makes ``<tmp>/pinb-locks-<uid>`` first, with a link to the
    victim's file where the victim's turn lock will go."""
    victim = tmp_path / "home" / "notes.txt"
    victim.parent.mkdir()
    victim.write_text("my notes\n")
    path = _read_only_session(tmp_path)
    root = private_tmp / f"pinb-locks-{os.geteuid()}"
    key = _key(path)
    _as_nobody(
        f"mkdir -m 777 {root.name} && mkdir -m 777 {root.name}/{key} && "
        f"ln -s {victim} {root.name}/{key}/{path.name}.turn",
        private_tmp,
    )
    assert os.lstat(root).st_uid == NOBODY
    before = path.read_bytes()
    with pytest.raises(LockFileRefusedError) as caught:
        Session.open(path).append_message(user("again"))
    message = _one_line(caught.value)
    assert message.startswith(f"{root}: ")
    assert f"it belongs to another user (uid {NOBODY})" in message
    assert victim.read_text() == "my notes\n" and path.read_bytes() == before
    # A hold says so in one warning and writes nothing either.
    with pytest.warns(UserWarning) as warned:
        hold = SessionHold(path, "a kernel").acquire()
    assert len(warned) == 1 and str(warned[0].message).startswith(f"{root}: ")
    hold.release()
    assert victim.read_text() == "my notes\n"


@pytest.mark.parametrize("where", ["the fallback folder", "the session's folder in it"])
def test_a_fallback_folder_others_may_write_in_is_refused(
    tmp_path: Path, private_tmp: Path, where: str
) -> None:
    path = _read_only_session(tmp_path)
    root = private_tmp / f"pinb-locks-{os.geteuid()}"
    root.mkdir(mode=0o700)
    loose = root if where == "the fallback folder" else root / _key(path)
    loose.mkdir(exist_ok=True)
    loose.chmod(0o777)
    with pytest.raises(LockFileRefusedError) as caught:
        TurnLock(path, "pinb's agent").acquire()
    message = _one_line(caught.value)
    assert message.startswith(f"{loose}: ") and "other users may write in it (mode 0777)" in message
    assert f"chmod 700 {loose}" in message
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o777 and list(loose.iterdir()) == []


@pytest.mark.parametrize("left", [None, 0o755])
def test_a_fallback_folder_of_ones_own_is_made_private(
    tmp_path: Path, private_tmp: Path, left: int | None
) -> None:
    """Made 0700; or, left readable by others by an older pinb (0755: nobody else could
    write in it), made 0700 before it is used."""
    path = _read_only_session(tmp_path)
    root = private_tmp / f"pinb-locks-{os.geteuid()}"
    folder = root / _key(path)
    if left is not None:
        folder.mkdir(parents=True)
        for made in (root, folder):
            made.chmod(left)
    with TurnLock(path, "pinb's agent"):
        assert (folder / f"{path.name}.turn").is_file()
        for made in (root, folder):
            info = os.lstat(made)
            assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            assert stat.S_IMODE(info.st_mode) == 0o700
    assert not (path.parent / LOCK_FOLDER).exists()  # nothing in the read-only folder


def _turn_file_seen_by_another_process(path: Path) -> list[str]:
    """Where another process finds the turn lock held: its holders (with their kind)."""
    script = (
        "import sys; from pathlib import Path; from pinb.core.file.writers import holders; "
        "import json; print(json.dumps([h.kind for h in holders(Path(sys.argv[1]))]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


@pytest.mark.parametrize("mode", [0o700, 0o755])
def test_xdg_runtime_dir_is_preferred_when_it_is_private(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir()
    runtime.chmod(mode)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    path = _read_only_session(tmp_path)
    name = f"{path.name}.turn"
    in_runtime = runtime / "pinb-locks" / _key(path) / name
    in_tmp = private_tmp / f"pinb-locks-{os.geteuid()}" / _key(path) / name
    with TurnLock(path, "pinb's agent"):
        used, unused = (in_runtime, in_tmp) if mode == 0o700 else (in_tmp, in_runtime)
        assert used.is_file() and not unused.parent.parent.exists()
        assert _turn_file_seen_by_another_process(path) == ["turn"]
    assert not used.exists()  # a session outside the sessions folder: removed once released


# -- the "held open" marks ------------------------------------------------------------------------

_HOLD_WHEN_TOLD = """
import sys
from pathlib import Path
from pinb.core.file.writers import SessionHold
print("ready", flush=True)
sys.stdin.readline()
hold = SessionHold(Path(sys.argv[1]), "a notebook kernel (its current session)").acquire()
print("held", flush=True)
sys.stdin.readline()
hold.release()
print("released", flush=True)
"""


def test_a_mark_is_never_written_through_what_is_at_its_name(tmp_path: Path) -> None:
    """Links, a FIFO and another user's file at the names a kernel's next marks would take
    are left as they are; the kernel marks its hold under a name of its own."""
    repo = tmp_path / "repo"
    path = _session(repo)
    work = repo / "analysis.ipynb"
    work.write_text("my work\n")
    folder = repo / LOCK_FOLDER
    folder.mkdir()
    kernel = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WHEN_TOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert kernel.stdin is not None and kernel.stdout is not None
        assert kernel.stdout.readline() == "ready\n"
        planted = [folder / f"{path.name}.{kernel.pid}-{n}.open" for n in (1, 2, 3)]
        planted[0].symlink_to("../analysis.ipynb")
        os.mkfifo(planted[1])
        planted[2].write_text("theirs\n")
        os.chown(planted[2], NOBODY, NOBODY)
        kernel.stdin.write("\n")
        kernel.stdin.flush()
        assert kernel.stdout.readline() == "held\n"
        held = [h for h in holders(path) if h.kind != "process"]  # not its command line
        assert [(h.kind, h.pid) for h in held] == [("open", kernel.pid)]
        own = folder / f"{path.name}.{kernel.pid}-4.open"
        assert own.is_file() and not own.is_symlink()
        kernel.stdin.write("\n")
        kernel.stdin.flush()
        assert kernel.stdout.readline() == "released\n"
        assert kernel.wait(timeout=60) == 0
    finally:
        kernel.kill()
        kernel.wait()
    assert work.read_text() == "my work\n"
    assert planted[0].is_symlink() and stat.S_ISFIFO(os.lstat(planted[1]).st_mode)
    assert planted[2].read_text() == "theirs\n" and not own.exists()


def test_a_mark_in_a_linked_lock_folder_is_refused_in_one_warning(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    path = _session(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / LOCK_FOLDER).symlink_to(elsewhere)
    with pytest.warns(UserWarning) as warned:
        hold = SessionHold(path, "a kernel").acquire()
    assert len(warned) == 1
    text = str(warned[0].message)
    assert "\n" not in text and text.startswith(f"{repo / LOCK_FOLDER}: ")
    assert "symbolic link" in text and "`pinb rm` cannot see" in text
    assert list(elsewhere.iterdir()) == []
    hold.release()


# -- nothing left beside the user's files ----------------------------------------------------------


def test_nothing_is_left_beside_a_session_outside_the_sessions_folder(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    path = _session(notes)
    assert sorted(p.name for p in notes.iterdir()) == [path.name]  # after a turn
    session = Session.open(path)
    with session.turn("pinb's agent"):
        assert (notes / LOCK_FOLDER / f"{path.name}.turn").is_file()  # taken beside the file
        session.append_message(user("in a turn"))
    with SessionHold(path, "a kernel"):
        assert len(list((notes / LOCK_FOLDER).glob("*.open"))) == 1
    assert sorted(p.name for p in notes.iterdir()) == [path.name]
    # pinb rm: the file goes to the trash; no lock folder stays where it was.
    parent = notes / "parent.jsonl"
    path.rename(parent)
    cli = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "rm", str(parent)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert list(notes.iterdir()) == []


def test_a_dead_writers_turn_file_outside_the_sessions_folder_is_tidied(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    path = _session(notes)
    script = (
        "import sys, time; from pathlib import Path; from pinb.core.file.writers import TurnLock; "
        "TurnLock(Path(sys.argv[1]), 'x').acquire(); print('in', flush=True); time.sleep(120)"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True, env=_env()
    )
    assert other.stdout is not None and other.stdout.readline() == "in\n"
    other.kill()
    other.wait()
    assert (notes / LOCK_FOLDER / f"{path.name}.turn").is_file()  # it died holding it
    assert holders(path) == []
    assert sorted(p.name for p in notes.iterdir()) == [path.name]


def test_lock_files_stay_in_the_sessions_folder(tmp_path: Path) -> None:
    """pinb's and Pi's own folder keeps them (a long-running older pinb may wait on one)."""
    session = Session.create("/proj")
    session.append_message(user("first"))
    session.append_message(assistant("one"))  # the first write made the file: this one locks
    path = session.require_path()
    kept = path.parent / LOCK_FOLDER / f"{path.name}.turn"
    assert kept.is_file()
    assert [h for h in holders(path) if h.kind == "turn"] == [] and kept.is_file()


# -- removing lock files keeps turns exclusive -----------------------------------------------------

_RACER = """
import os, random, sys, time
from pathlib import Path
from pinb.core.file.writers import TurnLock
session, inside, turns = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
while not inside.with_name("go").exists():
    time.sleep(0.001)
both = 0
for _ in range(turns):
    with TurnLock(session, "a racer", wait=120):
        try:
            fd = os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            both += 1  # someone else holds the turn too
            continue
        os.close(fd)
        time.sleep(0.002 + random.random() / 200)
        os.unlink(inside)
print(both, flush=True)
"""

_TIDIER = """
import sys, time
from pathlib import Path
from pinb.core.file.writers import holders
session, stop = Path(sys.argv[1]), Path(sys.argv[2])
looks = 0
while not stop.exists():
    holders(session)  # tidies free turn files away, as pinb rm --dry-run does
    looks += 1
print(looks, flush=True)
"""


def test_two_writers_never_hold_the_turn_at_once_while_lock_files_are_removed(
    tmp_path: Path,
) -> None:
    """Each release removes the turn file (a session outside the sessions folder) and a
    third process tidies free ones away; a writer that waited on a removed file locks
    the one that has the name instead, so no two writers are ever in a turn together."""
    path = _session(tmp_path / "notes")
    inside, stop = tmp_path / "inside", tmp_path / "stop"
    turns = 150
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(path), str(inside), str(turns)],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for _ in range(3)
    ]
    tidier = subprocess.Popen(
        [sys.executable, "-c", _TIDIER, str(path), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        time.sleep(1)  # every racer is waiting for the start
        (tmp_path / "go").touch()
        together = [int(r.communicate(timeout=600)[0]) for r in racers]
        assert [r.returncode for r in racers] == [0, 0, 0]
        stop.touch()
        looks = int(tidier.communicate(timeout=120)[0])
    finally:
        for process in (*racers, tidier):
            process.kill()
            process.wait()
    assert together == [0, 0, 0]
    assert looks > 0
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_lock_folder_tidied_away_while_a_writer_looks_never_sends_it_elsewhere(
    tmp_path: Path,
) -> None:
    """Writers tidy the empty ``.pinb-locks`` away and make it again all the time; one that
    looks at the folder just as it goes finds it again, and never takes the fallback folder
    instead (there it would hold the turn while another writer held it here)."""
    import threading

    from pinb.core.file.lock_files import open_lock_folder

    path = _session(tmp_path / "notes")
    beside = path.parent / LOCK_FOLDER
    stop = threading.Event()

    def tidy() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.mkdir(beside)
            with contextlib.suppress(OSError):
                os.rmdir(beside)

    tidier = threading.Thread(target=tidy)
    tidier.start()
    elsewhere = []
    try:
        for _ in range(20_000):
            try:
                folder = open_lock_folder(path)
            except FileNotFoundError:
                continue  # it kept disappearing: said, and nowhere else taken
            if folder.path != beside:
                elsewhere.append(folder.path)
            folder.close()
    finally:
        stop.set()
        tidier.join()
    assert elsewhere == []
