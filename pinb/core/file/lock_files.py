"""Lock and mark files that cannot be turned against the user: where they live, how they are
opened, checked and removed.

pinb's turn lock and "held open" marks (:mod:`pinb.core.file.writers`) are small files pinb
creates, writes a note into and ``flock``\\ s. A folder pinb did not make may already hold
something at their names: a repository can ship ``.pinb-locks/x.jsonl.turn`` as a symbolic
link to the user's notebook, and another local user can make the shared temporary folder's
``pinb-locks-<uid>`` before the victim does. So nothing here follows or trusts what it finds:

- **A lock folder is a real folder.** It is opened ``O_DIRECTORY | O_NOFOLLOW`` and every
  file in it is opened relative to that descriptor, so a folder swapped for a link cannot
  redirect a lock. A symbolic link or a non-folder in its place is refused.
- **A lock file is a regular file of this user with one name.** It is looked at before it
  is opened (a FIFO, a device, a socket or a folder is never opened, so nothing hangs or
  reacts to an open), opened ``O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`` and looked at again
  through the descriptor: a link, another user's file or a file with other names (a hard
  link to someone's work) is refused before a byte is written.
- **The fallback folder is private.** Where the session's own folder cannot be written, the
  locks go to ``$XDG_RUNTIME_DIR/pinb-locks`` (when that is a folder of this user's with
  mode 0700), else ``<tempdir>/pinb-locks-<uid>``, and one folder per session file inside
  it (named after the file's device and inode). Each is made with mode 0700 and refused
  unless it is a real folder owned by this user that nobody else may write in (one others
  may only read, as older pinb made them, is made 0700 first).
- **Nothing is left beside a user's file.** For a session outside the agent's sessions
  folder the lock file is removed when its lock is released, and the lock folder with its
  last file (see :func:`remove_lock_file` for why that keeps ``flock`` exclusion whole).

A refusal is one :class:`LockFileRefusedError` line naming the path, the reason and what to
do; nothing found in the way is ever removed, truncated or written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import SessionLockError
from .paths import sessions_root

__all__ = [
    "LOCK_FOLDER",
    "LockFileRefusedError",
    "LockFolder",
    "fallback_root",
    "in_sessions_folder",
    "is_pinbs",
    "lock_folders",
    "open_lock_file",
    "open_lock_folder",
    "read_lock_text",
    "remove_lock_file",
    "still_named",
]

#: The folder beside a session file that holds its lock files.
LOCK_FOLDER = ".pinb-locks"

# POSIX flags (0 where a platform lacks one: there pinb has no locks to protect anyway).
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_NOCTTY = getattr(os, "O_NOCTTY", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_FOLDER_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_FILE_FLAGS = _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK | _O_NOCTTY
#: A lock folder that vanishes between being made and being used (another process tidied
#: it away) is looked for again this many times before the error is let through.
_ATTEMPTS = 20


class LockFileRefusedError(SessionLockError):
    """A lock file or folder pinb will not use, because it could be turned against the user.

    Attributes
    ----------
    path:
        The file or folder refused.
    reason:
        Why (``"it is a symbolic link"``).
    """

    def __init__(self, path: Path, reason: str, remedy: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: pinb will not use this for its locks: {reason}; {remedy}")


def _euid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0


def _what_it_is(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a file" if stat.S_ISREG(mode) else "something other than a file"


# -- folders -----------------------------------------------------------------------------------


@dataclass
class LockFolder:
    """An open lock folder: ``fd`` is the folder at ``path``, opened without following links.

    Attributes
    ----------
    path:
        Where it is (for messages, and to notice it being moved or replaced).
    fd:
        Its descriptor; every lock file is opened, checked and removed relative to it.
    tidy:
        Lock files are removed once released, and the folder with the last of them: the
        session is outside the agent's sessions folder, among the user's own files.
    """

    path: Path
    fd: int
    tidy: bool

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def remove_if_empty(self) -> None:
        """Remove the folder when no lock file is left in it (an empty folder holds nothing
        to lose; one someone is about to use is made again, see :func:`open_lock_file`)."""
        with contextlib.suppress(OSError):
            os.rmdir(self.path)


def in_sessions_folder(session: Path) -> bool:
    """Whether ``session`` is in the agent's sessions folder (pinb's and Pi's own place),
    its folder resolved as :func:`pinb.core.file.remove.inside` resolves it."""
    root = os.path.join(os.path.realpath(sessions_root()), "")
    here = os.path.join(os.path.realpath(session.parent), "")
    return here.startswith(root)


def _writable(path: Path, mode: int) -> bool:
    # The mode bits count even for root, who could write anyway: a folder the user made
    # read-only gets no lock folder of pinb's.
    return bool(mode & 0o222) and os.access(path, os.W_OK)


def _writable_folder(fd: int) -> bool:
    """:func:`_writable`, asked of a folder open on ``fd`` rather than of a name that may
    lead elsewhere by the time it is asked."""
    return bool(os.fstat(fd).st_mode & 0o222) and os.access(".", os.W_OK, dir_fd=fd)


def _open_folder(path: Path, *, dir_fd: int | None = None, private: bool = False) -> int:
    """Open the folder ``path`` (its last part relative to ``dir_fd`` when given), refusing a
    link or a non-folder, and, when ``private``, a folder of another user's or one anyone
    else may use."""
    name = path.name if dir_fd is not None else str(path)
    try:
        fd = os.open(name, _FOLDER_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        raise LockFileRefusedError(
            path, f"it is {_what_it_is(mode)}, not a folder", "remove it, then try again"
        ) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode):
            raise LockFileRefusedError(
                path,
                f"it is {_what_it_is(info.st_mode)}, not a folder",
                "remove it, then try again",
            )
        if private:
            _make_private(path, fd, info)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _make_private(path: Path, fd: int, info: os.stat_result) -> None:
    """Refuse a folder of another user's or one others may write in; one of this user's
    that others may only read (an older pinb made its folders 0755) is made 0700: nobody
    else can have put anything in it."""
    if info.st_uid != _euid():
        raise LockFileRefusedError(
            path,
            f"it belongs to another user (uid {info.st_uid}), who could redirect pinb's locks",
            "have it removed, or set XDG_RUNTIME_DIR or TMPDIR to a folder of your own",
        )
    if info.st_mode & 0o022:
        raise LockFileRefusedError(
            path,
            f"other users may write in it (mode {stat.S_IMODE(info.st_mode):04o})",
            f"make it private (chmod 700 {path}) or remove it, then try again",
        )
    if info.st_mode & 0o077:
        os.fchmod(fd, 0o700)


def _make_folder(path: Path, mode: int, *, dir_fd: int | None = None) -> bool:
    """Make a folder; whether it (or something by its name) is there now."""
    try:
        os.mkdir(path.name if dir_fd is not None else path, mode, dir_fd=dir_fd)
    except FileExistsError:
        pass
    except OSError:
        return False
    return True


def _beside(session: Path, tidy: bool, *, create: bool) -> LockFolder | None:
    """``.pinb-locks`` beside the session, when it is (or can be made) there and writable
    (or, to look for locks, when it is there at all)."""
    folder = session.parent / LOCK_FOLDER
    for _ in range(_ATTEMPTS):
        try:
            fd = _open_folder(folder)
        except FileNotFoundError:  # not made yet, or tidied away by another writer just now
            if not create:
                return None
            try:
                parent = os.stat(session.parent).st_mode
            except OSError:
                return None
            if not _writable(session.parent, parent) or not _make_folder(folder, 0o777):
                return None
            continue
        # Asked of the folder opened, not of its name: a folder another writer tidied away
        # between a look at its name and the question looked read-only, and this writer
        # locked in the fallback folder while the others locked here, two turns at once.
        if create and not _writable_folder(fd):
            os.close(fd)
            return None
        return LockFolder(folder, fd, tidy)
    # Never somewhere else instead: the other writers lock here.
    raise FileNotFoundError(errno.ENOENT, "the lock folder keeps disappearing", str(folder))


def fallback_root() -> Path:
    """The private folder for locks that cannot be kept beside their session:
    ``$XDG_RUNTIME_DIR/pinb-locks`` when that variable names a folder of this user's that
    nobody else may use (as the XDG spec promises), else ``<tempdir>/pinb-locks-<uid>``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        with contextlib.suppress(OSError):
            info = os.lstat(runtime)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == _euid() and not info.st_mode & 0o077:
                return Path(runtime) / "pinb-locks"
    return Path(tempfile.gettempdir()) / f"pinb-locks-{_euid()}"


