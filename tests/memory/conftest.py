"""The memory tests' fixtures (defined in tests/memory/fixtures.py, which the agent and CLI tests use too)."""

from __future__ import annotations

from tests.memory.fixtures import project_dirs, store, write_session  # noqa: F401
