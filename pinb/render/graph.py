"""The session tree as annotated nodes (role, tokens, path, compaction region) and as networkx."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core import Entry, Session, SessionContext, estimate_tokens
from ..core.context import UNSET, entry_to_message
from ..core.entries import MISSING

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "REGIONS",
    "NodeInfo",
    "SessionGraph",
    "build_graph",
    "entry_kind",
    "entry_preview",
    "entry_tokens",
    "node_key",
    "path_regions",
    "paused_gc",
    "to_networkx",
    "tool_tokens",
]

#: Where an entry of the active path stands relative to the last compaction on it.
REGIONS = ("summarized", "kept", "compaction", "after", "active")


def node_key(entry_id: Any) -> str:
    """A string key for an entry id (Pi's ids are strings; odd files may hold others)."""
    return entry_id if isinstance(entry_id, str) else f"<{entry_id!r}>"


def entry_kind(entry: Entry) -> str:
    """The role for ``message`` entries, else the entry type (``"compaction"``, …)."""
    return entry.role or entry.type or "unknown"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif kind == "image":
                parts.append(f"[image {block.get('mimeType', '')}]")
            elif kind == "toolCall":
                parts.append(f"→ {block.get('name', '?')}({_short_args(block.get('arguments'))})")
    return " ".join(parts)


def _short_args(arguments: Any) -> str:
    if isinstance(arguments, dict):
        items = [f"{k}={str(v)[:40]}" for k, v in list(arguments.items())[:3]]
        return ", ".join(items)
    return "" if arguments is None else str(arguments)[:60]


def entry_preview(entry: Entry, limit: int = 160) -> str:
    """One plain-text line describing the entry (not escaped: callers escape)."""
    raw = entry.raw
    kind = entry.type
    text: str
    if kind == "message":
        message = entry.message or {}
        role = message.get("role")
        if role == "assistant":
            text = _text_of(message.get("content"))
            if not text.strip():
                content = message.get("content")
                thinking = (
                    [
                        b.get("thinking", "")
                        for b in content
                        if isinstance(b, dict) and b.get("type") == "thinking"
                    ]
                    if isinstance(content, list)
                    else []
                )
                text = "(thinking) " + " ".join(str(t) for t in thinking) if thinking else ""
            if message.get("stopReason") in ("error", "aborted"):
                text = f"[{message.get('stopReason')}] {message.get('errorMessage', '')} {text}"
        elif role == "toolResult":
            flag = " (error)" if message.get("isError") else ""
            text = f"{message.get('toolName', '?')}{flag}: {_text_of(message.get('content'))}"
        elif role == "bashExecution":
            text = f"$ {message.get('command', '')} {message.get('output', '')}"
        else:
            text = _text_of(message.get("content"))
    elif kind in ("compaction", "branch_summary"):
        text = str(raw.get("summary", ""))
    elif kind == "custom_message":
        text = f"{raw.get('customType', '')}: {_text_of(raw.get('content'))}"
    elif kind == "model_change":
        text = f"{raw.get('provider', '')}/{raw.get('modelId', '')}"
    elif kind == "thinking_level_change":
        text = str(raw.get("thinkingLevel", ""))
    elif kind == "label":
        text = f"{raw.get('label', '(cleared)')} → {raw.get('targetId', '')}"
    elif kind == "session_info":
        text = str(raw.get("name", ""))
    elif kind == "leaf":
        text = f"leaf → {raw.get('targetId')}"
    elif kind == "custom":
        text = str(raw.get("customType", ""))
    elif kind == "active_tools_change":
        names = raw.get("activeToolNames")
        text = ", ".join(str(n) for n in names) if isinstance(names, list) else ""
    else:
        text = ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def entry_tokens(entry: Entry) -> int:
    """Estimated tokens of the message an entry stands for (0 for metadata entries)."""
    message = entry_to_message(entry)
    return 0 if message is MISSING else estimate_tokens(message)


def tool_tokens(message: Any) -> Iterator[tuple[str, str, int]]:
    """``(tool name, "call"|"result", tokens)`` for a message's tool calls or tool result."""
    if not isinstance(message, dict):
        return
    role = message.get("role")
    if role == "assistant" and isinstance(message.get("content"), list):
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                name = str(block.get("name", "?"))
                yield name, "call", estimate_tokens({"role": "assistant", "content": [block]})
    elif role == "toolResult":
        yield str(message.get("toolName", "?")), "result", estimate_tokens(message)


@dataclass(slots=True)
class NodeInfo:
    """One visible entry of the tree with everything the views draw."""

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

    @property
    def type(self) -> str:
        return self.entry.type

    @property
    def role(self) -> str | None:
        return self.entry.role

    @property
    def preview(self) -> str:
        return entry_preview(self.entry)


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
    path_keys:
        Keys of the active path, root first (hidden entries left out).
    hidden:
        How many entries were hidden (``leaf`` bookkeeping entries by default).
    """

    nodes: list[NodeInfo]
    roots: list[int]
    index: dict[str, int]
    leaf_key: str | None
    compaction_key: str | None
    first_kept_key: str | None
    path_keys: list[str]
    hidden: int = 0

    def __len__(self) -> int:
        return len(self.nodes)

    def get(self, key: str) -> NodeInfo | None:
        i = self.index.get(key)
        return None if i is None else self.nodes[i]

    @property
    def branch_count(self) -> int:
        """Number of tree leaves (conversation branches)."""
        return sum(1 for n in self.nodes if not n.children)


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


def _regions(session: Session, leaf_id: Any) -> tuple[dict[str, str], str | None, str | None, Any]:
    """Region of every active-path entry, plus the compaction, first kept id and leaf."""
    leaf = session.leaf_id if leaf_id is UNSET else leaf_id
    context = session.build_context(leaf)
    regions = {node_key(entry.id): region for entry, region in path_regions(context)}
    compaction = context.compaction
    if compaction is None:
        return regions, None, None, leaf
    first_kept = compaction.raw.get("firstKeptEntryId")
    first_kept_key = node_key(first_kept) if isinstance(first_kept, str) else None
    return regions, node_key(compaction.id), first_kept_key, leaf


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while many small objects are made.

    Building a 100k-entry tree otherwise triggers repeated full collections over every
    live object, which costs more than the work itself. Nothing made here forms cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def build_graph(
    session: Session, leaf_id: Any = UNSET, *, show_leaf_entries: bool = False
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
        Keep ``leaf`` navigation records (bookkeeping, hidden by default); the children of a
        hidden entry hang from its parent.

    Returns
    -------
    SessionGraph
    """
    with paused_gc():
        return _build_graph(session, leaf_id, show_leaf_entries)


def _build_graph(session: Session, leaf_id: Any, show_leaf_entries: bool) -> SessionGraph:
    regions, compaction_key, first_kept_key, leaf = _regions(session, leaf_id)
    leaf_key = node_key(leaf) if leaf is not None else None
    nodes: list[NodeInfo] = []
    index: dict[str, int] = {}
    roots: list[int] = []
    hidden = 0
    seen: set[int] = set()
    # Iterative pre-order over the forest: (tree node, visible parent index, depth).
    stack: list[tuple[Any, int, int]] = [(root, -1, 0) for root in reversed(session.tree())]
    while stack:
        tree_node, parent, depth = stack.pop()
        if id(tree_node) in seen:
            continue  # a node shared through duplicate ids is drawn once
        seen.add(id(tree_node))
        entry: Entry = tree_node.entry
        key = node_key(entry.id)
        if (entry.is_navigation and not show_leaf_entries) or key in index:
            hidden += 1
            stack.extend((child, parent, depth) for child in reversed(tree_node.children))
            continue
        region = regions.get(key)
        info = NodeInfo(
            key=key,
            entry=entry,
            parent=parent,
            depth=depth,
            kind=entry_kind(entry),
            label=tree_node.label,
            tokens=entry_tokens(entry),
            on_path=region is not None,
            is_leaf=key == leaf_key,
            region=region,
        )
        position = len(nodes)
        nodes.append(info)
        index[key] = position
        if parent < 0:
            roots.append(position)
        else:
            nodes[parent].children.append(position)
        stack.extend((child, position, depth + 1) for child in reversed(tree_node.children))
    path_keys = [k for k in regions if k in index]
    return SessionGraph(
        nodes=nodes,
        roots=roots,
        index=index,
        leaf_key=leaf_key,
        compaction_key=compaction_key,
        first_kept_key=first_kept_key,
        path_keys=path_keys,
        hidden=hidden,
    )


def to_networkx(
    session: Session | SessionGraph,
    leaf_id: Any = UNSET,
    *,
    show_leaf_entries: bool = False,
) -> nx.DiGraph:
    """The session tree as a ``networkx.DiGraph`` (edges parent → child).

    Node attributes: ``type``, ``role``, ``kind``, ``label``, ``tokens``, ``timestamp``,
    ``depth``, ``on_path``, ``is_leaf``, ``region`` (``"summarized"``, ``"kept"``,
    ``"compaction"``, ``"after"`` or ``"active"`` on the active path, else ``None``),
    ``summarized`` / ``kept`` (by the last compaction), ``is_compaction`` and
    ``is_branch_summary``. Graph attributes: ``leaf``, ``compaction``, ``first_kept``.

    Examples
    --------
    >>> from pinb.core import Session
    >>> s = Session.in_memory("/tmp")
    >>> _ = s.append_message({"role": "user", "content": "hi", "timestamp": 1})
    >>> g = to_networkx(s)
    >>> [d["role"] for _, d in g.nodes(data=True)]
    ['user']
    """
    import networkx as nx

    graph = (
        session
        if isinstance(session, SessionGraph)
        else build_graph(session, leaf_id, show_leaf_entries=show_leaf_entries)
    )
    g = nx.DiGraph(
        leaf=graph.leaf_key, compaction=graph.compaction_key, first_kept=graph.first_kept_key
    )
    for node in graph.nodes:
        g.add_node(
            node.key,
            type=node.type,
            role=node.role,
            kind=node.kind,
            label=node.label,
            tokens=node.tokens,
            timestamp=node.entry.timestamp,
            depth=node.depth,
            on_path=node.on_path,
            is_leaf=node.is_leaf,
            region=node.region,
            summarized=node.region == "summarized",
            kept=node.region == "kept",
            is_compaction=node.type == "compaction",
            is_branch_summary=node.type == "branch_summary",
        )
    for node in graph.nodes:
        if node.parent >= 0:
            g.add_edge(graph.nodes[node.parent].key, node.key)
    return g
