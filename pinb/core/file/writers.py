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
holds a line of JSON saying who holds it (:class:`Holder`: the chat panel, a notebook cell,
a pinb command, what it runs, the process); the turn lock's note also keeps the last
finished turns (:class:`TurnRecord`), so the next writer can tell who appended what it
reads. Where the session's folder cannot be written, the locks live in a private folder of
this user's (``$XDG_RUNTIME_DIR`` or the temporary directory) named after the file's device
and inode. How those files and folders are found, opened, checked and removed, so that none
can be turned against the user (a link to their notebook, another user's folder), is
:mod:`pinb.core.file.lock_files`; for a session outside the agent's sessions folder they are
removed once released, so nothing stays beside the user's files (nor the turns a released
note keeps: there, who wrote is known only while a writer holds the file).

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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...errors import SessionLockError
from .lock_files import (
    LOCK_FOLDER,
    LockFileRefusedError,
    LockFolder,
    is_pinbs,
    lock_folders,
    open_lock_file,
    open_lock_folder,
    read_lock_text,
    record_folder,
    remove_lock_file,
    still_named,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; pinb is alone
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "LOCK_FOLDER",
    "UNKNOWN_WRITER",
    "Holder",
    "LockFileRefusedError",
    "SessionBusyError",
    "SessionHold",
    "TurnLock",
    "TurnRecord",
    "default_role",
    "default_who",
    "describe_process",
    "hold_current",
    "holders",
    "outside_writer",
    "turn_holder",
]

#: How long a writer waits for another pinb writer's short turn (a label, a command's
#: append) to end before saying "busy". A turn that waits on a model (``long``) is
#: answered "busy" at once: waiting would only delay the same answer.
DEFAULT_WAIT = 2.0
#: Finished turns the turn lock's note keeps for the next writer (:class:`TurnRecord`).
KEPT_TURNS = 16
#: Ids of entries other programs appended during one turn that its record keeps.
KEPT_OTHERS = 256


# -- who a lock says holds it (the note's content) ----------------------------------------------
#
# Everything a lock file's note says lives here, apart from how lock files are opened,
# found and removed (below): the writer (Holder), the turns it keeps (TurnRecord), what
# this process is (describe_process) and the "busy" line.

#: What a writer is to the person reading about it: the chat panel, a notebook cell (or
#: an IPython shell's), a pinb command, another program using pinb.
ROLES = ("chat", "cell", "command", "program")
#: When a writer of each role is done, for "run it again when …".
_UNTIL = {
    "chat": "the chat's turn ends",
    "cell": "the cell has finished",
    "command": "the command has finished",
}
#: What a refused writer did not do, and what to do, by what it is (SessionBusyError.line).
_REFUSED = {
    "cell": "the cell was not run — run it again when {until}",
    "chat": "this message was not answered — send it again when {until}",
    "command": "nothing was written — run the command again when {until}",
    "": "nothing was written — try again when {until}",
}


