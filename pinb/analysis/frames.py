"""Sessions as tables: pure row builders, and pandas frames of entries, messages, tools, compactions, sessions."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import Session, estimate_context_tokens, estimate_tokens
from ..core.context.build import UNSET, entry_to_message
from ..core.context.tokens import context_tokens_of_usage
from ..core.describe import message_text
from ..core.file.listing import SessionInfo, read_session_info
from ..core.format.entries import MISSING, Entry
from ..core.js.jsontext import json_text, value_text
from ..core.js.wire import parse_js_date
from .lineage import Lineage, session_lineage
from .sources import (
    Progress,
    SessionSource,
    collect_rows,
    open_session,
    session_paths,
    warn_skipped,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COMPACTION_COLUMNS", "ENTRY_COLUMNS", "MESSAGE_COLUMNS", "SESSION_COLUMNS",
           "TOOL_CALL_COLUMNS", "Progress", "SessionSource", "collect_rows", "compaction_rows",
           "compactions_frame", "entries_frame", "entry_rows", "message_rows", "message_text",
           "messages_frame", "open_session", "session_paths", "session_row", "sessions_frame",
           "to_frame", "tokens_after_compaction", "tool_call_rows", "tool_calls_frame",
           "warn_skipped"]  # fmt: skip

_S, _I, _F, _B, _T = "string", "Int64", "float64", "boolean", "datetime64[ms, UTC]"
_SURROGATES = re.compile("[\ud800-\udfff]")
#: The largest time pandas holds at millisecond resolution, in ms since the epoch.
_MAX_MS = 9.2e12

#: Column -> pandas dtype of :func:`entries_frame` (the dask frames use the same).
ENTRY_COLUMNS: dict[str, str] = {
    "session_id": _S, "line": _I, "id": _S, "parent_id": _S, "type": _S, "role": _S,
    "depth": _I, "children": _I, "is_leaf": _B, "on_path": _B, "in_context": _B,
    "is_current_leaf": _B, "timestamp": _T, "text_chars": _I, "tokens_est": _I,
    "input": _I, "output": _I, "cache_read": _I, "cache_write": _I, "total_tokens": _I,
    "context_tokens": _I, "cost": _F, "provider": _S, "model": _S, "stop_reason": _S,
    "tool_name": _S, "tool_calls": _I, "is_error": _B, "label": _S, "compaction_id": _S,
    "copied": _B, "parent_session": _S, "root_session": _S,
}  # fmt: skip
#: Columns of :func:`messages_frame`.
MESSAGE_COLUMNS: dict[str, str] = {
    "session_id": _S, "position": _I, "entry_id": _S, "role": _S, "timestamp": _T,
    "text": _S, "text_chars": _I, "tokens_est": _I, "on_path": _B, "in_context": _B,
    "provider": _S, "model": _S, "stop_reason": _S, "tool_name": _S, "is_error": _B,
    "input": _I, "output": _I, "context_tokens": _I, "cost": _F, "copied": _B,
    "parent_session": _S, "root_session": _S,
}  # fmt: skip
#: Columns of :func:`tool_calls_frame`.
TOOL_CALL_COLUMNS: dict[str, str] = {
    "session_id": _S, "entry_id": _S, "call_id": _S, "tool_name": _S, "arguments": _S,
    "path": _S, "command": _S, "timestamp": _T, "on_path": _B, "has_result": _B,
    "result_entry_id": _S, "is_error": _B, "exit_code": _I, "tool_failed": _B,
    "result_chars": _I, "result_tokens": _I, "duration_s": _F, "copied": _B,
    "parent_session": _S, "root_session": _S,
}  # fmt: skip
#: A bash result Pi flags ``isError`` because the command exited non-zero ends so.
_EXIT = re.compile(r"Command exited with code (-?\d+)\s*$")
#: Columns of :func:`compactions_frame`.
COMPACTION_COLUMNS: dict[str, str] = {
    "session_id": _S, "id": _S, "parent_id": _S, "timestamp": _T, "on_path": _B,
    "tokens_before": _I, "tokens_after": _I, "summary_chars": _I, "summary_tokens": _I,
    "first_kept_entry_id": _S, "first_kept_on_path": _B, "messages_before": _I,
    "messages_after": _I, "entries_summarized": _I, "from_hook": _B, "read_files": _I,
    "modified_files": _I, "copied": _B, "parent_session": _S, "root_session": _S,
}  # fmt: skip
#: Columns of :func:`sessions_frame`: ``SessionInfo`` fields, then statistics.
SESSION_COLUMNS: dict[str, str] = {
    "path": _S, "id": _S, "cwd": _S, "name": _S, "parent_session_path": _S, "created": _T,
    "modified": _T, "message_count": _I, "first_message": _S, "entries": _I,
    "branch_points": _I, "leaves": _I, "max_depth": _I, "compactions": _I,
    "branch_summaries": _I, "labels": _I, "user_messages": _I, "assistant_messages": _I,
    "tool_calls": _I, "tool_errors": _I, "context_tokens": _I, "input": _I, "output": _I,
    "cache_read": _I, "cache_write": _I, "cost": _F, "models": _S, "duration_s": _F,
    "problems": _I, "relation": _S, "parent_session": _S, "root_session": _S,
    "copied_entries": _I,
}  # fmt: skip


# -- small pure helpers ---------------------------------------------------------------------


def _str(value: Any) -> str | None:
    """An id or name as text; absent and ``null`` become ``None``."""
    if value is None or value is MISSING:
        return None
    return value if isinstance(value, str) else json_text(value)


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    number = float(value)
    return number if math.isfinite(number) else 0.0  # Infinity: an integer too long for a double


def _finite(value: Any) -> Any:
    """A value for an integer column: Infinity and integers beyond 64 bits missing, 2.5 as 2."""
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) else None
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return None
    return value


def _count(value: Any) -> int:
    """Items of a list field (a file list); 0 for anything else an odd file holds there."""
    return len(value) if isinstance(value, list) else 0


def _text_cell(value: Any) -> str | None:
    """A value for a text column: JSON text for a non-string, lone surrogates as U+FFFD."""
    text = _str(value)
    return text if text is None or text.isascii() else _SURROGATES.sub("\ufffd", text)


def _tool_calls(message: Any) -> list[dict[str, Any]]:
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]


def _usage(message: Any) -> dict[str, Any]:
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return {}
    cost = usage.get("cost")
    counts = {"input": "input", "output": "output", "cache_read": "cacheRead",
              "cache_write": "cacheWrite", "total_tokens": "totalTokens"}  # fmt: skip
    return {
        **{column: int(_num(usage.get(key))) for column, key in counts.items()},
        "context_tokens": context_tokens_of_usage(usage),
        "cost": _num(cost.get("total")) if isinstance(cost, dict) else 0.0,
    }


def _facts(message: dict[str, Any] | None, raw: dict[str, Any]) -> dict[str, Any]:
    """Model, stop reason, tools, errors and usage columns of a message (or a model change)."""
    if message is None:
        return {"provider": _str(raw.get("provider")), "model": _str(raw.get("modelId")),
                "tool_calls": 0}  # fmt: skip
    calls = _tool_calls(message)
    role = message.get("role")
    tool_name = message.get("toolName") if role == "toolResult" else None
    if calls:
        tool_name = ",".join(value_text(c.get("name")) for c in calls)
    is_error = bool(message["isError"]) if "isError" in message else None
    return {"provider": _str(message.get("provider")), "model": _str(message.get("model")),
            "stop_reason": _str(message.get("stopReason")), "tool_name": _str(tool_name),
            "tool_calls": len(calls), "is_error": is_error,
            **(_usage(message) if role == "assistant" else {})}  # fmt: skip


def _entry_ms(entry: Entry) -> int | None:
    return parse_js_date(entry.timestamp)


def _message_ms(message: Any, entry: Entry | None) -> int | None:
    stamp = message.get("timestamp") if isinstance(message, dict) else None
    if isinstance(stamp, int | float) and not isinstance(stamp, bool) and math.isfinite(stamp):
        return int(stamp)
    return _entry_ms(entry) if entry is not None else None


def _walk(session: Session) -> tuple[dict[int, int], dict[int, str | None], dict[int, int]]:
    """Depth, compaction epoch and number of children of every entry (keyed by ``id()``)."""
    index = session.index
    depth: dict[int, int] = {}
    epoch: dict[int, str | None] = {}
    for entry in session.entries:
        # Walk up to the first entry already known (or a root), then fill downwards.
        chain: list[Entry] = []
        seen: set[int] = set()
        current: Entry | None = entry
        while current is not None and id(current) not in depth and id(current) not in seen:
            seen.add(id(current))
            chain.append(current)
            parent_id = current.parent_id
            current = index.get(parent_id) if parent_id not in (None, MISSING) else None
        base_depth = depth[id(current)] if current is not None and id(current) in depth else -1
        base_epoch = epoch.get(id(current)) if current is not None else None
        for item in reversed(chain):
            base_depth += 1
            if item.type == "compaction":
                base_epoch = _str(item.id)
            depth[id(item)] = base_depth
            epoch[id(item)] = base_epoch
    # ``leaf`` entries only record navigation; they are not branches of the conversation.
    children = {
        id(e): sum(1 for c in index.children(e.id) if not c.is_navigation) for e in session.entries
    }
    return depth, epoch, children


def _copy_facts(lineage: Lineage, entry: Entry) -> dict[str, Any]:
    return {"copied": lineage.is_copied(entry), "parent_session": lineage.parent_session,
            "root_session": lineage.root_session}  # fmt: skip


# -- rows -----------------------------------------------------------------------------------


def entry_rows(
    session: SessionSource, leaf: Any = UNSET, *, lineage: Lineage | None = None
) -> list[dict[str, Any]]:
    """One dict per entry (file order) with the :data:`ENTRY_COLUMNS` keys.

    ``timestamp`` is in Unix milliseconds here; :func:`to_frame` makes it a datetime.
    ``lineage`` (default: found on the local disk) marks entries copied from a parent.
    """
    session = open_session(session)
    lineage = lineage or session_lineage(session)
    leaf_id = session.leaf_id if leaf is UNSET else leaf
    context = session.build_context(leaf_id)
    on_path = {id(e) for e in context.path}
    in_context = {id(e) for e in context.sources}
    current_leaf = context.path[-1] if context.path else None
    depth, epoch, children = _walk(session)
    session_id = session.id
    rows: list[dict[str, Any]] = []
    for entry in session.entries:
        message = entry_to_message(entry)
        message = message if isinstance(message, dict) else None
        count = children[id(entry)]
        row: dict[str, Any] = {
            "session_id": session_id, "line": entry.line, "id": _str(entry.id),
            "parent_id": _str(entry.parent_id), "type": entry.type,
            "role": message.get("role") if message else None, "depth": depth.get(id(entry)),
            "children": count, "is_leaf": count == 0 and not entry.is_navigation,
            "on_path": id(entry) in on_path, "in_context": id(entry) in in_context,
            "is_current_leaf": entry is current_leaf, "timestamp": _entry_ms(entry),
            "text_chars": len(message_text(message)) if message else 0,
            "tokens_est": estimate_tokens(message) if message else 0,
            **_facts(entry.message, entry.raw),
            "label": session.label(entry.id), "compaction_id": epoch.get(id(entry)),
            **_copy_facts(lineage, entry),
        }  # fmt: skip
        rows.append(row)
    return rows


def message_rows(
    session: SessionSource,
    leaf: Any = UNSET,
    *,
    context: bool = False,
    lineage: Lineage | None = None,
) -> list[dict[str, Any]]:
    """One dict per message (:data:`MESSAGE_COLUMNS`).

    By default every entry that stands for a message, on every branch, in file order
    (``message``, ``custom_message``, ``branch_summary`` and ``compaction`` entries).
    With ``context=True``, the messages the model sees at ``leaf``, in order, with the
    synthesized compaction and branch summaries.
    """
    session = open_session(session)
    lineage = lineage or session_lineage(session)
    leaf_id = session.leaf_id if leaf is UNSET else leaf
    ctx = session.build_context(leaf_id)
    on_path = {id(e) for e in ctx.path}
    in_context = {id(e) for e in ctx.sources}
    if context:
        pairs = list(zip(ctx.messages, ctx.sources, strict=False))
    else:
        pairs = [(entry_to_message(e), e) for e in session.entries]
    rows: list[dict[str, Any]] = []
    for position, (message, entry) in enumerate(pairs):
        if not isinstance(message, dict):
            continue
        text = message_text(message)
        facts = _facts(message, {})
        row = {
            "session_id": session.id, "position": position, "entry_id": _str(entry.id),
            "role": _str(message.get("role")), "timestamp": _message_ms(message, entry),
            "text": text, "text_chars": len(text), "tokens_est": estimate_tokens(message),
            "on_path": id(entry) in on_path, "in_context": id(entry) in in_context,
            **_copy_facts(lineage, entry),
        }  # fmt: skip
        rows.append({**row, **{k: facts.get(k) for k in MESSAGE_COLUMNS if k not in row}})
    return rows


def tool_call_rows(
    session: SessionSource, leaf: Any = UNSET, *, lineage: Lineage | None = None
) -> list[dict[str, Any]]:
    """One dict per tool call (:data:`TOOL_CALL_COLUMNS`), paired with its result.

    A result is paired with the call of the same ``toolCallId`` in the nearest assistant
    message above it, so equal call ids on different branches stay apart.

    ``is_error`` is Pi's ``isError`` flag, which a ``bash`` call gets for any non-zero
    exit: a test run that fails as the agent expected is one. ``exit_code`` is that exit
    (``bash`` only: 0 for a result without the flag, ``None`` when the result does not
    say), and ``tool_failed`` an error that is not a command's own exit: the tool could
    not do what it was asked (an edit that did not apply, a missing file, a timeout).
    """
    session = open_session(session)
    lineage = lineage or session_lineage(session)
    index = session.index
    leaf_id = session.leaf_id if leaf is UNSET else leaf
    on_path = {id(e) for e in session.build_context(leaf_id).path}
    results: dict[tuple[int, str], Entry] = {}
    for entry in session.entries:
        message = entry.message
        if not message or message.get("role") != "toolResult":
            continue
        call_id = _str(message.get("toolCallId")) or ""
        seen: set[int] = set()
        parent = index.get(entry.parent_id) if entry.parent_id not in (None, MISSING) else None
        while parent is not None and id(parent) not in seen:
            seen.add(id(parent))
            if parent.role == "assistant":
                if any(_str(c.get("id")) == call_id for c in _tool_calls(parent.message)):
                    results.setdefault((id(parent), call_id), entry)
                    break
            pid = parent.parent_id
            parent = index.get(pid) if pid not in (None, MISSING) else None
    rows: list[dict[str, Any]] = []
    for entry in session.entries:
        message = entry.message
        for call in _tool_calls(message):
            call_id = _str(call.get("id")) or ""
            arguments = call.get("arguments")
            args = arguments if isinstance(arguments, dict) else {}
            result = results.get((id(entry), call_id))
            result_message = result.message if result is not None else None
            call_ms = _message_ms(message, entry)
            result_ms = _message_ms(result_message, result) if result is not None else None
            duration = None
            if result_ms is not None and call_ms is not None:
                duration = (result_ms - call_ms) / 1000
            text = message_text(result_message) if result_message else ""
            path, command = args.get("path"), args.get("command")
            error = bool(result_message.get("isError")) if result_message else None
            exit_code = _exit_code(_str(call.get("name")), text, error)
            rows.append({
                "session_id": session.id, "entry_id": _str(entry.id), "call_id": call_id,
                "tool_name": _str(call.get("name")),
                "arguments": json_text(arguments),
                "path": path if isinstance(path, str) else None,
                "command": command if isinstance(command, str) else None,
                "timestamp": call_ms, "on_path": id(entry) in on_path,
                "has_result": result is not None,
                "result_entry_id": _str(result.id) if result is not None else None,
                "is_error": error, "exit_code": exit_code,
                "tool_failed": None if error is None else error and not exit_code,
                "result_chars": len(text) if result is not None else None,
                "result_tokens": estimate_tokens(result_message) if result_message else None,
                "duration_s": duration, **_copy_facts(lineage, entry),
            })  # fmt: skip
    return rows


def _exit_code(tool: str | None, text: str, error: bool | None) -> int | None:
    """A ``bash`` call's exit status as its result says it (``None``: not bash, or unsaid)."""
    if tool != "bash" or error is None:
        return None
    if not error:
        return 0
    found = _EXIT.search(text)
    return int(found[1]) if found else None


