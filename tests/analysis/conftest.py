"""Fixtures for the analysis tests: hand-built Pi sessions and the project's sample files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.builders import (
    build_demo,
)


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return build_demo(tmp_path / "sessions" / "--home-dev-demo--")