def _fallback(session: Path, tidy: bool, *, create: bool) -> LockFolder | None:
    """The session's own folder in :func:`fallback_root`, named after its device and inode."""
    try:
        info = os.stat(session)
        key = f"{info.st_dev}-{info.st_ino}"
    except OSError:
        key = session.name
    root = fallback_root()
    if create:
        _make_folder(root, 0o700)
    try:
        root_fd = _open_folder(root, private=True)
    except FileNotFoundError:
        if create:
            raise
        return None
    try:
        folder = root / key
        for _ in range(_ATTEMPTS):
            if create:
                _make_folder(folder, 0o700, dir_fd=root_fd)
            try:
                return LockFolder(folder, _open_folder(folder, dir_fd=root_fd, private=True), tidy)
            except FileNotFoundError:
                if not create:
                    return None
        raise FileNotFoundError(errno.ENOENT, "the lock folder keeps disappearing", str(folder))
    finally:
        os.close(root_fd)


def record_folder(session: Path) -> LockFolder:
    """The private folder of ``session`` in :func:`fallback_root`, made when missing: where
    what a :attr:`LockFolder.tidy` lock's note would keep after its release is kept instead
    (the turns a released turn lock remembers), since beside the user's files nothing stays.

    Raises
    ------
    LockFileRefusedError
        The private folder is not safe to use.
    OSError
        It could not be made.
    """
    folder = _fallback(session, False, create=True)
    if folder is None:  # pragma: no cover - _fallback makes its folder or raises
        raise FileNotFoundError(errno.ENOENT, "no private folder", str(session))
    return folder