def tokens_after_compaction(messages: Iterable[Any]) -> int:
    """The chars/4 estimate of a fresh context (a kept message's usage predates it)."""
    return sum(estimate_tokens(m) for m in messages)


def compaction_rows(
    session: SessionSource, leaf: Any = UNSET, *, lineage: Lineage | None = None
) -> list[dict[str, Any]]:
    """One dict per ``compaction`` entry (:data:`COMPACTION_COLUMNS`).

    ``messages_before``/``messages_after`` count the context at its parent and right after
    it (summary and kept messages); ``entries_summarized`` is how many messages the summary
    replaced; ``tokens_after`` is :func:`tokens_after_compaction` of the new context.
    """
    session = open_session(session)
    lineage = lineage or session_lineage(session)
    leaf_id = session.leaf_id if leaf is UNSET else leaf
    on_path = {id(e) for e in session.build_context(leaf_id).path}
    rows: list[dict[str, Any]] = []
    for entry in session.entries:
        if entry.type != "compaction":
            continue
        raw = entry.raw
        parent_id = entry.parent_id
        known_parent = parent_id not in (None, MISSING) and parent_id in session
        before = len(session.build_context(parent_id).messages) if known_parent else 0
        after = session.build_context(entry.id)
        summary = raw["summary"] if isinstance(raw.get("summary"), str) else ""
        details: dict[str, Any] = raw["details"] if isinstance(raw.get("details"), dict) else {}
        first_kept = _str(raw.get("firstKeptEntryId"))
        tokens = raw.get("tokensBefore")
        rows.append({
            "session_id": session.id, "id": _str(entry.id), "parent_id": _str(parent_id),
            "timestamp": _entry_ms(entry), "on_path": id(entry) in on_path,
            "tokens_before": int(_num(tokens)) if isinstance(tokens, int | float) else None,
            "tokens_after": tokens_after_compaction(after.messages),
            "summary_chars": len(summary),
            "summary_tokens": estimate_tokens({"role": "compactionSummary", "summary": summary}),
            "first_kept_entry_id": first_kept,
            "first_kept_on_path": first_kept in {_str(e.id) for e in after.path[:-1]},
            "messages_before": before, "messages_after": len(after.messages),
            "entries_summarized": max(before - (len(after.messages) - 1), 0),
            "from_hook": bool(raw["fromHook"]) if "fromHook" in raw else None,
            "read_files": _count(details.get("readFiles")),
            "modified_files": _count(details.get("modifiedFiles")),
            **_copy_facts(lineage, entry),
        })  # fmt: skip
    return rows


