"""The entry tree: id index, leaf, paths, children, the sorted tree view, labels and the name.

Everything here follows Pi v0.58.3 (spec §2.4, §4) with two safety rules Pi lacks: every
walk stops at a revisited id (Pi hangs on cycles), and what is odd in a file (cycles,
orphans, duplicate ids) is reported through :class:`Problem` records instead of ignored.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...errors import SessionError
from ..gc import gc_paused as _gc_paused
from ..js.jsontext import short_repr
from ..js.wire import js_date_ms, js_trim, js_truthy
from .entries import _SAME, ARCHIVE_TYPE, MISSING, Entry, entry_flaw, id_key
from .fieldtypes import odd_fields
from .problems import Problem
from .target import Pi, PiLike

__all__ = ["ParentLoopError", "SessionIndex", "TreeNode", "v8_sort"]

#: Parent positions: a root (``null`` or empty parent), and a parent not (yet) found by id.
NO_PARENT = -1
UNRESOLVED = -2


class ParentLoopError(SessionError, ValueError):
    """A walk up the parent links came back to an entry it had passed.

    A :class:`~pinb.errors.SessionError`, and a ``ValueError`` as it always was.
    """


#: Entry kinds as the walks need them, one byte per entry.
KIND_OTHER = 0
KIND_MESSAGE = 1
KIND_ASSISTANT = 2
KIND_THINKING = 3
KIND_MODEL = 4
KIND_COMPACTION = 5
KIND_EDIT = 6
_KIND_CODES = {
    "thinking_level_change": KIND_THINKING,
    "model_change": KIND_MODEL,
    "compaction": KIND_COMPACTION,
    "context_edit": KIND_EDIT,
}


class TreeNode:
    """A node of :meth:`SessionIndex.tree`: an entry, its resolved label, sorted children."""

    __slots__ = ("children", "entry", "label")

    def __init__(
        self, entry: Entry, label: str | None = None, children: list[TreeNode] | None = None
    ) -> None:
        self.entry = entry
        self.label = label
        self.children: list[TreeNode] = children if children is not None else []

    def __repr__(self) -> str:
        return f"TreeNode({self.entry!r}, label={short_repr(self.label)}, children={len(self.children)})"

    def walk(self, depth: int = 0) -> Iterator[tuple[TreeNode, int]]:
        """Pre-order ``(node, depth)`` pairs; iterative, so deep trees do not recurse.

        A node shared through duplicate ids is listed (with its subtree) wherever it
        occurs, as in Pi's tree; a node met again and again (a cycle, which Pi would loop
        on) stops being expanded after a few rounds.
        """
        stack: list[tuple[TreeNode, int]] = [(self, depth)]
        expanded: dict[int, int] = {}
        while stack:
            node, d = stack.pop()
            yield node, d
            times = expanded.get(id(node), 0)
            if times >= _MAX_EXPANSIONS:
                continue
            expanded[id(node)] = times + 1
            stack.extend((child, d + 1) for child in reversed(node.children))


#: How often one node is expanded in a walk before it is taken for a cycle.
_MAX_EXPANSIONS = 64


def _date_compare(a: Entry, b: Entry) -> float | None:
    """``new Date(a.timestamp) - new Date(b.timestamp)``; ``None`` stands for NaN."""
    ta, tb = js_date_ms(a.timestamp), js_date_ms(b.timestamp)
    if ta is None or tb is None:
        return None
    return ta - tb


def v8_sort(items: list[TreeNode]) -> list[TreeNode]:
    """Sort children by timestamp exactly as Node's ``Array.prototype.sort`` would.

    With consistent timestamps any stable sort agrees with V8. An unparseable timestamp
    makes the comparator return NaN, and then the outcome depends on V8's algorithm
    (initial run detection, then binary insertion, for fewer than 64 items), which is
    emulated here (spec §4.5).
    """
    keys = [js_date_ms(node.entry.timestamp) for node in items]
    if None not in keys:
        known = [k for k in keys if k is not None]
        order = sorted(range(len(items)), key=lambda i: known[i])
        return [items[i] for i in order]

    def lt(x: int, y: int) -> bool:  # cmp(x, y) < 0; NaN counts as 0, so never less
        kx, ky = keys[x], keys[y]
        return kx is not None and ky is not None and kx < ky

    def ge(x: int, y: int) -> bool:  # cmp(x, y) >= 0 with NaN read as 0 (SortCompare)
        return not lt(x, y)

    n = len(items)
    idx = list(range(n))
    if n < 2:
        return list(items)
    # Count the initial run (V8's CountAndMakeRun).
    run = 2
    descending = lt(idx[1], idx[0])
    if descending:
        while run < n and lt(idx[run], idx[run - 1]):
            run += 1
        idx[:run] = reversed(idx[:run])
    else:
        while run < n and ge(idx[run], idx[run - 1]):
            run += 1
    # Binary insertion of the rest; a NaN comparison counts as "not less".
    for i in range(run, n):
        pivot = idx[i]
        lo, hi = 0, i
        while lo < hi:
            mid = (lo + hi) >> 1
            if lt(pivot, idx[mid]):
                hi = mid
            else:
                lo = mid + 1
        idx[lo + 1 : i + 1] = idx[lo:i]
        idx[lo] = pivot
    return [items[i] for i in idx]


class EntriesById(Mapping[object, Entry]):
    """The index's entries by id (an id's last entry), read through its position map.

    One dict of ids serves both the walks (id -> position) and this view (id -> entry):
    a second dict of every id would cost an open of 100,000 entries a fifth of its time.
    Keys are ids as :func:`~pinb.core.format.entries.id_key` makes them (a string id is itself).
    """

    __slots__ = ("_entries", "_position")

    def __init__(self, position: dict[object, int], entries: list[Entry]) -> None:
        self._position = position
        self._entries = entries

    def __getitem__(self, key: object) -> Entry:
        return self._entries[self._position[key]]

    def get(self, key: object, default: Any = None) -> Entry | Any:
        at = self._position.get(key)
        return default if at is None else self._entries[at]

    def __contains__(self, key: object) -> bool:
        return key in self._position

    def __iter__(self) -> Iterator[object]:
        return iter(self._position)

    def __len__(self) -> int:
        return len(self._position)

    def __repr__(self) -> str:
        return f"<EntriesById: {len(self._position):,} ids>"


class SessionIndex:
    """Index over a session's entries (file order), kept up to date as entries are added.

    Parameters
    ----------
    entries:
        Non-header entries in file order.
    path:
        The file they came from, for problem reports.
    """

    def __init__(self, entries: Iterable[Entry] = (), path: Path | None = None) -> None:
        self.path = path
        self.entries: list[Entry] = []
        self._problems: list[Problem] = []
        self._unchecked: list[Entry] = []  # entries whose fields are to be checked
        self._labels: dict[object, tuple[Any, Any, Any]] = {}
        self._archived: dict[object, Entry] = {}
        self._name_latest_truthy: Any = None
        self._name_latest: Any = None
        self._children: dict[object, list[Entry]] | None = None
        self._checked: dict[int, Entry] = {}  # entries whose field types were checked
        # Walks follow positions, not ids: parent positions and entry kinds are kept in
        # flat arrays, so a 60,000-deep path costs milliseconds instead of chasing dicts.
        self._position: dict[object, int] = {}
        #: Each id's (last) entry.
        self.by_id = EntriesById(self._position, self.entries)
        self._parents = array("q")
        self.kinds = bytearray()
        self._unresolved: list[int] = []  # positions whose parent was not found when added
        self._stale_parents = False
        #: Grows when a repeated id re-points existing parent links (paths may change).
        self.generation = 0
        # The last full walk: (start position, entries, generation, root-to-start positions).
        self._walked: tuple[int, int, int, list[int]] | None = None
        self._memo: dict[object, tuple[int, int, Any]] = {}
        self.extend(entries)

    # -- building -------------------------------------------------------------------------

    def extend(self, entries: Iterable[Entry]) -> None:
        """Index the next entries of the file, in order (the bulk form of :meth:`add`).

        Structurally wrong entries (no id, no parent, a message without a role, ...) are
        reported as ``malformed-entry`` problems here, where the fields are read anyway.
        """
        position = self._position
        find = position.get
        place = position.setdefault
        # Parent positions are gathered in a list and added to the array at the end (a
        # list append is the cheaper one); nothing in the loop reads them.
        parents: list[int] = []
        add_parent = parents.append
        kinds = self.kinds
        add_kind = kinds.append
        unresolved = self._unresolved
        append = self.entries.append
        at = len(self.entries)
        first = at
        try:
            for entry in entries:
                raw = entry._raw
                if raw is None:
                    # A lazily read message line: its head was read and found sound at open.
                    head = entry._head
                    entry_id = head.id
                    seen = place(entry_id, at)  # one dict operation for an id not seen yet
                    if seen != at:
                        self._report_duplicate(entry, self.entries[seen])
                        self._stale_parents = True
                        self.generation += 1
                        position[entry_id] = at
                    append(entry)
                    parent = head.parentId  # a string or None (the head's type says so)
                    found = find(parent, UNRESOLVED) if parent else NO_PARENT
                    if found == UNRESOLVED:
                        unresolved.append(at)
                    add_parent(found)
                    add_kind(KIND_ASSISTANT if head.message.role == "assistant" else KIND_MESSAGE)
                    at += 1
                    continue
                entry_id = raw.get("id", MISSING)
                key = entry_id if entry_id.__class__ is str else id_key(entry_id)
                if key in position:
                    self._report_duplicate(entry, self.entries[position[key]])
                    self._stale_parents = True  # entries naming this id now mean the later one
                    self.generation += 1
                append(entry)
                position[key] = at
                parent = raw.get("parentId", MISSING)
                if parent.__class__ is str:
                    found = find(parent, UNRESOLVED) if parent else NO_PARENT
                    if found == UNRESOLVED:
                        unresolved.append(at)  # a later line, or no line: an orphan
                    parents.append(found)
                    sound = entry_id.__class__ is str
                else:
                    sound = parent is None and entry_id.__class__ is str
                    if parent is not None:
                        unresolved.append(at)
                    parents.append(NO_PARENT if parent is None else UNRESOLVED)
                kind = raw.get("type")
                if kind == "message":
                    message = raw.get("message")
                    if message.__class__ is dict:
                        role = message.get("role")
                        kinds.append(KIND_ASSISTANT if role == "assistant" else KIND_MESSAGE)
                        sound = sound and role.__class__ is str
                    else:
                        kinds.append(KIND_MESSAGE)
                        sound = False
                else:
                    if kind.__class__ is str:
                        kinds.append(_KIND_CODES.get(kind, KIND_OTHER))
                        if kind == "label" or kind == "session_info":
                            self._replay(raw, kind)
                            self.check_fields((entry,))
                        elif kind == "custom" and raw.get("customType") == ARCHIVE_TYPE:
                            self._replay_archive(entry)
                    else:
                        kinds.append(KIND_OTHER)
                        sound = False
                if not sound and entry._value is _SAME:
                    self._report_flaw(entry)
                at += 1
        finally:
            self._parents.extend(parents)
        if self._children is not None:
            for entry in self.entries[first:]:
                self._children.setdefault(id_key(entry.parent_id), []).append(entry)

    def check_fields(self, entries: Iterable[Entry]) -> None:
        """Report, once per entry, the fields of ``entries`` that hold an odd type (by the
        time :attr:`problems` is next read).

        Called where the fields are read: a context's entries when it is built, and the
        labels and the name as they are replayed (few lines; message lines, which a lazy
        open leaves undecoded, are never checked at open). Each odd field becomes an
        ``odd-field`` problem with file and line; the result the caller computes is Pi's
        either way (:mod:`pinb.core.format.fieldtypes`).
        """
        # Noted here, checked when the problems are next read: a context is built without
        # the cost of a report nobody may ask for (half the time of a first context).
        # Contexts built again and again while nobody reads problems are checked in bulk.
        unchecked = self._unchecked
        unchecked.extend(entries)
        if len(unchecked) > len(self.entries) + 1000:
            self._check_noted()

    @property
    def problems(self) -> list[Problem]:
        """Everything odd found so far, in the order found; fields noted for checking
        (:meth:`check_fields`) are checked first."""
        if self._unchecked:
            self._check_noted()
        return self._problems

    def _check_noted(self) -> None:
        unchecked, self._unchecked = self._unchecked, []
        checked = self._checked
        problems = self._problems
        for entry in unchecked:
            key = id(entry)  # kept alive in ``checked``, so an id is never reused
            if key in checked:
                continue
            checked[key] = entry
            for phrase in odd_fields(entry.raw):
                problems.append(
                    Problem("odd-field", f"{phrase}; read as Pi reads it", self.path, entry.line)
                )

    def _report_flaw(self, entry: Entry) -> None:
        flaw = entry_flaw(entry.raw)  # the full diagnosis, only for the odd entry
        if flaw is not None:
            self.problems.append(Problem("malformed-entry", flaw, self.path, entry.line))

    def _report_duplicate(self, entry: Entry, previous: Entry) -> None:
        self.problems.append(
            Problem(
                "duplicate-id",
                f"entry id {short_repr(entry.id)} repeats line {previous.line}; the later line wins",
                self.path,
                entry.line,
            )
        )

    def add(self, entry: Entry) -> None:
        """Index one more entry (the next line of the file)."""
        self.extend([entry])

    def _replay_archive(self, entry: Entry) -> None:
        """pinb's archive markers, replayed in file order: the latest for a target wins."""
        data = entry.raw.get("data")
        if not isinstance(data, dict):
            return
        target = id_key(data.get("targetId", MISSING))
        if data.get("archived") is False:
            self._archived.pop(target, None)
        else:
            self._archived[target] = entry

    @property
    def archived(self) -> dict[Any, Entry]:
        """Branches archived in pinb's views: target id → the marker that archived it."""
        return {entry.raw["data"].get("targetId"): entry for entry in self._archived.values()}

    def _replay(self, raw: dict[str, Any], kind: str) -> None:
        """Labels and the session name, replayed in file order as Pi does."""
        if kind == "label":
            target = id_key(raw.get("targetId", MISSING))
            label = raw.get("label")
            if js_truthy(label):  # Pi: `if (entry.label)`
                self._labels[target] = (label, raw.get("timestamp"), raw.get("targetId"))
            else:
                self._labels.pop(target, None)
        elif kind == "session_info":
            name = raw.get("name")
            self._name_latest = name
            if js_truthy(name):
                self._name_latest_truthy = name

    # -- lookups --------------------------------------------------------------------------

    def get(self, entry_id: object) -> Entry | None:
        """The entry with this id (the last line with it wins), or ``None``."""
        at = self._position.get(id_key(entry_id))
        return None if at is None else self.entries[at]

    def __contains__(self, entry_id: object) -> bool:
        return id_key(entry_id) in self.by_id

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def last_entry_id(self) -> Any:
        """Id of the last entry in file order: Pi's leaf on load, whatever the entry's type."""
        return self.entries[-1].id if self.entries else None

    # -- paths ----------------------------------------------------------------------------

    def path_to(self, entry_id: object) -> list[Entry]:
        """``getBranch``: entries from the root down to ``entry_id`` (all types).

        An unknown or empty id gives ``[]``. The walk stops at a null, empty or unknown
        parent, and at an id it has already visited (a cycle), which Pi would loop on.
        """
        if not entry_id:
            return []
        start = self.by_id.get(id_key(entry_id))
        return self.path_from(start) if start is not None else []

    def path_from(self, start: Entry) -> list[Entry]:
        """The root-to-``start`` path of an entry object (see :meth:`path_to`)."""
        positions = self.path_positions(start)
        if positions is None:
            return self._path_with_cycle(start)
        entries = self.entries
        return [entries[i] for i in positions]

    def path_positions(self, start: Entry) -> list[int] | None:
        """Positions (in file order) of the root-to-``start`` path.

        ``None`` when the walk goes round a loop, or ``start`` is an earlier line of a
        repeated id (which no id leads to); :meth:`path_from` then walks the objects.
        """
        if self._stale_parents:
            self._rebuild_parents()
        at = self._start(start)
        if at is None:
            return None  # an earlier line of a repeated id: only the object walk reaches it
        walked = self._walked
        if walked is not None and walked[:3] == (at, len(self.entries), self.generation):
            return list(walked[3])
        # The walk of positions_up, in one loop (a long path is walked here whole).
        parents = self._parents
        limit = len(parents) + 1  # a longer walk must have gone round a loop
        walk: list[int] = []
        add = walk.append
        while at >= 0:
            add(at)
            parent = parents[at]
            if parent < NO_PARENT:
                parent = self._resolve_parent(at)
            at = parent
            if len(walk) > limit:
                return None
        walk.reverse()
        self.remember_path(walk)
        return list(walk)

    def remember_path(self, positions: list[int]) -> None:
        """Keep a root-to-entry walk (positions in file order, the entry last) that a
        caller made whole: :meth:`path_positions` of that entry returns it until the
        index changes."""
        if positions:
            self._walked = (positions[-1], len(self.entries), self.generation, positions)

    def remember(self, key: object, value: Any) -> None:
        """Keep ``value`` under ``key`` until the index changes (entries are added, or a
        repeated id re-points parent links): for work derived from its entries."""
        self._memo[key] = (len(self.entries), self.generation, value)

    def recall(self, key: object) -> Any:
        """What :meth:`remember` kept under ``key`` while the index is unchanged, else
        ``None``."""
        kept = self._memo.get(key)
        if kept is None or kept[:2] != (len(self.entries), self.generation):
            return None
        return kept[2]

    def position_of(self, entry: Entry) -> int | None:
        """``entry``'s position in file order (``None``: an earlier line of a repeated
        id, or an entry of no index)."""
        return self._start(entry)

    def _start(self, start: Entry) -> int | None:
        """``start``'s position, or ``None`` when it is an earlier line of a repeated id."""
        entry_id = start.id
        key = entry_id if entry_id.__class__ is str else id_key(entry_id)
        at = self._position.get(key, NO_PARENT)
        if at < 0 or self.entries[at] is not start:
            return None
        return at

    def positions_up(self, start: Entry) -> Iterator[int] | None:
        """Positions of ``start``'s path from ``start`` up (the leaf first), one at a time.

        For walks that stop early (the last compaction is usually near the leaf).
        ``None`` when ``start`` is an earlier line of a repeated id (no id leads to it); the
        iterator raises :class:`ParentLoopError` if the walk goes round a loop.
        """
        if self._stale_parents:
            self._rebuild_parents()
        at = self._start(start)
        return None if at is None else self._walk_up(at)

    def _walk_up(self, at: int) -> Iterator[int]:
        parents = self._parents
        limit = len(parents) + 1  # a longer walk must have gone round a loop
        steps = 0
        while at >= 0:
            yield at
            parent = parents[at]
            if parent < NO_PARENT:
                parent = self._resolve_parent(at)
            at = parent
            steps += 1
            if steps > limit:
                raise ParentLoopError("the parent links go round a loop")

    def _resolve_parent(self, at: int) -> int:
        """The position of an entry's parent found by id (a later line, an odd id)."""
        parent = self.entries[at].parent_id
        found = self._position.get(id_key(parent), NO_PARENT) if js_truthy(parent) else NO_PARENT
        if found >= 0:
            self._parents[at] = found
        return found

    def _rebuild_parents(self) -> None:
        """Point every parent at the entry its id means now (after a duplicate id)."""
        position = self._position
        for at, entry in enumerate(self.entries):
            parent = entry.parent_id
            if parent.__class__ is str:
                self._parents[at] = position.get(parent, UNRESOLVED) if parent else NO_PARENT
            else:
                self._parents[at] = NO_PARENT if parent is None else UNRESOLVED
        self._stale_parents = False

    def _path_with_cycle(self, start: Entry) -> list[Entry]:
        """The walk of :meth:`path_from` over objects, stopping at the first entry met twice.

        Slow on purpose: only parent loops and shadowed duplicate lines come here.
        """
        path: list[Entry] = []
        seen: set[int] = set()
        current: Entry | None = start
        while current is not None:
            if id(current) in seen:
                self._report_cycle(current)
                break
            seen.add(id(current))
            path.append(current)
            parent = current.parent_id
            current = self.by_id.get(id_key(parent)) if js_truthy(parent) else None
        path.reverse()
        return path

    def _report_cycle(self, entry: Entry) -> None:
        message = (
            f"parent links of entry {short_repr(entry.id)} form a cycle; the walk stopped there"
        )
        if not any(p.kind == "cycle" and p.line == entry.line for p in self.problems):
            self.problems.append(Problem("cycle", message, self.path, entry.line))

    def children(self, entry_id: object) -> list[Entry]:
        """``getChildren``: entries whose ``parentId`` is ``entry_id``, in file order."""
        if self._children is None:
            children: dict[object, list[Entry]] = {}
            for entry in self.entries:
                children.setdefault(id_key(entry.parent_id), []).append(entry)
            self._children = children
        return list(self._children.get(id_key(entry_id), ()))

    def common_ancestor(self, a: object, b: object) -> Entry | None:
        """The deepest entry on both ``path_to(a)`` and ``path_to(b)``, or ``None``."""
        on_a = {id(e) for e in self.path_to(a)}
        for entry in reversed(self.path_to(b)):
            if id(entry) in on_a:
                return entry
        return None

    # -- labels and name ------------------------------------------------------------------

    def label(self, entry_id: object) -> str | None:
        """The label currently set on ``entry_id`` (label entries replayed in file order)."""
        found = self._labels.get(id_key(entry_id))
        return found[0] if found else None

    @property
    def labels(self) -> dict[Any, str]:
        """Every label in effect, keyed by target id."""
        return {k: v[0] for k, v in self._labels.items()}

    def label_timestamp(self, entry_id: object) -> Any:
        """The timestamp of the ``label`` entry that set the current label (Pi 1.x)."""
        found = self._labels.get(id_key(entry_id))
        return found[1] if found else None

    def label_records(self) -> list[tuple[Any, Any, Any]]:
        """``(target id, label, label timestamp)`` in Pi's map order (first set first)."""
        return [(target, label, stamp) for label, stamp, target in self._labels.values()]

    def session_name(self, pi: PiLike | None = None) -> Any:
        """The session's name (``getSessionName``), or ``None``.

        Pi 1.x: the latest ``session_info`` entry decides, its name trimmed, and an empty
        name clears. v0.58.3: the latest non-empty name, as stored.
        """
        if Pi.resolve(pi) >= Pi.V1_6:
            name = self._name_latest
            return (js_trim(name) or None) if isinstance(name, str) else None
        return self._name_latest_truthy

    # -- tree view ------------------------------------------------------------------------

    def tree(self) -> list[TreeNode]:
        """``getTree``: roots in file order, children sorted by timestamp (§4.5).

        Roots are entries whose parent is ``null`` or themselves, and orphans. With duplicate
        ids the last entry's node is used wherever the id occurs, as in Pi, so a node can
        appear more than once. Duplicate ids can also close a loop of parent links that Pi
        would walk forever; pinb cuts the link that closes it (reported as a ``cycle``), so
        the tree is always finite.
        """
        with _gc_paused():
            if len(self._position) == len(self.entries):
                return self._tree_by_position()
            return self._tree_by_id()

    def _tree_by_position(self) -> list[TreeNode]:
        """The tree of a file whose ids are all distinct: one node per line, found by position."""
        if self._stale_parents:
            self._rebuild_parents()
        entries = self.entries
        position = self._position
        parents = self._parents
        nodes = list(map(TreeNode, entries))
        roots: list[TreeNode] = []
        shared: list[list[TreeNode]] = []  # children lists that need sorting
        empty_id = position.get("")  # Pi's tree finds a parent "" by id; walks do not
        for at, parent in enumerate(parents):
            if parent < 0:
                entry = entries[at]
                value = entry.parent_id
                if parent == NO_PARENT and not (empty_id is not None and value == ""):
                    roots.append(nodes[at])
                    continue
                if value is None or _same(value, entry.id):
                    roots.append(nodes[at])
                    continue
                found = position.get(id_key(value))
                if found is None:
                    roots.append(nodes[at])  # an orphan
                    continue
                parent = found
            elif parent == at:
                roots.append(nodes[at])  # its own parent
                continue
            children = nodes[parent].children
            children.append(nodes[at])
            if len(children) == 2:
                shared.append(children)
        for children in shared:
            children[:] = v8_sort(children)
        for key, (label, _, _) in self._labels.items():
            labelled = position.get(key)
            if labelled is not None:
                nodes[labelled].label = label
        return roots

    def _tree_by_id(self) -> list[TreeNode]:
        """The tree as Pi builds it, node per id: for files that repeat ids."""
        nodes: dict[object, TreeNode] = {}
        for entry in self.entries:
            key = id_key(entry.id)
            nodes[key] = TreeNode(entry, self.label(entry.id))
        roots: list[TreeNode] = []
        for entry in self.entries:
            node = nodes[id_key(entry.id)]
            parent_id = entry.parent_id
            if parent_id is None or _same(parent_id, entry.id):
                roots.append(node)
                continue
            parent = nodes.get(id_key(parent_id))
            if parent is not None:
                parent.children.append(node)
            else:
                roots.append(node)
        self._cut_cycles(roots)
        # Pi sorts a node's children each time the node comes off its stack (a node shared
        # through duplicate ids more than once), which matters only for unparseable times.
        stack = list(roots)
        pops: dict[int, int] = {}
        while stack:
            node = stack.pop()
            times = pops.get(id(node), 0)
            if times >= _MAX_EXPANSIONS:
                continue
            pops[id(node)] = times + 1
            if len(node.children) > 1:
                node.children = v8_sort(node.children)
            stack.extend(node.children)
        return roots

    def _cut_cycles(self, roots: list[TreeNode]) -> None:
        """Remove child links that lead back to a node being expanded (depth-first, colours)."""
        active, done = 1, 2
        state: dict[int, int] = {}
        for root in roots:
            if state.get(id(root)) == done:
                continue
            state[id(root)] = active
            stack: list[tuple[TreeNode, int]] = [(root, 0)]
            while stack:
                node, position = stack[-1]
                if position >= len(node.children):
                    state[id(node)] = done
                    stack.pop()
                    continue
                stack[-1] = (node, position + 1)
                child = node.children[position]
                seen = state.get(id(child))
                if seen == active:
                    del node.children[position]
                    stack[-1] = (node, position)
                    self._report_cycle(child.entry)
                elif seen is None:
                    state[id(child)] = active
                    stack.append((child, 0))

    def orphans(self) -> list[Entry]:
        """Entries whose parent id names no entry (their context starts at them)."""
        by_id = self.by_id
        found = []
        # Only an entry whose parent was not there when it was added can be an orphan.
        for at in self._unresolved:
            e = self.entries[at]
            parent = e.parent_id
            if parent is None:
                continue
            if parent.__class__ is str:
                if parent in by_id or parent == e.id:
                    continue
            elif _same(parent, e.id) or id_key(parent) in by_id:
                continue
            found.append(e)
        return found


def _same(a: object, b: object) -> bool:
    """JavaScript ``a === b`` for JSON values (objects are never equal to another)."""
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    return id_key(a) == id_key(b)
