"""Writing files without ever leaving one empty or half written: replaced whole, or created whole.

The new bytes go to a temporary file beside the real target, are flushed to disk, and only
then renamed over it, so a crash or an error at any point leaves the old file whole. A
symlink stays a symlink (its target gets the new content) and the file keeps its mode, so
rewriting a private 0600 file never makes it world-readable. This is pinb's one atomic
writer: session files (:func:`pinb.core.file.write.atomic_write_lines`, a version upgrade) and
exports are replaced through :func:`replace_file`; new session files (a first flush,
a fork, an import) are created with :func:`write_new_file`, which never replaces anything.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import overload

__all__ = ["replace_file", "write_new_file"]


def _umask() -> int:
    # Only readable by setting it; set it straight back (the CLI is single-threaded here).
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_temp(tmp: Path, data: bytes) -> None:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_new_file(path: str | os.PathLike[str], data: bytes) -> Path:
    """Create ``path`` holding ``data``, all at once; ``FileExistsError`` if it exists.

    The bytes are written to a temporary file first and hard-linked into place, so the
    name appears only with the whole content (an interrupted write leaves no partial file
    that a later run would take for a finished one) and an existing file is never touched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.pinb-tmp-{os.getpid()}")
    try:
        _write_temp(tmp, data)
        os.chmod(tmp, 0o666 & ~_umask())
        try:
            os.link(tmp, target)  # fails, leaving everything as it was, when the name is taken
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: exclusive create, then write
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_folder(target.parent)
    return target


@overload
def replace_file(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> Path: ...


@overload
def replace_file(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    unchanged: Callable[[], bool],
    mode: int | None = None,
) -> Path | None: ...


def replace_file(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    unchanged: Callable[[], bool] | None = None,
    mode: int | None = None,
) -> Path | None:
    """Write ``data`` to ``path`` atomically; returns the file actually written.

    A new file gets the usual ``0666 & ~umask`` mode; an existing one keeps its mode (and
    its owner, where the process may set it). ``mode``, when given, is the file's mode
    instead (a copy of a private file stays private). When ``path`` is a symlink, the file
    it points to is replaced and the link is left as it is.

    ``unchanged``, when given, is asked right before the rename whether the file is still
    as it was read (another program may append without a lock); if it says no, nothing is
    replaced and ``None`` is returned, so the caller can read it again.
    """
    target = Path(os.path.realpath(path))
    try:
        before: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        before = None
    if before is not None and not stat.S_ISREG(before.st_mode):
        raise IsADirectoryError(21, "not a regular file; refusing to replace it", str(path))
    if mode is None:
        mode = stat.S_IMODE(before.st_mode) if before is not None else 0o666 & ~_umask()
    tmp = target.with_name(f".{target.name}.pinb-tmp-{os.getpid()}")
    try:
        # Private while it is being written: the final mode is applied only once it is whole.
        _write_temp(tmp, data)
        if before is not None:
            with contextlib.suppress(OSError):  # only root may give a file away
                os.chown(tmp, before.st_uid, before.st_gid)
        os.chmod(tmp, mode)
        if unchanged is not None and not unchanged():
            return None
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_folder(target.parent)
    return target
