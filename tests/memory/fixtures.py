"""The memory tests' fixtures, shared with the agent and CLI tests: a store in the isolated
agent dir, two projects, a session writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pinb.core.file.paths import encode_cwd, sessions_root
from pinb.core.file.write import serialize_line
from pinb.memory import MemoryStore
from tests.memory.helpers import SessionWriter, assistant, user


@pytest.fixture
def store() -> MemoryStore:
    """The standard database, inside the agent dir the autouse fixture points at."""
    return MemoryStore()


@pytest.fixture
def project_dirs(tmp_path: Path) -> tuple[Path, Path]:
    """Two working directories, hence two projects."""
    one, two = tmp_path / "proj-one", tmp_path / "proj-two"
    one.mkdir()
    two.mkdir()
    return one, two


@pytest.fixture
def write_session() -> SessionWriter:
    """Write a small Pi session file by hand (header, user, assistant) and return its path."""

    def write(
        cwd: str,
        session_id: str,
        *,
        parent: Path | str | None = None,
        extra_header: dict[str, Any] | None = None,
        tail: bytes = b"",
    ) -> Path:
        folder = sessions_root() / encode_cwd(cwd)
        folder.mkdir(parents=True, exist_ok=True)
        header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2025-03-01T10:00:00.000Z",
            "cwd": cwd,
        }
        if parent is not None:
            header["parentSession"] = str(parent)
        header.update(extra_header or {})
        entries = [
            {
                "type": "message",
                "id": f"{session_id[:4]}u001",
                "parentId": None,
                "timestamp": "2025-03-01T10:00:01.000Z",
                "message": user(f"hello from {session_id}"),
            },
            {
                "type": "message",
                "id": f"{session_id[:4]}a001",
                "parentId": f"{session_id[:4]}u001",
                "timestamp": "2025-03-01T10:00:02.000Z",
                "message": assistant("Café ☕ noted — “quotes” and \\u2028 stay"),
            },
        ]
        path = folder / f"2025-03-01T10-00-00-000Z_{session_id}.jsonl"
        data = b"".join(serialize_line(v) for v in [header, *entries]) + tail
        path.write_bytes(data)
        return path

    return write
