"""Removing a session safely (to the trash, forks relinked, memory flagged) and restoring it."""

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

from ..core.atomic import replace_file
from ..core.paths import agent_dir, iso_now, sessions_root
from ..core.store import (
    is_valid_header,
    locked_append,
    parse_session_bytes,
    read_session_file,
    serialize_line,
)
from ..core.target import Pi
from ..core.wire import JS_WHITESPACE, loads
from ..errors import SessionFileError
from .records import default_db_path

__all__ = [
    "RemovedSession",
    "SessionRemovalError",
    "find_forks",
    "relink_parent",
    "remove_session",
    "trash_dir",
]

log = logging.getLogger("pinb.memory")

#: Bytes of a file read to find its header line when scanning for forks.
_HEADER_SCAN_BYTES = 1 << 20


class SessionRemovalError(SessionFileError):
    """A session could not be removed (or a fork of it could not be relinked)."""


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
        The removed session's own ``parentSession`` (``None`` when it had none), which
        its forks now name instead.
    relinked:
        Session files whose header was rewritten.
    left_alone:
        Forks found beside the file but outside the folders searched (the sessions
        folder by default): pinb does not rewrite files there, so they still name it.
    memory_marked:
        Memory records citing the session, now flagged as having lost their source.
    memory_error:
        Why the memory records could not be flagged, when they could not (the removal
        itself still happened).
    """

    path: Path
    trash_path: Path
    parent_session: str | None
    relinked: list[Path] = field(default_factory=list)
    left_alone: list[Path] = field(default_factory=list)
    memory_marked: int = 0
    memory_error: str | None = None

    def summary(self) -> str:
        """A few lines for people: what moved where and what changed."""
        lines = [f"Moved {self.path} to {self.trash_path}"]
        target = self.parent_session or "no parent (field removed)"
        for child in self.relinked:
            lines.append(f"Relinked fork {child} -> {target}")
        for child in self.left_alone:
            lines.append(f"Fork {child} is outside the sessions folder: left as it was")
        if self.memory_marked:
            lines.append(f"{self.memory_marked} memory record(s) now cite a deleted session")
        if self.memory_error:
            lines.append(f"Memory records were not updated: {self.memory_error}")
        return "\n".join(lines)


def trash_dir() -> Path:
    """``<agentDir>/trash``: where removed sessions go (never deleted by pinb)."""
    return agent_dir() / "trash"


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


def relink_parent(
    path: str | os.PathLike[str], new_parent: str | None, *, timeout: float = 10.0
) -> dict[str, Any]:
    """Rewrite the ``parentSession`` of one session file, atomically; returns the new header.

    Only the header line changes: every other byte of the file is kept. The header is
    written as Pi writes it, unknown fields kept in place; ``new_parent=None`` removes
    the field. The rewrite holds pinb's append lock and is retried if another program
    appended meanwhile, then goes through a temporary file, fsync and rename.

    Raises
    ------
    SessionRemovalError
        The file is not a session or could not be rewritten.
    """
    file_path = Path(path)
    for _attempt in range(5):
        with locked_append(file_path, timeout=timeout):
            data = file_path.read_bytes()
            # The lenient v0.58.3 reading finds a header even behind a byte-order mark.
            loaded = parse_session_bytes(data, file_path, pi=Pi.V0_58)
            first = loaded.values[0] if loaded.values else None
            first_line = loaded.lines[0] if loaded.lines else 0
            if first is None or not is_valid_header(first):
                raise SessionRemovalError("not a Pi session: no header to relink", path=file_path)
            header = dict(first)
            if new_parent is None:
                header.pop("parentSession", None)
            else:
                header["parentSession"] = new_parent
            lines = data.split(b"\n")
            old = lines[first_line - 1]
            start = old.find(b"{")
            end = b"\r" if old.endswith(b"\r") else b""
            lines[first_line - 1] = old[: max(start, 0)] + serialize_line(header)[:-1] + end
            if os.path.getsize(file_path) != len(data):
                continue  # someone appended while we read: read again
            # Mode and symlink kept: a private 0600 fork stays private, a link stays a link.
            replace_file(file_path, b"\n".join(lines))
            return header
    raise SessionRemovalError(
        "the file kept changing while its header was being rewritten; try again", path=file_path
    )


def _trash_target(path: Path, folder: Path) -> Path:
    # ``path`` is normalized, so its folder has a real name (only the root has none).
    target_dir = folder / (path.parent.name or "root")
    target = target_dir / path.name
    number = 1
    while target.exists() or target.with_name(target.name + ".removed.json").exists():
        target = target_dir / f"{path.stem}.{number}{path.suffix}"
        number += 1
    return target


def remove_session(
    path: str | os.PathLike[str],
    *,
    roots: Iterable[str | os.PathLike[str]] | None = None,
    trash: str | os.PathLike[str] | None = None,
    store: Any = None,
    timeout: float = 10.0,
) -> RemovedSession:
    """Remove a session the safe way: move it to the trash and keep the fork graph whole.

    1. Every session forked from it (header ``parentSession`` naming it, searched in
       ``roots``) is relinked to its own parent, or loses the field when it had none;
       each rewrite is atomic and changes the header line only.
    2. The file (and a ``.pre-v3.bak`` backup beside it) moves to
       ``<agentDir>/trash/<project folder>/``, with a ``.removed.json`` note saying where
       it came from, when, and which forks were relinked.
    3. Memory records citing it keep their text and are flagged ``source_deleted``.

    Forks are relinked before the file moves, so no session ever names a missing file,
    even if the process dies half way.

    Parameters
    ----------
    path:
        The session file to remove.
    roots:
        Folders searched for forks; default the sessions root (and the file's folder).
    trash:
        Trash folder; default :func:`trash_dir`.
    store:
        The :class:`~pinb.memory.store.MemoryStore` to update; default the standard
        database when it exists. Memory problems are reported, never raised.
    timeout:
        Seconds to wait for a session file's lock.

    Raises
    ------
    SessionRemovalError
        The file is missing or not a Pi session, or a fork could not be relinked (the
        session is then left where it was).

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
    relinked: list[Path] = []
    left_alone: list[Path] = []
    searched = [Path(r) for r in roots] if roots is not None else [sessions_root()]
    for fork in find_forks(source, roots, exclude=trash_folder):
        if not inside(fork, searched):
            left_alone.append(fork)  # beside a file kept outside the sessions folder
            continue
        new_parent = parent
        if new_parent is not None and _names_file(new_parent, fork, source.parent):
            new_parent = None  # never make a session its own parent
        try:
            relink_parent(fork, new_parent, timeout=timeout)
        except (OSError, SessionFileError) as exc:
            raise SessionRemovalError(
                f"could not relink fork {fork} ({exc}); nothing was moved"
                + (f"; already relinked: {', '.join(map(str, relinked))}" if relinked else ""),
                path=source,
            ) from exc
        relinked.append(fork)
    target = _trash_target(source, trash_folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.move(source, target)
    except OSError as exc:
        raise SessionRemovalError(
            f"could not move the file to the trash: {exc}", path=source
        ) from exc
    backup = source.with_name(source.name + ".pre-v3.bak")
    if backup.exists():
        with contextlib.suppress(OSError):
            shutil.move(backup, target.with_name(target.name + ".pre-v3.bak"))
    note = {
        "originalPath": str(source),
        "removedAt": iso_now(),
        "parentSession": parent,
        "relinked": [str(p) for p in relinked],
    }
    target.with_name(target.name + ".removed.json").write_text(json.dumps(note, indent=2) + "\n")
    result = RemovedSession(source, target, parent, relinked, left_alone)
    _mark_memory(result, store)
    return result


def _mark_memory(result: RemovedSession, store: Any) -> None:
    try:
        if store is None:
            if not default_db_path().exists():
                return
            from .store import MemoryStore

            store = MemoryStore()
        result.memory_marked = store.mark_source_deleted(result.path)
    except Exception as exc:  # the session is already safe in the trash; report, don't fail
        log.warning("memory records citing %s were not updated: %s", result.path, exc)
        result.memory_error = str(exc)