def open_lock_folder(session: Path) -> LockFolder:
    """The folder ``session``'s lock files are in, made when missing: ``.pinb-locks`` beside
    it, or (its folder cannot be written) its folder in :func:`fallback_root`.

    Raises
    ------
    LockFileRefusedError
        Something unsafe is where the folder should be.
    OSError
        The folder could not be made.
    """
    tidy = not in_sessions_folder(session)
    folder = _beside(session, tidy, create=True) or _fallback(session, tidy, create=True)
    if folder is None:  # pragma: no cover - _fallback makes its folder or raises
        raise FileNotFoundError(errno.ENOENT, "no lock folder", str(session))
    return folder


def lock_folders(session: Path) -> list[LockFolder]:
    """Every folder a lock of ``session`` may be in (beside it, and the fallback), open; a
    folder pinb would refuse holds no lock of pinb's and is left out. Close them after use."""
    found: list[LockFolder] = []
    tidy = not in_sessions_folder(session)
    for look in (_beside, _fallback):
        try:
            folder = look(session, tidy, create=False)
        except (LockFileRefusedError, OSError):
            continue
        if folder is None:
            continue
        if any(os.path.samestat(os.fstat(f.fd), os.fstat(folder.fd)) for f in found):
            folder.close()
            continue
        found.append(folder)
    return found


# -- files -------------------------------------------------------------------------------------


def _check_file(path: Path, info: os.stat_result, *, mine: bool = True) -> None:
    """Refuse what is not a regular file, or (``mine``: pinb is to write it) not one of this
    user's with a single name."""
    if stat.S_ISLNK(info.st_mode):
        raise LockFileRefusedError(
            path,
            "it is a symbolic link, and pinb never writes through one",
            "remove it, then try again",
        )
    if not stat.S_ISREG(info.st_mode):
        raise LockFileRefusedError(
            path,
            f"it is {_what_it_is(info.st_mode)}, not a lock file pinb made",
            "remove it, then try again",
        )
    if not mine:
        return
    if info.st_uid != _euid():
        raise LockFileRefusedError(
            path,
            f"it belongs to another user (uid {info.st_uid})",
            "have its owner remove it, then try again",
        )
    if info.st_nlink > 1:
        raise LockFileRefusedError(
            path,
            f"it has {info.st_nlink} names (hard links), so it may be someone's file",
            "remove this name, then try again",
        )