def session_row(
    source: SessionSource,
    *,
    info: SessionInfo | None = None,
    path: str | None = None,
    lineage: Lineage | None = None,
) -> dict[str, Any] | None:
    """One dict of :data:`SESSION_COLUMNS` for a session file, or ``None`` if it is not one.

    ``info``, ``path`` and ``lineage`` stand in for what a file on disk would give, for a
    :class:`Session` read from elsewhere (:meth:`Session.from_bytes`).

    Raises
    ------
    PinbError
        When the file cannot be read as a Pi session.
    """
    if isinstance(source, Session):
        session = source
        if info is None and session.path is not None:
            info = read_session_info(session.path)
    else:
        info = read_session_info(source)
        if info is None:
            return None
        session = open_session(source)
    if path is None and session.path is not None:
        path = str(session.path)
    lineage = lineage or session_lineage(session)
    entries = session.entries
    depth, _, children = _walk(session)
    context = session.build_context()
    counts = Counter(e.type for e in entries)
    roles = Counter(e.role for e in entries if e.role)
    models: list[str] = []
    totals = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    cost = 0.0
    tool_calls = tool_errors = 0
    stamps = [ms for ms in (_entry_ms(e) for e in entries) if ms is not None]
    for entry in entries:
        message, role = entry.message, entry.role
        if role == "assistant":
            usage = _usage(message)
            for key in totals:
                totals[key] += usage.get(key, 0)
            cost += usage.get("cost", 0.0)
            tool_calls += len(_tool_calls(message))
            model = _str(message.get("model")) if message else None
            if model and model not in models:
                models.append(model)
        elif role == "toolResult" and message and message.get("isError"):
            tool_errors += 1
    created_ms = parse_js_date(session.header.get("timestamp"))
    start = created_ms if created_ms is not None else (min(stamps) if stamps else None)
    return {
        "path": path, "id": session.id, "cwd": session.cwd,
        "name": info.name if info else session.name,
        "parent_session_path": info.parent_session_path if info else session.parent_session,
        "created": created_ms,
        "modified": int(info.modified.timestamp() * 1000) if info else None,
        "message_count": info.message_count if info else counts.get("message", 0),
        "first_message": info.first_message if info else None, "entries": len(entries),
        "branch_points": sum(1 for n in children.values() if n > 1),
        "leaves": sum(1 for e in entries if children[id(e)] == 0 and not e.is_navigation),
        "max_depth": max(depth.values(), default=None),
        "compactions": counts.get("compaction", 0),
        "branch_summaries": counts.get("branch_summary", 0), "labels": len(session.labels),
        "user_messages": roles.get("user", 0), "assistant_messages": roles.get("assistant", 0),
        "tool_calls": tool_calls, "tool_errors": tool_errors,
        "context_tokens": estimate_context_tokens(context.messages).tokens, **totals,
        "cost": cost, "models": ",".join(models) or None,
        "duration_s": (max(stamps) - start) / 1000 if stamps and start is not None else None,
        "problems": len(session.problems), "relation": lineage.relation,
        "parent_session": lineage.parent_session, "root_session": lineage.root_session,
        "copied_entries": lineage.copied_count(entries),
    }  # fmt: skip


