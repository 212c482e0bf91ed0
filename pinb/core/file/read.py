"""Reading a session file as Pi reads it: lines parsed, bad ones reported, nothing written.

Reading follows Pi (§2.4): the text is split on ``\\n`` only, blank lines are skipped and
lines that do not parse are skipped — each skipped line is recorded as a
:class:`~pinb.core.format.problems.Problem` naming the file and line. v0.58.3 first trims the
whole text as JavaScript trims (which drops a byte-order mark before the header); Pi 1.x
does not, so a mark before the header makes the file unreadable to it. Reading never writes
(Pi 1.x adds a missing final newline when it opens a file; pinb ends such a line only when
it appends: :mod:`pinb.core.file.write`). Every read of a named file refuses what could
make it wait (:mod:`pinb.core.file.special`); big files are read ahead in pieces
(:mod:`pinb.core.file.readahead`) and their message lines decoded lazily
(:mod:`pinb.core.file.lazy`).
"""

from __future__ import annotations

import errno
import io
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InvalidHeaderError, UnsupportedVersionError
from ..format.entries import Entry
from ..format.migrate import CURRENT_VERSION
from ..format.problems import Problem
from ..format.target import DEFAULT_PI, Pi, PiLike
from ..js.wire import JS_WHITESPACE, js_truthy, loads, loads_line
from .lazy import head_reader, read_chunks, read_lines
from .readahead import READ_AHEAD_MIN, read_ahead
from .special import open_regular

__all__ = [
    "LoadedFile",
    "is_valid_header",
    "load_session_bytes",
    "parse_line",
    "parse_lines",
    "parse_session_bytes",
    "read_new_bytes",
    "read_session_file",
    "split_entries",
    "value_entry",
]


@dataclass
class LoadedFile:
    """A session file as read, before and after migration.

    Attributes
    ----------
    values:
        Every parsed JSON value in file order, the header included (Pi's ``fileEntries``).
    lines:
        The 1-based physical line number of each value.
    header:
        The first parsed value when it is a valid session header, else ``None``.
    entries:
        The non-header entries (objects) in file order, as :class:`Entry` records.
    problems:
        Lines that were skipped or are otherwise odd.
    size:
        Bytes of the file that were read.
    complete_size:
        Offset just after the last complete line (``\\n``-terminated) or the end of the file
        when the last line was itself complete JSON; new bytes are read from here.
    version_before:
        The header's version before migration.
    blank:
        The file holds nothing to read: no bytes (Pi 1.x), or only whitespace (v0.58.3).
        Pi starts a new session in such a file.
    refused:
        Why the Pi release read for would refuse to open the file (Pi 1.x throws for a
        non-empty file without a valid header), or ``None``.
    """

    path: Path | None
    values: list[Any] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    header: dict[str, Any] | None = None
    header_line: int | None = None
    entries: list[Entry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    size: int = 0
    complete_size: int = 0
    ends_with_newline: bool = True
    version_before: Any = None
    migrated: bool = False
    blank: bool = True
    newlines: int = 0
    refused: str | None = None
    pi: Pi = DEFAULT_PI


def is_valid_header(value: Any) -> bool:
    """Pi's check: an object with ``type == "session"`` and a string ``id``."""
    return (
        isinstance(value, dict)
        and value.get("type") == "session"
        and isinstance(value.get("id"), str)
    )


def is_v4_header(value: Any) -> bool:
    """Pi's experimental version 4 layout (§11.9), which pinb refuses to misread."""
    return isinstance(value, dict) and (value.get("kind") == "header" or value.get("version") == 4)


def parse_lines(
    data: bytes,
    path: Path | None,
    first_line: int,
    problems: list[Problem],
    *,
    drop_falsy: bool = False,
    lazy: bool = False,
) -> tuple[list[Any], list[int]]:
    """Parse ``\\n``-separated JSON lines (UTF-8 bytes); blank lines skipped, bad ones reported.

    Returns the values and, in a list of the same length, their line numbers. A line is
    blank when JavaScript's ``trim`` leaves nothing (a lone byte-order mark included). An
    object line goes straight to the fast parser; anything else, or what it refuses, is
    decoded and parsed by the exact one. With ``drop_falsy`` (Pi 1.x's reader) a line whose
    JSON is ``null``, ``0``, ``""`` or ``false`` is dropped too, and reported.

    With ``lazy`` (and msgspec installed), a message line whose head can be read and is
    sound becomes a lazy :class:`Entry` in ``values`` instead of a dict; see
    :mod:`pinb.core.file.lazy`. Such lines are valid JSON, so the problems are the same.
    """
    values, numbers, _ = parse_counted_lines(
        data, path, first_line, problems, drop_falsy=drop_falsy, lazy=lazy
    )
    return values, numbers


def parse_counted_lines(
    data: bytes,
    path: Path | None,
    first_line: int,
    problems: list[Problem],
    *,
    drop_falsy: bool = False,
    lazy: bool = False,
) -> tuple[list[Any], list[int], int]:
    """:func:`parse_lines`, and how many ``\\n`` ``data`` holds (counted on the way)."""
    values: list[Any] = []
    numbers: list[int] = []

    def whole(line: bytes, line_no: int) -> None:
        parse_line(line, line_no, path, problems, drop_falsy, values, numbers)

    if lazy:
        newlines = read_lines(data, first_line, values, numbers, whole)
        if newlines is not None:
            return values, numbers, newlines
    lines = data.split(b"\n")
    line_no = first_line - 1
    for line in lines:
        line_no += 1
        parse_line(line, line_no, path, problems, drop_falsy, values, numbers)
    return values, numbers, len(lines) - 1


def parse_line(
    line: bytes,
    line_no: int,
    path: Path | None,
    problems: list[Problem],
    drop_falsy: bool,
    values: list[Any],
    numbers: list[int],
) -> None:
    """One line of :func:`parse_lines`, parsed whole: its value appended, or a problem."""
    if line[:1] == b"{":
        try:
            values.append(loads_line(line))
            numbers.append(line_no)
            return
        except (ValueError, RecursionError):
            pass
    text = line.decode("utf-8", errors="replace")
    if not text.strip(JS_WHITESPACE):
        return
    try:
        value = loads(text)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).split(":")[0] if isinstance(exc, ValueError) else "nested too deep"
        problems.append(
            Problem("malformed-line", f"line skipped: not valid JSON ({reason})", path, line_no)
        )
        return
    if drop_falsy and not js_truthy(value):
        problems.append(
            Problem(
                "not-an-entry", "line skipped: a JSON value that is not an object", path, line_no
            )
        )
        return
    values.append(value)
    numbers.append(line_no)


