"""Fixtures for view and widget tests: demo sessions and a recording comm instead of a kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .builders import Demo, demo_session


@pytest.fixture
def demo(tmp_path: Path) -> Demo:
    """The branching demo session, persisted under ``tmp_path``."""
    return demo_session(tmp_path / "sessions")


class RecordingComm:
    """Stands in for a kernel comm: widgets open it and send state updates to it."""

    kernel = "test"

    def __init__(self, **kwargs: Any) -> None:
        self.comm_id = kwargs.get("comm_id") or f"comm-{id(self)}"
        self.target_name = kwargs.get("target_name")
        self.opened_with = kwargs.get("data")
        self.messages: list[dict[str, Any]] = []
        self.closed = False

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, callback: Any) -> None:
        pass

    def on_close(self, callback: Any) -> None:
        pass

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.messages.append({"data": data, "buffers": buffers})

    def close(self, *args: Any, **kwargs: Any) -> None:
        self.closed = True


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    """Route every widget's comm to a :class:`RecordingComm` (ipywidgets' own test approach).

    Returns the list of comms opened, so a test can check what was sent to the frontend.
    """
    import comm

    opened: list[RecordingComm] = []

    def create_comm(**kwargs: Any) -> RecordingComm:
        created = RecordingComm(**kwargs)
        opened.append(created)
        return created

    monkeypatch.setattr(comm, "create_comm", create_comm)
    return opened
