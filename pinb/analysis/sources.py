"""Which session files a source means, and opening them one by one, the unreadable noted.

:func:`open_session` is how every reader of the analysis room opens a file (the pandas and
dask frames, totals, search, retention), so they all give a version 1 file the same ids.
"""

from __future__ import annotations

import os
import random
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..core import Session
from ..core.file.listing import Skipped
from ..core.file.paths import sessions_root
from ..errors import PinbError

__all__ = [
    "Progress",
    "SessionSource",
    "SessionSources",
    "Skipped",
    "collect_rows",
    "iter_sessions",
    "open_session",
    "open_session_bytes",
    "session_paths",
    "warn_skipped",
]

#: ``progress(done, total, path)``, called after each file of a long run.
Progress = Callable[[int, int, Path], None]
#: A session given by object or by file path.
SessionSource = Session | str | os.PathLike[str]


def open_session(source: SessionSource) -> Session:
    """Open read-only; entries of version 1 files get ids drawn from a generator seeded by
    the file name, so every frame of the same file (pandas or dask) agrees on them."""
    if isinstance(source, Session):
        return source
    rng = random.Random(os.fspath(source))
    return Session.open(source, id_generator=lambda: f"{rng.getrandbits(32):08x}")


def open_session_bytes(data: bytes, name: str) -> Session:
    """:func:`open_session` for a file's bytes read from elsewhere (an fsspec URL)."""
    rng = random.Random(name)
    return Session.from_bytes(data, source=name, id_generator=lambda: f"{rng.getrandbits(32):08x}")


def session_paths(source: Any = None) -> list[Path]:
    """The session files meant by a folder, a file, a glob, or an iterable of those.

    ``None`` means every project under ``<agentDir>/sessions``. A folder is searched
    recursively for ``*.jsonl``.
    """
    if source is None:
        source = sessions_root()
    if isinstance(source, str | os.PathLike):
        path = Path(source).expanduser()
        if path.is_dir():
            return sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        if path.is_file():
            return [path]
        text = os.fspath(path)
        if any(ch in text for ch in "*?["):
            anchor = Path(text).anchor or "."
            pattern = os.path.relpath(text, anchor) if Path(text).is_absolute() else text
            return sorted(p for p in Path(anchor).glob(pattern) if p.is_file())
        return []
    return [p for item in source if not isinstance(item, Session) for p in session_paths(item)]


def _stderr_bar(done: int, total: int, path: Path) -> None:
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done == total else ""
    sys.stderr.write(f"\rsessions [{'#' * filled}{'.' * (width - filled)}] {done}/{total}{end}")
    sys.stderr.flush()


def collect_rows(
    source: Any,
    rows_of: Callable[[Session | Path], list[dict[str, Any]] | None],
    progress: bool | Progress | None = None,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """``rows_of`` every session meant by ``source`` (see :func:`sessions_frame`).

    Returns the rows, and ``(file, reason)`` for each file left out: ``rows_of`` returned
    ``None`` (not a Pi session) or raised a :class:`~pinb.errors.PinbError`, ``OSError``
    or ``ValueError``.
    """
    if isinstance(source, Session):
        source = [source]
    elif source is not None and not isinstance(source, str | os.PathLike):
        source = list(source)  # iterated twice below
    sessions = [] if source is None or isinstance(source, str | os.PathLike) else source
    items: list[Session | Path] = [s for s in sessions if isinstance(s, Session)]
    items += session_paths(source)
    total = len(items)
    report: Progress | None = progress if callable(progress) else None
    if progress is True or (progress is None and total >= 100):
        report = _stderr_bar
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for done, item in enumerate(items, start=1):
        try:
            found = rows_of(item)
        except (PinbError, OSError, ValueError) as exc:
            found, reason = None, str(exc)
        else:
            reason = "not a Pi session (no valid header)"
        if found is None:
            skipped.append((str(item), reason))
        else:
            rows.extend(found)
        if report is not None:
            report(done, total, item.path or Path() if isinstance(item, Session) else item)
    return rows, skipped


def warn_skipped(skipped: list[tuple[str, str]], *, stacklevel: int) -> None:
    """One warning naming the first of the files left out (none when nothing was)."""
    if skipped:
        example = f"{skipped[0][0]}: {skipped[0][1]}"
        warnings.warn(f"{len(skipped)} file(s) skipped, e.g. {example}", stacklevel=stacklevel)


#: A session, a file, a folder, a glob, or an iterable of those.
SessionSources = Session | str | os.PathLike[str] | Iterable[Session | str | os.PathLike[str]]


def iter_sessions(source: SessionSources, skipped: list[Skipped]) -> Iterator[Session]:
    """Every session meant by ``source`` (see :func:`session_paths`).

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