#: JSON's own whitespace: what JavaScript's ``trim`` removes that can sit around a line.
_ASCII_SPACE = b" \t\n\r\x0b\x0c"


def _js_trim_bytes(data: bytes) -> tuple[bytes, int]:
    """``data`` trimmed as JavaScript trims its text, and how many line breaks went first.

    Fast when the text starts with ``{`` and ends with ``}`` after ASCII spaces (always,
    for files Pi wrote); otherwise the text is decoded and trimmed exactly.
    """
    stripped = data.strip(_ASCII_SPACE)
    if (stripped[:1] == b"{" and stripped[-1:] == b"}") or not stripped:
        leading = len(data) - len(data.lstrip(_ASCII_SPACE))
        return stripped, data.count(b"\n", 0, leading)
    text = data.decode("utf-8", errors="replace")
    trimmed = text.strip(JS_WHITESPACE)
    leading = len(text) - len(text.lstrip(JS_WHITESPACE))
    return trimmed.encode("utf-8", errors="surrogatepass"), text.count("\n", 0, leading)


def _current_header_first(data: bytes) -> bool:
    """Whether the file starts with a valid header of the current version (3): then no
    migration will touch its entries, and message lines can be read lazily."""
    if data[:1] != b"{":
        return False
    end = data.find(b"\n")
    try:
        header = loads_line(data if end < 0 else data[:end])
    except (ValueError, RecursionError):
        return False
    version = header.get("version") if is_valid_header(header) else None
    return version.__class__ is int and version == CURRENT_VERSION


def parse_session_bytes(
    data: bytes, path: Path | None = None, *, pi: PiLike | None = None, lazy: bool = False
) -> LoadedFile:
    """Parse a whole session file's bytes with Pi's rules (no migration, no validation).

    ``lazy``: message lines of a version 3 file become lazy entries in ``values`` (see
    :func:`parse_lines`); for what opens a :class:`~pinb.core.session.Session`.
    """
    target = Pi.resolve(pi)
    loaded = LoadedFile(path=path, size=len(data), pi=target)
    lazy = lazy and _current_header_first(data)
    if target >= Pi.V1_6:
        loaded.blank = not data
        # Pi 1.x's reader drops a line whose JSON is falsy (null, 0, "", false).
        values, numbers, newlines = parse_counted_lines(
            data, path, 1, loaded.problems, drop_falsy=True, lazy=lazy
        )
        loaded.values, loaded.lines = values, numbers
        first = values[0] if values else None
        if data and not is_valid_header(first):
            loaded.refused = _refusal(data.decode("utf-8", errors="replace"))
    else:
        stripped, skipped_lines = _js_trim_bytes(data)
        loaded.blank = not stripped
        if stripped:
            loaded.values, loaded.lines = parse_lines(
                stripped, path, skipped_lines + 1, loaded.problems, lazy=lazy
            )
        newlines = -1  # counted below: the lines read were trimmed first
    if newlines < 0:
        newlines = data.count(b"\n")
    _settle_tail(loaded, len(data), data.rfind(b"\n"), newlines)
    return loaded


