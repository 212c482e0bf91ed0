"""Where a session file came from: its fork or sub-agent parent, its root, and what it copied.

Pi links a child session to its parent in two ways, and pinb reads both:

- **The header's** ``parentSession``: the parent file's path as Pi wrote it (absolute).
  Pi's ``/fork`` and ``/clone`` (``SessionManager.createBranchedSession``) copy the path
  root → leaf into the new file, *keeping every entry's id and timestamp*;
  ``SessionManager.forkFrom`` copies the whole file; ``/new`` with a parent (the handoff
  example, a fork before the first message, RPC ``new_session``) copies nothing.
  (badlogic/pi-mono ``packages/coding-agent/src/core/session-manager.ts``,
  ``src/core/agent-session.ts``; pinb's twin is :mod:`pinb.core.forks`.)
- **The folder** of a sub-agent: the ``pi-subagents`` extension runs each child Pi with
  ``--session-dir <folder>/<parent stem>/<run>/run-N`` (a fresh child names no parent)
  and writes a forked child into ``<folder>/<parent stem>/forks/`` with ``parentSession``
  set (nicobailon/pi-subagents ``src/extension/index.ts`` ``getSubagentSessionRoot``,
  ``src/shared/fork-context.ts``). Pi's own example extension runs the child with
  ``--no-session``: no file at all, its usage lives only in the parent's tool result
  (pi-mono ``packages/coding-agent/examples/extensions/subagent/index.ts``).

An entry of a child is **copied** when its parent file holds an entry with the same
:func:`entry_key`: type, id and timestamp (and role, for messages). Content is not
compared, because copying may change it: Pi 1.x re-chains ``parentId`` around dropped
labels, and pi-subagents strips signed thinking blocks from copied assistant messages.
Labels, which Pi re-creates with new ids, are matched by target and text instead.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..core.file.trash import in_trash, trashed_as
from ..core.format.entries import MISSING, Entry
from ..core.js.jsontext import value_text
from ..core.js.wire import JS_WHITESPACE, loads
from ..core.session import Session
from ..errors import PinbError
from .sources import open_session

__all__ = [
    "FORK",
    "LINKED",
    "ORPHAN",
    "RELATIONS",
    "ROOT",
    "SUBAGENT",
    "FileReader",
    "Lineage",
    "LocalReader",
    "entry_key",
    "header_reference",
    "resolve_parent",
    "session_lineage",
    "subagent_parent",
]

#: No parent: a session started fresh.
ROOT: Final = "root"
#: Names a parent that was found, and copies at least one of its entries.
FORK: Final = "fork"
#: Names a parent that was found but copies none of its entries (``/new`` with a parent).
LINKED: Final = "linked"
#: Lies in a sub-agent folder of another session (``<folder>/<stem>/…/*.jsonl``).
SUBAGENT: Final = "subagent"
#: Names a parent that cannot be found: nothing can be marked as copied.
ORPHAN: Final = "orphan"
#: Every relation, with what it means.
RELATIONS: dict[str, str] = {
    ROOT: "no parent",
    FORK: "names a parent it copies entries from",
    LINKED: "names a parent but copies none of its entries",
    SUBAGENT: "a sub-agent's session, in the folder of its parent session",
    ORPHAN: "names a parent that was not found; copies cannot be marked",
}

#: Folders above a session searched for its parent's file (``<stem>/<run>/run-N``).
_LEVELS = 3
#: Longest chain of parents followed to a root.
_MAX_DEPTH = 64
#: Bytes read to find a file's header line.
_HEADER_BYTES = 1 << 16


class FileReader(Protocol):
    """Reads session files where they live (the local disk, or an fsspec file system)."""

    @property
    def pathmod(self) -> Any:
        """``os.path`` for local paths, ``posixpath`` for object stores."""
        ...

    def is_file(self, path: str) -> bool: ...

    def open_session(self, path: str) -> Session: ...

    def parent_reference(self, path: str) -> str | None:
        """The ``parentSession`` of the file's header (``None`` when it names none)."""
        ...

    def name(self, path: str) -> str:
        """What rows call the file (the path, or a URL)."""
        ...

    def stamp(self, path: str) -> object:
        """A value that changes when the file changes (for caching)."""
        ...


class LocalReader:
    """:class:`FileReader` for files on the local disk."""

    pathmod: Any = os.path

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def open_session(self, path: str) -> Session:
        return open_session(path)

    def parent_reference(self, path: str) -> str | None:
        try:
            with open(path, "rb") as handle:
                return header_reference(handle.read(_HEADER_BYTES))
        except OSError:
            return None

    def name(self, path: str) -> str:
        return path

    def stamp(self, path: str) -> object:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)


