"""Who writes a session: a turn lock and "held open" marks beside a session file, across processes.

Pi takes no lock: it appends whole lines (``appendFileSync``) and keeps its leaf in memory.
pinb's writers (the agent in a kernel, the magics, the CLI, the Pi engine's kernel, a second
kernel) coordinate through two kinds of lock files in a ``.pinb-locks`` folder beside the
session file:

- **The turn lock** (``<name>.turn``): held for a whole turn (a ``%%pi`` cell, a
  ``pinb compact``, one label), so two pinb writers never interleave their entries. A
  second writer waits briefly, then gets :class:`SessionBusyError` naming who holds it:
  never a hang.
- **Holds** (``<name>.<pid>-<n>.open``): a kernel marks its current session, and its Pi
  engine's while that runs, so ``pinb rm`` can refuse to move a file someone will append
  to, naming who.

Both are ``flock`` locks on files of their own: the kernel drops them when a process dies,
so a dead holder's lock is simply free (its file is taken over or tidied away). Each file
holds a line of JSON saying who holds it. Where the session's folder cannot be written, the
locks live in a private folder of this user's (``$XDG_RUNTIME_DIR`` or the temporary
directory) named after the file's device and inode. How those files and folders are found,
opened, checked and removed, so that none can be turned against the user (a link to their
notebook, another user's folder), is :mod:`pinb.core.lock_files`; for a session outside the
agent's sessions folder they are removed once released, so nothing stays beside the user's
files.

Pi in a terminal holds nothing pinb can see; :func:`holders` also looks for processes
whose command line names the file (Linux ``/proc``), which finds ``pi --session FILE``
but not ``pi --continue``.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SessionLockError
from .lock_files import (
    LOCK_FOLDER,
    LockFileRefusedError,
    LockFolder,
    is_pinbs,
    lock_folders,
    open_lock_file,
    open_lock_folder,
    read_lock_text,
    remove_lock_file,
    still_named,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; pinb is alone
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "LOCK_FOLDER",
    "Holder",
    "LockFileRefusedError",
    "SessionBusyError",
    "SessionHold",
    "TurnLock",
    "describe_process",
    "hold_current",
    "holders",
]

#: How long a writer waits for another pinb writer's turn to end before saying "busy".
DEFAULT_WAIT = 2.0


class SessionBusyError(SessionLockError):
    """Another writer is running a turn on this session (``holder`` says who)."""

    def __init__(self, path: Path, holder: Holder | None) -> None:
        self.path = path
        self.holder = holder
        who = holder.describe() if holder is not None else "another pinb writer"
        super().__init__(
            f"{path}: busy: {who} is running a turn on this session; try again when it has finished"
        )


@dataclass(frozen=True)
class Holder:
    """Someone who holds a session: a turn, an open session, or a process naming the file."""

    what: str
    pid: int | None = None
    host: str | None = None
    since: str | None = None
    kind: str = "turn"

    def describe(self) -> str:
        where = f"pid {self.pid}" if self.pid is not None else ""
        if self.host and self.host != socket.gethostname():
            where += f" on {self.host}"
        since = f", since {self.since}" if self.since else ""
        return f"{self.what} ({where}{since})" if where or since else self.what


def describe_process() -> str:
    """What this process is, for the people a lock or hold is shown to."""
    if "jupyter_server.serverapp" in sys.modules:  # before IPython: the chat's Pi engine loads it
        return "the Jupyter server (its chat panel)"
    if "ipykernel" in sys.modules:
        return "a Jupyter kernel"
    argv0 = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if argv0 in ("pinb", "__main__.py") or "pinb.cli" in sys.modules:
        return "the pinb command"
    if "IPython" in sys.modules:
        return "an IPython shell"
    return f"a Python process ({argv0})"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _try_flock(fd: int) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise


def _write_note(fd: int, holder: Holder) -> None:
    note = {"what": holder.what, "pid": holder.pid, "host": holder.host, "since": holder.since}
    data = json.dumps(note).encode("utf-8") + b"\n"
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)


def _read_note(path: Path, kind: str) -> Holder | None:
    try:
        note = json.loads(read_lock_text(path) or "null")
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict):
        return None
    pid = note.get("pid")
    return Holder(
        str(note.get("what") or "a pinb writer"),
        pid if isinstance(pid, int) else None,
        note.get("host") if isinstance(note.get("host"), str) else None,
        note.get("since") if isinstance(note.get("since"), str) else None,
        kind,
    )


def _me(what: str, kind: str) -> Holder:
    return Holder(what, os.getpid(), socket.gethostname(), _now(), kind)


# -- the turn lock ---------------------------------------------------------------------------


class _Held:
    """A turn lock this process holds: its descriptor, the owning thread, the depth, and
    where its file is (to remove it once released)."""

    def __init__(self, fd: int, thread: int, folder: LockFolder, name: str) -> None:
        self.fd = fd
        self.thread = thread
        self.depth = 1
        self.folder = folder
        self.name = name


_HELD: dict[str, _Held] = {}
_HELD_LOCK = threading.Condition()


class TurnLock:
    """The turn lock of one session file, re-entrant in the thread that holds it.

    Parameters
    ----------
    path:
        The session file (it need not exist yet).
    what:
        What is writing, for the "busy" answer others get (``"pinb's agent"``), after
        what the process is (:func:`describe_process`): "a Jupyter kernel running pinb's
        agent".
    wait:
        Seconds to wait for another writer's turn before :class:`SessionBusyError`.
    """

    def __init__(self, path: Path, what: str = "", *, wait: float = DEFAULT_WAIT) -> None:
        self.path = path
        self.what = what
        self.wait = wait
        self._key: str | None = None

    def __enter__(self) -> TurnLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @property
    def held(self) -> bool:
        return self._key is not None

    def acquire(self) -> None:
        """Take the lock (waiting up to ``wait`` seconds), or raise :class:`SessionBusyError`
        (:class:`LockFileRefusedError` when what is at the lock's place is unsafe to use)."""
        name = f"{self.path.name}.turn"
        key = os.path.normcase(os.path.abspath(self.path.with_name(name)))
        me = threading.get_ident()
        deadline = time.monotonic() + self.wait
        with _HELD_LOCK:
            while key in _HELD and _HELD[key].thread != me:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SessionBusyError(
                        self.path, Holder("another thread of this process", os.getpid())
                    )
                _HELD_LOCK.wait(left)
            held = _HELD.get(key)
            if held is not None:
                held.depth += 1
                self._key = key
                return
        folder, fd = _lock_turn_file(self.path, name, deadline)
        what = describe_process() + (f" running {self.what}" if self.what else "")
        _write_note(fd, _me(what, "turn"))
        with _HELD_LOCK:
            _HELD[key] = _Held(fd, me, folder, name)
        self._key = key

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None:
            return
        with _HELD_LOCK:
            held = _HELD.get(key)
            if held is None:
                return
            held.depth -= 1
            if held.depth > 0:
                return
            del _HELD[key]
            _HELD_LOCK.notify_all()
        with contextlib.suppress(OSError):
            os.ftruncate(held.fd, 0)
        if held.folder.tidy:  # beside the user's files: leave nothing (under the flock)
            remove_lock_file(held.folder, held.name, held.fd)
        os.close(held.fd)  # closing drops the flock
        held.folder.close()


def _lock_turn_file(session: Path, name: str, deadline: float) -> tuple[LockFolder, int]:
    """``flock`` the turn file ``name`` of ``session``, waiting until ``deadline``: the folder
    and descriptor of the file locked, which still has the name once locked (its last
    holder may have removed it meanwhile: :func:`~pinb.core.lock_files.remove_lock_file`)."""
    folder = open_lock_folder(session)
    vanished = 0
    try:
        while True:
            try:
                fd = open_lock_file(folder, name)
            except FileNotFoundError:  # the folder was tidied away just now: make it again
                vanished += 1
                if vanished > 20:
                    raise
                folder.close()
                folder = open_lock_folder(session)
                continue
            try:
                pause = 0.001
                while not _try_flock(fd):
                    if time.monotonic() >= deadline:
                        raise SessionBusyError(session, _read_note(folder.path / name, "turn"))
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)
            except BaseException:
                os.close(fd)
                raise
            if still_named(folder, name, fd):
                return folder, fd
            # A lock on a file its holder removed (or a folder since moved): lock what has
            # the name now.
            os.close(fd)
            if time.monotonic() >= deadline:
                raise SessionBusyError(session, None)
            folder.close()
            folder = open_lock_folder(session)
    except BaseException:
        folder.close()
        raise


