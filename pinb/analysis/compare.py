"""Two branches side by side: where they part, what each did and cost, and how each ended.

The branches are the paths from the entry the two leaves share last (their common
ancestor) down to each leaf. Both leaves may be in one session file, where the tree gives
the ancestor, or the second in another file: a fork copies the path it starts from with
the same entry ids, so the ancestor is the last entry of the run the two paths share
(the rule is in :mod:`pinb.analysis.ancestry`).

Nothing here imports pandas until :meth:`BranchComparison.to_frame` is called.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from ..core.compaction.fileops import FileOperations
from ..core.context.accounting import ContextUsage, context_usage
from ..core.context.build import entry_messages
from ..core.context.tokens import estimate_tokens
from ..core.describe import KEY_ARGUMENTS
from ..core.format.entries import Entry, id_key
from ..core.js.jsontext import value_text
from ..core.js.wire import js_truthy
from ..core.session import Session
from ..display import Displayable
from ..errors import EntryNotFoundError
from ..render.tree.graph import entry_preview, entry_tokens, node_key
from .ancestry import file_relation, shared_prefix
from .renamed import renamed
from .sources import open_session

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Branch",
    "BranchComparison",
    "Ending",
    "FailedToolCall",
    "ToolCall",
    "ToolOp",
    "compare_branches",
    "key_argument",
    "tool_diff",
]


def key_argument(name: object, arguments: object) -> str:
    """The argument that says what a call did: :data:`~pinb.core.describe.KEY_ARGUMENTS`,
    else the first string."""
    if not isinstance(arguments, dict):
        return ""
    wanted = KEY_ARGUMENTS.get(name) if isinstance(name, str) else None
    value = arguments.get(wanted) if wanted else None
    if isinstance(value, str):
        return value
    return next((v for v in arguments.values() if isinstance(v, str)), "")


@dataclass(frozen=True)
class ToolCall:
    """One tool call on a branch, with its result's error flag (``None``: no result)."""

    name: str
    key: str
    entry_id: str
    is_error: bool | None = None


@dataclass(frozen=True)
class FailedToolCall:
    """A tool result flagged ``isError``: the tool, a preview of what it said, its entry.

    A record of the branch, not an exception (pinb's errors are :mod:`pinb.errors`').
    """

    tool: str
    preview: str
    entry_id: str


#: Old names of this module's public names, still importable with a warning.
_DEPRECATED = {"ToolError": "FailedToolCall"}  # renamed: a record, named like an exception


__getattr__ = renamed(__name__, globals(), _DEPRECATED)


@dataclass(frozen=True)
class ToolOp:
    """One step of the tool-call diff: ``equal``, ``insert``, ``delete`` or ``replace``.

    ``a`` holds the calls of branch a the step covers, ``b`` those of branch b (``insert``
    has calls only in b, ``delete`` only in a).
    """

    tag: str
    a: tuple[ToolCall, ...]
    b: tuple[ToolCall, ...]


@dataclass(frozen=True)
class Ending:
    """How a branch ended: its last assistant message."""

    entry_id: str
    stop_reason: str | None
    text: str
    error_message: str | None

    @property
    def failed(self) -> bool:
        """The reply ended in an error or was aborted."""
        return self.stop_reason in ("error", "aborted")


