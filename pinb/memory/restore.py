"""Bringing a removed session back from the trash: the file, its backup, its forks' links, memory.

``pinb rm`` leaves a ``<file>.removed.json`` note beside each file it moves to the trash
(where it came from, its parent, which forks it relinked). Restoring reverses those steps
in the safe order: the file goes back first, then each fork that still names the parent
it was given is pointed at the file again, so no session ever names a missing file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.jsontext import value_text
from ..core.paths import sessions_root
from ..core.store import is_valid_header
from .records import default_db_path
from .sessions import SessionRemovalError, first_value, inside, relink_parent, trash_dir

__all__ = ["RemovedEntry", "RestoredSession", "removed_sessions", "restore_session"]

log = logging.getLogger("pinb.memory")

_NOTE = ".removed.json"


@dataclass
class RemovedEntry:
    """One session in the trash, as its removal note describes it."""

    trash_path: Path
    original_path: Path
    removed_at: str
    parent_session: str | None
    relinked: list[Path]


@dataclass
class RestoredSession:
    """What :func:`restore_session` did."""

    path: Path
    trash_path: Path
    relinked: list[Path] = field(default_factory=list)
    left_alone: list[Path] = field(default_factory=list)
    memory_restored: int = 0
    memory_error: str | None = None

    def summary(self) -> str:
        """A few lines for people: what moved back and which links were restored."""
        lines = [f"Restored {self.trash_path} to {self.path}"]
        lines += [f"Relinked fork {child} -> {self.path}" for child in self.relinked]
        lines += [
            f"Fork {child} was changed since the removal: left as it is"
            for child in self.left_alone
        ]
        if self.memory_restored:
            lines.append(f"{self.memory_restored} memory record(s) cite it again")
        if self.memory_error:
            lines.append(f"Memory records were not updated: {self.memory_error}")
        return "\n".join(lines)


def removed_sessions(trash: str | os.PathLike[str] | None = None) -> list[RemovedEntry]:
    """Every session in the trash that ``pinb rm`` put there, newest removal first."""
    folder = Path(trash) if trash is not None else trash_dir()
    entries = []
    for note_path in folder.rglob(f"*{_NOTE}") if folder.is_dir() else []:
        session = note_path.with_name(note_path.name[: -len(_NOTE)])
        try:
            note = json.loads(note_path.read_text(encoding="utf-8"))
            original = Path(os.path.normpath(note["originalPath"]))
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("%s: not a removal note pinb can read; skipped", note_path)
            continue
        if not session.is_file():
            continue
        parent = note.get("parentSession")
        relinked = note.get("relinked")
        entries.append(
            RemovedEntry(
                session,
                original,
                value_text(note.get("removedAt", "")),
                parent if isinstance(parent, str) else None,
                [Path(p) for p in relinked if isinstance(p, str)]
                if isinstance(relinked, list)
                else [],
            )
        )
    entries.sort(key=lambda e: (e.removed_at, str(e.trash_path)), reverse=True)
    return entries


def _find(name: str, entries: list[RemovedEntry]) -> RemovedEntry:
    wanted = os.path.abspath(os.path.expanduser(name))
    exact = [e for e in entries if wanted in (str(e.trash_path), str(e.original_path))]
    # The newest removal of a path is the one to undo; a name or id fragment must be unique.
    if exact:
        return exact[0]
    partial = [e for e in entries if name in e.trash_path.name or name in e.original_path.name]
    if len(partial) == 1:
        return partial[0]
    if not partial:
        raise SessionRemovalError(f"no removed session matches {name!r} (see pinb restore --list)")
    choices = "\n  ".join(str(e.trash_path) for e in partial)
    raise SessionRemovalError(
        f"{len(partial)} removed sessions match {name!r}; name one:\n  {choices}"
    )


def restore_session(
    name: str | os.PathLike[str],
    *,
    trash: str | os.PathLike[str] | None = None,
    store: Any = None,
    timeout: float = 10.0,
) -> RestoredSession:
    """Undo :func:`~pinb.memory.sessions.remove_session`.

    Parameters
    ----------
    name:
        The file's original path, its path in the trash, or a unique part of its name
        (the session id, say).
    trash:
        Trash folder; default :func:`~pinb.memory.sessions.trash_dir`.
    store:
        The memory store whose records citing the session are unflagged; default the
        standard database when it exists. Memory problems are reported, never raised.
    timeout:
        Seconds to wait for a fork's lock.

    Raises
    ------
    SessionRemovalError
        Nothing in the trash matches, several do, or a file now sits at the original
        path (it is never overwritten).
    """
    entry = _find(os.fspath(name), removed_sessions(trash))
    original = entry.original_path
    root = sessions_root()
    if not original.is_absolute() or not inside(original, [root]):
        # A note is a file anyone can write: never let one choose where pinb writes.
        raise SessionRemovalError(
            f"its removal note says it came from {value_text(str(original))}, which is outside "
            f"the sessions folder {root}; pinb restores only into that folder. If the note is "
            f"yours, move the file back by hand: mv {entry.trash_path} <where it belongs>",
            path=entry.trash_path,
        )
    if os.path.lexists(original):
        raise SessionRemovalError(
            "a file already exists where the session was; move it away, then restore again",
            path=original,
        )
    original.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.move(entry.trash_path, original)
    except OSError as exc:
        raise SessionRemovalError(f"could not move it back: {exc}", path=entry.trash_path) from exc
    backup = entry.trash_path.with_name(entry.trash_path.name + ".pre-v3.bak")
    if backup.exists() and not original.with_name(original.name + ".pre-v3.bak").exists():
        with contextlib.suppress(OSError):
            shutil.move(backup, original.with_name(original.name + ".pre-v3.bak"))
    result = RestoredSession(original, entry.trash_path)
    for fork in entry.relinked:
        if not inside(fork, [root]):  # pinb rm relinks only forks in the sessions folder
            result.left_alone.append(fork)
            continue
        header = first_value(fork)
        # Only a fork still naming what pinb rm gave it: anything else was the user's choice.
        if not is_valid_header(header) or header.get("parentSession") != entry.parent_session:
            result.left_alone.append(fork)
            continue
        try:
            relink_parent(fork, str(original), timeout=timeout)
            result.relinked.append(fork)
        except (OSError, SessionRemovalError) as exc:
            log.warning("%s: not relinked to the restored session: %s", fork, exc)
            result.left_alone.append(fork)
    with contextlib.suppress(OSError):
        entry.trash_path.with_name(entry.trash_path.name + _NOTE).unlink()
    _unmark_memory(result, store)
    return result


def _unmark_memory(result: RestoredSession, store: Any) -> None:
    try:
        if store is None:
            if not default_db_path().exists():
                return
            from .store import MemoryStore

            store = MemoryStore()
        result.memory_restored = store.mark_source_deleted(result.path, restored=True)
    except Exception as exc:  # the session is back; the flags are secondary, report them
        log.warning("memory records citing %s were not updated: %s", result.path, exc)
        result.memory_error = str(exc)