# -- frames ---------------------------------------------------------------------------------


def to_frame(rows: Iterable[Mapping[str, Any]], columns: Mapping[str, str]) -> pd.DataFrame:
    """Rows to a DataFrame with exactly ``columns`` (name -> dtype), timestamps as datetimes."""
    import numpy as np
    import pandas as pd

    rows = list(rows)
    data = {name: [row.get(name) for row in rows] for name in columns}
    for name, dtype in columns.items():
        if dtype.lower().startswith("int"):  # Infinity (a too-long integer) has no int: missing
            data[name] = [_finite(value) for value in data[name]]
        elif dtype == _S:  # an odd value where text belongs: JSON text (pandas' str recurses)
            data[name] = [_text_cell(value) for value in data[name]]
    frame = pd.DataFrame(data, columns=list(columns))
    for name, dtype in columns.items():
        if dtype.startswith("datetime64"):
            # A time beyond pandas' range (year 2262) is missing, not an error.
            stamps = frame[name].astype("float64")
            stamps[(stamps.abs() > _MAX_MS) | ~np.isfinite(stamps)] = float("nan")
            frame[name] = pd.to_datetime(stamps, unit="ms", utc=True)
        elif dtype == "boolean":
            frame[name] = frame[name].astype("object")
    return frame.astype(dict(columns))


