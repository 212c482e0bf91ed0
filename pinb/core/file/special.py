"""Files pinb must not block on: FIFOs, devices and sockets are refused; reads are bounded.

``open()`` of a FIFO waits for a writer, ``read()`` of ``/dev/zero`` never ends, and a
thread stuck in either cannot be stopped (not by Ctrl-C in a kernel, not by anything in a
Jupyter server's worker thread). So every read of a file someone named (a session file, a
file an agent tool reads) opens with ``O_NONBLOCK``, which makes opening a FIFO return at
once, checks on the open descriptor that it is a regular file, and reads at most a given
number of bytes when asked to. Files of ``/proc`` and ``/sys`` are regular files of size 0
whose reads are answered by the kernel; with ``O_NONBLOCK`` the few that would wait
(``/proc/kmsg``) fail instead. On a regular file ``O_NONBLOCK`` changes nothing.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> os.mkfifo(os.path.join(folder, "pipe"))
    >>> special_kind(os.path.join(folder, "pipe"))
    'a FIFO (named pipe)'
    >>> read_regular(os.path.join(folder, "pipe"))
    Traceback (most recent call last):
    ...
    pinb.core.file.special.SpecialFileError: ... is a FIFO (named pipe), not a regular file: pinb does not read it, as reading it could wait forever
"""

from __future__ import annotations

import errno
import io
import os
import stat

from ...errors import PinbError

__all__ = ["SpecialFileError", "open_regular", "read_regular", "special_kind"]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class SpecialFileError(PinbError, OSError):
    """A path that is not a regular file (FIFO, device, socket): reading it could block.

    A :class:`~pinb.errors.PinbError` (one line in a notebook) and an ``OSError``, as what
    ``open()`` raises for a missing file or a folder is, so a caller that handles those
    handles this too.

    Attributes
    ----------
    path:
        The path as it was given.
    kind:
        What it is (``"a FIFO (named pipe)"``, ``"a character device"``, ...).
    """

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(
            f"{os.fspath(path)} is {kind}, not a regular file: pinb does not read it, as "
            "reading it could wait forever"
        )
        self.path = os.fspath(path)
        self.kind = kind


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


def open_regular(path: str | os.PathLike[str]) -> io.FileIO:
    """Open a regular file for reading, unbuffered, without ever waiting on the open.

    Symbolic links are followed (the file they name is checked). The handle is a context
    manager; whoever holds it closes it.

    Raises
    ------
    SpecialFileError
        ``path`` is a FIFO, a device or a socket (checked on the opened descriptor, so a
        file swapped in between cannot slip through).
    IsADirectoryError
        ``path`` is a folder (which ``os.open`` itself would open).
    OSError
        It cannot be opened (missing, no permission, a loop of links).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        # A socket cannot be opened at all (ENXIO): say what it is, not "no such device".
        kind = special_kind(path) if exc.errno == errno.ENXIO else None
        if kind is not None:
            raise SpecialFileError(path, kind) from exc
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        kind = _kind(mode)
        if kind is not None:
            raise SpecialFileError(path, kind)
        handle = io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    return handle


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file, at most ``max_bytes`` of them (``None``: all).

    A kernel file with nothing to say yet (``/proc/kmsg``) reads as no bytes.

    Raises `SpecialFileError` for FIFOs, devices and sockets, `OSError` otherwise.
    """
    with open_regular(path) as handle:
        if max_bytes is None:
            return handle.readall() or b""
        chunks: list[bytes] = []
        left = max_bytes
        while left > 0:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
