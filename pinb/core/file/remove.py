"""Removing a session safely: to the trash, never while someone holds it, forks left whole."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import SessionFileError
from ..js.wire import JS_WHITESPACE, loads
from .paths import iso_now, sessions_root
from .read import is_valid_header, read_session_file
from .trash import NOTE_SUFFIX, trash_dir
from .writers import SessionBusyError, TurnLock, holders

__all__ = [
    "RemovedSession",
    "SessionHeldError",
    "SessionRemovalError",
    "find_forks",
    "remove_session",
    "trash_dir",
]

log = logging.getLogger("pinb.core")

#: Bytes of a file read to find its header line when scanning for forks.
_HEADER_SCAN_BYTES = 1 << 20


class SessionRemovalError(SessionFileError):
    """A session could not be removed (or restored)."""


class SessionHeldError(SessionRemovalError):
    """Someone holds the session (a kernel, the Pi engine, ``pi --session`` in a terminal):
    moving it would split what they append from the file. ``holders`` says who."""

    def __init__(self, path: Path, who: list[Any]) -> None:
        self.holders = who
        names = "; ".join(h.describe() for h in who)
        super().__init__(
            f"refusing to move it to the trash: it is in use by {names}. Close it there "
            "(`%pi new` or `%pi open` another session in a notebook, quit pi in a terminal), "
            "then remove it",
            path=path,
        )


@dataclass
class RemovedSession:
    """What :func:`remove_session` did.

    Attributes
    ----------
    path:
        Where the session file was.
    trash_path:
        Where it is now.
    parent_session:
        The removed session's own ``parentSession`` (``None`` when it had none).
    forks:
        Session files that name it as their parent. They are left as they are (pinb never
        rewrites a file another program may append to); their lineage follows the removal
        note into the trash.
    memory_marked:
        Memory records citing the session, now flagged as having lost their source.
    memory_error:
        Why the memory records could not be flagged, when they could not (the removal
        itself still happened).
    """

    path: Path
    trash_path: Path
    parent_session: str | None
    forks: list[Path] = field(default_factory=list)
    memory_marked: int = 0
    memory_error: str | None = None

    def summary(self) -> str:
        """A few lines for people: what moved where."""
        lines = [f"Moved {self.path} to {self.trash_path}"]
        for child in self.forks:
            lines.append(f"Fork {child} still names it (its lineage is kept in the trash note)")
        if self.memory_marked:
            lines.append(f"{self.memory_marked} memory record(s) now cite a deleted session")
        if self.memory_error:
            lines.append(f"Memory records were not updated: {self.memory_error}")
        return "\n".join(lines)


def first_value(path: Path) -> Any:
    """The first JSON value of a file, read as Pi reads it (blank and bad lines skipped)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_HEADER_SCAN_BYTES)
    except OSError:
        return None
    for raw in data.split(b"\n"):
        line = raw.decode("utf-8", errors="replace").strip(JS_WHITESPACE)
        if not line:
            continue
        try:
            return loads(line)
        except (ValueError, RecursionError):
            continue
    return None


def _names_file(reference: str, target: Path, base: Path) -> bool:
    """Whether a ``parentSession`` string names ``target`` (relative paths from ``base``)."""
    candidate = Path(reference) if os.path.isabs(reference) else base / reference
    with contextlib.suppress(OSError):
        if candidate.exists() and target.exists():
            return os.path.samefile(candidate, target)
    return os.path.normcase(os.path.realpath(candidate)) == os.path.normcase(
        os.path.realpath(target)
    )


def _session_files(roots: Iterable[Path], skip: Path, *, recursive: bool = True) -> Iterator[Path]:
    seen: set[str] = set()
    for root in roots:
        if not root.is_dir():
            continue
        found = root.rglob("*.jsonl") if recursive else root.glob("*.jsonl")
        for path in sorted(found):
            key = os.path.realpath(path)
            if key in seen or path.is_relative_to(skip):
                continue
            seen.add(key)
            if path.is_file():
                yield path


def inside(path: Path, folders: Iterable[Path]) -> bool:
    """Whether ``path`` sits in one of ``folders`` (its own name is not resolved, so a
    symlink kept in the sessions folder counts as inside it)."""
    here = os.path.join(os.path.realpath(path.parent), path.name)
    return any(here.startswith(os.path.join(os.path.realpath(f), "")) for f in folders)


