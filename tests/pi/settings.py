"""Pi 1.6.0's own settings lock and settings writer beside pinb: ``settings_lock.mjs`` run by Node 22.

``PiLockHold`` holds a file's lock with Pi's installed ``proper-lockfile`` as Pi's settings
writer takes it; ``pi_save_themes`` saves settings through Pi's ``SettingsManager`` (its
lock, its retries, its merge); ``pi_compaction`` is what that manager resolves for a
model. The install folder is the ``pi_install`` fixture's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .reference import HERE, node_binary

__all__ = ["PiLockHold", "pi_compaction", "pi_save_themes"]

SCRIPT = HERE / "settings_lock.mjs"


def _argv(root: Path, *args: object) -> list[str]:
    return [str(node_binary(root)), str(SCRIPT), str(root), *map(str, args)]


def _run(root: Path, *args: object) -> dict[str, Any]:
    done = subprocess.run(_argv(root, *args), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


class PiLockHold:
    """Node holding ``file``'s lock as Pi does for ``ms`` milliseconds (``stale_ms``: the
    lock's proper-lockfile ``stale``); :meth:`held` waits until it has it."""

    def __init__(self, root: Path, file: Path, ms: int, stale_ms: int | None = None) -> None:
        extra = [] if stale_ms is None else [stale_ms]
        self.process = subprocess.Popen(
            _argv(root, "hold", file, ms, *extra), stdout=subprocess.PIPE, text=True
        )

    def _line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"node exited ({self.process.wait(timeout=60)}) without a word"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def held(self) -> dict[str, Any]:
        """``{"held": ms}`` once it holds the lock, or ``{"error": code}``."""
        return self._line()

    def released(self) -> float:
        """When (epoch ms) it began to release the lock; waits until it has."""
        answer = self._line()
        self.process.wait(timeout=60)
        return float(answer["releasing"])

    def __enter__(self) -> PiLockHold:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=60)
        if self.process.stdout is not None:
            self.process.stdout.close()


def pi_save_themes(root: Path, agent_dir: Path, *themes: str) -> list[str]:
    """Pi's SettingsManager saves each theme in turn; the errors of the writes that failed."""
    errors: list[str] = _run(root, "theme", agent_dir, *themes)["errors"]
    return errors


def pi_compaction(root: Path, agent_dir: Path, *specs: str) -> dict[str, Any]:
    """Pi's SettingsManager's compaction settings for each ``provider/model`` (and ``errors``)."""
    return _run(root, "compaction", agent_dir, *specs)
