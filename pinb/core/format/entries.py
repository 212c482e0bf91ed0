"""One stored entry: its wire dict kept verbatim, where it came from, and a typed view on demand."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..js.jsontext import short_repr
from ..js.wire import MISSING, loads_line

if TYPE_CHECKING:  # the pydantic models load on first use, not with the core
    from .models import EntryModel

__all__ = [
    "ARCHIVE_TYPE",
    "MISSING",
    "NAVIGATE_TYPE",
    "Entry",
    "entry_flaw",
    "id_key",
    "transient_decoding",
]

#: ``customType`` of the inert entry pinb appends to record a move of the leaf.
NAVIGATE_TYPE = "pinb.navigate"
#: ``customType`` of the inert entry that archives (or restores) a branch in pinb's views.
ARCHIVE_TYPE = "pinb.archive"


#: ``Entry._value`` of an object line: the value is the line's ``raw`` dict itself.
_SAME: Any = object()
#: Lazy lines decoded inside :func:`transient_decoding`, with what makes them lazy again.
_DECODED: ContextVar[list[tuple[Entry, Any, Any]] | None] = ContextVar(
    "pinb_transient_decoding", default=None
)


@contextlib.contextmanager
def transient_decoding() -> Iterator[Callable[[], int]]:
    """Let lazily opened lines decoded inside the block go back to their lazy state.

    The function it gives (``release()``) returns every line decoded since the block
    began (or since the last release) to what :meth:`Entry.lazy` made: its bytes and
    head, its JSON object let go, decoded again when next read (an equal object, not the
    same one). A walk over a long session (every compaction's report) holds then only the
    part it is reading, not every line of the file decoded. Only this thread's and this
    task's decoding is recorded; lines decoded before the block stay decoded.
    """
    decoded: list[tuple[Entry, Any, Any]] = []
    token = _DECODED.set(decoded)

    def release() -> int:
        count = 0
        for entry, source, head in decoded:
            if entry._raw is not None:
                entry._raw, entry._model, entry._source, entry._head = None, None, source, head
                count += 1
        decoded.clear()
        return count

    try:
        yield release
    finally:
        _DECODED.reset(token)


def id_key(value: object) -> object:
    """A dict key with JavaScript ``Map`` semantics for an id read from JSON.

    Strings are themselves; ``1`` and ``1.0`` are the same number but differ from ``"1"``
    and from ``true``; objects and arrays only equal themselves (by reference).
    """
    if isinstance(value, str) or value is None or value is MISSING:
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    return ("object", id(value))


class Entry:
    """A non-header line of a session file.

    Parameters
    ----------
    raw:
        The line's JSON object exactly as read (or as pinb wrote it). Never mutate it.
    line:
        1-based physical line number in the file, or ``None`` for entries not yet on disk.

    Notes
    -----
    A message line opened lazily (:meth:`lazy`) keeps its bytes and the fields its head
    gave (id, parent, timestamp, role); ``raw`` decodes the line on first use, through
    :func:`~pinb.core.js.wire.loads_line`, and the bytes are then let go.
    """

    __slots__ = ("_head", "_model", "_raw", "_source", "_value", "line")

    def __init__(self, raw: dict[str, Any], line: int | None = None) -> None:
        self._raw: dict[str, Any] | None = raw
        self.line = line
        self._model: EntryModel | None = None
        self._value: Any = _SAME
        self._source: bytes | memoryview | None = None
        self._head: Any = None

    @classmethod
    def from_value(cls, value: Any, line: int | None = None) -> Entry:
        """A line whose JSON is not an object: Pi keeps it as an entry with no fields."""
        entry = cls({}, line)
        entry._value = value
        return entry

    @classmethod
    def lazy(cls, source: bytes | memoryview, line: int, head: Any) -> Entry:
        """A message line whose head was read and checked (:mod:`pinb.core.file.lazy`): ``head``
        has ``id``, ``parentId``, ``timestamp`` and ``message.role``; ``source`` is the
        line's bytes (or a view of the file's)."""
        entry = cls.__new__(cls)
        entry._raw = None
        entry._source = source
        entry.line = line
        entry._model = None
        entry._value = _SAME
        entry._head = head
        return entry

    @property
    def raw(self) -> dict[str, Any]:
        """The line's JSON object (decoded on first use for a lazily opened line)."""
        raw = self._raw
        if raw is None:
            raw = self._decode()
        return raw

    def _decode(self) -> dict[str, Any]:
        source = self._source
        assert source is not None
        try:
            value = loads_line(source)
        except (ValueError, RecursionError) as exc:  # the head reader accepted it: a bug
            raise ValueError(f"line {self.line}: the line no longer parses ({exc})") from exc
        if value.__class__ is not dict:  # pragma: no cover - the head was an object's
            raise ValueError(f"line {self.line}: the line is no longer a JSON object")
        recording = _DECODED.get()
        if recording is not None:
            recording.append((self, source, self._head))
        self._raw = value
        self._source = None
        self._head = None
        return value

    @property
    def decoded(self) -> bool:
        """Whether the line's JSON object has been built (always, unless opened lazily)."""
        return self._raw is not None

    @property
    def value(self) -> Any:
        """The line's JSON value when it is not an object (``raw`` is then ``{}``)."""
        value = self._value
        return self.raw if value is _SAME else value

    @property
    def type(self) -> str:
        if self._raw is None:
            return "message"
        value = self._raw.get("type")
        return value if isinstance(value, str) else ""

    @property
    def id(self) -> Any:
        """The entry id (a string in every file Pi writes)."""
        raw = self._raw
        return self._head.id if raw is None else raw.get("id", MISSING)

    @property
    def parent_id(self) -> Any:
        """The parent id: a string, ``None`` for a root, ``MISSING`` when absent."""
        raw = self._raw
        return self._head.parentId if raw is None else raw.get("parentId", MISSING)

    @property
    def timestamp(self) -> Any:
        raw = self._raw
        return self._head.timestamp if raw is None else raw.get("timestamp")

    @property
    def message(self) -> dict[str, Any] | None:
        """The Pi-shaped message of a ``message`` entry (verbatim), else ``None``."""
        if self.raw.get("type") != "message":
            return None
        message = self.raw.get("message")
        return message if isinstance(message, dict) else None

    @property
    def role(self) -> str | None:
        """``message.role`` of a ``message`` entry, else ``None``."""
        if self._raw is None:
            head_role: str = self._head.message.role
            return head_role
        message = self.message
        if message is None:
            return None
        role = message.get("role")
        return role if isinstance(role, str) else None

    @property
    def is_navigation(self) -> bool:
        """A marker that only records a move of the leaf (pinb's, or an agent harness's
        ``leaf`` entry); views and counts leave such entries out."""
        if self._raw is None:
            return False
        kind = self._raw.get("type")
        return kind == "leaf" or (kind == "custom" and self.raw.get("customType") == NAVIGATE_TYPE)

    @property
    def model(self) -> EntryModel:
        """The typed, validated model of this entry (computed once, on first use)."""
        if self._model is None:
            from .models import parse_entry

            self._model = parse_entry(self.raw)
        return self._model

    def __repr__(self) -> str:
        role = f" role={short_repr(self.role)}" if self.role else ""
        return (
            f"Entry(type={short_repr(self.type)}, id={short_repr(self.id)}{role}, line={self.line})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # A lazy entry travels decoded (its head's class is made at run time).
        if self._value is _SAME:
            return (Entry, (self.raw, self.line))
        return (_rebuild, (self.line, self._value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Entry) and other.raw == self.raw

    __hash__ = None  # type: ignore[assignment]


def _rebuild(line: int | None, value: Any) -> Entry:
    """An unpickled entry of a line whose JSON is not an object (``Entry.__reduce__``)."""
    return Entry.from_value(value, line)


def entry_flaw(value: dict[str, Any]) -> str | None:
    """What is structurally wrong with an entry that Pi would still accept, if anything.

    Pi reads such lines without a word; pinb keeps them too (so contexts stay Pi's) but
    reports each one.
    """
    kind = value.get("type", MISSING)
    if not isinstance(kind, str):
        return "entry has no string 'type'; Pi ignores it in the context"
    entry_id = value.get("id", MISSING)
    if entry_id is MISSING:
        return f"{kind!r} entry has no id, so nothing can name it as a parent"
    if not isinstance(entry_id, str):
        return f"{kind!r} entry has a non-string id {short_repr(entry_id)}"
    parent = value.get("parentId", MISSING)
    if parent is MISSING:
        return f"entry {short_repr(entry_id)} has no parentId; Pi treats it as an orphan root"
    if parent is not None and not isinstance(parent, str):
        return f"entry {short_repr(entry_id)} has a non-string parentId {short_repr(parent)}"
    if kind == "message":
        message = value.get("message")
        if not isinstance(message, dict):
            return f"message entry {short_repr(entry_id)} holds no message object"
        if not isinstance(message.get("role"), str):
            return f"message entry {short_repr(entry_id)} has no string role"
    return None
