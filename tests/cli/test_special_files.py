"""``pinb ls`` and ``pinb search`` beside what lies under the sessions root that is no readable
session file (looping and broken links, FIFOs, devices, folders, unreadable files): each is a
note naming it, and the answers are those without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _projects(tmp_path: Path) -> tuple[Path, Path]:
    """Two projects with sessions that hold "parser"; their session folders."""
    from pinb.core.file.paths import sessions_dir_for
    from pinb.testing.generate import SessionShape, generate_session

    folders = []
    for n, name in enumerate(("mine", "theirs")):
        project = tmp_path / name
        project.mkdir()
        folder = sessions_dir_for(project)
        for i in range(2):
            shape = SessionShape(entries=60, main_depth=40, cwd=str(project))
            generate_session(folder / f"s{i}.jsonl", shape, seed=10 * n + i)
        folders.append(folder)
    return folders[0], folders[1]


def _runs(project: Path, prefix: tuple[str, ...] = ()) -> list[subprocess.CompletedProcess[str]]:
    """``pinb search parser`` (this project), ``search --all parser`` and ``ls --all``, each
    a first run (no index yet: the scan) and a second (the index)."""
    runs = []
    for args in (("search", "parser"), ("search", "--all", "parser"), ("ls", "--all")):
        for _ in range(2):
            command = [*prefix, sys.executable, "-m", "pinb.cli", *args]
            # The timeout only guards a hang (a FIFO opened for reading would block).
            runs.append(subprocess.run(command, capture_output=True, text=True, timeout=120,
                                       cwd=project))  # fmt: skip
            assert "Traceback" not in runs[-1].stderr, runs[-1].stderr
        _forget_index()
    return runs


def _forget_index() -> None:
    """Stop the index build a first search started and remove the index: the next search
    scans again."""
    import shutil
    import time

    from pinb.analysis.searching.building import is_building
    from pinb.analysis.searching.index import default_index_path

    index = default_index_path()
    deadline = time.monotonic() + 60
    while is_building(index) and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(index.parent, ignore_errors=True)


def _notes(run: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The notes of a run's standard error, by the path each names."""
    notes = {}
    for line in run.stderr.splitlines():
        assert line.startswith("note: ") and line.endswith("; left out of listings and searches")
        path, reason = line.removeprefix("note: ").split(": ", 1)
        notes[path] = reason.removesuffix("; left out of listings and searches")
    return notes


def test_a_looping_link_in_another_projects_folder_is_a_note(tmp_path: Path) -> None:
    _, theirs = _projects(tmp_path)
    clean = _runs(tmp_path / "mine")
    assert all(run.returncode == 0 and not run.stderr for run in clean)
    assert "parser" in clean[0].stdout and "s1.jsonl" in clean[-1].stdout
    (theirs / "a.jsonl").symlink_to(theirs / "b.jsonl")
    (theirs / "b.jsonl").symlink_to(theirs / "a.jsonl")
    looped = _runs(tmp_path / "mine")
    for run, before in zip(looped, clean, strict=True):
        assert run.returncode == 0
        assert run.stdout == before.stdout  # the same hits and rows, in the same format
        assert _notes(run) == {
            str(theirs / "a.jsonl"): "a symbolic link that loops",
            str(theirs / "b.jsonl"): "a symbolic link that loops",
        }


def test_broken_links_fifos_devices_and_unreadable_files_are_notes(tmp_path: Path) -> None:
    mine, theirs = _projects(tmp_path)
    clean = _runs(tmp_path / "mine")
    root = mine.parent
    (theirs / "dangling.jsonl").symlink_to(theirs / "nowhere.jsonl")
    os.mkfifo(theirs / "pipe.jsonl")
    (theirs / "to-pipe.jsonl").symlink_to(theirs / "pipe.jsonl")
    (theirs / "zero.jsonl").symlink_to("/dev/zero")
    (theirs / "folder.jsonl").mkdir()
    (theirs / "inner").mkdir()
    (theirs / "inner" / "loop").symlink_to("..")  # a link to a folder that loops
    (root / "up").symlink_to("..")  # a project folder that is the agent folder
    (root / "gone").symlink_to(root / "nothing")
    locked = theirs / "locked.jsonl"
    locked.write_bytes((theirs / "s0.jsonl").read_bytes())
    locked.chmod(0)
    # Root reads a file of mode 0; in a user namespace of its own it is a user whose mode
    # bits count (files it owns, but no capability over them), as any user is.
    prefix = ("unshare", "--user") if os.geteuid() == 0 else ()
    odd = _runs(tmp_path / "mine", prefix)
    expected = {
        str(theirs / "dangling.jsonl"): f"a broken symbolic link (to {theirs / 'nowhere.jsonl'})",
        str(theirs / "pipe.jsonl"): "a FIFO, not a session file",
        str(theirs / "to-pipe.jsonl"): "a FIFO (through a symbolic link), not a session file",
        str(theirs / "zero.jsonl"): "a device (through a symbolic link), not a session file",
        str(theirs / "folder.jsonl"): "a folder, not a session file",
        str(root / "up"): "a link to a folder above it (a loop)",
        str(root / "gone"): f"a broken symbolic link (to {root / 'nothing'})",
        str(locked): "cannot be read (permission denied)",
    }
    for run, before in zip(odd, clean, strict=True):
        assert run.returncode == 0 and run.stdout == before.stdout
        assert _notes(run) == expected
    locked.chmod(0o644)  # readable again: listed and searched again
    again = _runs(tmp_path / "mine", prefix)
    assert str(locked) in again[-1].stdout and str(locked) not in _notes(again[-1])