@dataclass(frozen=True)
class Branch:
    """What one branch (common ancestor's child → leaf) holds, did and cost.

    Attributes
    ----------
    label:
        ``"a"`` or ``"b"``.
    session_id / session_path:
        The file the branch lives in.
    leaf_id:
        The leaf compared.
    entries:
        The branch's entries, root side first (empty when the leaf is the ancestor).
    roles:
        Messages the branch adds, by role (summaries included).
    tool_calls:
        Every tool call, in order, with its key argument.
    tool_errors:
        Tool results flagged ``isError`` (:class:`FailedToolCall`).
    read_files / modified_files:
        Files the branch's ``read``/``edit``/``write`` calls touched (read-only and
        modified, as Pi lists them in summaries).
    summary_read_files / summary_modified_files:
        Files the summaries on the branch carry in ``details`` (compactions carry the
        whole history's list, so these can predate the branch).
    input / output / cache_read / cache_write / cost:
        Reported usage of the branch's assistant messages, summed (``usage.cost.total``).
    estimated_tokens:
        chars/4 of the messages the branch adds.
    context:
        The context at the leaf, accounted as every view does it.
    ending:
        The last assistant message of the branch, or ``None`` when it has none.
    """

    label: str
    session_id: str
    session_path: str | None
    leaf_id: str
    entries: tuple[Entry, ...]
    roles: dict[str, int]
    tool_calls: tuple[ToolCall, ...]
    tool_errors: tuple[FailedToolCall, ...]
    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    summary_read_files: tuple[str, ...]
    summary_modified_files: tuple[str, ...]
    input: int
    output: int
    cache_read: int
    cache_write: int
    cost: float
    estimated_tokens: int
    context: ContextUsage
    ending: Ending | None

    @property
    def messages(self) -> int:
        return sum(self.roles.values())

    def message_list(self) -> list[dict[str, Any]]:
        """Each message entry of the branch: id, role (or entry type), preview, chars/4."""
        return [
            {
                "entry_id": node_key(e.id),
                "role": e.role or e.type,
                "preview": entry_preview(e, 200),
                "tokens": entry_tokens(e),
            }
            for e in self.entries
            if entry_tokens(e) or e.message is not None
        ]

    @property
    def leaf_kind(self) -> str:
        """What the leaf is (``assistant``, ``user``, ``compaction``, ...), or ``""``."""
        leaf = self.entries[-1] if self.entries else None
        return (leaf.role or leaf.type) if leaf is not None else ""

    def to_dict(self) -> dict[str, Any]:
        """Plain values (lists, numbers, strings) for JSON and frames."""
        ending = self.ending
        return {
            "branch": self.label,
            "session_id": self.session_id,
            "session_path": self.session_path,
            "leaf_id": self.leaf_id,
            "entries": len(self.entries),
            "messages": self.messages,
            "roles": dict(self.roles),
            "message_list": self.message_list(),
            "tool_calls": [[c.name, c.key] for c in self.tool_calls],
            "tool_errors": len(self.tool_errors),
            "read_files": list(self.read_files),
            "modified_files": list(self.modified_files),
            "summary_read_files": list(self.summary_read_files),
            "summary_modified_files": list(self.summary_modified_files),
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cost": self.cost,
            "estimated_tokens": self.estimated_tokens,
            "context_tokens": self.context.tokens,
            "context_measure": self.context.measure,
            "context_estimated_tokens": self.context.estimated_tokens,
            "leaf_kind": self.leaf_kind,
            "stop_reason": ending.stop_reason if ending else None,
            "ended_in_error": ending.failed if ending else None,
            "last_text": ending.text if ending else None,
            "error_message": ending.error_message if ending else None,
        }


