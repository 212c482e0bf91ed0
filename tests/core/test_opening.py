"""Opening a session file a person named (``pinb.core.opening``): one line for each kind of
file that is none, the name taken from the folder it was written in, ``~`` expanded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pinb.core import Session
from pinb.core.opening import open_session_file, session_path
from pinb.errors import InvalidHeaderError, SessionFileError
from tests.core.helpers import user

HINT = "%pi sessions lists the current folder's sessions"


def _session_file(folder: Path) -> Path:
    session = Session.create(folder, folder)
    session.append_message(user("hello"))
    return session.require_path()


def _refusal(path: str | Path) -> SessionFileError:
    with pytest.raises(SessionFileError) as refused:
        open_session_file(path, hint=HINT)
    return refused.value


def test_what_is_no_session_file_is_one_line_saying_what_it_is(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.jsonl")
    cases = {
        tmp_path / "gone.jsonl": "no such file",
        tmp_path / "gone" / "deeper.jsonl": "no such file",
        tmp_path: "is a folder, not a session file",
        tmp_path / "pipe.jsonl": "is a FIFO (named pipe), not a regular file (reading it could "
        "wait forever)",
        Path("/dev/zero"): "is a character device, not a regular file (reading it could wait "
        "forever)",
    }
    for path, reason in cases.items():
        refused = _refusal(path)
        assert str(refused) == f"{path}: {reason}; {HINT}"
        assert refused.reason == reason and refused.path == path


def test_a_file_that_is_no_session_keeps_its_own_message_and_says_why_in_short(
    tmp_path: Path,
) -> None:
    cases = {
        "notes.txt": (b"just some notes\nnot json either\n", "no session header on line 1"),
        "pretty.json": (b'{\n  "type": "session"\n}\n', "no session header on line 1"),
        "message.jsonl": (b'\n{"type": "message"}\n', "no session header on line 2"),
        "blank.jsonl": (b"  \n\t\n", "the file holds only whitespace, and Pi 1.x refuses it"),
    }
    for name, (data, short) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InvalidHeaderError) as refused:
            open_session_file(tmp_path / name, hint=HINT)
        assert refused.value.reason == f"not a Pi session file ({short})"
        assert str(refused.value).startswith(f"{tmp_path / name}")  # Session.open's own line
        assert "the file was left untouched" in str(refused.value)
        assert (tmp_path / name).read_bytes() == data


def test_a_name_is_taken_from_its_folder_and_home_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "chats"
    real = _session_file(folder / "sessions")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working folder holds no such file
    relative = os.path.relpath(real, folder)
    assert session_path(relative, folder) == real
    assert open_session_file(relative, base=folder).path == real
    assert _refusal(relative).path == Path(relative)  # without a base: the working folder's
    monkeypatch.setenv("HOME", str(folder))
    assert open_session_file(f"~/{relative}").path == real
    assert session_path(real, elsewhere) == real  # an absolute name stays itself


def test_a_link_to_a_session_opens_it_and_an_empty_file_opens_as_pi_reads_it(
    tmp_path: Path,
) -> None:
    real = _session_file(tmp_path / "store")
    link = tmp_path / "current.jsonl"
    link.symlink_to(real)
    assert open_session_file(link).path == link  # the name given, the file it names
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    assert _refusal(dangling).reason == "no such file"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    session = open_session_file(empty)
    assert session.entries == [] and session.loaded is not None and session.loaded.blank


def test_a_name_holding_nul_is_refused_in_one_visible_line() -> None:
    refused = _refusal("bad\0name.jsonl")
    assert str(refused) == (
        "bad\\x00name.jsonl: is no file name (it holds a NUL character); " + HINT
    )
