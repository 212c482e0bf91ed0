"""Long-term memory beside the session files: project-scoped notes to save, recall and forget."""

# The store is one SQLite database at <agentDir>/memory/pinb-memory.sqlite (FTS5, WAL) that
# never rewrites a session file. observation: opt-in auto-observation; inject: recalled
# notes in the system prompt; sessions: memory's part of removing and restoring a session
# (the files move in pinb.core.file.remove/restore); frame: pandas. The agent's memory tools
# are pinb.agent.tools.memory and the ``pinb memory`` commands pinb.cli.memory: memory never
# imports the agent or the CLI.

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use: ``pinb memory`` and ``pinb rm`` start fast
    from .frame import MEMORY_COLUMNS, memory_frame
    from .inject import memory_prompt_section, with_memory
    from .observation import MemoryObserver, ObservationResult, Summarizer, observe, parse_notes
    from .records import (
        KINDS,
        SAVE_KINDS,
        Embedder,
        InjectionSettings,
        InvalidMemoryError,
        MemoryCorruptError,
        MemoryLockedError,
        MemoryNotFoundError,
        MemoryRecord,
        MemoryStoreError,
        default_db_path,
        normalize_tags,
        project_id,
    )
    from .sessions import (
        RemovedEntry,
        RemovedSession,
        RestoredSession,
        SessionHeldError,
        SessionRemovalError,
        find_forks,
        remove_session,
        removed_sessions,
        restore_session,
        trash_dir,
    )
    from .store import MemoryStore

__all__ = [
    "KINDS",
    "MEMORY_COLUMNS",
    "SAVE_KINDS",
    "Embedder",
    "InjectionSettings",
    "InvalidMemoryError",
    "MemoryCorruptError",
    "MemoryLockedError",
    "MemoryNotFoundError",
    "MemoryObserver",
    "MemoryRecord",
    "MemoryStore",
    "MemoryStoreError",
    "ObservationResult",
    "RemovedEntry",
    "RemovedSession",
    "RestoredSession",
    "SessionHeldError",
    "SessionRemovalError",
    "Summarizer",
    "default_db_path",
    "find_forks",
    "memory_frame",
    "memory_prompt_section",
    "normalize_tags",
    "observe",
    "parse_notes",
    "project_id",
    "remove_session",
    "removed_sessions",
    "restore_session",
    "trash_dir",
    "with_memory",
]

_HOMES = {
    **dict.fromkeys(("MEMORY_COLUMNS", "memory_frame"), "frame"),
    **dict.fromkeys(("memory_prompt_section", "with_memory"), "inject"),
    **dict.fromkeys(
        ("MemoryObserver", "ObservationResult", "Summarizer", "observe", "parse_notes"),
        "observation",
    ),
    **dict.fromkeys(
        (
            "KINDS",
            "SAVE_KINDS",
            "Embedder",
            "InjectionSettings",
            "InvalidMemoryError",
            "MemoryCorruptError",
            "MemoryLockedError",
            "MemoryNotFoundError",
            "MemoryRecord",
            "MemoryStoreError",
            "default_db_path",
            "normalize_tags",
            "project_id",
        ),
        "records",
    ),
    **dict.fromkeys(
        (
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
        ),
        "sessions",
    ),
    "MemoryStore": "store",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