@dataclass(frozen=True)
class BranchComparison(Displayable):
    """Two branches from their common ancestor (see the module docstring for the rule).

    Attributes
    ----------
    a / b:
        The two :class:`Branch` objects.
    ancestor:
        The last entry both leaves share, or ``None`` when they share nothing.
    shared_entries:
        Length of the shared path (root → ancestor, label entries not counted across files).
    relation:
        How the two files are related: ``"same session"``, ``"b forked from a"``,
        ``"a forked from b"``, ``"forks of one session"`` or ``"no parentSession link"``.
    tool_diff:
        The tool calls as a sequence diff (``difflib.SequenceMatcher`` over
        ``(name, key argument)`` pairs).
    """

    a: Branch
    b: Branch
    ancestor: Entry | None
    shared_entries: int
    relation: str
    tool_diff: tuple[ToolOp, ...] = field(default_factory=tuple)

    @property
    def ancestor_id(self) -> str | None:
        return node_key(self.ancestor.id) if self.ancestor is not None else None

    @property
    def same_leaf(self) -> bool:
        """Both sides are one entry: nothing differs."""
        return not self.a.entries and not self.b.entries and self.ancestor is not None

    @property
    def summary(self) -> str:
        """One sentence on how the leaves relate."""
        if self.ancestor is None:
            return "the leaves share no entry: each branch is its whole path"
        if self.same_leaf:
            return "both leaves are the same entry: nothing to compare"
        if not self.a.entries:
            return "a is an ancestor of b: b continues from a"
        if not self.b.entries:
            return "b is an ancestor of a: a continues from b"
        return f"the branches part after {self.ancestor_id}"

    def to_dict(self) -> dict[str, Any]:
        """Plain values: the ancestor, the relation, both branches and the tool diff."""
        return {
            "ancestor_id": self.ancestor_id,
            "shared_entries": self.shared_entries,
            "relation": self.relation,
            "summary": self.summary,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "tool_diff": [
                {
                    "tag": op.tag,
                    "a": [[c.name, c.key] for c in op.a],
                    "b": [[c.name, c.key] for c in op.b],
                }
                for op in self.tool_diff
            ],
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per branch (``a``, ``b``), the columns of :meth:`Branch.to_dict`."""
        import pandas as pd

        rows = []
        for branch in (self.a, self.b):
            row = branch.to_dict()
            row["roles"] = ",".join(f"{k}={v}" for k, v in branch.roles.items())
            row["tool_calls"] = len(branch.tool_calls)
            del row["message_list"]
            for key in ("read_files", "modified_files"):
                row[key] = len(row[key])
            row["summary_read_files"] = len(row["summary_read_files"])
            row["summary_modified_files"] = len(row["summary_modified_files"])
            row["ancestor_id"] = self.ancestor_id
            rows.append(row)
        return pd.DataFrame(rows).set_index("branch")

    def __repr__(self) -> str:
        return (
            f"<BranchComparison a={self.a.leaf_id} b={self.b.leaf_id} "
            f"ancestor={self.ancestor_id}: {self.summary}>"
        )


# -- building ---------------------------------------------------------------------------------


def _number(value: object) -> float:
    """A reported number; 0 for anything else (text, ``true``, NaN, infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


def _call_results(entries: Sequence[Entry]) -> dict[object, bool]:
    """``toolCallId`` → ``isError`` of the tool results among ``entries``."""
    results: dict[object, bool] = {}
    for entry in entries:
        message = entry.message
        if message is not None and message.get("role") == "toolResult":
            results.setdefault(id_key(message.get("toolCallId")), bool(message.get("isError")))
    return results


def _ending(entries: Sequence[Entry]) -> Ending | None:
    for entry in reversed(entries):
        message = entry.message
        if message is None or message.get("role") != "assistant":
            continue
        reason = message.get("stopReason")
        error = message.get("errorMessage")
        preview = entry_preview(entry, 200)
        return Ending(
            entry_id=node_key(entry.id),
            stop_reason=reason if isinstance(reason, str) else None,
            text=preview,
            error_message=error if isinstance(error, str) else None,
        )
    return None


def _usage(entries: Sequence[Entry]) -> tuple[dict[str, int], float]:
    """Reported usage of the assistant messages, summed; and ``usage.cost.total``, summed."""
    sums = {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}
    cost = 0.0
    for entry in entries:
        message = entry.message
        usage = message.get("usage") if message and message.get("role") == "assistant" else None
        if not isinstance(usage, dict):
            continue
        for key in sums:
            sums[key] += _number(usage.get(key))
        total = usage.get("cost")
        cost += _number(total.get("total")) if isinstance(total, dict) else 0.0
    return {key: int(value) for key, value in sums.items()}, cost


def _tools(entries: Sequence[Entry]) -> tuple[list[ToolCall], list[FailedToolCall]]:
    """Every tool call (with its result's error flag) and every failed tool result."""
    results = _call_results(entries)
    calls: list[ToolCall] = []
    errors: list[FailedToolCall] = []
    for entry in entries:
        message = entry.message
        role = message.get("role") if message else None
        if message and role == "toolResult" and message.get("isError"):
            name = message.get("toolName")
            errors.append(
                FailedToolCall(value_text(name), entry_preview(entry, 120), node_key(entry.id))
            )
        content = message.get("content") if message and role == "assistant" else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "toolCall":
                name = block.get("name")
                calls.append(
                    ToolCall(
                        name=name if isinstance(name, str) else value_text(name),
                        key=key_argument(name, block.get("arguments")),
                        entry_id=node_key(entry.id),
                        is_error=results.get(id_key(block.get("id"))),
                    )
                )
    return calls, errors


def _branch(label: str, session: Session, leaf_id: str, entries: Sequence[Entry]) -> Branch:
    pi = session.pi
    roles: Counter[str] = Counter()
    from_calls, from_details = FileOperations(), FileOperations()
    estimated = 0
    for entry in entries:
        for message in entry_messages(entry, pi):
            role = message.get("role") if isinstance(message, dict) else None
            roles[role if isinstance(role, str) else "?"] += 1
            estimated += estimate_tokens(message, pi=pi)
            from_calls.add_message(message)
        raw = entry.raw
        summary = raw.get("type") in ("compaction", "branch_summary")
        if summary and not js_truthy(raw.get("fromHook")):
            from_details.add_details(raw.get("details"))
    read_files, modified_files = from_calls.file_lists()
    summary_read, summary_modified = from_details.file_lists()
    usage, cost = _usage(entries)
    calls, errors = _tools(entries)
    return Branch(
        label=label,
        session_id=session.id,
        session_path=str(session.path) if session.path is not None else None,
        leaf_id=leaf_id,
        entries=tuple(entries),
        roles=dict(roles),
        tool_calls=tuple(calls),
        tool_errors=tuple(errors),
        read_files=tuple(str(p) for p in read_files),
        modified_files=tuple(str(p) for p in modified_files),
        summary_read_files=tuple(str(p) for p in summary_read),
        summary_modified_files=tuple(str(p) for p in summary_modified),
        input=usage["input"],
        output=usage["output"],
        cache_read=usage["cacheRead"],
        cache_write=usage["cacheWrite"],
        cost=cost,
        estimated_tokens=estimated,
        context=context_usage(session.build_context(leaf_id)),
        ending=_ending(entries),
    )


def tool_diff(a: Sequence[ToolCall], b: Sequence[ToolCall]) -> tuple[ToolOp, ...]:
    """The calls of two branches as ``SequenceMatcher`` opcodes over ``(name, key)``.

    A ``replace`` pairs calls one to one (a call of a where b made another); the calls one
    side made beyond the other's are its own (``delete``: a only, ``insert``: b only), not
    a replacement of nothing.
    """
    matcher = SequenceMatcher(
        None, [(c.name, c.key) for c in a], [(c.name, c.key) for c in b], autojunk=False
    )
    ops: list[ToolOp] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = tuple(a[i1:i2]), tuple(b[j1:j2])
        if tag != "replace" or len(left) == len(right):
            ops.append(ToolOp(tag, left, right))
            continue
        paired = min(len(left), len(right))
        ops.append(ToolOp("replace", left[:paired], right[:paired]))
        if len(left) > paired:
            ops.append(ToolOp("delete", left[paired:], ()))
        else:
            ops.append(ToolOp("insert", (), right[paired:]))
    return tuple(ops)


def _path(session: Session, leaf_id: str) -> list[Entry]:
    if leaf_id not in session:
        raise EntryNotFoundError(leaf_id)
    return session.path_to(leaf_id)


def compare_branches(
    session: Session | str | os.PathLike[str],
    a: str | None = None,
    b: str | None = None,
    *,
    other: Session | str | os.PathLike[str] | None = None,
) -> BranchComparison:
    """Compare the branches that lead to two leaves from their common ancestor.

    Parameters
    ----------
    session:
        The session of leaf ``a`` (a :class:`~pinb.core.Session` or a file path).
    a:
        An entry id in ``session`` (default: its current leaf).
    b:
        An entry id in ``other`` when given, else in ``session`` (default: the current
        leaf of the session it belongs to).
    other:
        Another session file holding ``b``: a fork of ``session``, the session it was
        forked from, or a sibling fork (any file compares; see the module docstring).

    Returns
    -------
    BranchComparison

    Raises
    ------
    EntryNotFoundError
        ``a`` or ``b`` is not an entry of its session.

    Examples
    --------
    >>> comparison = compare_branches("s.jsonl", wrong_turn_leaf)  # doctest: +SKIP
    >>> comparison.tool_diff  # doctest: +SKIP
    """
    session_a = open_session(session)
    session_b = session_a if other is None else open_session(other)
    leaf_a = a if a is not None else session_a.leaf_id
    leaf_b = b if b is not None else session_b.leaf_id
    if leaf_a is None or leaf_b is None:
        raise EntryNotFoundError(None)
    path_a, path_b = _path(session_a, leaf_a), _path(session_b, leaf_b)
    relation = file_relation(session_a, session_b)
    if relation == "same session":
        session_b = session_a
        ancestor = session_a.common_ancestor(leaf_a, leaf_b)
        cut_a = next((i for i, e in enumerate(path_a) if e is ancestor), -1)
        cut_b = next((i for i, e in enumerate(path_b) if e is ancestor), -1)
        shared = cut_a + 1
    else:
        shared, cut_a, cut_b = shared_prefix(path_a, path_b)
        ancestor = path_a[cut_a] if cut_a >= 0 else None
    branch_a = _branch("a", session_a, node_key(leaf_a), path_a[cut_a + 1 :])
    branch_b = _branch("b", session_b, node_key(leaf_b), path_b[cut_b + 1 :])
    return BranchComparison(
        a=branch_a,
        b=branch_b,
        ancestor=ancestor,
        shared_entries=shared,
        relation=relation,
        tool_diff=tool_diff(branch_a.tool_calls, branch_b.tool_calls),
    )
