"""The session tree as annotated nodes (role, tokens, path, compaction region) and as networkx."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core import Entry, Session, SessionContext
from ...core.compaction.span import CompactionSpan, compaction_span
from ...core.context.build import UNSET
from ...core.context.system_prompt import entry_costs
from ...core.describe import (
    BOOKKEEPING,
    KIND_NAMES,
    entry_kind,
    entry_preview,
    entry_tokens,
    is_hidden_marker,
    kind_name,
    node_key,
    plural,
    tool_tokens,
)
from ...core.format.entries import id_key
from ...core.format.target import Pi
from ...core.gc import gc_paused
from ...core.js.jsontext import value_text

__all__ = [
    "BOOKKEEPING",
    "KIND_NAMES",
    "REGIONS",
    "NodeInfo",
    "SessionGraph",
    "build_graph",
    "entry_kind",
    "entry_preview",
    "entry_tokens",
    "is_hidden_marker",
    "kind_name",
    "node_key",
    "path_regions",
    "plural",
    "tool_tokens",
]

#: Where an entry of the active path stands relative to the last compaction on it.
REGIONS = ("summarized", "kept", "compaction", "after", "active")


@dataclass(slots=True)
class NodeInfo:
    """One visible entry of the tree with everything the views draw.

    ``cycle`` marks an entry whose parent link goes round a loop (the link is cut so the
    entry stays visible), ``orphan`` one whose parent is missing, ``edit`` how the active
    context changes it (``"replaced"`` / ``"omitted"``, or ``"masked"``: replaced by pinb's
    placeholder for an old tool result; by the entry ``edit_key``), and
    ``archived`` an archived branch shown because the active path runs through it.
    """

    key: str
    entry: Entry
    parent: int  # index of the visible parent, -1 for a root
    depth: int
    kind: str
    label: str | None
    tokens: int
    on_path: bool = False
    is_leaf: bool = False
    region: str | None = None
    children: list[int] = field(default_factory=list)
    cycle: bool = False
    orphan: bool = False
    edit: str | None = None
    edit_key: str | None = None
    archived: bool = False

    @property
    def type(self) -> str:
        return self.entry.type

    @property
    def role(self) -> str | None:
        return self.entry.role

    @property
    def preview(self) -> str:
        return entry_preview(self.entry)

    @property
    def bookkeeping(self) -> bool:
        """Never a message the model sees (settings, labels, edits, usage, markers)."""
        return self.kind in BOOKKEEPING or self.entry.type in BOOKKEEPING

    @property
    def label_text(self) -> str | None:
        """The label as text (files can hold a number or an object there)."""
        if self.label is None:
            return None
        return self.label if isinstance(self.label, str) else value_text(self.label, 60)


@dataclass
class SessionGraph:
    """The tree of a session in pre-order, annotated against one leaf.

    Attributes
    ----------
    nodes:
        Visible nodes in pre-order (parents before children, siblings by timestamp).
    roots:
        Indices of the root nodes.
    index:
        Node key → index in ``nodes``.
    leaf_key:
        Key of the leaf the annotations are relative to (``None``: before the first entry).
    compaction_key / first_kept_key:
        The last compaction on the active path and its ``firstKeptEntryId``, if any.
    compaction_counts:
        ``(summarized, kept)`` entries of that compaction (the core's
        :func:`~pinb.core.compaction.span.compaction_span`), or ``None``.
    path_keys:
        Keys of the active path, root first (hidden entries left out).
    hidden:
        How many bookkeeping markers (navigation, archive) were left out.
    archived:
        Archived branches left out: target key → number of entries hidden with it.
    shadowed:
        Lines whose id a later line repeats (the later line wins, as in Pi).
    entries:
        Entries in the file.
    problems:
        Problems the session reported when read.
    name / session_id:
        The session's name (if any) and id.
    """

    nodes: list[NodeInfo]
    roots: list[int]
    index: dict[str, int]
    leaf_key: str | None
    compaction_key: str | None
    first_kept_key: str | None
    path_keys: list[str]
    hidden: int = 0
    archived: dict[str, int] = field(default_factory=dict)
    shadowed: int = 0
    entries: int = 0
    compaction_counts: tuple[int, int] | None = None
    problems: int = 0
    name: str | None = None
    session_id: str = ""
    #: ``Session.leaf_id`` when it is a marker the picture hides (an archive marker after
    #: the conversation's last entry), else ``None``.
    marker_leaf: str | None = None

    def __len__(self) -> int:
        return len(self.nodes)

    def get(self, key: str) -> NodeInfo | None:
        i = self.index.get(key)
        return None if i is None else self.nodes[i]

    @property
    def branch_count(self) -> int:
        """Number of conversation branches: entries that are not bookkeeping with nothing
        but bookkeeping after them (a label hung beside a branch starts none)."""
        talk_below = [False] * len(self.nodes)
        ends = 0
        for i in range(len(self.nodes) - 1, -1, -1):  # pre-order: children come later
            node = self.nodes[i]
            talk_below[i] = any(
                talk_below[c] or not self.nodes[c].bookkeeping for c in node.children
            )
            ends += not node.bookkeeping and not talk_below[i]
        return ends or (1 if self.nodes else 0)

    @property
    def archived_entries(self) -> int:
        """Entries hidden with archived branches."""
        return sum(self.archived.values())

    def count(self, entry_type: str) -> int:
        """Visible entries of one type (``"compaction"``, ``"branch_summary"``, …)."""
        return sum(1 for n in self.nodes if n.type == entry_type)

    def summary(self) -> str:
        """One line: entries, branches, compactions, summaries, what is hidden."""
        if not self.nodes:
            text = "empty session: no entries yet" if not self.entries else "no entries shown"
        else:
            parts = [plural(len(self.nodes), "entry"), plural(self.branch_count, "branch")]
            compactions = self.count("compaction")
            summaries = self.count("branch_summary")
            if compactions:
                parts.append(plural(compactions, "compaction"))
            if summaries:
                parts.append(plural(summaries, "branch summary", "branch summaries"))
            text = ", ".join(parts)
        if self.hidden:
            # So the count matches the file's: its navigation and archive markers are lines too.
            text += (
                f"; {plural(self.hidden, 'bookkeeping marker')} not drawn "
                f"({plural(self.entries, 'entry')} in the file)"
            )
        if self.archived:
            text += (
                f"; {plural(len(self.archived), 'archived branch', 'archived branches')} hidden "
                f"({plural(self.archived_entries, 'entry')})"
            )
        cycles = sum(1 for n in self.nodes if n.cycle)
        if cycles:
            text += f"; {plural(cycles, 'entry')} on a parent loop"
        if self.shadowed:
            text += f"; {plural(self.shadowed, 'line')} with a repeated id"
        return text


def path_regions(context: SessionContext) -> list[tuple[Entry, str]]:
    """Each entry of a context's path with its region relative to the last compaction.

    ``"summarized"`` (before ``firstKeptEntryId``), ``"kept"``, ``"compaction"`` (the last
    compaction itself), ``"after"``; ``"active"`` for every entry when there is no compaction.
    """
    path = context.path
    compaction = context.compaction
    if compaction is None:
        return [(entry, "active") for entry in path]
    first_kept = compaction.raw.get("firstKeptEntryId")
    position = max(i for i, e in enumerate(path) if e is compaction)
    out: list[tuple[Entry, str]] = []
    keeping = False
    for i, entry in enumerate(path):
        if i < position:
            if not keeping and isinstance(first_kept, str) and entry.id == first_kept:
                keeping = True
            out.append((entry, "kept" if keeping else "summarized"))
        else:
            out.append((entry, "compaction" if i == position else "after"))
    return out


def build_graph(
    session: Session,
    leaf_id: Any = UNSET,
    *,
    show_leaf_entries: bool = False,
    show_archived: bool = False,
    context: SessionContext | None = None,
) -> SessionGraph:
    """Annotate the session tree against ``leaf_id`` (default: the session's leaf).

    Parameters
    ----------
    session:
        The session to draw.
    leaf_id:
        Leaf the active path and compaction regions refer to; ``None`` means before the
        first entry (no active path).
    show_leaf_entries:
        Keep pinb's navigation and archive markers (bookkeeping, hidden by default, as
        Pi's ``/tree`` hides ``custom`` entries); the children of a hidden entry hang from
        its parent.
    show_archived:
        Draw archived branches too (flagged); by default they are left out and counted.
        An archived branch the active path runs through is always drawn.
    context:
        The context at ``leaf_id`` when the caller has built it already.

    Returns
    -------
    SessionGraph
        Every entry of the file is in it once, hidden markers and archived branches
        aside: entries on a parent loop that no root reaches become roots of their own,
        flagged ``cycle``.
    """
    with gc_paused():
        return _build_graph(session, leaf_id, show_leaf_entries, show_archived, context)


def _build_graph(
    session: Session,
    leaf_id: Any,
    show_markers: bool,
    show_archived: bool,
    context: SessionContext | None,
) -> SessionGraph:
    leaf = session.leaf_id if leaf_id is UNSET else leaf_id
    if context is None:
        context = session.build_context(leaf)
    regions = {node_key(entry.id): region for entry, region in path_regions(context)}
    compaction = context.compaction
    compaction_key = node_key(compaction.id) if compaction is not None else None
    first_kept = compaction.raw.get("firstKeptEntryId") if compaction is not None else None
    first_kept_key = node_key(first_kept) if isinstance(first_kept, str) else None
    edits: dict[str, tuple[str, str]] = {}
    for projected in context.entries:
        if projected.edit is not None:
            state = "omitted" if projected.omitted else "replaced"
            if state == "replaced" and _masked(projected.messages):
                state = "masked"  # pinb's placeholder for an old tool result
            edits[node_key(projected.entry.id)] = (state, node_key(projected.edit.id))
    # The leaf as drawn: an archive marker appended at the leaf is hidden, so the leaf shown
    # is the last visible entry of the path.
    shown = [e for e in context.path if show_markers or not is_hidden_marker(e)]
    leaf_key = node_key(shown[-1].id) if shown else None
    index = session.index
    pi = session.pi
    # An entry in the context costs what it costs there (a system message its share of the
    # prompt as sent, a compaction its checkpoint and summary), as in the context views.
    in_context = entry_costs(context) if pi >= Pi.V1_6 else {}
    archived_targets = {node_key(k): k for k in session.archived}
    orphans = {id(e) for e in index.orphans()}
    cycle_lines = {p.line for p in index.problems if p.kind == "cycle" and p.line is not None}

    nodes: list[NodeInfo] = []
    keys: dict[str, int] = {}
    roots: list[int] = []
    hidden = 0
    archived: dict[str, int] = {}
    seen: set[int] = set()

    def visit(stack: list[tuple[Any, int, int]], children_of: Any) -> None:
        nonlocal hidden
        while stack:
            tree_node, parent, depth = stack.pop()
            entry: Entry = tree_node if isinstance(tree_node, Entry) else tree_node.entry
            if id(entry) in seen:
                continue  # a node shared through duplicate ids (or a loop) is drawn once
            seen.add(id(entry))
            kids = children_of(tree_node)
            key = node_key(entry.id)
            if (not show_markers and is_hidden_marker(entry)) or key in keys:
                hidden += key not in keys
                stack.extend((child, parent, depth) for child in reversed(kids))
                continue
            region = regions.get(key)
            if key in archived_targets and region is None and not show_archived:
                archived[key] = _count_subtree(tree_node, children_of, seen)
                continue
            parent_id = entry.raw.get("parentId")
            edit = edits.get(key)
            info = NodeInfo(
                key=key,
                entry=entry,
                parent=parent,
                depth=depth,
                kind=entry_kind(entry),
                label=tree_node.label
                if not isinstance(tree_node, Entry)
                else index.label(entry.id),
                tokens=in_context[id(entry)]
                if id(entry) in in_context
                and (entry.role == "system" or entry.type == "compaction")
                else entry_tokens(entry, pi),
                on_path=region is not None,
                is_leaf=key == leaf_key,
                region=region,
                cycle=entry.line in cycle_lines
                or (parent_id is not None and id_key(parent_id) == id_key(entry.id)),
                orphan=id(entry) in orphans,
                edit=edit[0] if edit else None,
                edit_key=edit[1] if edit else None,
                archived=key in archived_targets,
            )
            position = len(nodes)
            nodes.append(info)
            keys[key] = position
            if parent < 0:
                roots.append(position)
            else:
                nodes[parent].children.append(position)
            stack.extend((child, position, depth + 1) for child in reversed(kids))

    visit([(root, -1, 0) for root in reversed(session.tree())], lambda n: n.children)

    # Entries no root reaches: parent links that go round a loop. Each loop becomes a root
    # of its own (the link closing it is cut), so nothing in the file disappears.
    by_id = index.by_id
    unreached = [e for e in index.entries if id(e) not in seen and by_id.get(id_key(e.id)) is e]
    if unreached:
        on_loop = _loop_members(unreached, index)
        loose = {id(e) for e in unreached}
        for entry in unreached:
            if id(entry) in seen:
                continue
            # Start from the loop entry the component hangs from (first in file order).
            start = entry
            walked: set[int] = set()
            while id(start) not in walked:
                walked.add(id(start))
                parent = index.get(start.raw.get("parentId"))
                if parent is None or id(parent) not in loose or id(parent) in seen:
                    break
                start = parent
            first = len(nodes)
            visit(
                [(start, -1, 0)],
                lambda e: [c for c in index.children(e.id) if by_id.get(id_key(c.id)) is c],
            )
            for node in nodes[first:]:
                if id(node.entry) in on_loop:
                    node.cycle = True

    shadowed = sum(1 for e in index.entries if by_id.get(id_key(e.id)) is not e)
    path_keys = [k for k in regions if k in keys]
    return SessionGraph(
        nodes=nodes,
        roots=roots,
        index=keys,
        leaf_key=leaf_key,
        compaction_key=compaction_key,
        first_kept_key=first_kept_key,
        path_keys=path_keys,
        hidden=hidden,
        archived=archived,
        shadowed=shadowed,
        entries=len(index.entries),
        problems=len(session.problems),
        name=session.name,
        session_id=session.id,
        marker_leaf=(
            node_key(context.path[-1].id)
            if context.path and not show_markers and is_hidden_marker(context.path[-1])
            else None
        ),
        compaction_counts=(
            (len(span.summarized), len(span.kept)) if (span := _span(session, compaction)) else None
        ),
    )


def _span(session: Session, compaction: Entry | None) -> CompactionSpan | None:
    return compaction_span(session, compaction) if compaction is not None else None


def _count_subtree(root: Any, children_of: Any, seen: set[int]) -> int:
    """Entries in an archived subtree (marked seen, so they are not drawn elsewhere)."""
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        entry = node if isinstance(node, Entry) else node.entry
        if id(entry) in seen and node is not root:
            continue
        seen.add(id(entry))
        if not is_hidden_marker(entry):
            count += 1
        stack.extend(children_of(node))
    return count


def _loop_members(entries: list[Entry], index: Any) -> set[int]:
    """Entries whose parent links lead back to themselves (object ids), in linear time."""
    state: dict[int, int] = {}  # 1: on the current walk, 2: done
    members: set[int] = set()
    for entry in entries:
        walk: list[Entry] = []
        current: Entry | None = entry
        while current is not None and id(current) not in state:
            state[id(current)] = 1
            walk.append(current)
            current = index.get(current.raw.get("parentId"))
        if current is not None and state.get(id(current)) == 1:
            at = next(i for i, e in enumerate(walk) if e is current)
            members.update(id(e) for e in walk[at:])
        for e in walk:
            state[id(e)] = 2
    return members


def _masked(messages: list[Any]) -> bool:
    """Whether an edited entry's messages are a mask pinb wrote (``core.compaction.masking``)."""
    from ...core.compaction.masking import is_mask_text

    return (
        bool(messages)
        and isinstance(messages[0], dict)
        and is_mask_text(messages[0].get("content"))
    )