def header_reference(data: bytes) -> str | None:
    """The ``parentSession`` named by the first JSON line of a file's first bytes."""
    for raw in data.split(b"\n"):
        line = raw.decode("utf-8", errors="replace").strip(JS_WHITESPACE)
        if not line:
            continue
        try:
            header = loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(header, dict) or header.get("type") != "session":
            return None
        parent = header.get("parentSession")
        return parent if isinstance(parent, str) and parent.strip() else None
    return None


def entry_key(entry: Entry) -> tuple[str, ...] | None:
    """What an entry and its copy in a fork share: type, id, timestamp (and role).

    A label is keyed by its target and text, since Pi re-creates labels with new ids.
    ``None`` for an entry without an id (nothing to match).
    """
    raw = entry.raw
    kind = entry.type
    if kind == "label":
        target, text = raw.get("targetId"), raw.get("label")
        return (kind, value_text(target), value_text(text)) if isinstance(target, str) else None
    entry_id = raw.get("id", MISSING)
    if not isinstance(entry_id, str):
        return None
    stamp = raw.get("timestamp")
    return (kind, entry_id, stamp if isinstance(stamp, str) else "", entry.role or "")


@dataclass(frozen=True)
class Lineage:
    """A session's parent, root and copied entries.

    Attributes
    ----------
    path:
        The session's file (``None`` for a session with no file).
    parent_reference:
        ``parentSession`` as written in the header (``None`` when absent).
    parent_session:
        The parent's file as found: the header's reference resolved, or for a sub-agent
        the session whose folder holds it. ``None`` when there is none or it is missing.
    relation:
        One of :data:`RELATIONS`.
    root_session:
        The topmost ancestor found by following parents (the session itself for a root).
    copied_keys:
        :func:`entry_key` of the entries of the parent file (empty when no parent file
        was read): an entry of this session with one of these keys is a copy.
    note:
        One sentence saying what was found, or why nothing could be marked.
    parent_missing:
        The header names a parent that was not found (or could not be read): copies of
        its entries cannot be marked.
    """

    path: str | None
    parent_reference: str | None = None
    parent_session: str | None = None
    relation: str = ROOT
    root_session: str | None = None
    copied_keys: frozenset[tuple[str, ...]] = field(default=frozenset(), repr=False)
    note: str = "no parent session"
    parent_missing: bool = False

    def is_copied(self, entry: Entry) -> bool:
        """Whether ``entry`` is also in the parent file (a copy made by a fork)."""
        if not self.copied_keys:
            return False
        key = entry_key(entry)
        return key is not None and key in self.copied_keys

    def copied_count(self, entries: Iterable[Entry]) -> int:
        """How many of ``entries`` are copies."""
        return sum(1 for e in entries if self.is_copied(e))


def resolve_parent(reference: str, child: str | None, reader: FileReader) -> str | None:
    """The file a ``parentSession`` reference names, or ``None`` when it is not found.

    Tried in order: the reference as an absolute path; relative to the child's folder;
    then the reference's file name in the child's folder and the folders above it (up to
    three: a tree of sessions moved or copied from another machine still resolves, and
    pi-subagents keeps forks in ``<parent stem>/forks/``); last, a parent ``pinb rm`` moved
    to the trash, found by its removal note.
    """
    pm = reader.pathmod
    candidates: list[str] = []
    expanded = os.path.expanduser(reference) if pm is os.path else reference
    if pm.isabs(expanded):
        candidates.append(expanded)
    if child is not None:
        folder = pm.dirname(child)
        if not pm.isabs(expanded):
            candidates.append(pm.normpath(pm.join(folder, expanded)))
        base = pm.basename(expanded.rstrip("/\\"))
        for _ in range(_LEVELS + 1):
            if base:
                candidates.append(pm.join(folder, base))
            up = pm.dirname(folder)
            if up == folder:
                break
            folder = up
    seen: set[str] = set()
    for candidate in candidates:
        if candidate in seen or (child is not None and candidate == child):
            continue
        seen.add(candidate)
        if reader.is_file(candidate):
            return candidate
    if pm is os.path and pm.isabs(expanded):
        # `pinb rm` leaves forks naming the removed file: its removal note says where it is.
        moved = trashed_as(expanded)
        if moved is not None and reader.is_file(str(moved)):
            return str(moved)
    return None