@dataclass(frozen=True)
class Holder:
    """Someone who holds a session: a turn, an open session, or a process naming the file.

    Attributes
    ----------
    what:
        The whole description, as older pinb versions wrote and read it ("a Jupyter
        kernel running pinb's agent").
    role:
        One of :data:`ROLES` (``""``: a note that does not say, or a process found by its
        command line).
    who:
        How a person names the writer: "the chat panel (analysis.chat)", "a notebook cell".
    task:
        What it runs: "pinb's agent", "your Pi (Pi engine)", "pinb rm".
    process:
        What the process is (:func:`describe_process`): "a Jupyter kernel".
    long:
        The turn waits on a model (seconds, minutes): others are told "busy" at once.
    """

    what: str
    pid: int | None = None
    host: str | None = None
    since: str | None = None
    kind: str = "turn"
    role: str = ""
    who: str = ""
    task: str = ""
    process: str = ""
    long: bool = False

    @property
    def name(self) -> str:
        """The writer in a few words: "the chat panel (analysis.chat)", "a notebook cell"."""
        return self.who or self.what

    @property
    def until(self) -> str:
        """When it is done: "the chat's turn ends", "the cell has finished"."""
        return _UNTIL.get(self.role, "it has finished")

    def details(self) -> str:
        """What it runs, where, since when: "pinb's agent, a Jupyter kernel, pid 4242, …"."""
        parts = [p for p in (self.task, self.process) if p and p not in self.name]
        if self.pid is not None:
            here = self.pid == os.getpid() and self.host in (None, socket.gethostname())
            if here and self.kind == "turn":  # a turn this process holds is another thread's
                parts.append(f"pid {self.pid}, another thread of this process")
            else:
                parts.append(f"pid {self.pid}")
        if self.host and self.host != socket.gethostname():
            parts.append(f"on {self.host}")
        if self.since:
            parts.append(f"since {self.since}")
        return ", ".join(parts)

    def describe(self) -> str:
        details = self.details()
        return f"{self.name} ({details})" if details else self.name

    def busy_line(self, refused: str = "") -> str:
        """The one line a writer refused by this holder's turn shows.

        ``refused`` is what was refused: ``"cell"``, ``"chat"``, ``"command"`` (or
        ``""``), which says what did not happen and what to do.
        """
        details = self.details()
        where = f" ({details})" if details else ""
        then = _REFUSED.get(refused, _REFUSED[""]).format(until=self.until)
        return f"busy: {self.name} is running a turn on this session{where}; {then}"


def _running(module: str, app: str) -> bool:
    """Whether this process runs ``app`` (a traitlets singleton) from ``module``.

    By the application that runs, not by what was imported: a kernel whose notebook
    imported Jupyter AI's persona manager (notebooks/08-chat.ipynb) has the Jupyter
    server's modules loaded, and is still a kernel.
    """
    loaded = sys.modules.get(module)
    cls = getattr(loaded, app, None) if loaded is not None else None
    try:
        return bool(cls is not None and cls.initialized())
    except Exception:  # an application class that is not a singleton after all
        return False


def describe_process() -> str:
    """What this process is, for the people a lock or hold is shown to."""
    if _running("ipykernel.kernelapp", "IPKernelApp"):
        return "a Jupyter kernel"
    if _running("jupyter_server.serverapp", "ServerApp"):
        return "the Jupyter server"
    argv0 = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    if argv0 == "pinb" or getattr(main, "name", "") in ("pinb.__main__", "pinb.cli.__main__"):
        return "the pinb command"  # not a process that merely imported pinb.cli (a test)
    if _running("IPython.core.interactiveshell", "InteractiveShell"):
        return "an IPython shell"
    return f"a Python process ({argv0})"


def default_role(process: str | None = None) -> str:
    """The role of a writer that does not say (see :data:`ROLES`), by its process.

    A kernel's or a shell's turns are its cells' (a ``%%pi`` cell, a ``%pi`` command); the
    Jupyter server runs pinb only for its chat panel; ``pinb`` is a command.
    """
    process = process if process is not None else describe_process()
    if process in ("a Jupyter kernel", "an IPython shell"):
        return "cell"
    if process == "the Jupyter server":
        return "chat"
    if process == "the pinb command":
        return "command"
    return "program"


def default_who(role: str, process: str | None = None) -> str:
    """How a person names a writer of ``role`` in this process (or ``process``) that does
    not name itself: "a notebook cell", "the chat panel", "the pinb command"."""
    process = process if process is not None else describe_process()
    if role == "cell":
        return "a notebook cell" if process == "a Jupyter kernel" else "a cell of an IPython shell"
    if role == "chat":
        return "the chat panel"
    if role == "command":
        return "the pinb command"
    return f"{process} using pinb"


def _this_writer(task: str = "", *, role: str = "", who: str = "", long: bool = False) -> Holder:
    """This process as the writer of a turn: ``role`` and ``who`` default to its process's."""
    process = describe_process()
    role = role or default_role(process)
    who = who or default_who(role, process)
    what = f"{process} running {task}" if task else process  # older pinb versions show this
    return Holder(what, os.getpid(), socket.gethostname(), _now(), "turn", role, who, task,
                  process, long)  # fmt: skip


