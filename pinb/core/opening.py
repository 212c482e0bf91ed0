"""Opening a session file a person named: the one check ``%pi open``, a chat's link and ``pinb`` commands share.

A name typed in a notebook, given on the command line or kept in a chat's link may name
anything: a file that is gone, a folder, a FIFO, a device, a file that is not a session.
:func:`open_session_file` turns each into one line that says what the file is and, with
the caller's ``hint``, what to do; nothing here ever waits on a FIFO
(:mod:`pinb.core.file.special`). A symbolic link is followed, as ``pi --session`` and
``open()`` follow it: the session is the file it names. An empty file opens as Pi reads
it (a session not written yet); whether that is enough is the caller's choice.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SessionFileError
from .file.special import SpecialFileError
from .format.target import PiLike
from .js.jsontext import visible
from .session import Session

__all__ = ["open_session_file", "session_path"]


def session_path(path: str | os.PathLike[str], base: str | os.PathLike[str] | None = None) -> Path:
    """The file a name means: ``~`` expanded, a relative name taken from ``base``.

    ``base`` is the folder the name was written in (a chat's folder for its link);
    ``None`` leaves a relative name to the working folder, as a typed path is.
    """
    target = Path(path).expanduser()
    if base is not None and not target.is_absolute():
        target = Path(base) / target
    return target


def _reason(exc: OSError) -> str:
    """Why the file cannot be read, in words that follow its name."""
    if isinstance(exc, SpecialFileError):
        return f"is {exc.kind}, not a regular file (reading it could wait forever)"
    if isinstance(exc, IsADirectoryError):
        return "is a folder, not a session file"
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return "no such file"
    if isinstance(exc, PermissionError):
        return "cannot be read (permission denied)"
    if isinstance(exc, BlockingIOError):
        return "has nothing to read now (reading it would wait)"
    return f"cannot be read ({exc.strerror or type(exc).__name__})"


def open_session_file(
    path: str | os.PathLike[str],
    *,
    base: str | os.PathLike[str] | None = None,
    hint: str = "",
    pi: PiLike | None = None,
) -> Session:
    """Open the session file a person named, or say in one line why it is none.

    The file must exist, be a regular file (links followed; a folder, FIFO, device or
    socket is refused at once), be readable, and begin with a Pi session header (Pi's
    rules: :meth:`Session.open`).

    Parameters
    ----------
    path:
        The name as given (``~`` expanded; see :func:`session_path`).
    base:
        The folder a relative name is taken from (default: the working folder).
    hint:
        What to do, added to the message after ``"; "`` (``"%pi sessions lists the
        current folder's sessions"``).
    pi:
        As for :meth:`Session.open`.

    Raises
    ------
    SessionFileError
        The file is none to open: the message names it and says why (``reason`` holds
        the why alone). :class:`~pinb.errors.InvalidHeaderError` and
        :class:`~pinb.errors.UnsupportedVersionError` as :meth:`Session.open` raises them.

    Examples
    --------
    >>> import tempfile
    >>> open_session_file(tempfile.mkdtemp(), hint="pick a .jsonl file")
    Traceback (most recent call last):
    ...
    pinb.errors.SessionFileError: /...: is a folder, not a session file; pick a .jsonl file
    """
    target = session_path(path, base)
    if "\0" in os.fspath(target):  # no system call takes it: os.open raises ValueError
        reason = "is no file name (it holds a NUL character)"
        shown = visible(os.fspath(target))
        raise SessionFileError(f"{shown}: {_with(reason, hint)}", reason=reason)
    try:
        return Session.open(target, pi=pi)
    except SessionFileError:
        raise  # no session header, Pi's version 4: one line already
    except OSError as exc:
        reason = _reason(exc)
        raise SessionFileError(_with(reason, hint), path=target, reason=reason) from exc


def _with(reason: str, hint: str) -> str:
    return f"{reason}; {hint}" if hint else reason
