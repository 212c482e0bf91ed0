"""Which files a conversation read and changed, from its tool calls (spec §7.6)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..format.entries import id_key
from ..js.wire import js_string

__all__ = ["FileOperations", "format_file_operations", "js_sorted"]


def js_sorted(values: Iterable[Any]) -> list[Any]:
    """Sort as JavaScript's default ``Array.prototype.sort`` does: by UTF-16 code units."""

    def key(value: Any) -> bytes:
        text = value if isinstance(value, str) else js_string(value)
        return text.encode("utf-16-be", "surrogatepass")

    return sorted(values, key=key)


class _OrderedSet:
    """An insertion-ordered set with JavaScript ``Set`` equality for JSON values."""

    def __init__(self) -> None:
        self._items: dict[object, Any] = {}

    def add(self, value: Any) -> None:
        self._items.setdefault(id_key(value), value)

    def __contains__(self, value: object) -> bool:
        return id_key(value) in self._items

    def __iter__(self) -> Any:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class FileOperations:
    """Paths seen in ``read``/``write``/``edit`` tool calls, in first-seen order."""

    read: _OrderedSet = field(default_factory=_OrderedSet)
    written: _OrderedSet = field(default_factory=_OrderedSet)
    edited: _OrderedSet = field(default_factory=_OrderedSet)

    def add_message(self, message: Any, *, nested_calls: bool = True) -> None:
        """Record the file paths of a message's ``read``/``write``/``edit`` calls.

        An assistant message's tool calls count; so do, with ``nested_calls`` (Pi 1.x), the
        calls a tool result lists in ``nestedCalls.calls`` (made by a codemode script).
        """
        if not isinstance(message, dict):
            return
        role = message.get("role")
        if role == "toolResult" and nested_calls:
            nested = message.get("nestedCalls")
            calls = nested.get("calls") if isinstance(nested, dict) else None
            for call in calls if isinstance(calls, list) else ():
                if isinstance(call, dict):
                    self._add(call.get("name"), call.get("arguments"))
            return
        if role != "assistant":
            return
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                if "arguments" in block and "name" in block:
                    self._add(block.get("name"), block.get("arguments"))

    def _add(self, name: Any, arguments: Any) -> None:
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if not isinstance(path, str) or not path:
            return
        if name == "read":
            self.read.add(path)
        elif name == "write":
            self.written.add(path)
        elif name == "edit":
            self.edited.add(path)

    def add_details(self, details: Any) -> None:
        """Seed from a Pi-generated summary's ``details`` (modified files re-enter as edited)."""
        if not isinstance(details, dict):
            return
        read_files = details.get("readFiles")
        modified_files = details.get("modifiedFiles")
        if isinstance(read_files, list):
            for path in read_files:
                self.read.add(path)
        if isinstance(modified_files, list):
            for path in modified_files:
                self.edited.add(path)

    def file_lists(self) -> tuple[list[Any], list[Any]]:
        """``computeFileLists``: (read-only files, modified files), each sorted."""
        modified = _OrderedSet()
        for path in self.edited:
            modified.add(path)
        for path in self.written:
            modified.add(path)
        read_only = [p for p in self.read if p not in modified]
        return js_sorted(read_only), js_sorted(modified)

    def details(self) -> dict[str, list[Any]]:
        """The ``{readFiles, modifiedFiles}`` stored with a compaction or branch summary."""
        read_files, modified_files = self.file_lists()
        return {"readFiles": read_files, "modifiedFiles": modified_files}

    def to_wire(self) -> dict[str, list[Any]]:
        read_files, modified_files = self.file_lists()
        return {
            "read": list(self.read),
            "written": list(self.written),
            "edited": list(self.edited),
            "readFiles": read_files,
            "modifiedFiles": modified_files,
        }


def format_file_operations(read_files: Iterable[str], modified_files: Iterable[str]) -> str:
    """Pi's ``<read-files>``/``<modified-files>`` blocks appended to a summary ("" if none)."""
    sections = []
    read_list, modified_list = list(read_files), list(modified_files)
    if read_list:
        sections.append("<read-files>\n" + "\n".join(read_list) + "\n</read-files>")
    if modified_list:
        sections.append("<modified-files>\n" + "\n".join(modified_list) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""