@dataclass(frozen=True)
class TurnRecord:
    """A finished pinb turn, as the turn lock's note keeps it for the next writer.

    Entries after ``start`` up to ``end`` (in file order), but for ``others``, are the
    writer's; entries after the last record's ``end`` were appended by another program
    (Pi takes no lock and leaves no note).

    Attributes
    ----------
    writer:
        Who ran the turn.
    start:
        The id of the file's last entry when the turn began (after reading what others had
        appended), ``None`` for an empty file.
    end:
        The id of the file's last entry when the turn ended.
    leaf:
        Where the session stood at the end: where the file resumes for that writer.
    others:
        Ids of entries other programs appended during the turn.
    """

    writer: Holder
    start: str | None
    end: str | None
    leaf: str | None
    others: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        w = self.writer
        return {
            "role": w.role, "who": w.who, "task": w.task, "process": w.process, "pid": w.pid,
            "host": w.host, "since": w.since, "start": self.start, "end": self.end,
            "leaf": self.leaf, "others": list(self.others[:KEPT_OTHERS]),
        }  # fmt: skip

    @classmethod
    def from_json(cls, value: Any) -> TurnRecord | None:
        if not isinstance(value, dict):
            return None
        holder = _holder_of(value, "turn")
        others = value.get("others")
        ids = tuple(x for x in others if isinstance(x, str)) if isinstance(others, list) else ()
        return cls(holder, _text(value, "start"), _text(value, "end"), _text(value, "leaf"), ids)


def _text(note: dict[str, Any], key: str) -> str | None:
    value = note.get(key)
    return value if isinstance(value, str) else None


def _holder_of(note: dict[str, Any], kind: str) -> Holder:
    pid = note.get("pid")
    role = _text(note, "role") or ""
    return Holder(
        _text(note, "what") or _text(note, "who") or "a pinb writer",
        pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        _text(note, "host"),
        _text(note, "since"),
        kind,
        role if role in ROLES else "",
        _text(note, "who") or "",
        _text(note, "task") or "",
        _text(note, "process") or "",
        note.get("long") is True,
    )


def _note_fields(holder: Holder | None, turns: list[Any]) -> dict[str, Any]:
    """A note's JSON: who holds the lock (none once it is released), the turns kept (as
    the note holds them: read only by a writer that needs them, :func:`_parse_turns`)."""
    note: dict[str, Any] = {}
    if holder is not None:
        note = {
            "what": holder.what, "pid": holder.pid, "host": holder.host,
            "since": holder.since, "role": holder.role, "who": holder.who,
            "task": holder.task, "process": holder.process, "long": holder.long,
        }  # fmt: skip
    if turns:
        note["turns"] = turns[-KEPT_TURNS:]
    return note


def _parse_note(path: Path) -> dict[str, Any] | None:
    try:
        note = json.loads(read_lock_text(path) or "null")
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def _read_note(path: Path, kind: str) -> Holder | None:
    """Who the note of lock file ``path`` says holds it (``None``: it does not say)."""
    note = _parse_note(path)
    if note is None or not any(k in note for k in ("what", "who", "pid")):
        return None  # a released lock's note keeps only the turns
    return _holder_of(note, kind)


def _read_turns(path: Path) -> list[Any]:
    """The finished turns the turn lock's note keeps, oldest first, as JSON values."""
    note = _parse_note(path)
    turns = note.get("turns") if note is not None else None
    return [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []


def _parse_turns(turns: list[Any]) -> list[TurnRecord]:
    found = [TurnRecord.from_json(t) for t in turns]
    return [t for t in found if t is not None]


def _write_note(fd: int, holder: Holder | None, turns: list[Any] | None = None) -> None:
    data = json.dumps(_note_fields(holder, turns or [])).encode("utf-8") + b"\n"
    with contextlib.suppress(OSError):
        # Over the old note, then cut to its length: emptying a file whose blocks were
        # written out frees and allocates them again (a millisecond, on every turn).
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))


