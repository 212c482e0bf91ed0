"""The pure session core: Pi's file format, tree, context, tokens and compaction planning.

Only the standard library and pydantic are imported here; no IPython, httpx, pandas or
matplotlib (a test checks this).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below load on first use (see __getattr__)
    from .branching import (
        BRANCH_SUMMARY_PREAMBLE,
        NO_CONTENT_SUMMARY,
        BranchCollection,
        BranchPreparation,
        collect_entries_for_branch_summary,
        prepare_branch_entries,
    )
    from .compaction import (
        CompactionPreparation,
        CutPoint,
        PlannedMessage,
        find_cut_point,
        find_turn_start,
        prepare_compaction,
        serialize_conversation,
        valid_cut_points,
    )
    from .context import (
        BRANCH_SUMMARY_PREFIX,
        BRANCH_SUMMARY_SUFFIX,
        COMPACTION_SUMMARY_PREFIX,
        COMPACTION_SUMMARY_SUFFIX,
        UNSET,
        SessionContext,
        build_session_context,
        convert_to_llm,
    )
    from .entries import Entry
    from .fileops import FileOperations, format_file_operations
    from .migrate import migrate_values
    from .operations import (
        compact,
        compaction_due,
        load_compaction_settings,
        navigate,
        plan_compaction,
    )
    from .paths import agent_dir, encode_cwd, session_file_name, sessions_dir_for, sessions_root
    from .reports import BranchReport, CompactionReport
    from .session import Session
    from .summarize import ExtractiveSummarizer, ModelSummarizer, Summarizer
    from .target import DEFAULT_PI, Pi, PiLike
    from .tokens import (
        CompactionSettings,
        ContextEstimate,
        estimate_context_tokens,
        estimate_projected_tokens,
        estimate_tokens,
        should_compact,
        tokens_by_role,
    )
    from .tree import Problem, SessionIndex, TreeNode

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "DEFAULT_PI",
    "NO_CONTENT_SUMMARY",
    "UNSET",
    "BranchCollection",
    "BranchPreparation",
    "BranchReport",
    "CompactionPreparation",
    "CompactionReport",
    "CompactionSettings",
    "ContextEstimate",
    "CutPoint",
    "Entry",
    "ExtractiveSummarizer",
    "FileOperations",
    "ModelSummarizer",
    "Pi",
    "PiLike",
    "PlannedMessage",
    "Problem",
    "Session",
    "SessionContext",
    "SessionIndex",
    "Summarizer",
    "TreeNode",
    "agent_dir",
    "build_session_context",
    "collect_entries_for_branch_summary",
    "compact",
    "compaction_due",
    "convert_to_llm",
    "encode_cwd",
    "estimate_context_tokens",
    "estimate_projected_tokens",
    "estimate_tokens",
    "find_cut_point",
    "find_turn_start",
    "format_file_operations",
    "load_compaction_settings",
    "migrate_values",
    "navigate",
    "plan_compaction",
    "prepare_branch_entries",
    "prepare_compaction",
    "serialize_conversation",
    "session_file_name",
    "sessions_dir_for",
    "sessions_root",
    "should_compact",
    "tokens_by_role",
    "valid_cut_points",
]


#: Where each public name lives: importing ``pinb.core`` (or one of its modules, which
#: runs this file first) stays cheap, and a command that needs two functions loads two
#: modules, not the whole core.
_HOMES: dict[str, str] = {
    "BRANCH_SUMMARY_PREAMBLE": "branching",
    "BRANCH_SUMMARY_PREFIX": "context",
    "BRANCH_SUMMARY_SUFFIX": "context",
    "BranchCollection": "branching",
    "BranchPreparation": "branching",
    "BranchReport": "reports",
    "COMPACTION_SUMMARY_PREFIX": "context",
    "COMPACTION_SUMMARY_SUFFIX": "context",
    "CompactionPreparation": "compaction",
    "CompactionReport": "reports",
    "CompactionSettings": "tokens",
    "ContextEstimate": "tokens",
    "CutPoint": "compaction",
    "DEFAULT_PI": "target",
    "Entry": "entries",
    "ExtractiveSummarizer": "summarize",
    "FileOperations": "fileops",
    "ModelSummarizer": "summarize",
    "NO_CONTENT_SUMMARY": "branching",
    "Pi": "target",
    "PiLike": "target",
    "PlannedMessage": "compaction",
    "Problem": "tree",
    "Session": "session",
    "SessionContext": "context",
    "SessionIndex": "tree",
    "Summarizer": "summarize",
    "TreeNode": "tree",
    "UNSET": "context",
    "agent_dir": "paths",
    "build_session_context": "context",
    "collect_entries_for_branch_summary": "branching",
    "compact": "operations",
    "compaction_due": "operations",
    "convert_to_llm": "context",
    "encode_cwd": "paths",
    "estimate_context_tokens": "tokens",
    "estimate_projected_tokens": "tokens",
    "estimate_tokens": "tokens",
    "find_cut_point": "compaction",
    "find_turn_start": "compaction",
    "format_file_operations": "fileops",
    "load_compaction_settings": "operations",
    "migrate_values": "migrate",
    "navigate": "operations",
    "plan_compaction": "operations",
    "prepare_branch_entries": "branching",
    "prepare_compaction": "compaction",
    "serialize_conversation": "compaction",
    "session_file_name": "paths",
    "sessions_dir_for": "paths",
    "sessions_root": "paths",
    "should_compact": "tokens",
    "tokens_by_role": "tokens",
    "valid_cut_points": "compaction",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
