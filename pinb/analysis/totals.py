"""Token and cost totals over many sessions that count history copied into forks once.

A fork copies the path it was made from into a new file, usage and all; tools that sum
usage per file count that history twice. :func:`usage_totals` counts every usage record
once (the rule is :data:`DEDUPE_RULE`, found by :mod:`pinb.analysis.lineage`), and
:class:`pinb.views.totals.UsageTotalsView` shows the totals with the rule as their caption.

A usage record is what Pi 1.x adds up for a session's totals (``getSessionStats`` in
``dist/core/agent-session.js`` of ``@earendil-works/pi-coding-agent`` 1.6): the usage
of assistant messages, of tool results that report nested model work (a sub-agent
tool), of ``usage`` entries (prompt-cache warming), and of compaction and branch-summary
entries that carry one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..core.format.entries import MISSING, Entry
from ..core.js.wire import parse_js_date
from ..core.session import Session
from ..errors import UsageError
from .frames import _message_ms, _usage, to_frame
from .lineage import Lineage, entry_key, session_lineage
from .sources import Progress, SessionSource, collect_rows, open_session, warn_skipped

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BRANCH_RULE",
    "DEDUPE_RULE",
    "GROUPS",
    "NO_DEDUPE_RULE",
    "SUM_COLUMNS",
    "USAGE_COLUMNS",
    "branch_leaves",
    "usage_rows",
    "usage_totals",
]

_S, _I, _F, _B, _T = "string", "Int64", "float64", "boolean", "datetime64[ms, UTC]"

#: Columns of :func:`usage_rows`: one row per usage record.
USAGE_COLUMNS: dict[str, str] = {
    "session": _S, "session_id": _S, "project": _S, "relation": _S, "parent_session": _S,
    "root_session": _S, "created": _T, "line": _I, "entry_id": _S, "kind": _S,
    "timestamp": _T, "provider": _S, "model": _S, "branch": _S, "copied": _B, "key": _S,
    "input": _I, "output": _I, "cache_read": _I, "cache_write": _I, "total_tokens": _I,
    "cost": _F,
}  # fmt: skip

#: ``by`` -> the columns of :data:`USAGE_COLUMNS` the totals are grouped on.
GROUPS: dict[str, tuple[str, ...]] = {
    "session": ("session", "session_id"),
    "branch": ("session", "session_id", "branch"),
    "model": ("provider", "model"),
    "project": ("project",),
    "day": ("day",),
    "root": ("root_session",),
}

#: The columns :func:`usage_totals` sums.
SUM_COLUMNS = _SUMS = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")

#: How copies are counted with ``dedupe=True``.
DEDUPE_RULE: Final = (
    "each usage record counted once: a fork's copy of an entry (same type, id and "
    "timestamp, which Pi's fork and clone keep) is skipped in favour of the original, "
    "the row that is not a copy, else the one in the oldest session"
)
#: How copies are counted with ``dedupe=False``.
NO_DEDUPE_RULE: Final = "every usage record of every file counted, copies made by forks included"
#: How messages are attributed to branches (``by="branch"``).
BRANCH_RULE: Final = (
    "a record on several branches of a session counts for the first leaf, in file "
    "order, whose path holds it"
)


def branch_leaves(session: Session) -> dict[int, str | None]:
    """The branch of every entry (keyed by ``id(entry)``): the id of the first leaf, in
    file order, whose path from the root holds it.

    A leaf is an entry with no children (navigation markers aside). Walking each leaf's
    path up to the first entry already given a branch visits every entry once.
    """
    index = session.index
    entries = session.entries
    has_child: set[int] = set()
    for entry in entries:
        if entry.is_navigation:
            continue
        parent_id = entry.parent_id
        parent = index.get(parent_id) if parent_id not in (None, MISSING) else None
        if parent is not None:
            has_child.add(id(parent))
    branch: dict[int, str | None] = {}
    for leaf in entries:
        if id(leaf) in has_child or leaf.is_navigation:
            continue
        leaf_id = leaf.id if isinstance(leaf.id, str) else None
        current: Entry | None = leaf
        while current is not None and id(current) not in branch:
            branch[id(current)] = leaf_id
            parent_id = current.parent_id
            current = index.get(parent_id) if parent_id not in (None, MISSING) else None
    return branch


def _key(entry: Entry, session: str | None) -> str:
    key = entry_key(entry)
    if key is None:  # nothing to match a copy by: unique to this row
        return f"\x1e{session}\x1e{entry.line}"
    return "\x1f".join(key)


def _usage_record(entry: Entry) -> tuple[str, dict[str, Any], Any, Any] | None:
    """``(kind, usage, provider, model)`` of an entry that carries usage Pi counts."""
    raw = entry.raw
    message = entry.message
    if message is not None:
        role = message.get("role")
        usage = message.get("usage")
        if role == "assistant" or (role == "toolResult" and isinstance(usage, dict)):
            return str(role), {"usage": usage}, message.get("provider"), message.get("model")
        return None
    usage = raw.get("usage")
    if entry.type in ("usage", "compaction", "branch_summary") and isinstance(usage, dict):
        return entry.type, {"usage": usage}, raw.get("provider"), raw.get("model")
    return None


def usage_rows(
    source: SessionSource, *, path: str | None = None, lineage: Lineage | None = None
) -> list[dict[str, Any]]:
    """One dict per usage record of a session (:data:`USAGE_COLUMNS`), every branch.

    ``kind`` is ``assistant``, ``toolResult``, ``usage``, ``compaction`` or
    ``branch_summary``; ``copied`` marks a copy of an entry of the parent session
    (:mod:`.lineage`); ``branch`` is the leaf the record counts for
    (:func:`branch_leaves`); ``key`` is what an entry and its copies share. Times are
    Unix milliseconds.
    """
    session = open_session(source)
    lineage = lineage or session_lineage(session)
    name = path if path is not None else lineage.path
    branches = branch_leaves(session)
    created = parse_js_date(session.header.get("timestamp"))
    rows: list[dict[str, Any]] = []
    for entry in session.entries:
        record = _usage_record(entry)
        if record is None:
            continue
        kind, usage, provider, model = record
        message = entry.message if entry.message is not None else {}
        rows.append({
            "session": name, "session_id": session.id, "project": session.cwd,
            "relation": lineage.relation, "parent_session": lineage.parent_session,
            "root_session": lineage.root_session, "created": created, "line": entry.line,
            "entry_id": entry.id if isinstance(entry.id, str) else None, "kind": kind,
            "timestamp": _message_ms(message, entry),
            "provider": provider if isinstance(provider, str) else None,
            "model": model if isinstance(model, str) else None,
            "branch": branches.get(id(entry)), "copied": lineage.is_copied(entry),
            "key": _key(entry, name),
            **{k: v for k, v in _usage(usage).items() if k in _SUMS},
        })  # fmt: skip
    return rows


def _groups(by: str | Sequence[str]) -> tuple[list[str], list[str]]:
    """The ``by`` names and the columns they group on."""
    names = [by] if isinstance(by, str) else list(by)
    if not names:
        raise UsageError("by needs at least one of " + ", ".join(GROUPS))
    columns: list[str] = []
    for name in names:
        if name not in GROUPS:
            raise UsageError(f"unknown grouping {name!r}; use one of {', '.join(GROUPS)}")
        columns += [c for c in GROUPS[name] if c not in columns]
    return names, columns


def usage_totals(
    source: Any = None,
    by: str | Sequence[str] = "session",
    *,
    dedupe: bool = True,
    progress: bool | Progress | None = None,
) -> pd.DataFrame:
    """Input, output, cache and cost totals of many sessions, copied history counted once.

    Parameters
    ----------
    source:
        As for :func:`~pinb.analysis.sessions_frame`: a folder (searched recursively, so
        sub-agent folders are included), files, a glob, sessions; default every session
        of the agent directory.
    by:
        ``"session"``, ``"branch"`` (each leaf path of a session), ``"model"``,
        ``"project"`` (the session's working directory), ``"day"`` (UTC day of the
        message), ``"root"`` (a session with its forks and sub-agents), or several of
        them (``("project", "model")``).
    dedupe:
        Count copies made by forks once (:data:`DEDUPE_RULE`); ``False`` counts every
        file's messages, as per-file tools do (:data:`NO_DEDUPE_RULE`).
    progress:
        As for :func:`~pinb.analysis.sessions_frame`.

    Returns
    -------
    pandas.DataFrame
        One row per group: the group's columns, then ``records`` (usage records
        counted: assistant messages and the rest Pi counts, see the module docstring),
        ``input``, ``output``, ``cache_read``, ``cache_write``,
        ``total_tokens``, ``cost``, ``copies_skipped`` (copies found in the group and
        not counted again) and ``sessions`` (how many sessions the counted records come
        from). Sorted by cost, highest first (``by="day"``: by day). ``attrs`` say how
        it was counted: ``rule`` (one sentence per rule used), ``by``, ``dedupe``,
        ``unresolved`` (``(file, parentSession)`` of forks whose parent was not found:
        their copies could only be matched against files among the sources) and
        ``skipped`` (files that are not sessions).

    Examples
    --------
    >>> usage_totals("~/.pi/agent/sessions", by="model")  # doctest: +SKIP
    >>> usage_totals(by="day").attrs["rule"]  # doctest: +SKIP
    """
    names, keys = _groups(by)
    unresolved: list[tuple[str, str]] = []

    def rows_of(item: Session | Path) -> list[dict[str, Any]] | None:
        session = open_session(item)
        if session.loaded is not None and session.loaded.blank:
            return None  # an empty file: no session yet
        lineage = session_lineage(session)
        if lineage.parent_missing:
            unresolved.append((str(lineage.path), str(lineage.parent_reference)))
        return usage_rows(session, lineage=lineage)

    rows, skipped = collect_rows(source, rows_of, progress)
    frame = to_frame(rows, USAGE_COLUMNS)
    frame["day"] = frame["timestamp"].dt.floor("D")
    if dedupe:
        order = frame.sort_values(["copied", "created", "session", "line"], kind="stable")
        repeat = order.duplicated("key", keep="first")
        kept, dropped = order[~repeat], order[repeat]
    else:
        kept, dropped = frame, frame.iloc[0:0]
    sums = kept.groupby(keys, dropna=False, sort=False).agg(
        records=("key", "size"),
        **{column: (column, "sum") for column in _SUMS},
        sessions=("session", "nunique"),
    )
    skipped_copies = dropped.groupby(keys, dropna=False, sort=False).size()
    totals = sums.join(skipped_copies.rename("copies_skipped"), how="outer")
    totals = totals.reset_index()
    for column in ("records", "copies_skipped", "sessions"):
        totals[column] = totals[column].fillna(0).astype("Int64")
    for column in _SUMS:
        fill = 0.0 if column == "cost" else 0
        totals[column] = totals[column].fillna(fill).astype(USAGE_COLUMNS[column])
    columns = [*keys, "records", *_SUMS, "copies_skipped", "sessions"]
    totals = totals[columns]
    if names == ["day"]:
        totals = totals.sort_values("day", kind="stable", na_position="last")
    else:
        totals = totals.sort_values(["cost", *keys], ascending=[False, *[True] * len(keys)])
    totals = totals.reset_index(drop=True)
    rules = [DEDUPE_RULE if dedupe else NO_DEDUPE_RULE]
    if "branch" in names:
        rules.append(BRANCH_RULE)
    totals.attrs.update(
        rule="; ".join(rules),
        by=tuple(names),
        dedupe=dedupe,
        unresolved=unresolved,
        skipped=skipped,
    )
    warn_skipped(skipped, stacklevel=3)
    return totals
