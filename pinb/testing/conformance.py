"""Answer Pi conformance queries with pinb's public API.

A thin adapter: it opens the file the way the query's Pi release reads it (``"target":
"pi-1.6.0"``, or v0.58.3 when absent; non-strict; positional migration ids) and translates
pinb's results into the expected JSON shapes. It re-implements nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pinb.core import (
    UNSET,
    CompactionSettings,
    Entry,
    Pi,
    Session,
    SessionIndex,
    build_session_context,
    collect_entries_for_branch_summary,
    convert_to_llm,
    estimate_context_tokens,
    estimate_tokens,
    find_cut_point,
    prepare_branch_entries,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)
from pinb.core.format.entries import id_key
from pinb.core.js.wire import MISSING

__all__ = ["answer", "positional_ids"]

_LEAF_COMMANDS = ("context", "llm", "tokens", "serialize", "plan")


def positional_ids() -> Callable[[], str]:
    """An id generator giving ``00000000``, ``00000001``, … (the data's migration ids)."""
    counter: Iterator[int] = iter(range(2**32))
    return lambda: f"{next(counter):08x}"


def _leaf_argument(query: dict[str, Any]) -> Any:
    if query["key"] == "@default":
        return UNSET
    return query.get("leaf")


def _message_ref(index: int, entry: Entry, message: Any) -> dict[str, Any]:
    role = message.get("role", MISSING) if isinstance(message, dict) else MISSING
    return {"id": entry.id, "index": index, "role": role}


def _plan(
    session: Session, leaf: Any, context_tokens: int, preset: dict[str, int]
) -> dict[str, Any]:
    index = session.index
    pi = session.pi
    if leaf is UNSET:
        path = index.path_to(index.last_entry_id)
    else:
        path = index.path_to(leaf)
    settings = CompactionSettings(
        enabled=True, reserve_tokens=preset["reserve"], keep_recent_tokens=preset["keep"]
    )
    last_compaction = max((i for i, e in enumerate(path) if e.type == "compaction"), default=-1)
    start, end = last_compaction + 1, len(path)
    cut = find_cut_point(path, start, end, preset["keep"], pi=pi)
    first_kept = path[cut.first_kept_index] if cut.first_kept_index < len(path) else None
    turn_start = path[cut.turn_start_index] if cut.turn_start_index >= 0 else None
    prepared = prepare_compaction(path, settings, pi=pi)
    return {
        "params": dict(preset),
        "pathLength": len(path),
        "pathLastId": path[-1].id if path else None,
        "contextTokens": context_tokens,
        "shouldCompact": should_compact(context_tokens, preset["window"], settings),
        "cutPoint": {
            "boundaryStart": start,
            "boundaryEnd": end,
            "firstKeptEntryIndex": cut.first_kept_index,
            "firstKeptEntryId": first_kept.id if first_kept is not None else None,
            "turnStartIndex": cut.turn_start_index,
            "turnStartEntryId": turn_start.id if turn_start is not None else None,
            "isSplitTurn": cut.is_split_turn,
        },
        "prepared": None
        if prepared is None
        else {
            "firstKeptEntryId": prepared.first_kept_entry_id,
            "tokensBefore": prepared.tokens_before,
            "isSplitTurn": prepared.is_split_turn,
            "messagesToSummarize": [
                _message_ref(p.index, p.entry, p.message) for p in prepared.messages_to_summarize
            ],
            "turnPrefixMessages": [
                _message_ref(p.index, p.entry, p.message) for p in prepared.turn_prefix_messages
            ],
            "hasPreviousSummary": prepared.has_previous_summary,
            "previousSummary": prepared.previous_summary,
            "fileOps": prepared.file_ops.to_wire(),
        },
    }


def _leaf_results(
    session: Session, query: dict[str, Any], request: dict[str, Any]
) -> dict[str, Any]:
    leaf = _leaf_argument(query)
    pi = session.pi
    commands = query.get("cmds") or _LEAF_COMMANDS
    context = build_session_context(session.index, leaf, pi=pi)
    llm = convert_to_llm(context.messages, pi=pi)
    estimate = estimate_context_tokens(context.messages, pi=pi)
    result: dict[str, Any] = {}
    if "context" in commands:
        result["context"] = context.to_wire()
    if "llm" in commands:
        result["llm"] = llm
    if "tokens" in commands:
        result["tokens"] = {
            "estimate": estimate.to_wire(),
            "perMessage": [estimate_tokens(m, pi=pi) for m in context.messages],
        }
    if "serialize" in commands:
        result["serialize"] = serialize_conversation(llm, pi=pi)
    if "plan" in commands:
        presets = request.get("planPresets", {})
        result["plan"] = {
            name: _plan(session, leaf, estimate.tokens, presets[name])
            for name in request.get("plans", [])
        }
    return result


def _node(session: Session, node: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "id": node.entry.id,
        "type": node.entry.raw.get("type", MISSING),
        "label": node.label,
    }
    if session.pi >= Pi.V1_6:
        stamp = session.index.label_timestamp(node.entry.id) if node.label is not None else None
        fields["labelTimestamp"] = None if stamp is MISSING else stamp
    return fields


def _tree(session: Session, form: str) -> Any:
    roots = session.tree()
    if form == "flat":
        return [
            {**_node(session, node), "depth": depth}
            for root in roots
            for node, depth in root.walk()
        ]

    def nested(node: Any) -> dict[str, Any]:
        return {**_node(session, node), "children": [nested(c) for c in node.children]}

    return [nested(root) for root in roots]


def _position(positions: dict[object, int], value: Any) -> int | None:
    if value is None or value is MISSING:
        return None
    return positions.get(id_key(value), -1)


def _migrate(session: Session) -> dict[str, Any]:
    loaded = session.loaded
    positions: dict[object, int] = {}
    for i, entry in enumerate(session.entries):
        positions[id_key(entry.id)] = i
    entries = []
    for entry in session.entries:
        raw = entry.raw
        item: dict[str, Any] = {
            "type": raw.get("type", MISSING),
            "hasId": isinstance(raw.get("id"), str),
            "parent": _position(positions, raw.get("parentId", MISSING)),
        }
        if raw.get("type") == "message":
            message = raw.get("message")
            item["role"] = message.get("role") if isinstance(message, dict) else None
        if raw.get("type") == "compaction":
            item["firstKept"] = _position(positions, raw.get("firstKeptEntryId", MISSING))
            item["hasFirstKeptIndexField"] = "firstKeptEntryIndex" in raw
        entries.append(item)
    valid = loaded is not None and loaded.header is not None
    before = loaded.version_before if loaded is not None else None
    return {
        "fileEntries": len(loaded.values) if loaded is not None and valid else 0,
        "headerVersionBefore": None if before is MISSING else before,
        "headerVersion": session.header.get("version") if valid else None,
        "entries": entries,
    }


def _branch(session: Session, item: dict[str, Any], budgets: list[int]) -> dict[str, Any]:
    index: SessionIndex = session.index
    collected = collect_entries_for_branch_summary(index, item.get("from"), item["to"])
    prepares = []
    for budget in budgets:
        prepared = prepare_branch_entries(collected.entries, budget, pi=session.pi)
        prepares.append(
            {
                "tokenBudget": budget,
                "totalTokens": prepared.total_tokens,
                "messages": [_message_ref(m.index, m.entry, m.message) for m in prepared.messages],
                "fileOps": prepared.file_ops.to_wire(),
            }
        )
    return {
        "from": item.get("from"),
        "to": item["to"],
        "commonAncestorId": collected.common_ancestor_id,
        "entryIds": [e.id for e in collected.entries],
        "entryTypes": [e.raw.get("type", MISSING) for e in collected.entries],
        "prepare": prepares,
    }


def _json(value: Any) -> Any:
    """What JSON.stringify makes of a value: undefined keys vanish, undefined items are null.

    Iterative: answers hold message contents, which may nest thousands of levels deep.
    """
    root: list[Any] = [None]
    # (source container, the copy being filled)
    stack: list[tuple[Any, Any]] = [([value], root)]
    while stack:
        source, copy = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if item is MISSING:
                if isinstance(source, dict):
                    continue
                item = None
            if isinstance(item, dict):
                child: Any = {}
            elif isinstance(item, list | tuple):
                child = [None] * len(item)
            else:
                child = item
            copy[key] = child
            if isinstance(item, dict | list | tuple):
                stack.append((item, child))
    return root[0]


#: Pi 1.x's error for a file it refuses to open, with the path replaced as in the data.
REFUSED = {"__error__": "Error: Session file is not a valid pi session: <path>"}


def _refused(query: dict[str, Any]) -> dict[str, Any]:
    """Every value of a case whose file the Pi release refuses to open is Pi's error."""
    result: dict[str, Any] = {leaf["key"]: REFUSED for leaf in query.get("leaves", [])}
    result["@file"] = REFUSED
    return result


def answer(query: dict[str, Any], session_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Answer one conformance query file for the session file at ``session_path``.

    The query's ``"target"`` names the Pi release (``"pi-1.6.0"``; absent: v0.58.3).
    Returns a dict keyed by leaf key plus ``"@file"``, in the expected-file shape.
    """
    pi = Pi.resolve(query.get("target") or Pi.V0_58)
    session = Session.open(Path(session_path), pi=pi, id_generator=positional_ids(), strict=False)
    if session.loaded is not None and session.loaded.refused:
        return _refused(query)
    result: dict[str, Any] = {}
    for leaf_query in query.get("leaves", []):
        result[leaf_query["key"]] = _leaf_results(session, leaf_query, query)
    file_result: dict[str, Any] = {}
    form = query.get("tree", "nested")
    file_result["treeFlat" if form == "flat" else "tree"] = _tree(session, form)
    file_result["migrate"] = _migrate(session)
    file_result["branch"] = [
        _branch(session, item, list(query.get("budgets", []))) for item in query.get("branches", [])
    ]
    file_result["entryCount"] = len(session.entries)
    leaf_id = session.index.last_entry_id
    file_result["leafId"] = leaf_id  # undefined (an entry without an id) is left out
    if pi >= Pi.V1_6:
        file_result["sessionName"] = session.name
    result["@file"] = file_result
    answered: dict[str, Any] = _json(result)
    return answered
