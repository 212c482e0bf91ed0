"""The memory commands' tests use the memory tests' fixtures (a store, project folders, sessions)."""

from __future__ import annotations

from tests.memory.fixtures import project_dirs, store, write_session

__all__ = ["project_dirs", "store", "write_session"]
