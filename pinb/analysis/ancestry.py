"""How two session files are related through ``parentSession``, and the entries they share.

(What one file copied from its parent, and which relation it has to it, is
:mod:`pinb.analysis.lineage`; this module answers for a pair of files, for comparing.)

A fork (Pi's ``/fork`` and ``/clone``, :mod:`pinb.core.forks`) copies the path it starts
from with the same entry ids, dropping label entries (it writes new ones after the copy)
and, in Pi 1.x, re-chaining parents around them. So two related files share the longest
run of entries from the root whose ids and types agree, labels and navigation markers
skipped; that run ends at their common ancestor. ``parentSession`` in the headers says how
the files are related, and is reported; the shared run is found from the entries
themselves, so a moved or renamed file still compares.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ..core.file.listing import read_session_info
from ..core.format.entries import Entry, id_key
from ..core.js.wire import js_truthy
from ..core.session import Session

__all__ = ["ancestor_files", "file_relation", "shared_prefix"]

#: Generations of ``parentSession`` followed to relate two files.
MAX_GENERATIONS: Final = 16


def _resolved(path: str | os.PathLike[str] | None, relative_to: Path | None) -> Path | None:
    if path is None:
        return None
    candidate = Path(path)
    if not candidate.is_absolute() and relative_to is not None:
        candidate = relative_to.parent / candidate
    try:
        return candidate.resolve()
    except OSError:
        return candidate


def ancestor_files(session: Session) -> list[Path]:
    """The files the session descends from through ``parentSession``, nearest first."""
    found: list[Path] = []
    current = _resolved(session.parent_session, session.path)
    while current is not None and current not in found and len(found) < MAX_GENERATIONS:
        found.append(current)
        info = read_session_info(current)
        if info is None:
            break
        current = _resolved(info.parent_session_path, current)
    return found


def file_relation(a: Session, b: Session) -> str:
    """``"same session"``, ``"b forked from a"``, ``"a forked from b"``, ``"forks of one
    session"`` (a common ancestor file) or ``"no parentSession link"``."""
    if a is b:
        return "same session"
    path_a, path_b = _resolved(a.path, None), _resolved(b.path, None)
    if path_a is not None and path_a == path_b:
        return "same session"
    lineage_a, lineage_b = ancestor_files(a), ancestor_files(b)
    if path_a is not None and path_a in lineage_b:
        return "b forked from a"
    if path_b is not None and path_b in lineage_a:
        return "a forked from b"
    if set(lineage_a) & set(lineage_b):
        return "forks of one session"
    return "no parentSession link"


def _matching(path: Sequence[Entry]) -> list[tuple[int, Entry]]:
    """Path positions and entries that take part in the shared run (labels skipped)."""
    return [(i, e) for i, e in enumerate(path) if e.type != "label" and not e.is_navigation]


def shared_prefix(path_a: Sequence[Entry], path_b: Sequence[Entry]) -> tuple[int, int, int]:
    """``(entries shared, last shared position in a, in b)``; positions -1 when none."""
    run_a, run_b = _matching(path_a), _matching(path_b)
    shared = 0
    last_a = last_b = -1
    for (i, x), (j, y) in zip(run_a, run_b, strict=False):
        if id_key(x.raw.get("id")) != id_key(y.raw.get("id")) or x.type != y.type:
            break
        if not js_truthy(x.raw.get("id")):
            break
        shared += 1
        last_a, last_b = i, j
    return shared, last_a, last_b
