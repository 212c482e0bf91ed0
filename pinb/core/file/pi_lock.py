"""Pi's lock on a file it shares with pinb: a ``<file>.lock`` folder, as ``proper-lockfile`` makes it.

Pi 1.6 writes its ``settings.json`` (and ``auth.json``) under the npm package
``proper-lockfile`` 4.1, and pinb takes the same lock, so the two never change one file at
once. The convention, from that package's ``lib/lockfile.js``:

- The lock is a folder, ``<file>.lock`` beside the file, made with ``mkdir``: it either
  is made (the lock is ours) or fails with ``EEXIST`` (someone holds it). Pi passes
  ``realpath: false`` for its settings, so the name is the file's absolute path as given,
  a symlink not followed.
- The holder keeps the folder's mtime fresh (every ``stale / 2``, 5 s) while it holds it.
  A folder whose mtime is older than ``stale`` (10 s, the package's default, which Pi
  keeps) belongs to a holder that is gone: the next taker removes it (``rmdir``) and makes
  its own.
- Releasing is removing the folder. The folder stays empty: ``rmdir`` would fail on
  anything in it, and Pi's takeover with it.

Pi's settings writer tries ten times, 20 ms apart, then gives up on the write, so pinb
holds the lock only for a read, a merge and a rename (a few milliseconds); the refresh
thread keeps a hold that the disk makes longer from looking stale. pinb waits longer than
Pi does (:data:`WAIT`: past the stale time, so a dead holder's lock is always taken over
within it) and then says who holds the lock, in one line.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ...errors import UserFileLockError

__all__ = ["STALE", "WAIT", "LockDir", "lock_path", "locked"]

#: After how many seconds without a refresh a lock is a dead holder's (proper-lockfile's default).
STALE = 10.0
#: How long pinb waits for a lock: a little past :data:`STALE`, so a dead holder's lock is
#: always taken over within it.
WAIT = 12.0
#: proper-lockfile's floor on ``stale`` (2000 ms): a shorter one would be taken for 2 s.
_MIN_STALE = 2.0


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock folder of ``path``: ``<absolute path>.lock``, a symlink not followed (Pi's
    ``realpath: false``)."""
    return Path(os.path.abspath(path) + ".lock")


class LockDir:
    """A held ``<file>.lock`` folder; :func:`locked` makes one.

    Attributes
    ----------
    path:
        The lock folder.
    """

    def __init__(self, path: Path, stale: float) -> None:
        self.path = path
        self._stale = stale
        self._guard = threading.Lock()
        st = os.stat(path)
        self._mark = (st.st_dev, st.st_ino, st.st_mtime_ns)
        self._lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._keep_fresh, name=f"pinb-lock {path.name}", daemon=True
        )
        self._thread.start()

    def _ours(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino, st.st_mtime_ns) == self._mark

    def _keep_fresh(self) -> None:
        # proper-lockfile's update: every stale / 2 (at least 1 s), while the mtime is still
        # the one we set; a folder someone else took over is theirs (we only stop).
        every = max(self._stale / 2, 1.0)
        while not self._stop.wait(every):
            with self._guard:
                if self._lost or not self._ours():
                    self._lost = True
                    return
                try:
                    os.utime(self.path)
                    st = os.stat(self.path)
                except OSError:
                    continue  # tried again next time, as proper-lockfile does
                self._mark = (st.st_dev, st.st_ino, st.st_mtime_ns)

    def held(self) -> bool:
        """Whether the lock is still ours: the folder we made, with the mtime we gave it (not
        taken over as stale by someone who thought us gone)."""
        with self._guard:
            if not self._lost and not self._ours():
                self._lost = True
            return not self._lost

    def release(self) -> None:
        """Stop refreshing and remove the folder, unless someone else's has replaced it."""
        self._stop.set()
        self._thread.join()
        with self._guard:
            if not self._lost and self._ours():
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(self.path)
            self._lost = True


def _try_take(lock: Path, stale: float) -> bool:
    """One attempt, as proper-lockfile's ``acquireLock``: make the folder, or take over a
    stale one (then make it once more without a second stale check)."""
    try:
        os.mkdir(lock)
        return True
    except FileExistsError:
        pass
    try:
        st = os.stat(lock)
    except FileNotFoundError:  # released meanwhile
        return _make(lock)
    if st.st_mtime >= time.time() - stale:
        return False
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(lock)
    return _make(lock)


def _make(lock: Path) -> bool:
    try:
        os.mkdir(lock)
    except FileExistsError:
        return False
    return True


def _busy(path: str | os.PathLike[str], lock: Path, wait: float) -> str:
    try:
        age = max(time.time() - os.stat(lock).st_mtime, 0.0)
    except OSError:
        why = f"its lock {lock} came and went"
    else:
        why = f"its lock {lock} was refreshed {age:.0f} s ago"
    return (
        f"{os.fspath(path)}: still locked after waiting {wait:g} s ({why}): a running Pi or "
        "another pinb (a kernel, a terminal) is writing it; try again once it is done (remove "
        "that folder only if nothing is running)"
    )


@contextlib.contextmanager
def locked(
    path: str | os.PathLike[str], *, wait: float = WAIT, stale: float = STALE
) -> Iterator[LockDir]:
    """Hold ``path``'s ``<file>.lock`` for the ``with`` block, as Pi's writers take it.

    Parameters
    ----------
    path:
        The file to lock (it need not exist; its folder must).
    wait:
        Seconds to keep trying while someone else holds it.
    stale:
        Seconds after which a lock not refreshed is a dead holder's and is taken over
        (proper-lockfile's ``stale``; at least 2, as there).

    Raises
    ------
    UserFileLockError
        Someone still held the lock after ``wait`` seconds.
    OSError
        The lock folder cannot be made (a read-only folder, say).
    """
    stale = max(stale, _MIN_STALE)
    lock = lock_path(path)
    deadline = time.monotonic() + wait
    pause = 0.005
    while not _try_take(lock, stale):
        left = deadline - time.monotonic()
        if left <= 0:
            raise UserFileLockError(_busy(path, lock, wait), path=path)
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.1)
    held = LockDir(lock, stale)
    try:
        yield held
    finally:
        held.release()
