"""Changing a JSON file of the user's that Pi writes too: locked, read again, merged, replaced whole.

Pi's ``settings.json`` and ``models.json`` belong to the user, who edits them, and to Pi,
which writes ``settings.json`` while it runs. pinb changes one only when asked
(``%pi model --save``, ``--fit-pi``), and then :func:`edit_json`:

1. takes the file's lock as Pi does (:mod:`pinb.core.file.pi_lock`), so a running Pi, another
   kernel or a terminal's pinb never writes it at the same moment;
2. reads the file again inside the lock and applies the change to what is there *now*
   (every field and entry it holds, pinb's or not, stays as it is);
3. replaces it whole (:func:`pinb.core.file.atomic.replace_file`: a temporary file, fsync and a
   rename; the file's mode kept), only if the change changed something, and only while
   the lock is still ours;
4. when asked, keeps the file as it was in ``<name>.bak`` (one, replaced each time, its
   mode kept), written once the lock is let go: Pi's settings writer waits 200 ms at most.

A file that is not valid JSON is never written: the error names the file, the line and
the column. A read-only folder or file is one line with the system's reason.
"""

from __future__ import annotations

import copy
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import UserFileError, UserFileLockError
from ..js.wire import loads
from .atomic import replace_file
from .pi_lock import STALE, WAIT, locked

__all__ = ["Edited", "edit_json", "read_json_object"]


@dataclass(frozen=True)
class Edited:
    """What :func:`edit_json` did.

    Attributes
    ----------
    path:
        The file.
    changed:
        Whether it was written (``False``: the change was already there).
    backup:
        ``<name>.bak``, the file as it was before, when one was asked for and written.
    """

    path: Path
    changed: bool
    backup: Path | None = None


#: What a refusal to change a file adds: nothing is written into a file pinb cannot read.
_UNTOUCHED = "pinb changes nothing in it: fix it by hand first"
_FIX = "fix it by hand first"


def _parse(path: Path, raw: bytes, fix: str) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserFileError(
            f"{path}: not UTF-8 text (byte {exc.start}); {fix}", path=path
        ) from None
    try:
        data = loads(text.removeprefix("\ufeff"))  # a BOM, which Pi strips too
    except json.JSONDecodeError as exc:
        raise UserFileError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); {fix}", path=path
        ) from None
    except (ValueError, RecursionError) as exc:
        raise UserFileError(f"{path}: not valid JSON ({exc}); {fix}", path=path) from None
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(data), "a number"
        )
        raise UserFileError(f"{path}: holds {kind}, not a JSON object; {fix}", path=path)
    return data


def _copy(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    try:
        return copy.deepcopy(data)
    except RecursionError:
        raise UserFileError(
            f"{path}: nested too deeply for pinb to change; nothing was changed", path=path
        ) from None


def _text(path: Path, data: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except (ValueError, RecursionError) as exc:  # 1e400, or nested past Python's limit
        raise UserFileError(
            f"{path}: holds a value pinb cannot write back as JSON ({exc}); nothing was changed",
            path=path,
        ) from None
    return text.encode("utf-8")


def _cannot_write(path: Path, exc: OSError) -> UserFileError:
    reason = exc.strerror or type(exc).__name__
    where = f" ({exc.filename})" if exc.filename and os.fspath(exc.filename) != str(path) else ""
    return UserFileError(
        f"{path}: pinb cannot write it: {reason}{where}; nothing was changed", path=path
    )


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object in ``path`` (``{}`` when there is no such file), without a lock.

    Raises
    ------
    UserFileError
        The file cannot be read, or is not a JSON object (naming line and column).
    """
    target = Path(path)
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserFileError(
            f"{target}: cannot be read: {exc.strerror or type(exc).__name__}", path=target
        ) from None
    return _parse(target, raw, _FIX)


def edit_json(
    path: str | os.PathLike[str],
    change: Callable[[dict[str, Any]], None],
    *,
    backup: bool = False,
    wait: float = WAIT,
    stale: float = STALE,
) -> Edited:
    """Apply ``change`` to the JSON object in ``path``, under Pi's lock, as it is now.

    Parameters
    ----------
    path:
        The file (created, and its folder, when missing).
    change:
        Changes the object it is given in place; it may raise :class:`UserFileError`
        when the object cannot take the change (a field of the wrong type).
    backup:
        Also write the file as it was to ``<name>.bak`` (one, replaced each time), when
        the change changes something.
    wait, stale:
        How long to wait for the lock, and when a lock nobody refreshes is stale
        (:func:`pinb.core.file.pi_lock.locked`).

    Returns
    -------
    Edited
        The file, whether it was written, and the backup.

    Raises
    ------
    UserFileError
        The file is not a JSON object, or cannot be written (read-only: the system's
        reason), or the lock was taken over before the write (nothing is written then).
    UserFileLockError
        Another writer held the lock for longer than ``wait``.

    Examples
    --------
    >>> def add(data):
    ...     data.setdefault("compaction", {})["enabled"] = True
    >>> edit_json(folder / "settings.json", add).changed  # doctest: +SKIP
    True
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with locked(target, wait=wait, stale=stale) as lock:
            # Held for a read and a rename only: Pi's settings writer gives up after 200 ms.
            try:
                raw: bytes | None = target.read_bytes()
            except FileNotFoundError:
                raw = None
            data = _parse(target, raw, _UNTOUCHED) if raw is not None else {}
            before = _copy(target, data)
            change(data)
            if raw is not None and data == before:
                return Edited(target, changed=False)
            mode = None
            if raw is not None:
                # Refuse a file marked read-only (a write would only replace it) with the
                # system's own reason; opening it for writing changes nothing in it.
                os.close(os.open(target, os.O_WRONLY))
                mode = stat.S_IMODE(os.stat(target).st_mode)
            text = _text(target, data)
            if replace_file(target, text, unchanged=lock.held) is None:
                raise UserFileLockError(
                    f"{target}: its lock {lock.path} was taken over while pinb was writing "
                    "(it had looked abandoned); nothing was changed: try again",
                    path=target,
                )
    except OSError as exc:
        raise _cannot_write(target, exc) from None
    if not backup or raw is None:
        return Edited(target, changed=True)
    # After the lock: the old bytes are in hand, and a copy of them needs no one's turn.
    saved = target.with_name(target.name + ".bak")
    try:
        replace_file(saved, raw, mode=mode)
    except OSError as exc:
        raise UserFileError(
            f"{target}: changed, but its backup {saved.name} could not be written: "
            f"{exc.strerror or type(exc).__name__}",
            path=target,
        ) from None
    return Edited(target, changed=True, backup=saved)
