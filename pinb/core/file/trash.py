"""Where ``pinb rm`` puts sessions: ``<agentDir>/trash``, each file with a note of where it was.

The note (``<file>.removed.json``) is the one record of a removal: ``pinb restore`` reads
it to move the file back, a session that was open finds out where its file went, and the
lineage of a fork whose parent was removed follows it, so a fork never needs rewriting.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..js.jsontext import value_text
from .paths import agent_dir

__all__ = ["NOTE_SUFFIX", "Removal", "in_trash", "removals", "trash_dir", "trashed_as"]

log = logging.getLogger("pinb.core")

#: The note beside each removed file.
NOTE_SUFFIX = ".removed.json"


@dataclass
class Removal:
    """One session in the trash, as its removal note describes it.

    Attributes
    ----------
    trash_path:
        Where the file is now.
    original_path:
        Where it was.
    removed_at:
        When ``pinb rm`` moved it (ISO 8601).
    parent_session:
        Its own header's ``parentSession``, when it named one.
    forks:
        Session files that named it as their parent when it was removed (their headers
        are left as they are: lineage follows this note).
    relinked:
        Forks an older pinb rewrote to name the removed file's parent instead.
    """

    trash_path: Path
    original_path: Path
    removed_at: str
    parent_session: str | None
    forks: list[Path] = field(default_factory=list)
    relinked: list[Path] = field(default_factory=list)


def trash_dir() -> Path:
    """``<agentDir>/trash``: where removed sessions go (never deleted by pinb)."""
    return agent_dir() / "trash"


def _paths(value: Any) -> list[Path]:
    return [Path(p) for p in value if isinstance(p, str)] if isinstance(value, list) else []


def removals(trash: str | os.PathLike[str] | None = None) -> list[Removal]:
    """Every session in the trash that ``pinb rm`` put there, newest removal first."""
    folder = Path(trash) if trash is not None else trash_dir()
    found = []
    for note_path in folder.rglob(f"*{NOTE_SUFFIX}") if folder.is_dir() else []:
        session = note_path.with_name(note_path.name[: -len(NOTE_SUFFIX)])
        try:
            note = json.loads(note_path.read_text(encoding="utf-8"))
            original = Path(os.path.normpath(note["originalPath"]))
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("%s: not a removal note pinb can read; skipped", note_path)
            continue
        if not session.is_file():
            continue
        parent = note.get("parentSession")
        found.append(
            Removal(
                session,
                original,
                value_text(note.get("removedAt", "")),
                parent if isinstance(parent, str) else None,
                _paths(note.get("forks")),
                _paths(note.get("relinked")),
            )
        )
    found.sort(key=lambda r: (r.removed_at, str(r.trash_path)), reverse=True)
    return found


def trashed_as(original: str | os.PathLike[str]) -> Path | None:
    """Where the session once at ``original`` is in the trash (newest removal), if it is."""
    wanted = os.path.normcase(os.path.abspath(os.fspath(original)))
    folder = trash_dir()
    if not folder.is_dir():
        return None
    for removal in removals(folder):
        if os.path.normcase(os.path.abspath(removal.original_path)) == wanted:
            return removal.trash_path
    return None


def in_trash(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies in the trash folder."""
    folder = os.path.join(os.path.realpath(trash_dir()), "")
    return os.path.realpath(path).startswith(folder)