def subagent_parent(path: str, reader: FileReader) -> str | None:
    """The session whose sub-agent folder holds ``path`` (``<folder>/<stem>/…/x.jsonl``
    beside ``<folder>/<stem>.jsonl``, up to three folders deep), or ``None``."""
    pm = reader.pathmod
    folder = pm.dirname(path)
    for _ in range(_LEVELS):
        up = pm.dirname(folder)
        name = pm.basename(folder)
        if not name or up == folder:
            return None
        candidate = pm.join(up, name + ".jsonl")
        if reader.is_file(candidate):
            return str(candidate)
        folder = up
    return None


#: (reader type, path, stamp) -> keys of a parent file's entries; a few parents at a time.
_KEYS: OrderedDict[tuple[object, ...], frozenset[tuple[str, ...]]] = OrderedDict()
_KEYS_SIZE = 32


def _parent_keys(path: str, reader: FileReader) -> frozenset[tuple[str, ...]]:
    cache_key = (type(reader), path, reader.stamp(path))
    keys = _KEYS.get(cache_key)
    if keys is None:
        session = reader.open_session(path)
        keys = frozenset(k for k in (entry_key(e) for e in session.entries) if k is not None)
        _KEYS[cache_key] = keys
        while len(_KEYS) > _KEYS_SIZE:
            _KEYS.popitem(last=False)
    else:
        _KEYS.move_to_end(cache_key)
    return keys


def _parent_of(path: str, reader: FileReader) -> str | None:
    """The parent file of ``path`` found on disk (header reference, else sub-agent folder)."""
    reference = reader.parent_reference(path)
    if reference is not None:
        found = resolve_parent(reference, path, reader)
        if found is not None:
            return found
    return subagent_parent(path, reader)


def _root(start: str, parent: str | None, reader: FileReader) -> str:
    """Follow parents from ``parent`` up to the topmost file found (cycles stop the walk)."""
    seen = {start}
    top = start
    current = parent
    while current is not None and current not in seen and len(seen) <= _MAX_DEPTH:
        seen.add(current)
        top = current
        current = _parent_of(current, reader)
    return reader.name(top)


def session_lineage(
    session: Session, *, path: str | None = None, reader: FileReader | None = None
) -> Lineage:
    """Find the parent of a session, its root, and which of its entries are copies.

    Parameters
    ----------
    session:
        The session (its ``parentSession`` header is read).
    path:
        The session's file where ``reader`` finds it (default ``session.path``).
    reader:
        How to read files (default: the local disk).

    Returns
    -------
    Lineage
        Never raises for a missing or unreadable parent: the relation is then
        :data:`ORPHAN` and :attr:`Lineage.note` says why nothing was marked.
    """
    reader = reader or LocalReader()
    if path is None and session.path is not None:
        path = os.fspath(session.path)
    name = reader.name(path) if path is not None else None
    reference = session.parent_session
    reference = reference if reference and reference.strip() else None
    found = resolve_parent(reference, path, reader) if reference is not None else None
    folder_parent = subagent_parent(path, reader) if path is not None else None
    parent = found or folder_parent
    keys: frozenset[tuple[str, ...]] = frozenset()
    problem = None
    if found is not None:
        try:
            keys = _parent_keys(found, reader)
        except (OSError, ValueError, PinbError) as exc:  # not a session: say so, never crash
            problem = str(exc)
    copied = bool(keys) and any(
        (k := entry_key(e)) is not None and k in keys for e in session.entries
    )
    if reference is None:
        relation, note = ROOT, "no parent session"
    elif found is None:
        relation = ORPHAN
        note = f"parent session {reference!r} not found; copied entries cannot be marked"
    elif problem is not None:
        relation = ORPHAN
        note = f"parent session {reader.name(found)} unreadable ({problem}); nothing marked"
    else:
        relation = FORK if copied else LINKED
        note = f"{relation} of {reader.name(found)}"
        if isinstance(reader, LocalReader) and in_trash(found):
            note += " (removed with pinb rm: in the trash)"
    if folder_parent is not None:
        # The folder says what it is; the header (if any) said what it copied.
        first = f"sub-agent session in the folder of {reader.name(folder_parent)}"
        note = first if relation == ROOT else f"{first}; {note}"
        relation = SUBAGENT
    root = _root(path, parent, reader) if path is not None else None
    return Lineage(
        path=name,
        parent_reference=reference,
        parent_session=reader.name(parent) if parent is not None else None,
        relation=relation,
        root_session=root,
        copied_keys=keys if problem is None else frozenset(),
        note=note,
        parent_missing=reference is not None and (found is None or problem is not None),
    )
