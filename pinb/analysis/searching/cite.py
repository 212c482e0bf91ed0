"""Where an entry is (``path:line#entry-id``), and what a search index keeps of each entry."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.context.build import entry_to_message
from ...core.format.entries import Entry
from ...core.js.jsontext import value_text
from ...core.js.wire import parse_js_date
from ...core.session import Session
from ..lineage import entry_key

__all__ = ["BODY_LIMIT", "Citation", "IndexedEntry", "index_entries", "indexed_entries"]

#: Characters of an entry's text kept in the search index (a huge tool result is cut).
BODY_LIMIT = 64_000

#: Tool-call argument names that hold the file a tool reads, edits or writes.
_PATH_KEYS = ("path", "file_path", "filePath", "file", "paths", "files")
#: Arguments that hold text to write, not names: never scanned for mentions.
_TEXT_KEYS = frozenset({"content", "oldText", "newText", "old_string", "new_string", "text"})
#: Argument strings longer than this are not scanned for mentions either.
_MENTION_SCAN = 1_000
#: A word of a command that names a file: it has a folder or an extension.
_MENTION = re.compile(
    r"[\w.~@+-]*[\w~@+-](?:/[\w.~@+-]+)+|[\w~@+-][\w.~@+-]*\.[A-Za-z][A-Za-z0-9]{0,9}"
)


@dataclass(frozen=True)
class Citation:
    """An entry's place: its session file, the 1-based physical line of its JSON, its id.

    ``str(citation)`` is ``path:line#entry-id``, which a reader can open: the line is where
    the entry is in the file, the id is what Pi (and :meth:`Session.get`) knows it by.
    """

    path: Path
    line: int
    entry_id: str | None

    def __str__(self) -> str:
        return f"{os.fspath(self.path)}:{self.line}#{self.entry_id or ''}"

    def open(self) -> Session:
        """The session holding the entry (read only until something is appended).

        Version 1 files get the same generated ids as when they were indexed.
        """
        from ..sources import open_session

        return open_session(self.path)


@dataclass(frozen=True)
class IndexedEntry:
    """What the search index keeps of one entry."""

    line: int
    entry_id: str | None
    type: str
    role: str | None
    #: Unix seconds (the message's own time, else the entry's).
    timestamp: float | None
    #: The searchable text: message text, tool-call argument values, a name or label.
    body: str
    #: Repeats and fork copies share it: role and text folded, or the copy key.
    digest: str
    #: Tool names (lower case) called by, or answered by, the entry.
    tools: tuple[str, ...]
    #: Files named by those tool calls' arguments (path arguments and mentions).
    files: tuple[str, ...]


def _strings(value: Any) -> Iterator[str]:
    """Every string in ``value``, in order, without recursion (arguments nest any depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _files(arguments: Any) -> list[str]:
    """Files a tool call names: its path arguments, then paths mentioned in the others
    (``pytest tests/test_app.py``), scanned only in short strings."""
    if not isinstance(arguments, dict):
        return []
    found: list[str] = []
    for key in _PATH_KEYS:
        found += _strings(arguments.get(key))
    for key, value in arguments.items():
        if key not in _PATH_KEYS and key not in _TEXT_KEYS:
            for text in _strings(value):
                if len(text) <= _MENTION_SCAN:
                    found += _MENTION.findall(text)
    paths = (p[2:] if p.startswith("./") else p for p in found)
    return list(dict.fromkeys(p for p in paths if p))


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]


def _digest(kind: str, body: str, entry: Entry, where: str) -> str:
    text = " ".join(body.split()).casefold()
    if text:
        seed = f"text\0{kind}\0{text}"
    else:  # nothing to compare: only true copies of this entry fold together
        key = entry_key(entry)
        seed = "key\0" + ("\0".join(key) if key is not None else f"{where}\0{entry.line}")
    return hashlib.sha1(seed.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def indexed_entries(session: Session) -> list[IndexedEntry]:
    """The searchable entries of a session, in file order.

    Messages of every role (text blocks; an assistant's tool calls add their argument
    values), branch and compaction summaries, custom messages, session names and labels.
    A tool result carries the tools and files of the call it answers.
    """
    where = os.fspath(session.path) if session.path is not None else session.id
    return index_entries(session.entries, where)


def index_entries(entries: Iterable[Entry], where: str) -> list[IndexedEntry]:
    """:func:`indexed_entries` of some entries of a file (``where``: its path), in order;
    a tool result answering a call before them carries its own tool name only."""
    from ..frames import message_text

    calls: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    found: list[IndexedEntry] = []
    for entry in entries:
        if entry.line is None:
            continue
        raw = entry.raw
        message = entry_to_message(entry)
        tools: tuple[str, ...] = ()
        files: tuple[str, ...] = ()
        stamp: Any = None
        if isinstance(message, dict):
            role = message.get("role")
            role = role if isinstance(role, str) else None
            parts = [message_text(message)]
            made = _calls(message)
            if made:
                named = [(value_text(c.get("name", "")).lower(), tuple(_files(c.get("arguments"))))
                         for c in made]  # fmt: skip
                tools = tuple(dict.fromkeys(name for name, _ in named))
                files = tuple(dict.fromkeys(f for _, paths in named for f in paths))
                parts += [s for c in made for s in _strings(c.get("arguments"))]
                for call, (name, paths) in zip(made, named, strict=True):
                    if isinstance(call.get("id"), str):
                        calls[call["id"]] = ((name,), paths)
            elif role == "toolResult":
                answered = message.get("toolName")
                tools, files = calls.get(value_text(message.get("toolCallId")), ((), ()))
                if isinstance(answered, str) and answered.lower() not in tools:
                    tools = (answered.lower(), *tools)
            elif role == "bashExecution":
                tools = ("bash",)
            body = "\n".join(p for p in parts if p)
            stamp = message.get("timestamp")
        elif entry.type == "session_info" and isinstance(raw.get("name"), str):
            role, body = None, raw["name"]
        elif entry.type == "label" and isinstance(raw.get("label"), str):
            role, body = None, raw["label"]
        else:
            continue
        if not (isinstance(stamp, int | float) and not isinstance(stamp, bool)):
            stamp = parse_js_date(entry.timestamp)
        body = body[:BODY_LIMIT]
        found.append(
            IndexedEntry(
                line=entry.line,
                entry_id=entry.id if isinstance(entry.id, str) else None,
                type=entry.type,
                role=role,
                timestamp=stamp / 1000 if stamp is not None else None,
                body=body,
                digest=_digest(role or entry.type, body, entry, where),
                tools=tools,
                files=files,
            )
        )
    return found
