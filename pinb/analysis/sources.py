"""Sessions named by a file, a folder, a glob or a list, read one by one, the unreadable noted."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..core.session import Session
from ..errors import PinbError
from .frames import open_session, session_paths

__all__ = ["SessionSources", "Skipped", "iter_sessions"]

#: A session, a file, a folder, a glob, or an iterable of those.
SessionSources = Session | str | os.PathLike[str] | Iterable[Session | str | os.PathLike[str]]


@dataclass(frozen=True)
class Skipped:
    """A source that could not be read, and why."""

    path: str
    reason: str


def iter_sessions(source: SessionSources, skipped: list[Skipped]) -> Iterator[Session]:
    """Every session meant by ``source`` (see :func:`~pinb.analysis.frames.session_paths`).

    Files that do not read as Pi sessions, and names that match no file, are appended to
    ``skipped`` with the reason; nothing is dropped silently.
    """
    if isinstance(source, Session):
        yield source
        return
    if isinstance(source, str | os.PathLike):
        paths = session_paths(source)
        if not paths:
            skipped.append(Skipped(os.fspath(source), "no session file there"))
        for path in paths:
            try:
                yield open_session(path)
            except (PinbError, OSError, UnicodeError) as exc:
                skipped.append(Skipped(str(path), str(exc) or type(exc).__name__))
        return
    for item in source:
        yield from iter_sessions(item, skipped)
