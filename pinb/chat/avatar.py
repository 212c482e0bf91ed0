"""The persona's avatar: a small SVG, written once to a file the persona manager serves."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["AVATAR_SVG", "avatar_file"]

AVATAR_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">
<circle cx="32" cy="32" r="30" fill="#2f5d8a"/>
<text x="32" y="44" font-family="Georgia, serif" font-size="36" text-anchor="middle"
 fill="#ffffff">π</text>
</svg>
"""


_written: dict[Path, bool] = {}


def avatar_file() -> Path:
    """The avatar as a file (the manager wants a path): in a folder of this user's, in the
    temporary directory, rewritten only when it differs."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = Path(tempfile.gettempdir()) / f"pinb-{uid}"
    path = folder / "pinb-persona-avatar.svg"
    data = AVATAR_SVG.encode("utf-8")
    if _written.get(path) and path.exists():  # asked for every time the persona's name is
        return path
    try:
        if path.read_bytes() == data:
            _written[path] = True
            return path
    except OSError:
        pass
    folder.mkdir(mode=0o700, exist_ok=True)
    tmp = folder / f".{path.name}.{os.getpid()}"
    tmp.write_bytes(data)
    os.replace(tmp, path)
    _written[path] = True
    return path
