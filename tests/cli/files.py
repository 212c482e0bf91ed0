"""Session files and ``pinb`` runs for the command line's tests: a linear session of given
messages, a user message, the CLI as a process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pinb.testing import messages

__all__ = ["run_pinb", "user_message", "write_session"]

_HEADER = {"type": "session", "version": 3, "id": "s-robust", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/tmp"}  # fmt: skip


def write_session(path: Path, messages: list[dict[str, Any]]) -> Path:
    """``messages`` as a linear session at ``path`` (version 3, fixed ids and times)."""
    lines = [json.dumps(_HEADER)]
    parent = None
    for number, message in enumerate(messages):
        entry = {"type": "message", "id": f"e{number:07d}", "parentId": parent,
                 "timestamp": "2025-01-01T00:00:01.000Z", "message": message}  # fmt: skip
        lines.append(json.dumps(entry))
        parent = entry["id"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def user_message(text: str) -> dict[str, Any]:
    """A user message of ``text``."""
    return messages.user(text, ts=1, block=False)


def run_pinb(*args: str, timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``python -m pinb.cli ARGS``, its output captured (the timeout only guards a hang)."""
    return subprocess.run(
        [sys.executable, "-m", "pinb.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )
