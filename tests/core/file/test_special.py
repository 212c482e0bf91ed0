"""Reading a named file never waits: a FIFO, a device, a socket or a folder is refused at
once, by the open itself (``pinb.core.file.special``) and so by every caller of ``Session.open``."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.core.file.listing import most_recent_session
from pinb.core.file.special import SpecialFileError, open_regular, read_regular, special_kind
from tests.core.helpers import user

#: A hang guard only: a refused FIFO answers in microseconds.
HANG_GUARD = 60.0


def _release(fifo: Path) -> None:
    """Let a reader waiting in ``open()`` of ``fifo`` go: a writer opens it, and leaves."""
    with contextlib.suppress(OSError):  # ENXIO: nobody waits
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _on_a_thread(call: Callable[[], Any], fifo: Path) -> Any:
    """``call()`` on a worker thread, which must end within the guard; what it returned or raised."""
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            done["value"] = call()
        except BaseException as exc:  # handed to the test below
            done["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    if worker.is_alive():
        _release(fifo)
        worker.join(HANG_GUARD)
        pytest.fail(f"the thread was still waiting on {fifo} after {HANG_GUARD:g}s")
    if "error" in done:
        raise done["error"]
    return done["value"]


@pytest.fixture()
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    yield path
    _release(path)


def _session_file(folder: Path) -> Path:
    session = Session.create(folder, folder)
    session.append_message(user("hello"))
    return session.require_path()


@pytest.mark.parametrize("pi", [None, "0.58"], ids=["pi-1.6", "pi-0.58"])
def test_opening_a_fifo_as_a_session_is_refused_at_once(fifo: Path, pi: str | None) -> None:
    # Pi 1.6 reads lazily (with read-ahead), v0.58.3 whole: both opens go through the check.
    with pytest.raises(SpecialFileError) as refused:
        _on_a_thread(lambda: Session.open(fifo, pi=pi), fifo)
    assert refused.value.kind == "a FIFO (named pipe)" and refused.value.path == str(fifo)
    assert str(refused.value) == (
        f"{fifo} is a FIFO (named pipe), not a regular file: pinb does not read it, as "
        "reading it could wait forever"
    )
    with pytest.raises(SpecialFileError):  # as a lenient read too
        _on_a_thread(lambda: Session.open(fifo, strict=False), fifo)


def test_a_device_a_socket_and_a_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecialFileError) as device:
        Session.open("/dev/null")
    assert device.value.kind == "a character device"
    listening = socket.socket(socket.AF_UNIX)
    sock = tmp_path / "s.jsonl"
    listening.bind(str(sock))
    try:
        with pytest.raises(SpecialFileError) as refused:  # open() itself fails: ENXIO
            Session.open(sock)
        assert refused.value.kind == "a socket" and special_kind(sock) == "a socket"
    finally:
        listening.close()
    with pytest.raises(IsADirectoryError):  # os.open takes a folder: the check refuses it
        Session.open(tmp_path)
    with pytest.raises(IsADirectoryError):
        open_regular(tmp_path)


def test_a_link_is_followed_to_a_session_and_refused_to_a_fifo(tmp_path: Path, fifo: Path) -> None:
    real = _session_file(tmp_path / "store")
    link = tmp_path / "current.jsonl"
    link.symlink_to(real)
    session = Session.open(link)
    assert session.path == link and [e.role for e in session.entries] == ["user"]
    assert read_regular(link) == real.read_bytes()
    to_fifo = tmp_path / "to-pipe.jsonl"
    to_fifo.symlink_to(fifo)
    with pytest.raises(SpecialFileError) as refused:
        _on_a_thread(lambda: Session.open(to_fifo), fifo)
    assert refused.value.kind == "a FIFO (named pipe)"


def test_read_regular_reads_at_most_what_it_is_asked(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    assert read_regular(path) == b"0123456789"
    assert read_regular(path, 4) == b"0123"
    assert read_regular(path, 0) == b""


def test_resume_skips_a_fifo_named_like_a_session(tmp_path: Path, fifo: Path) -> None:
    """``%pi resume`` reads the first line of every ``*.jsonl``: a FIFO among them is skipped."""
    real = _session_file(tmp_path)
    assert _on_a_thread(lambda: most_recent_session(tmp_path), fifo) == real


def test_a_settings_file_that_is_a_fifo_is_skipped_with_a_warning(tmp_path: Path) -> None:
    from pinb.core.file.paths import read_settings

    (tmp_path / ".pi").mkdir()
    fifo = tmp_path / ".pi" / "settings.json"
    os.mkfifo(fifo)
    try:
        with pytest.warns(UserWarning, match=f"{fifo}: settings ignored"):
            layers = _on_a_thread(lambda: read_settings(tmp_path), fifo)
    finally:
        _release(fifo)
    assert layers == []