def find_forks(
    path: str | os.PathLike[str],
    roots: Iterable[str | os.PathLike[str]] | None = None,
    *,
    exclude: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Session files whose header ``parentSession`` names ``path``.

    Parameters
    ----------
    path:
        The parent session file.
    roots:
        Folders searched recursively for ``*.jsonl`` files; default the sessions root.
        The parent's own folder is searched too, but never below it: a session kept in
        ``~/notes`` must not make pinb read all of ``~/notes``.
    exclude:
        A folder never searched; default the trash folder.
    """
    target = Path(path)
    folders = [Path(r) for r in roots] if roots is not None else [sessions_root()]
    skip = Path(exclude) if exclude is not None else trash_dir()
    candidates = [
        *_session_files(folders, skip),
        *_session_files([target.parent], skip, recursive=False),
    ]
    forks: list[Path] = []
    seen: set[str] = set()
    for candidate in candidates:
        if os.path.realpath(candidate) in seen:
            continue
        seen.add(os.path.realpath(candidate))
        if os.path.realpath(candidate) == os.path.realpath(target):
            continue
        header = first_value(candidate)
        if not is_valid_header(header):
            continue
        parent = header.get("parentSession")
        if isinstance(parent, str) and parent and _names_file(parent, target, candidate.parent):
            forks.append(candidate)
    return forks


def _trash_target(path: Path, folder: Path) -> Path:
    # ``path`` is normalized, so its folder has a real name (only the root has none).
    target_dir = folder / (path.parent.name or "root")
    target = target_dir / path.name
    number = 1
    while target.exists() or target.with_name(target.name + NOTE_SUFFIX).exists():
        target = target_dir / f"{path.stem}.{number}{path.suffix}"
        number += 1
    return target


def remove_session(
    path: str | os.PathLike[str],
    *,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    trash: str | os.PathLike[str] | None = None,
    timeout: float = 2.0,
) -> RemovedSession:
    """Remove a session the safe way: move it to the trash, never from under a writer.

    1. Nobody may hold it: a kernel with it as its current session, the Pi engine running
       on it, a pinb writer in the middle of a turn (its turn lock), or a process whose
       command line names it (``pi --session FILE`` in a terminal). Otherwise
       :class:`SessionHeldError` names who.
    2. The file (and a ``.pre-v3.bak`` backup beside it) moves to
       ``<agentDir>/trash/<project folder>/``, with a ``.removed.json`` note saying where
       it came from, when, and which sessions were forked from it. The forks are not
       touched: their ``parentSession`` still names the removed file, and lineage finds it
       through the note (:func:`pinb.core.file.trash.trashed_as`).
    3. Memory records citing it keep their text and are flagged ``source_deleted`` by
       :func:`pinb.memory.remove_session`, which calls this and then updates its records.

    Parameters
    ----------
    path:
        The session file to remove.
    roots:
        Folders searched for forks; default the sessions root (and the file's folder).
    trash:
        Trash folder; default :func:`trash_dir`.
    timeout:
        Seconds to wait for a pinb writer's turn to end.

    Raises
    ------
    SessionHeldError
        Someone holds the session.
    SessionRemovalError
        The file is missing or not a Pi session, or could not be moved.

    Examples
    --------
    >>> removed = remove_session(path)  # doctest: +SKIP
    >>> print(removed.summary())  # doctest: +SKIP
    """
    # Normalized first: ``../FILE`` from a subfolder names FILE, not a folder called "..".
    source = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    if not source.is_file():
        raise SessionRemovalError("no such session file", path=source)
    try:
        loaded = read_session_file(source)
    except SessionFileError as exc:
        raise SessionRemovalError(f"refusing to remove: {exc}", path=source) from exc
    header = loaded.values[0] if loaded.values else {}
    parent = header.get("parentSession")
    parent = parent if isinstance(parent, str) and parent else None
    trash_folder = Path(trash) if trash is not None else trash_dir()
    forks = find_forks(source, roots, exclude=trash_folder)
    target = _trash_target(source, trash_folder)
    # The turn lock keeps pinb's writers out while the file moves.
    try:
        with TurnLock(source, "pinb rm", wait=timeout):
            held = [h for h in holders(source) if h.kind != "turn"]
            if held:
                raise SessionHeldError(source, held)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(source, target)  # one step: nothing can append in between
            except OSError:
                try:
                    shutil.move(source, target)  # another file system: copied, then removed
                except OSError as exc:
                    raise SessionRemovalError(
                        f"could not move the file to the trash: {exc}", path=source
                    ) from exc
    except SessionBusyError as exc:
        raise SessionHeldError(source, [exc.holder] if exc.holder else []) from exc
    backup = source.with_name(source.name + ".pre-v3.bak")
    if backup.exists():
        with contextlib.suppress(OSError):
            shutil.move(backup, target.with_name(target.name + ".pre-v3.bak"))
    note = {
        "originalPath": str(source),
        "removedAt": iso_now(),
        "parentSession": parent,
        "forks": [str(p) for p in forks],
    }
    target.with_name(target.name + NOTE_SUFFIX).write_text(json.dumps(note, indent=2) + "\n")
    return RemovedSession(source, target, parent, forks)
