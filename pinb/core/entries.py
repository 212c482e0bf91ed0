"""One stored entry: its wire dict kept verbatim, where it came from, and a typed view on demand."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .jsontext import short_repr
from .wire import MISSING

if TYPE_CHECKING:  # the pydantic models load on first use, not with the core
    from .models import EntryModel

__all__ = ["ARCHIVE_TYPE", "MISSING", "NAVIGATE_TYPE", "Entry", "id_key"]

#: ``customType`` of the inert entry pinb appends to record a move of the leaf.
NAVIGATE_TYPE = "pinb.navigate"
#: ``customType`` of the inert entry that archives (or restores) a branch in pinb's views.
ARCHIVE_TYPE = "pinb.archive"


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
    """

    __slots__ = ("_model", "line", "raw", "value")

    def __init__(self, raw: dict[str, Any], line: int | None = None) -> None:
        self.raw = raw
        self.line = line
        self._model: EntryModel | None = None
        #: The line's JSON value when it is not an object (``raw`` is then ``{}``).
        self.value: Any = raw

    @classmethod
    def from_value(cls, value: Any, line: int | None = None) -> Entry:
        """A line whose JSON is not an object: Pi keeps it as an entry with no fields."""
        entry = cls({}, line)
        entry.value = value
        return entry

    @property
    def type(self) -> str:
        value = self.raw.get("type")
        return value if isinstance(value, str) else ""

    @property
    def id(self) -> Any:
        """The entry id (a string in every file Pi writes)."""
        return self.raw.get("id", MISSING)

    @property
    def parent_id(self) -> Any:
        """The parent id: a string, ``None`` for a root, ``MISSING`` when absent."""
        return self.raw.get("parentId", MISSING)

    @property
    def timestamp(self) -> Any:
        return self.raw.get("timestamp")

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
        message = self.message
        if message is None:
            return None
        role = message.get("role")
        return role if isinstance(role, str) else None

    @property
    def is_navigation(self) -> bool:
        """A marker that only records a move of the leaf (pinb's, or an agent harness's
        ``leaf`` entry); views and counts leave such entries out."""
        kind = self.raw.get("type")
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

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Entry) and other.raw == self.raw

    __hash__ = None  # type: ignore[assignment]