def _settle_tail(loaded: LoadedFile, size: int, last_newline: int, newlines: int) -> None:
    """The sizes and the torn last line of a file of ``size`` bytes holding ``newlines``
    ``\\n``, the last at ``last_newline`` (``-1``: none)."""
    loaded.size = size
    loaded.ends_with_newline = size == 0 or last_newline == size - 1
    loaded.complete_size = size
    if not loaded.ends_with_newline:
        last_line = newlines + 1
        if loaded.problems and loaded.problems[-1].line == last_line:
            # The unterminated last line did not parse: a torn write (crash mid-append).
            torn = loaded.problems.pop()
            loaded.problems.append(
                Problem(
                    "torn-line",
                    f"{torn.message}; the last line is incomplete",
                    loaded.path,
                    torn.line,
                )
            )
            loaded.complete_size = last_newline + 1
    # Every \n of the file stands before its complete size (a torn tail holds none).
    loaded.newlines = newlines


def _read_ahead_lazily(path: Path, target: Pi) -> LoadedFile | bytes:
    """A big version 3 file read lazily while a thread reads ahead
    (:mod:`pinb.core.file.readahead`), or the bytes of any other file, to be parsed whole."""
    handle = open_regular(path)  # never waits on a FIFO; the read-ahead thread closes it
    try:
        size = os.fstat(handle.fileno()).st_size
        if size < READ_AHEAD_MIN or head_reader() is None:
            with handle:
                return _read_all(handle, path)
    except BaseException:
        handle.close()
        raise
    pieces = read_ahead(handle)
    try:
        opening: list[bytes] = []  # the pieces up to the end of the first line
        for piece in pieces:
            opening.append(piece)
            if b"\n" in piece:
                break
        first = b"".join(opening)
        if not _current_header_first(first):
            return b"".join([first, *pieces])
        loaded = LoadedFile(path=path, pi=target, blank=False)
        values, numbers = loaded.values, loaded.lines
        problems = loaded.problems

        def whole(line: bytes, line_no: int) -> None:
            parse_line(line, line_no, path, problems, True, values, numbers)

        read = read_chunks(itertools.chain((first,), pieces), 1, values, numbers, whole)
        assert read is not None  # the head reader was there
    finally:
        pieces.close()
    size, newlines, last_newline = read
    _settle_tail(loaded, size, last_newline, newlines)
    return loaded


def _read_all(handle: io.FileIO, path: Path) -> bytes:
    """The rest of ``handle``; a kernel file that would wait (``/proc/kmsg``) is an error."""
    data = handle.read()
    if data is None:  # O_NONBLOCK: nothing to read now
        raise BlockingIOError(errno.EAGAIN, "nothing to read now (reading would wait)", str(path))
    return data


def _read_whole(path: Path) -> bytes:
    """The whole file at ``path``, refusing (never waiting on) what is not a regular file."""
    with open_regular(path) as handle:
        return _read_all(handle, path)


_NO_HEADER = 'the first JSON line must be a header {"type":"session","id":...}'


def _refusal(text: str) -> str:
    first = next((line for line in text.split("\n") if line.strip(JS_WHITESPACE)), "")
    if first.startswith("\ufeff"):
        return (
            "a byte-order mark (EF BB BF) stands before the header, and Pi 1.x refuses such "
            "files; remove those three bytes, or read it as Pi v0.58.3 did (pi='0.58')"
        )
    if not text.strip(JS_WHITESPACE):
        return "the file holds only whitespace, and Pi 1.x refuses it"
    return _NO_HEADER


def split_entries(loaded: LoadedFile) -> None:
    """Fill ``header`` and ``entries`` from ``values`` (after any migration)."""
    loaded.entries = []
    loaded.header = None
    values, numbers = loaded.values, loaded.lines
    if not values or not is_valid_header(values[0]):
        return
    loaded.header = values[0]
    loaded.header_line = numbers[0]
    path = loaded.path
    entries = loaded.entries
    append = entries.append
    for position in range(1, len(values)):
        value = values[position]
        if value.__class__ is Entry:  # a lazily read message line
            append(value)
            continue
        if value.__class__ is not dict:
            entry = value_entry(value, numbers[position], loaded.pi, path, loaded.problems)
            if entry is not None:
                append(entry)
            continue
        kind = value.get("type")
        if kind == "session":
            loaded.problems.append(
                Problem(
                    "duplicate-header", "repeated session header ignored", path, numbers[position]
                )
            )
            continue
        append(Entry(value, numbers[position]))  # the index reports a malformed one
    version = loaded.header.get("version")
    if isinstance(version, int | float) and not isinstance(version, bool) and version > 3:
        loaded.problems.append(
            Problem(
                "unknown-version",
                f"the header says version {version}, newer than any Pi release pinb knows "
                "(3); pinb reads it as version 3 but will not append to it",
                path,
                loaded.header_line,
            )
        )


