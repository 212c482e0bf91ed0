"""Reading a message line's head without building the line: what a lazy open needs.

Opening a session needs, of each line, only what places it in the tree: its type, id,
parent id, timestamp and (for a message) the role. The rest — the message's content, often
kilobytes of tool output — is decoded when something asks for it, through the one parse
entry point (:func:`pinb.core.js.wire.loads_line`).

The head is read with msgspec (the ``fast`` extra) into a small struct whose unknown
fields are skipped. msgspec still checks the whole line as JSON while it skips, so a line
it accepts is one ``JSON.parse`` accepts too: it refuses invalid JSON, lone surrogates,
``NaN``, invalid UTF-8 in a field it reads and nesting deeper than about a thousand levels
(the exact parser reads those lines). Duplicate keys resolve to the last, as in
``JSON.parse``. A line is read lazily only when its head is a message's that could not be
odd: a string id, a string or null parent, a string timestamp and a message object with a
string role. Everything else is parsed whole, as before, so every problem eager reading
reports is still reported at open, with its file and line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from ..format.entries import Entry
from ..js.wire import loads_line

__all__ = [
    "HeadReader",
    "ListingReader",
    "head_reader",
    "listed_value",
    "listing_reader",
    "read_chunks",
    "read_lines",
]

#: ``(data, start, stop, line_no, values, numbers, whole) -> newlines``: the lines of
#: ``data[start:stop]``, numbered after ``line_no`` (see :func:`read_lines`).
HeadReader = Callable[
    [bytes, int, int, int, list[Any], list[int], Callable[[bytes, int], None]], int
]


def _msgspec() -> Any:
    """The msgspec module, or ``None`` when it is not installed."""
    try:
        import msgspec  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - msgspec is in the fast extra
        return None
    return msgspec


def _build() -> HeadReader | None:
    msgspec = _msgspec()
    if msgspec is None:  # pragma: no cover - msgspec is in the fast extra
        return None
    # The head of a message line that could not be odd, typed: any other line (another
    # entry type, an id that is not text, an absent parent, ...) fails to decode as one,
    # and is parsed whole. Untracked by the collector (gc=False): a head holds strings.
    message = msgspec.defstruct("_Message", [("role", str)], gc=False)
    head = msgspec.defstruct(
        "_Head",
        [
            ("type", Literal["message"]),
            ("id", str),
            ("parentId", str | None),
            ("timestamp", str),
            ("message", message),
        ],
        gc=False,
    )
    decode = msgspec.json.Decoder(head).decode
    refused = (msgspec.MsgspecError, RecursionError, OverflowError)

    def read_lines(
        data: bytes,
        start: int,
        stop: int,
        line_no: int,
        values: list[Any],
        numbers: list[int],
        whole: Callable[[bytes, int], None],
    ) -> int:
        # The loop of a lazy open, kept tight. Lines are views of ``data``, not copies (a
        # split would copy the whole file once more); a lazy entry keeps its view. A line
        # is lazy when its head could not be odd (see the module's notes);
        # ``whole(line, line_no)`` parses every other line.
        append = values.append
        number = numbers.append
        lazy_entry = Entry.lazy
        find = data.find
        view = memoryview(data)
        newlines = 0
        while True:
            end = find(b"\n", start, stop)
            if end < 0:
                end = stop
            else:
                newlines += 1
            line_no += 1
            line = view[start:end]
            try:
                head = decode(line)
            except refused:
                whole(bytes(line), line_no)
            else:
                append(lazy_entry(line, line_no, head))
                number(line_no)
            if end == stop:
                return newlines
            start = end + 1

    return read_lines


#: Built on first use (importing msgspec costs a few milliseconds a command may not need).
_UNBUILT: Any = object()
_reader: HeadReader | None = _UNBUILT


def head_reader() -> HeadReader | None:
    """:func:`read_lines` as built, or ``None`` when msgspec is not installed (then lines
    are read whole)."""
    global _reader
    if _reader is _UNBUILT:
        _reader = _build()
    return _reader


def read_lines(
    data: bytes,
    first_line: int,
    values: list[Any],
    numbers: list[int],
    whole: Callable[[bytes, int], None],
) -> int | None:
    """Append lazy entries for the sound message lines of ``data``'s ``\\n``-separated
    lines (numbered from ``first_line``) to ``values`` and their numbers to ``numbers``,
    handing every other line, as bytes, to ``whole(line, line_no)``.

    Returns how many ``\\n`` ``data`` holds, or ``None`` (and nothing done) without
    msgspec. A lazy entry keeps a view of ``data``, so ``data`` lives until the last of
    them is decoded (a split into lines would hold the same bytes, copied).
    """
    reader = head_reader()
    if reader is None:
        return None
    if data.__class__ is not bytes:  # a bytearray the caller may change (or resize) later
        data = bytes(data)
    return reader(data, 0, len(data), first_line - 1, values, numbers, whole)


def read_chunks(
    chunks: Iterable[bytes],
    first_line: int,
    values: list[Any],
    numbers: list[int],
    whole: Callable[[bytes, int], None],
) -> tuple[int, int, int] | None:
    """:func:`read_lines` over a file's bytes given in consecutive pieces (as a read-ahead
    hands them over, :mod:`pinb.core.file.readahead`): the lines are those of the pieces
    joined, numbered the same way.

    Returns how many bytes there were, how many ``\\n`` and the offset of the last one
    (``-1`` for none), or ``None`` without msgspec. Lines inside a piece stay views of it;
    a line that spans two pieces is joined into bytes of its own.
    """
    reader = head_reader()
    if reader is None:
        return None
    line_no = first_line - 1
    newlines = 0
    offset = 0  # where the current piece starts in the file
    last_newline = -1
    carry: list[bytes] = []  # the start of a line that began in earlier pieces
    for chunk in chunks:
        first = chunk.find(b"\n")
        if first < 0:
            carry.append(chunk)
            offset += len(chunk)
            continue
        carry.append(chunk[:first])
        line = b"".join(carry)
        reader(line, 0, len(line), line_no, values, numbers, whole)
        line_no += 1
        newlines += 1
        last = chunk.rfind(b"\n")
        if last > first:
            inside = reader(chunk, first + 1, last, line_no, values, numbers, whole)
            line_no += inside + 1
            newlines += inside + 1
        carry = [chunk[last + 1 :]]
        last_newline = offset + last
        offset += len(chunk)
    line = b"".join(carry)
    reader(line, 0, len(line), line_no, values, numbers, whole)
    return offset, newlines, last_newline


#: ``line -> row`` with what a session listing reads of a line (``type``, ``id``, ``cwd``,
#: ``timestamp``, ``parentSession``, ``name``; ``message`` with ``role``, ``timestamp`` and
#: ``content`` as undecoded JSON bytes), or ``None`` when the line must be parsed whole.
ListingReader = Callable[[bytes], Any]


def _build_listing() -> ListingReader | None:
    msgspec = _msgspec()
    if msgspec is None:  # pragma: no cover - msgspec is in the fast extra
        return None
    message = msgspec.defstruct(
        "_ListedMessage",
        [("role", Any, None), ("timestamp", Any, None), ("content", msgspec.Raw, None)],
        gc=False,
    )
    row = msgspec.defstruct(
        "_ListedLine",
        [
            ("type", Any, None),
            ("id", Any, None),
            ("cwd", Any, None),
            ("timestamp", Any, None),
            ("parentSession", Any, None),
            ("name", Any, None),
            ("message", message | None, None),
        ],
        gc=False,
    )
    decode = msgspec.json.Decoder(row).decode
    refused = (msgspec.MsgspecError, RecursionError, OverflowError)

    def read(line: bytes) -> Any:
        try:
            return decode(line)
        except refused:
            return None

    global _Raw
    _Raw = msgspec.Raw
    return read


_Raw: Any = None
_listing_reader: ListingReader | None = _UNBUILT


def listed_value(value: Any) -> Any:
    """A field the listing reader kept as JSON bytes, decoded (:func:`loads_line`); any
    other value as it is."""
    if _Raw is not None and value.__class__ is _Raw:
        return loads_line(bytes(value))
    return value


def listing_reader() -> ListingReader | None:
    """The listing reader, or ``None`` when msgspec is not installed."""
    global _listing_reader
    if _listing_reader is _UNBUILT:
        _listing_reader = _build_listing()
    return _listing_reader
