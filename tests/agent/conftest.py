"""Fixtures for the agent tests: a scratch working directory and a tool context in it.

The memory tools' tests also use the memory tests' fixtures (a store, project folders, sessions).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pinb.agent.tool import ToolContext
from tests.memory.fixtures import project_dirs, store, write_session

__all__ = ["context", "project_dirs", "store", "workdir", "write_session"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty folder the tools work in (separate from other scratch files of the test)."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def context(workdir: Path) -> ToolContext:
    """A `ToolContext` whose ``cwd`` is `workdir`, without a session or cancel token."""
    return ToolContext(cwd=workdir)
