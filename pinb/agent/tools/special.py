"""Files a tool must not block on: FIFOs, devices and sockets are refused; reads are bounded.

``open()`` of a FIFO waits for a writer, ``read()`` of ``/dev/zero`` never ends, and a
thread stuck in either cannot be stopped by Ctrl-C. So the file tools open with
``O_NONBLOCK`` (which makes opening a FIFO return at once), check on the open descriptor
that it is a regular file, and read at most a given number of bytes. Files of ``/proc``
and ``/sys`` are regular files of size 0 whose reads are answered by the kernel; with
``O_NONBLOCK`` the few that would wait (``/proc/kmsg``) fail instead.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> os.mkfifo(os.path.join(folder, "pipe"))
    >>> special_kind(os.path.join(folder, "pipe"))
    'a FIFO (named pipe)'
    >>> read_regular(os.path.join(folder, "pipe"))
    Traceback (most recent call last):
    ...
    pinb.agent.tools.special.SpecialFileError: ... is a FIFO (named pipe), not a regular file: tools do not read it, as reading it could wait forever
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import IO

__all__ = ["SpecialFileError", "open_regular", "read_regular", "special_kind"]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class SpecialFileError(OSError):
    """A path that is not a regular file (FIFO, device, socket): reading it could block."""


def _kind(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is a FIFO, device or socket (links followed), else ``None``.

    Asks ``stat`` only, so it never blocks; a missing path is ``None``.
    """
    try:
        return _kind(os.stat(path).st_mode)
    except OSError:
        return None


def _refusal(path: str | os.PathLike[str], kind: str) -> SpecialFileError:
    return SpecialFileError(
        f"{os.fspath(path)} is {kind}, not a regular file: tools do not read it, as reading it "
        "could wait forever"
    )


@contextlib.contextmanager
def open_regular(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Open a regular file for reading in binary, without ever waiting on the open.

    Raises
    ------
    SpecialFileError
        ``path`` is a FIFO, a device or a socket (checked on the opened descriptor, so a
        file swapped in between cannot slip through).
    OSError
        It cannot be opened (missing, a directory, no permission).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise _refusal(path, kind)
        handle = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file, at most ``max_bytes`` of them (``None``: all).

    Raises `SpecialFileError` for FIFOs, devices and sockets, `OSError` otherwise.
    """
    with open_regular(path) as handle:
        if max_bytes is None:
            return handle.read()
        chunks: list[bytes] = []
        left = max_bytes
        while left > 0:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