def open_lock_file(folder: LockFolder, name: str, *, write: bool = True, new: bool = False) -> int:
    """Open the lock file ``name`` in ``folder``: made when missing (``write``), and only
    ever a regular file of this user's with no other name.

    Parameters
    ----------
    folder:
        The lock folder.
    name:
        The file's name in it.
    write:
        Open it to write (made when missing); else only to read an existing one, which
        may be another user's (pinb reads who holds it, never writes it).
    new:
        It must not exist yet (a hold's mark): :class:`FileExistsError` when something is
        there by that name, which is left as it is.

    Raises
    ------
    LockFileRefusedError
        What is there is not a file pinb may use as a lock.
    FileNotFoundError
        The folder was removed meanwhile (look for it again), or, without ``write``, the
        file is not there.
    """
    path = folder.path / name
    try:
        found: os.stat_result | None = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except FileNotFoundError:
        found = None
    if found is not None:
        if new:
            raise FileExistsError(errno.EEXIST, "something is already there", str(path))
        _check_file(path, found, mine=write)  # before the open: a FIFO or device never is
    flags = _FILE_FLAGS | (os.O_RDWR | os.O_CREAT if write else os.O_RDONLY)
    if new:
        flags |= os.O_EXCL
    try:
        fd = os.open(name, flags, 0o644, dir_fd=folder.fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # made a link since it was looked at
            raise LockFileRefusedError(
                path,
                "it is a symbolic link, and pinb never writes through one",
                "remove it, then try again",
            ) from exc
        raise
    try:
        _check_file(path, os.fstat(fd), mine=write)  # what was opened, whatever was there
    except BaseException:
        os.close(fd)
        raise
    return fd


def still_named(folder: LockFolder, name: str, fd: int) -> bool:
    """Whether ``name`` in ``folder`` is still the file ``fd`` is open on, and the folder
    still at its path: a lock taken on a file its last holder removed meanwhile is a lock on
    nothing, and has to be taken again on the file that has the name now."""
    try:
        named = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
        here = os.lstat(folder.path)
    except OSError:
        return False
    return os.path.samestat(named, os.fstat(fd)) and os.path.samestat(here, os.fstat(folder.fd))


def remove_lock_file(folder: LockFolder, name: str, fd: int) -> None:
    """Remove the lock file ``fd`` is open on (and, for a :attr:`LockFolder.tidy` folder, the
    folder once empty), while its ``flock`` is still held.

    Unlinking a lock file someone else waits on would let a third process lock a new file
    by that name while the waiter gets the old one: two holders. So it is removed only by
    the holder, under the lock, and only while the name is still that file; every process
    that takes a lock checks after locking that the name still leads to the file it locked
    (:func:`still_named`) and starts over when it does not. A folder removed under an
    acquirer makes its open fail (a removed folder takes no new files): it looks again.
    """
    if still_named(folder, name, fd):
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=folder.fd)
    if folder.tidy:
        folder.remove_if_empty()


def is_pinbs(fd: int) -> bool:
    """Whether the file open on ``fd`` could be a lock file pinb made: a regular file of this
    user's with one name (only such a file is tidied away)."""
    info = os.fstat(fd)
    return stat.S_ISREG(info.st_mode) and info.st_uid == _euid() and info.st_nlink == 1


def read_lock_text(path: Path) -> str:
    """The note in a lock file, read without following a link or waiting on a FIFO
    (``""`` when it is not a regular file or cannot be read)."""
    try:
        fd = os.open(path, os.O_RDONLY | _FILE_FLAGS)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        # A released turn lock's note keeps the last turns (writers.KEPT_TURNS): read it
        # whole, to a bound no note of pinb's reaches.
        data, chunk = b"", b"x"
        while chunk and len(data) < 1 << 20:
            chunk = os.read(fd, 1 << 16)
            data += chunk
        return data.decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)