def _me(what: str, kind: str) -> Holder:
    return Holder(what, os.getpid(), socket.gethostname(), _now(), kind)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class SessionBusyError(SessionLockError):
    """Another writer is running a turn on this session (``holder`` says who).

    In a notebook it shows as one line (:meth:`line`), saying the cell was not run.
    """

    def __init__(self, path: Path, holder: Holder | None) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"{path}: {self.line()}")

    def line(self, refused: str = "") -> str:
        """The one line for the refused writer: ``"cell"``, ``"chat"``, ``"command"``."""
        holder = self.holder or Holder("another pinb writer", role="", who="another pinb writer")
        return holder.busy_line(refused)

    def _render_traceback_(self) -> list[str]:
        # IPython shows this for a cell: the file is the cell's own session.
        return [self.line("cell")]


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


# -- the turn lock ---------------------------------------------------------------------------


class _Held:
    """A turn lock this process holds: its descriptor, the owning thread, the depth, who
    holds it, the finished turns its note keeps, and where its file is (to remove it once
    released)."""

    def __init__(
        self, fd: int, thread: int, holder: Holder, turns: list[Any], folder: LockFolder, name: str
    ) -> None:
        self.fd = fd
        self.thread = thread
        self.depth = 1
        self.holder = holder
        self.turns = turns
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
        What is writing, for the "busy" answer others get (``"pinb's agent"``): the
        holder's ``task``.
    wait:
        Seconds to wait for another writer's short turn before :class:`SessionBusyError`;
        a ``long`` turn's holder is answered at once.
    role, who:
        What the writer is (:data:`ROLES`) and how a person names it; by default this
        process's (:func:`default_role`).
    long:
        This turn waits on a model: writers that find it held are told "busy" at once.
    """

    def __init__(
        self,
        path: Path,
        what: str = "",
        *,
        wait: float = DEFAULT_WAIT,
        role: str = "",
        who: str = "",
        long: bool = False,
    ) -> None:
        self.path = path
        self.what = what
        self.wait = wait
        self.role = role
        self.who = who
        self.long = long
        self._key: str | None = None

    def __enter__(self) -> TurnLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @property
    def held(self) -> bool:
        return self._key is not None

    @property
    def holder(self) -> Holder | None:
        """Who holds the lock, as its note says (``None`` while it is not held)."""
        held = _HELD.get(self._key) if self._key is not None else None
        return held.holder if held is not None else None

    @property
    def turns(self) -> list[TurnRecord]:
        """The finished turns the lock's note kept when it was taken, oldest first."""
        held = _HELD.get(self._key) if self._key is not None else None
        return _parse_turns(held.turns) if held is not None else []

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
                if left <= 0 or _HELD[key].holder.long:
                    raise SessionBusyError(self.path, _HELD[key].holder)
                _HELD_LOCK.wait(left)
            held = _HELD.get(key)
            if held is not None:
                held.depth += 1
                self._key = key
                return
        folder, fd = _lock_turn_file(self.path, name, deadline)
        me_holder = _this_writer(self.what, role=self.role, who=self.who, long=self.long)
        turns = _kept_turns(self.path, folder, name)
        _write_note(fd, me_holder, turns)
        with _HELD_LOCK:
            _HELD[key] = _Held(fd, me, me_holder, turns, folder, name)
        self._key = key

    def release(self, record: TurnRecord | None = None) -> None:
        """Let the lock go; the outermost release keeps ``record`` (this turn) in its note."""
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
        # The note says nobody holds it now, and keeps the finished turns for the next one
        # (unless the file goes: beside the user's files nothing is left, under the flock).
        kept = [*held.turns, *([record.to_json()] if record is not None else [])]
        if held.folder.tidy:
            _keep_turns(self.path, held.name, kept)
            remove_lock_file(held.folder, held.name, held.fd)
        else:
            _write_note(held.fd, None, kept)
        os.close(held.fd)  # closing drops the flock
        held.folder.close()


def _kept_turns(session: Path, folder: LockFolder, name: str) -> list[Any]:
    """The finished turns kept for the next writer: in the turn lock's note, or, for a
    session among the user's own files (whose lock files go once released), in its
    private folder (:func:`~pinb.core.file.lock_files.record_folder`)."""
    if not folder.tidy:
        return _read_turns(folder.path / name)
    try:
        private = record_folder(session)
    except (LockFileRefusedError, OSError):
        return []
    try:
        return _read_turns(private.path / f"{name}s")
    finally:
        private.close()