def entries_frame(session: SessionSource, leaf: Any = UNSET) -> pd.DataFrame:
    """One row per entry, every branch, in file order.

    Parameters
    ----------
    session:
        A :class:`~pinb.core.Session` or the path of a session file.
    leaf:
        The leaf that defines ``on_path``/``in_context`` (default: the session's leaf).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`ENTRY_COLUMNS`: ids and parents, ``type``, ``role``, tree ``depth``
        and ``children``, ``on_path`` (active branch), ``in_context`` (what the model sees
        after compaction), the chars/4 ``tokens_est``, usage and ``cost`` of assistant
        messages, ``tool_name``, ``is_error``, ``label``, ``compaction_id`` (the last
        compaction above the entry), and where the entry came from: ``copied`` (the
        entry is a copy of one in the parent session, made by a fork), ``parent_session``
        (the parent file as found) and ``root_session`` (the topmost ancestor). The rule
        is :mod:`pinb.analysis.lineage`'s; a parent that is not found marks nothing.

    Examples
    --------
    >>> df = entries_frame("session.jsonl")  # doctest: +SKIP
    >>> df[df.on_path].groupby("role").tokens_est.sum()  # doctest: +SKIP
    >>> df[~df.copied].cost.sum()  # what this fork spent itself  # doctest: +SKIP
    """
    return to_frame(entry_rows(session, leaf), ENTRY_COLUMNS)


