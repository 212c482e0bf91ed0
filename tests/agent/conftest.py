"""Fixtures for the agent tests: a scratch working directory and a tool context in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinb.agent.tool import ToolContext


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
