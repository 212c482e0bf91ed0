"""A session file's searchable entries as the search index reads them: the whole file,
only the lines appended since it was read, or one hit's line at its byte offset.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from ...errors import PinbError
from .catalog import _text
from .cite import IndexedEntry, index_entries

__all__ = [
    "Ended",
    "Read",
    "appended_entries",
    "entries_of",
    "entries_of_bytes",
    "line_at",
    "texts_at",
]

log = logging.getLogger("pinb.analysis")

#: Bytes at the end of what was indexed that must be unchanged for a file to count as grown.
_TAIL = 256
#: Bytes read at a time while a hit's line is looked for.
_PIECE = 1 << 16

#: Where indexed bytes end: size, lines and a digest of the last bytes (``None`` s: the
#: last line was unterminated, so the file is read whole next time).
Ended = tuple[int | None, int | None, str | None]
#: A file's entries, the byte offset of each one's line, and where their bytes end.
Read = tuple[list[IndexedEntry], list[int | None], Ended]


def _digest_tail(data: bytes) -> str:
    return hashlib.sha1(data[-_TAIL:]).hexdigest()


def _end_of(data: bytes) -> Ended:
    if not data.endswith(b"\n"):
        return None, None, None
    return len(data), data.count(b"\n"), _digest_tail(data)


def _offsets(data: bytes, lines: Iterable[int], first_line: int, base: int) -> dict[int, int]:
    """The byte offset in the file of each of ``lines`` (1-based) found in ``data``, which
    starts at line ``first_line`` and byte ``base`` of the file."""
    found: dict[int, int] = {}
    line, pos = first_line, 0
    find = data.find
    for wanted in sorted(set(lines)):
        while line < wanted:
            newline = find(b"\n", pos)
            if newline < 0:
                return found
            pos, line = newline + 1, line + 1
        found[wanted] = base + pos
    return found


def entries_of(path: str) -> Read:
    """A session file's searchable entries (none when they cannot be read), the offsets of
    their lines, and where the bytes they came from end."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        log.warning("%s: entries not indexed: %s", path, exc)
        return [], [], (None, None, None)
    entries = entries_of_bytes(path, data)
    if entries is None:
        return [], [], (None, None, None)
    offsets = _offsets(data, (e.line for e in entries), 1, 0)
    return entries, [offsets.get(e.line) for e in entries], _end_of(data)


def entries_of_bytes(path: str, data: bytes, *, quiet: bool = False) -> list[IndexedEntry] | None:
    """The searchable entries of a session file's bytes, or ``None`` when they cannot be
    read (said once, unless ``quiet``)."""
    from ..sources import open_session_bytes

    try:
        return index_entries(open_session_bytes(data, path).entries, path)
    except (PinbError, ValueError) as exc:
        # Listed (Pi lists it too), but its entries cannot be read: say so, once.
        if not quiet:
            log.warning("%s: entries not indexed: %s", path, exc)
        return None


def appended_entries(path: str, size: int, lines: int, tail: str) -> Read | None:
    """The entries of the lines appended to a file since ``size`` bytes of it were indexed,
    or ``None`` when it did not just grow (then it is read whole)."""
    from ...core.file.read import parse_lines
    from ...core.format.entries import Entry

    try:
        with open(path, "rb") as handle:
            header = handle.readline(1 << 20)
            start = max(0, size - _TAIL)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return None
    kept, new = data[: size - start], data[size - start :]
    if (
        not new.endswith(b"\n")
        or len(kept) != size - start
        or hashlib.sha1(kept).hexdigest() != tail
        or not _current_header(header)
    ):
        return None
    values, numbers = parse_lines(new, Path(path), lines + 1, [])
    entries = index_entries(
        [
            Entry(value, line)
            for value, line in zip(values, numbers, strict=True)
            if value.__class__ is dict and value.get("type") != "session"
        ],
        path,
    )
    offsets = _offsets(new, (e.line for e in entries), lines + 1, size)
    ended = (size + len(new), lines + new.count(b"\n"), _digest_tail(data))
    return entries, [offsets.get(e.line) for e in entries], ended


def _current_header(line: bytes) -> bool:
    """A version 3 header: the file's entries are read as they stand (no migration)."""
    from ...core.file.read import is_valid_header
    from ...core.js.wire import loads_line

    try:
        header = loads_line(line)
    except (ValueError, RecursionError):
        return False
    return is_valid_header(header) and header.get("version") == 3


def line_at(handle: IO[bytes], offset: int) -> bytes:
    """The line that starts at byte ``offset`` (without its ``\\n``), read a piece at a
    time: only that line's bytes are held."""
    handle.seek(offset)
    pieces: list[bytes] = []
    while piece := handle.read(_PIECE):
        end = piece.find(b"\n")
        if end >= 0:
            pieces.append(piece[:end])
            break
        pieces.append(piece)
    return b"".join(pieces)


def texts_at(hits: list[tuple[int, str, int, int | None, str | None]]) -> dict[int, str]:
    """The indexed text of each ``(rowid, path, line, offset, entry_id)``, read again from
    its line alone; a line that no longer holds that entry (the file changed) gives none."""

    by_path: dict[str, list[tuple[int, int, int, str | None]]] = {}
    for rowid, path, line, offset, entry_id in hits:
        if offset is not None:
            by_path.setdefault(path, []).append((rowid, line, offset, entry_id))
    found: dict[int, str] = {}
    for path, wanted in by_path.items():
        try:
            with open(path, "rb") as handle:
                for rowid, line, offset, entry_id in sorted(wanted, key=lambda w: w[2]):
                    text = _text_at(handle, path, line, offset, entry_id)
                    if text is not None:
                        found[rowid] = text
        except OSError:
            continue  # gone or unreadable since it was indexed: no snippet
    return found


def _text_at(
    handle: IO[bytes], path: str, line: int, offset: int, entry_id: str | None
) -> str | None:
    from ...core.format.entries import Entry
    from ...core.js.wire import loads_line

    try:
        value = loads_line(line_at(handle, offset))
    except (ValueError, RecursionError):
        return None
    if value.__class__ is not dict:
        return None
    written = value.get("id")
    if isinstance(written, str) and entry_id is not None and written != entry_id:
        return None
    made = index_entries([Entry(value, line)], path)
    return (_text(made[0].body) or "") if made else None
