"""Where Pi keeps things: the agent directory, per-project session folders, file names."""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .special import read_regular

__all__ = [
    "AGENT_DIR_ENV",
    "agent_dir",
    "encode_cwd",
    "file_stem",
    "iso_now",
    "read_settings",
    "resolve_cwd",
    "session_file_name",
    "sessions_dir_for",
    "sessions_root",
]

#: Environment variable that overrides the agent directory, as in Pi.
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


def agent_dir(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """Return Pi's agent directory.

    ``$PI_CODING_AGENT_DIR`` when set (``~`` and a ``~/`` prefix are expanded),
    otherwise ``~/.pi/agent`` (spec §2.1).
    """
    environ = os.environ if env is None else env
    value = environ.get(AGENT_DIR_ENV)
    if value:
        if value == "~" or value.startswith("~/"):
            value = str(Path.home()) + value[1:]
        return Path(value)
    return Path.home() / ".pi" / "agent"


def sessions_root(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """``<agentDir>/sessions``: the folder holding one sub-folder per project."""
    return agent_dir(env) / "sessions"


def encode_cwd(cwd: str | os.PathLike[str]) -> str:
    """Encode a working directory into Pi's per-project folder name.

    One leading ``/`` or ``\\`` is dropped, then every ``/``, ``\\`` and ``:``
    becomes ``-``; the result is wrapped in ``--``. The encoding is lossy
    (``/a-b`` and ``/a/b`` collide), so the header ``cwd`` stays the truth.

    Examples
    --------
    >>> encode_cwd("/home/dev/proj")
    '--home-dev-proj--'
    >>> encode_cwd("C:\\\\Users\\\\me")
    '--C--Users-me--'
    """
    text = os.fspath(cwd)
    if text[:1] in ("/", "\\"):
        text = text[1:]
    for ch in "/\\:":
        text = text.replace(ch, "-")
    return f"--{text}--"


def resolve_cwd(cwd: str | os.PathLike[str] | None = None) -> str:
    """A working directory as Pi stores it: ``~`` expanded, absolute, normalised.

    ``None`` is the process's current directory.
    """
    text = os.fspath(cwd) if cwd is not None else os.getcwd()
    if text == "~" or text.startswith(("~/", "~\\")):
        text = str(Path.home()) + text[1:]
    return os.path.abspath(text)


def sessions_dir_for(
    cwd: str | os.PathLike[str], env: os._Environ[str] | dict[str, str] | None = None
) -> Path:
    """Pi's default session folder for ``cwd`` (resolved to an absolute path first, as newer Pi)."""
    return sessions_root(env) / encode_cwd(resolve_cwd(cwd))


def session_file_name(timestamp: str, session_id: str) -> str:
    """``<ts>_<id>.jsonl`` with ``:`` and ``.`` of the ISO timestamp replaced by ``-``."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def _system_now() -> datetime:
    return datetime.now(UTC)


#: Where entry timestamps come from. Only :func:`pinb.testing.story.story_clock` replaces
#: it, to write demo sessions that are the same on every run.
now: Callable[[], datetime] = _system_now


def iso_now() -> str:
    """The current UTC time as JavaScript's ``Date.toISOString()`` prints it."""
    return now().isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_settings(cwd: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Pi's settings files as layers, global first: ``<agentDir>/settings.json``, then
    ``<cwd>/.pi/settings.json`` (later layers win). Missing files are skipped; a file that
    cannot be read or is not a JSON object is skipped with a warning naming it."""
    files = [agent_dir() / "settings.json"]
    if cwd is not None:
        files.append(Path(cwd) / ".pi" / "settings.json")
    layers: list[dict[str, Any]] = []
    for file in files:
        try:
            data = json.loads(read_regular(file).decode("utf-8"))  # a FIFO: skipped, not waited on
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            warnings.warn(f"{file}: settings ignored ({exc})", stacklevel=3)
            continue
        if isinstance(data, dict):
            layers.append(data)
    return layers


def file_stem(text: str, width: int) -> str:
    """``text`` as a short file name: lower-case ASCII letters and digits joined by ``-``, at
    most ``width`` characters, safe on every system (``""`` when nothing of it is kept).

    The one rule for the names pinb gives the files it makes from a session's name or id
    (an export, a chat)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:width].strip("-")