# -- holds -------------------------------------------------------------------------------------

_HOLD_NUMBERS = itertools.count(1)


class SessionHold:
    """This process holds ``path`` open: ``pinb rm`` refuses to move it while it does.

    Release it with :meth:`release` (or use it as a context manager); a process that dies
    releases it with its descriptors.
    """

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self._fd: int | None = None
        self._file: Path | None = None
        self._folder: LockFolder | None = None

    def acquire(self) -> SessionHold:
        if self._fd is not None:
            return self
        try:
            folder, name, fd = _new_mark(self.path)
        except LockFileRefusedError as exc:
            # Best effort, but said: something is in the way pinb will not touch.
            warnings.warn(
                f"{exc} (until then `pinb rm` cannot see that this process holds {self.path.name})",
                stacklevel=2,
            )
            return self
        except OSError:
            return self  # nowhere to put a mark: the hold is best effort
        _try_flock(fd)
        _write_note(fd, _me(self.what, "open"))
        self._fd, self._file, self._folder = fd, folder.path / name, folder
        return self

    def describe(self, what: str) -> None:
        """Say what holds it now (a Pi engine started, say)."""
        self.what = what
        if self._fd is not None:
            _write_note(self._fd, _me(what, "open"))

    def release(self) -> None:
        fd, self._fd = self._fd, None
        file, self._file = self._file, None
        folder, self._folder = self._folder, None
        if fd is None:
            return
        if folder is not None and file is not None:
            remove_lock_file(folder, file.name, fd)
        os.close(fd)
        if folder is not None:
            folder.close()

    def __enter__(self) -> SessionHold:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.release()