def _keep_turns(session: Path, name: str, turns: list[Any]) -> None:
    """Keep ``turns`` in the private folder of a session whose lock files go (under the
    turn lock still held: no other pinb writer writes them meanwhile); best effort."""
    try:
        private = record_folder(session)
    except (LockFileRefusedError, OSError):
        return
    try:
        fd = open_lock_file(private, f"{name}s")
    except (LockFileRefusedError, OSError):
        private.close()
        return
    try:
        _write_note(fd, None, turns)
    finally:
        os.close(fd)
        private.close()


def _lock_turn_file(session: Path, name: str, deadline: float) -> tuple[LockFolder, int]:
    """``flock`` the turn file ``name`` of ``session``, waiting until ``deadline`` (or not at
    all for a turn that waits on a model: :func:`_refuse_at_once`): the folder and
    descriptor of the file locked, which still has the name once locked (its last holder
    may have removed it meanwhile: :func:`~pinb.core.file.lock_files.remove_lock_file`)."""
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
                    _refuse_at_once(session, folder.path / name, deadline)
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


def _refuse_at_once(path: Path, lock_path: Path, deadline: float) -> None:
    """While another process holds the turn lock: "busy" once the wait is over, or at once
    when its note says the turn waits on a model."""
    holder = _read_note(lock_path, "turn")
    if time.monotonic() >= deadline or (holder is not None and holder.long):
        raise SessionBusyError(path, holder)


def turn_holder(path: str | os.PathLike[str]) -> Holder | None:
    """Who holds the turn of session file ``path`` now, when a writer in this process or
    another does (a quick look that takes nothing: before a cell prepares its run)."""
    file = Path(os.path.abspath(os.fspath(path)))
    name = f"{file.name}.turn"
    with _HELD_LOCK:
        held = _HELD.get(os.path.normcase(os.path.abspath(file.with_name(name))))
        if held is not None:
            return None if held.thread == threading.get_ident() else held.holder
    for folder in lock_folders(file):
        try:
            holder = _live(folder, name, "turn", remove=False)
        finally:
            folder.close()
        if holder is not None:
            return holder
    return None


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
        yield Holder(
            f"a process naming this file: {program}",
            int(entry.name),
            kind="process",
            who=_program_name(args),
        )


def _program_name(args: list[str]) -> str:
    """How a person names a process by its arguments: Pi (in a terminal, or an engine's
    ``--mode rpc``), else nothing (the command line says it)."""
    names = [Path(a).name for a in args[:2]]
    pi = "pi" in names or any("pi-coding-agent" in a for a in args[:2])
    if not pi:
        return ""
    if "rpc" in args and args.index("rpc") > 0 and args[args.index("rpc") - 1] == "--mode":
        return "Pi over RPC (pi --mode rpc, a Pi engine)"
    return "pi in a terminal"


#: What another program's entries are said to be by when nothing says who wrote them.
UNKNOWN_WRITER = "another program (not pinb: e.g. pi in a terminal)"


def outside_writer(path: str | os.PathLike[str]) -> Holder:
    """Who, not being pinb, appended to ``path``: a ``pi`` whose command line names the file
    (``pi --session FILE``, Linux ``/proc``), else :data:`UNKNOWN_WRITER` (``pi -p`` that
    has exited, ``pi --continue``: nothing can say)."""
    file = Path(os.path.abspath(os.fspath(path)))
    found = [h for h in _processes_naming(file) if h.pid != os.getpid()]
    pis = [h for h in found if h.who == "pi in a terminal"]
    if len(pis) == 1:
        return replace(pis[0], who=f"pi in a terminal (pid {pis[0].pid})")
    if pis:
        pids = ", ".join(str(h.pid) for h in pis)
        return replace(pis[0], who=f"pi in a terminal (one of pids {pids})")
    return Holder(UNKNOWN_WRITER, kind="process", who=UNKNOWN_WRITER)


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
