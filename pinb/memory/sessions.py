"""Removing and restoring a session, with memory's part: the records that cite it.

The files move in :mod:`pinb.core.file.remove` and :mod:`pinb.core.file.restore` (to and from
the trash, never from under a writer); here the memory records citing the session are flagged
``source_deleted`` after a removal and unflagged after a restore. A memory problem is reported
in the result, never raised: the session itself is already safe.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ..core.file import remove as _remove
from ..core.file import restore as _restore
from ..core.file.remove import RemovedSession, SessionHeldError, SessionRemovalError, find_forks
from ..core.file.restore import RemovedEntry, RestoredSession, removed_sessions
from ..core.file.trash import trash_dir
from .records import default_db_path

__all__ = [
    "RemovedEntry",
    "RemovedSession",
    "RestoredSession",
    "SessionHeldError",
    "SessionRemovalError",
    "find_forks",
    "remove_session",
    "removed_sessions",
    "restore_session",
    "trash_dir",
]

log = logging.getLogger("pinb.memory")


def remove_session(
    path: str | os.PathLike[str], *, store: Any = None, **options: Any
) -> RemovedSession:
    """Move a session to the trash (:func:`pinb.core.file.remove.remove_session`, whose
    ``options`` these are), then flag the memory records citing it.

    ``store`` is the :class:`~pinb.memory.store.MemoryStore` to update; default the standard
    database when it exists.
    """
    result = _remove.remove_session(path, **options)
    try:
        mark = _store(store)
        if mark is not None:
            result.memory_marked = mark.mark_source_deleted(result.path)
    except Exception as exc:  # the session is already safe in the trash; report, don't fail
        log.warning("memory records citing %s were not updated: %s", result.path, exc)
        result.memory_error = str(exc)
    return result


def restore_session(
    name: str | os.PathLike[str], *, store: Any = None, **options: Any
) -> RestoredSession:
    """Bring a session back from the trash (:func:`pinb.core.file.restore.restore_session`,
    whose ``options`` these are), then unflag the memory records citing it."""
    result = _restore.restore_session(name, **options)
    try:
        mark = _store(store)
        if mark is not None:
            result.memory_restored = mark.mark_source_deleted(result.path, restored=True)
    except Exception as exc:  # the session is back; report, don't fail
        log.warning("memory records citing %s were not updated: %s", result.path, exc)
        result.memory_error = str(exc)
    return result


def _store(store: Any) -> Any:
    if store is not None:
        return store
    if not default_db_path().exists():
        return None
    from .store import MemoryStore

    return MemoryStore()