def _new_mark(session: Path) -> tuple[LockFolder, str, int]:
    """A new ``.open`` mark for ``session``: its folder, name and descriptor. The name is this
    process's own and the file is made here; anything already there by that name (a dead
    process's of the same pid, or something planted) is left alone for the next number."""
    for _ in range(100):
        folder = open_lock_folder(session)
        name = f"{session.name}.{os.getpid()}-{next(_HOLD_NUMBERS)}.open"
        try:
            return folder, name, open_lock_file(folder, name, new=True)
        except (FileExistsError, FileNotFoundError):  # taken, or the folder was tidied away
            folder.close()
        except BaseException:
            folder.close()
            raise
    raise FileExistsError(errno.EEXIST, "no free name for a mark", str(session))


def hold_current(hold: SessionHold | None, path: Path | None, what: str) -> SessionHold | None:
    """The hold on a writer's current file ``path``: ``hold`` itself when it holds that
    file, else a new one (``hold`` released); none for a file not written yet."""
    if hold is not None and hold.path == path:
        return hold
    if hold is not None:
        hold.release()
    if path is None or not path.exists():
        return None
    return SessionHold(path, what).acquire()


# -- who holds a file --------------------------------------------------------------------------


def holders(path: str | os.PathLike[str], *, include_self: bool = False) -> list[Holder]:
    """Everyone who holds the session file ``path`` now.

    Live turn locks and holds of pinb processes (a dead process's marks are tidied away),
    then processes whose command line names the file (``pi --session FILE``, by path or
    session id; Linux only). This process is left out unless ``include_self``.
    """
    file = Path(os.path.abspath(os.fspath(path)))
    me = os.getpid()
    found: list[Holder] = []
    for folder in lock_folders(file):
        try:
            marks = sorted(n for n in os.listdir(folder.fd) if n.startswith(f"{file.name}."))
            for mark in marks:
                suffix = mark[len(file.name) :]
                if suffix == ".turn":
                    kind = "turn"
                elif suffix.endswith(".open"):
                    kind = "open"
                else:
                    continue
                holder = _live(folder, mark, kind, remove=kind == "open" or folder.tidy)
                if holder is not None and (include_self or holder.pid != me):
                    found.append(holder)
        finally:
            folder.close()
    found.extend(h for h in _processes_naming(file) if include_self or h.pid != me)
    return found


def _live(folder: LockFolder, mark: str, kind: str, *, remove: bool) -> Holder | None:
    """The holder of lock file ``mark`` if its lock is held; a free one of this user's is
    tidied away (``remove``). What is not a regular file is nobody's lock, and is left alone."""
    try:
        fd = open_lock_file(folder, mark, write=False)
    except (LockFileRefusedError, OSError):
        return None
    try:
        if _try_flock(fd):
            if remove and is_pinbs(fd):
                remove_lock_file(folder, mark, fd)  # under the flock just taken
            return None
    finally:
        os.close(fd)
    return _read_note(folder.path / mark, kind) or Holder("a pinb process", kind=kind)


def _processes_naming(file: Path) -> Iterator[Holder]:
    """Processes (Linux ``/proc``) whose arguments name ``file`` by path or session id."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    session_id = _session_id(file)
    try:
        real = os.path.realpath(file)
    except OSError:
        real = str(file)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        args = [a.decode("utf-8", "replace") for a in argv if a]
        if not args or not any(_names(a, cwd, real, session_id) for a in args[1:]):
            continue
        program = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(args[:4]))
        if len(args) > 4:
            program += " …"
        yield Holder(f"a process naming this file: {program}", int(entry.name), kind="process")


def _names(arg: str, cwd: str, real: str, session_id: str | None) -> bool:
    if arg.endswith(".jsonl"):
        candidate = arg if os.path.isabs(arg) else os.path.join(cwd, arg)
        with contextlib.suppress(OSError):
            return os.path.realpath(candidate) == real
        return False
    return bool(session_id) and len(arg) >= 8 and session_id.startswith(arg)  # type: ignore[union-attr]


def _session_id(file: Path) -> str | None:
    try:
        with open(file, "rb") as handle:
            first = handle.readline(1 << 16)
        header: Any = json.loads(first.decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    value = header.get("id") if isinstance(header, dict) else None
    return value if isinstance(value, str) else None