def messages_frame(
    session: SessionSource, leaf: Any = UNSET, *, context: bool = False
) -> pd.DataFrame:
    """One row per message with its text (see :func:`message_rows`); ``copied``,
    ``parent_session`` and ``root_session`` as in :func:`entries_frame`."""
    return to_frame(message_rows(session, leaf, context=context), MESSAGE_COLUMNS)


def tool_calls_frame(session: SessionSource, leaf: Any = UNSET) -> pd.DataFrame:
    """One row per tool call with its result (see :func:`tool_call_rows`); ``copied``
    (the call is a copy made by a fork), ``parent_session`` and ``root_session`` as in
    :func:`entries_frame`."""
    return to_frame(tool_call_rows(session, leaf), TOOL_CALL_COLUMNS)


def compactions_frame(session: SessionSource, leaf: Any = UNSET) -> pd.DataFrame:
    """One row per compaction: tokens before and after, summary size, entries summarized;
    ``copied``, ``parent_session`` and ``root_session`` as in :func:`entries_frame`."""
    return to_frame(compaction_rows(session, leaf), COMPACTION_COLUMNS)


def sessions_frame(source: Any = None, *, progress: bool | Progress | None = None) -> pd.DataFrame:
    """One row per session: ``SessionInfo`` fields plus tree, token and cost statistics.

    Parameters
    ----------
    source:
        A folder (searched recursively), a file, a glob, :class:`~pinb.core.Session`
        objects, or an iterable of these. Default: every session of the agent directory.
    progress:
        ``True`` draws a bar on stderr, ``False`` nothing, a callable receives
        ``(done, total, path)`` after each file. Default: a bar for 100 files or more.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SESSION_COLUMNS`, newest ``modified`` first. ``relation`` is
        ``root``, ``fork``, ``linked``, ``subagent`` or ``orphan``
        (:data:`pinb.analysis.lineage.RELATIONS`); ``parent_session_path`` is the
        header's reference as written, ``parent_session`` the file found for it;
        ``copied_entries`` counts the entries copied from it. Usage columns sum every
        assistant message of the file, copies included: :func:`pinb.analysis.usage_totals`
        counts copied history once. Files that are not Pi sessions are left out, listed
        in ``frame.attrs["skipped"]`` with the reason, and reported with a warning.
    """
    rows, skipped = collect_rows(source, _one_session_row, progress)
    frame = to_frame(rows, SESSION_COLUMNS)
    frame = frame.sort_values("modified", ascending=False, na_position="last", kind="stable")
    frame = frame.reset_index(drop=True)
    frame.attrs["skipped"] = skipped
    warn_skipped(skipped, stacklevel=3)
    return frame


def _one_session_row(item: Session | Path) -> list[dict[str, Any]] | None:
    row = session_row(item)
    return None if row is None else [row]
