"""Upgrade version 1 and 2 session files to version 3 in memory, exactly as Pi does (§2.3)."""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
import uuid
from collections.abc import Callable, Container
from typing import Any, Final

from ...errors import InvalidEntryError
from ..js.wire import MISSING
from .target import Pi, PiLike

__all__ = [
    "CURRENT_VERSION",
    "IdGenerator",
    "check_session_id",
    "header_version",
    "migrate_values",
    "new_entry_id",
    "new_session_id",
    "uuid7",
]

CURRENT_VERSION = 3

#: Draws one candidate entry id. Pi's is ``uuid4().hex[:8]``; tests inject positional ids.
IdGenerator = Callable[[], str]


def random_id() -> str:
    """Pi's entry id: the first 8 hex digits of a random UUID v4."""
    return uuid.uuid4().hex[:8]


def stable_ids(seed: str) -> IdGenerator:
    """Ids drawn from ``seed`` (a file's session id): the same file gets the same ids.

    Used for the entries of version 1 files, which have none: Pi draws them at random on
    every load, so an id printed by ``pinb tree`` could not be used again.
    """
    counter = iter(range(2**63))

    def draw() -> str:
        return hashlib.sha256(f"{seed}\0{next(counter)}".encode()).hexdigest()[:8]

    return draw


def new_entry_id(used: Container[object], generate: IdGenerator | None = None) -> str:
    """An id not in ``used``: up to 100 draws, then a full UUID (§3.7)."""
    draw = generate or random_id
    for _ in range(100):
        candidate = draw()
        if candidate not in used:
            return candidate
    return str(uuid.uuid4())


def uuid7() -> str:
    """A UUID version 7: 48 bits of Unix time in ms, then random bits (RFC 9562)."""
    value = (int(time.time() * 1000) & (2**48 - 1)) << 80
    value |= int.from_bytes(os.urandom(10), "big") & (2**80 - 1)
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    return str(uuid.UUID(int=value))


def new_session_id(pi: PiLike | None = None) -> str:
    """A new session id as the Pi release makes it: UUID v7 in Pi 1.x, v4 in v0.58.3."""
    return uuid7() if Pi.resolve(pi) >= Pi.V1_6 else str(uuid.uuid4())


#: Pi 1.x's rule for a caller-supplied session id (it becomes part of a file name).
SESSION_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def check_session_id(session_id: str) -> str:
    """Refuse a session id that could not be a file name part (``../x``, ``a/b``, "")."""
    if not isinstance(session_id, str) or not SESSION_ID_PATTERN.fullmatch(session_id):
        raise InvalidEntryError(
            f"invalid session id {session_id!r}: use letters, digits, '.', '_' and '-', "
            "starting and ending with a letter or digit"
        )
    return session_id


def header_version(values: list[Any]) -> Any:
    """``header.version ?? 1`` of the first ``session`` value (``None`` if there is none)."""
    for value in values:
        if isinstance(value, dict) and value.get("type") == "session":
            version = value.get("version")
            return 1 if version is None else version
    return None


def _less_than(version: Any, bound: int) -> bool:
    # JavaScript's `<` on whatever the header holds; strings compare numerically.
    if isinstance(version, bool):
        version = int(version)
    if isinstance(version, int | float):
        return version < bound
    if isinstance(version, str):
        try:
            return float(version) < bound
        except ValueError:
            return False
    return False


def migrate_values(values: list[Any], id_generator: IdGenerator | None = None) -> bool:
    """Migrate parsed file values (header included, in file order) in place.

    Version 1 → 2 gives every entry an id (one generator call per entry, in file order;
    by default derived from the session id, so the same file always gets the same ids)
    and chains ``parentId`` to the previous entry; a compaction's numeric
    ``firstKeptEntryIndex`` (an index into ``values``) becomes ``firstKeptEntryId``.
    Version 2 → 3 renames the ``hookMessage`` role to ``custom``. Keys are added where
    JavaScript adds them (at the end), so a rewrite matches Pi's byte for byte.

    Returns
    -------
    bool
        Whether anything was migrated.
    """
    version = header_version(values)
    if version is None or not _less_than(version, CURRENT_VERSION):
        return False
    if _less_than(version, 2):
        if id_generator is None:
            header = next(
                (v for v in values if isinstance(v, dict) and v.get("type") == "session"), {}
            )
            id_generator = stable_ids(str(header.get("id")))
        _v1_to_v2(values, id_generator)
    _v2_to_v3(values)
    return True


def _v1_to_v2(values: list[Any], id_generator: IdGenerator | None) -> None:
    previous: str | None = None
    # Pi's collision set is never filled (§12.6); pinb's is, which only matters if the
    # generator repeats itself.
    used: set[object] = set()
    for entry in values:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry_id = new_entry_id(used, id_generator)
        used.add(entry_id)
        entry["id"] = entry_id
        entry["parentId"] = previous
        previous = entry_id
        if entry.get("type") == "compaction":
            index = entry.get("firstKeptEntryIndex", MISSING)
            if isinstance(index, int | float) and not isinstance(index, bool):
                target = _at(values, index)
                if isinstance(target, dict) and target.get("type") != "session":
                    target_id = target.get("id", MISSING)
                    if target_id is MISSING:
                        entry.pop("firstKeptEntryId", None)
                    else:
                        entry["firstKeptEntryId"] = target_id
                elif target is not MISSING and not isinstance(target, dict):
                    entry.pop("firstKeptEntryId", None)
                del entry["firstKeptEntryIndex"]


def _at(values: list[Any], index: float) -> Any:
    # Infinity (an index of 5,000 digits) names nothing, as values[Infinity] is undefined.
    if not math.isfinite(index) or index != int(index) or index < 0 or index >= len(values):
        return MISSING
    return values[int(index)]


def _v2_to_v3(values: list[Any]) -> None:
    for entry in values:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "session":
            entry["version"] = 3
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
