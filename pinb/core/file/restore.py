"""Bringing a removed session back from the trash: the file and its backup.

``pinb rm`` leaves a ``<file>.removed.json`` note beside each file it moves to the trash
(:mod:`pinb.core.file.trash`): where it came from, its parent, which sessions were forked from
it. Forks are never rewritten, so restoring is moving the file back. A Pi that pinb could
not see kept writing to the old path after the removal leaves a file there without a
header; its lines are the conversation's continuation, so they are added to the restored
file (and the fragment kept in the trash) instead of blocking the restore.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..js.jsontext import value_text
from ..js.wire import JS_WHITESPACE, loads
from .paths import sessions_root
from .read import is_valid_header
from .remove import SessionHeldError, SessionRemovalError, first_value, inside
from .trash import NOTE_SUFFIX, Removal, removals
from .writers import holders

__all__ = ["RemovedEntry", "RestoredSession", "removed_sessions", "restore_session"]

#: A removed session as its note describes it (:class:`pinb.core.file.trash.Removal`).
RemovedEntry = Removal

log = logging.getLogger("pinb.core")


@dataclass
class RestoredSession:
    """What :func:`restore_session` did.

    Attributes
    ----------
    path:
        Where the session is again.
    trash_path:
        Where it was in the trash.
    appended:
        Lines found at the old path (written there after the removal by a Pi that went on
        with the conversation) and added to the restored file.
    kept_as:
        Where that headerless fragment was kept, in the trash.
    left_alone:
        Forks an older pinb had relinked to the removed file's parent: they keep the link
        they have now (pinb no longer rewrites files).
    """

    path: Path
    trash_path: Path
    appended: int = 0
    kept_as: Path | None = None
    left_alone: list[Path] = field(default_factory=list)
    memory_restored: int = 0
    memory_error: str | None = None

    def summary(self) -> str:
        """A few lines for people: what moved back and what was added to it."""
        lines = [f"Restored {self.trash_path} to {self.path}"]
        if self.appended:
            lines.append(
                f"Added {self.appended} line(s) written to the old path after the removal "
                f"(the fragment is kept as {self.kept_as})"
            )
        lines += [
            f"Fork {child} was relinked by an older pinb: left as it is"
            for child in self.left_alone
        ]
        if self.memory_restored:
            lines.append(f"{self.memory_restored} memory record(s) cite it again")
        if self.memory_error:
            lines.append(f"Memory records were not updated: {self.memory_error}")
        return "\n".join(lines)


def removed_sessions(trash: str | os.PathLike[str] | None = None) -> list[Removal]:
    """Every session in the trash that ``pinb rm`` put there, newest removal first."""
    return removals(trash)


def _find(name: str, entries: list[Removal]) -> Removal:
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
    timeout: float = 10.0,
) -> RestoredSession:
    """Undo :func:`~pinb.core.file.remove.remove_session` (memory's citations:
    :func:`pinb.memory.restore_session`, which calls this).

    Parameters
    ----------
    name:
        The file's original path, its path in the trash, or a unique part of its name
        (the session id, say).
    trash:
        Trash folder; default :func:`~pinb.core.file.trash.trash_dir`.
    timeout:
        Unused; kept for callers of the older signature.

    Raises
    ------
    SessionRemovalError
        Nothing in the trash matches, several do, or a file that is not the removed
        conversation's continuation now sits at the original path (it is never
        overwritten).
    SessionHeldError
        A process holds the file that now sits at the original path.
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
    result = RestoredSession(original, entry.trash_path)
    if os.path.lexists(original):
        _take_continuation(entry, result)
    original.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(entry.trash_path, original)  # never over a file that appeared meanwhile
        os.unlink(entry.trash_path)
    except FileExistsError as exc:
        raise SessionRemovalError(
            "a file appeared where the session was while it was being restored; try again",
            path=original,
        ) from exc
    except OSError:
        try:
            shutil.move(entry.trash_path, original)  # a file system without hard links
        except OSError as exc:
            raise SessionRemovalError(
                f"could not move it back: {exc}", path=entry.trash_path
            ) from exc
    backup = entry.trash_path.with_name(entry.trash_path.name + ".pre-v3.bak")
    if backup.exists() and not original.with_name(original.name + ".pre-v3.bak").exists():
        with contextlib.suppress(OSError):
            shutil.move(backup, original.with_name(original.name + ".pre-v3.bak"))
    for fork in entry.relinked:
        header = first_value(fork)
        if is_valid_header(header) and header.get("parentSession") != str(original):
            result.left_alone.append(fork)
    with contextlib.suppress(OSError):
        entry.trash_path.with_name(entry.trash_path.name + NOTE_SUFFIX).unlink()
    return result


def _take_continuation(entry: Removal, result: RestoredSession) -> None:
    """Add what a Pi wrote at the old path after the removal to the file in the trash.

    Only a file without a header whose every line is an entry (what Pi's appends make of a
    missing file) is taken; anything else is someone's file and blocks the restore.
    """
    original = entry.original_path
    held = holders(original)
    if held:
        raise SessionHeldError(original, held)
    try:
        data = original.read_bytes()
    except OSError as exc:
        raise SessionRemovalError(f"cannot read the file in the way: {exc}", path=original) from exc
    lines = [raw for raw in data.split(b"\n") if raw.strip(JS_WHITESPACE.encode())]
    if not lines or not all(_is_entry(raw) for raw in lines):
        raise SessionRemovalError(
            "a file already exists where the session was; move it away, then restore again",
            path=original,
        )
    kept = entry.trash_path.with_name(entry.trash_path.name + ".written-after-removal")
    with open(entry.trash_path, "rb+") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell():
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
        handle.write(b"\n".join(lines) + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(original, kept)
    result.appended, result.kept_as = len(lines), kept


def _is_entry(raw: bytes) -> bool:
    try:
        value = loads(raw.decode("utf-8", "replace").strip(JS_WHITESPACE))
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(value, dict)
        and value.get("type") != "session"
        and isinstance(value.get("type"), str)
        and isinstance(value.get("id"), str)
    )
