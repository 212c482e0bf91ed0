"""Hand-written session lines for the odd-file tests, and the CLI run in-process.

A ``HEADER`` and ``message_line`` write a file the way a person or another program might,
line by line; ``run_cli`` runs ``pinb`` in this process and returns its exit code and output.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from pinb.cli import main

HEADER = {"type": "session", "version": 3, "id": "odd-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}  # fmt: skip


def message_line(entry_id: str, parent: str | None, message: dict[str, Any], second: int) -> str:
    """One message entry as a JSON line (no newline), ``second`` seconds into 2025."""
    entry = {"type": "message", "id": entry_id, "parentId": parent,
             "timestamp": f"2025-01-01T00:00:{second:02d}.000Z", "message": message}  # fmt: skip
    return json.dumps(entry)


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``pinb ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
