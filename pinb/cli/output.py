"""The one way pinb's command line writes text: any string prints, and a closed pipe ends quietly.

Session files are JSON, and JSON can hold a lone surrogate (``"\\ud83d"``) that no
encoder accepts; file names can hold undecodable bytes. Every line the CLI prints goes
through :func:`say`, which writes such characters as backslash escapes instead of raising,
so a JSON line stays valid JSON (``\\ud83d`` is a JSON escape) and text stays readable.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, Any

__all__ = ["printable", "quiet_stdout", "say", "write"]


def printable(text: str, stream: IO[str] | None = None) -> str:
    """``text`` with every character the stream cannot encode written as a backslash escape."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # an encoding name Python does not know: fall back to UTF-8
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def write(text: str, file: IO[str] | None = None) -> None:
    """Write ``text`` as is (no newline added) to ``file`` (default: standard output)."""
    stream = file if file is not None else sys.stdout
    stream.write(printable(text, stream))


def say(*values: Any, file: IO[str] | None = None, sep: str = " ", end: str = "\n") -> None:
    """``print`` that never fails on a character: see the module docstring."""
    write(sep.join(str(v) for v in values) + end, file)


def quiet_stdout() -> None:
    """After the reader closed the pipe: send what is left to /dev/null.

    Python flushes standard output once more at exit; without this it would report a
    second broken pipe there (Python's documented recipe for SIGPIPE).
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
