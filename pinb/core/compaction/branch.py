"""Leaving a branch: which entries a branch summary covers, within a token budget (spec §8.1–§8.2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..context.build import apply_edit, entry_messages, entry_to_message
from ..context.tokens import estimate_tokens
from ..format.entries import Entry, id_key
from ..format.target import Pi, PiLike
from ..format.tree import SessionIndex
from ..js.wire import MISSING, js_truthy
from .fileops import FileOperations

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "NO_CONTENT_SUMMARY",
    "BranchCollection",
    "BranchPreparation",
    "branch_message",
    "collect_entries_for_branch_summary",
    "prepare_branch_entries",
]

#: Prepended to a model-written branch summary (it is stored in the entry).
BRANCH_SUMMARY_PREAMBLE: Final = (
    "The user explored a different conversation branch before returning here.\n"
    "Summary of that exploration:\n\n"
)
#: Stored as the summary when the abandoned entries hold nothing to summarize.
NO_CONTENT_SUMMARY: Final = "No content to summarize"


@dataclass
class BranchCollection:
    """The abandoned entries (chronological) and where the two branches meet."""

    entries: list[Entry]
    common_ancestor_id: Any


def collect_entries_for_branch_summary(
    index: SessionIndex, old_leaf_id: Any, target_id: Any
) -> BranchCollection:
    """Entries from the old leaf up to (not including) the common ancestor with the target.

    The walk does not stop at compactions (§8.1). If the target is a descendant of the old
    leaf, nothing is collected.
    """
    if not js_truthy(old_leaf_id):
        return BranchCollection([], None)
    old_path = {id_key(e.id) for e in index.path_to(old_leaf_id)}
    common: Any = None
    for entry in reversed(index.path_to(target_id)):
        if id_key(entry.id) in old_path:
            common = entry.id
            break
    entries: list[Entry] = []
    seen: set[int] = set()
    current = old_leaf_id
    while js_truthy(current) and not (common is not None and id_key(current) == id_key(common)):
        found = index.get(current)
        if found is None or id(found) in seen:
            break
        seen.add(id(found))
        entries.append(found)
        current = found.raw.get("parentId", MISSING)
    entries.reverse()
    return BranchCollection(entries, common)


def branch_message(entry: Entry, edit: Entry | None = None) -> Any:
    """The message an entry contributes to a branch summary (Pi's ``getMessageFromEntry``).

    As in compaction, but tool results are left out (they are the bulk and rarely matter
    once a branch is left), and empty branch summaries count. With Pi 1.x the latest
    context edit of the entry among the abandoned entries applies (``edit``).
    """
    if entry.role == "toolResult":
        return MISSING
    if edit is not None and entry.raw.get("type") in ("message", "custom_message"):
        edited = apply_edit(entry_messages(entry), edit)
        return edited[0] if edited else MISSING
    return entry_to_message(entry)


@dataclass(frozen=True)
class BranchMessage:
    """A message chosen for the branch summary and the position of its entry."""

    index: int
    entry: Entry
    message: Any

    @property
    def role(self) -> Any:
        return self.message.get("role") if isinstance(self.message, dict) else None


@dataclass
class BranchPreparation:
    """``prepareBranchEntries``: the newest messages that fit the budget, and file ops."""

    messages: list[BranchMessage] = field(default_factory=list)
    file_ops: FileOperations = field(default_factory=FileOperations)
    total_tokens: int = 0


def prepare_branch_entries(
    entries: Sequence[Entry], token_budget: int = 0, *, pi: PiLike | None = None
) -> BranchPreparation:
    """Choose messages newest first until ``token_budget`` (0 = unlimited) is reached.

    A summary entry that does not fit is still taken while less than 90% of the budget is
    used, because it condenses much more than its size (§8.2). Pi 1.x applies the
    context edits found among ``entries`` (latest per target wins).
    """
    target = Pi.resolve(pi)
    edits: dict[object, Entry] = {}
    if target >= Pi.V1_6:
        for entry in entries:
            if entry.raw.get("type") == "context_edit":
                edits[id_key(entry.raw.get("targetId", MISSING))] = entry
    result = BranchPreparation()
    for entry in entries:
        raw = entry.raw
        if (
            raw.get("type") == "branch_summary"
            and not js_truthy(raw.get("fromHook"))
            and js_truthy(raw.get("details"))
        ):
            result.file_ops.add_details(raw.get("details"))
    chosen: list[BranchMessage] = []
    for i in range(len(entries) - 1, -1, -1):
        entry = entries[i]
        edit = edits.get(id_key(entry.raw.get("id", MISSING))) if edits else None
        message = branch_message(entry, edit)
        if not js_truthy(message):
            continue
        result.file_ops.add_message(message, nested_calls=target >= Pi.V1_6)
        tokens = estimate_tokens(message, pi=target)
        if token_budget > 0 and result.total_tokens + tokens > token_budget:
            if entry.raw.get("type") in ("compaction", "branch_summary") and (
                result.total_tokens < token_budget * 0.9
            ):
                chosen.append(BranchMessage(i, entry, message))
                result.total_tokens += tokens
            break
        chosen.append(BranchMessage(i, entry, message))
        result.total_tokens += tokens
    chosen.reverse()
    result.messages = chosen
    return result