def value_entry(
    value: Any, line: int, pi: Pi, path: Path | None, problems: list[Problem]
) -> Entry | None:
    """What Pi makes of a line whose JSON is not an object, reported as a problem.

    Pi keeps it as an entry without fields: an inert node that still counts, and becomes
    the leaf when it is the last line. Pi 1.x drops falsy values (``0``, ``""``,
    ``false``); ``null`` is dropped here in both releases (it makes v0.58.3 throw).
    """
    if value is None or (pi >= Pi.V1_6 and not js_truthy(value)):
        problems.append(
            Problem("not-an-entry", "line skipped: a JSON value that is not an object", path, line)
        )
        return None
    problems.append(
        Problem(
            "not-an-entry",
            "a JSON value that is not an object; kept as an empty entry, as Pi does",
            path,
            line,
        )
    )
    return Entry.from_value(value, line)


def read_session_file(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    pi: PiLike | None = None,
    lazy: bool = False,
) -> LoadedFile:
    """Read and parse a session file (values only: migration is the caller's choice).

    Parameters
    ----------
    path:
        The ``.jsonl`` file.
    strict:
        Raise :class:`InvalidHeaderError` for a non-empty file without a valid header and
        :class:`UnsupportedVersionError` for Pi's version 4 layout. With ``strict=False``
        such files read as empty, and ``refused`` says whether Pi would refuse them.
    pi:
        The Pi release whose reading rules apply (default: today's Pi).
    lazy:
        Read message lines lazily (see :func:`parse_session_bytes`).

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    IsADirectoryError, SpecialFileError
        It is a folder, or a FIFO, device or socket (:mod:`pinb.core.file.special`: refused
        at once, never waited on).
    """
    file_path = Path(path)
    target = Pi.resolve(pi)
    if lazy and target >= Pi.V1_6:  # v0.58.3 trims the whole text first: read it whole
        read = _read_ahead_lazily(file_path, target)
        if isinstance(read, LoadedFile):
            return _checked(read, file_path, strict=strict)
        return load_session_bytes(read, file_path, strict=strict, pi=target, lazy=lazy)
    return load_session_bytes(_read_whole(file_path), file_path, strict=strict, pi=pi, lazy=lazy)


def load_session_bytes(
    data: bytes,
    path: Path | None = None,
    *,
    strict: bool = True,
    pi: PiLike | None = None,
    source: str | None = None,
    lazy: bool = False,
) -> LoadedFile:
    """:func:`read_session_file` for bytes already read; errors name ``source`` (or ``path``)."""
    loaded = parse_session_bytes(data, path, pi=pi, lazy=lazy)
    return _checked(loaded, source if source is not None else path, strict=strict)


def _checked(loaded: LoadedFile, where: str | Path | None, *, strict: bool) -> LoadedFile:
    """``loaded``, or (``strict``) the error for a file pinb must not read as a session."""
    first = loaded.values[0] if loaded.values else None
    first_line = loaded.lines[0] if loaded.lines else None
    if strict and first is not None and is_v4_header(first):
        raise UnsupportedVersionError(
            "this is Pi's experimental version 4 session layout, which pinb does not read; "
            "open it with a Pi release that writes it",
            path=where,
            line=first_line,
            reason="is in Pi's experimental version 4 session layout, which pinb does not read",
        )
    if strict and not loaded.blank and (first is None or not is_valid_header(first)):
        reason = loaded.refused or _NO_HEADER
        if reason != _NO_HEADER:  # a byte-order mark, only whitespace: say which
            short = reason
        elif first_line is not None:
            short = f"no session header on line {first_line}"
        else:
            short = "no session header on line 1"  # no line of it is JSON at all
        raise InvalidHeaderError(
            f"not a Pi session: {reason}; the file was left untouched",
            path=where,
            line=first_line,
            reason=f"not a Pi session file ({short})",
        )
    return loaded


def read_new_bytes(path: Path, offset: int) -> bytes:
    """The bytes of ``path`` from ``offset`` to its current end."""
    with open_regular(path) as handle:
        handle.seek(offset)
        return _read_all(handle, path)
