"""The pure session core: Pi's file format, tree, context, tokens and compaction planning.

Only the standard library and pydantic are imported here; no IPython, httpx, pandas or
matplotlib (a test checks this).
"""

from __future__ import annotations

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
from .paths import agent_dir, encode_cwd, session_file_name, sessions_dir_for, sessions_root
from .session import Session
from .tokens import (
    CompactionSettings,
    ContextEstimate,
    estimate_context_tokens,
    estimate_tokens,
    should_compact,
)
from .tree import Problem, SessionIndex, TreeNode

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "NO_CONTENT_SUMMARY",
    "UNSET",
    "BranchCollection",
    "BranchPreparation",
    "CompactionPreparation",
    "CompactionSettings",
    "ContextEstimate",
    "CutPoint",
    "Entry",
    "FileOperations",
    "PlannedMessage",
    "Problem",
    "Session",
    "SessionContext",
    "SessionIndex",
    "TreeNode",
    "agent_dir",
    "build_session_context",
    "collect_entries_for_branch_summary",
    "convert_to_llm",
    "encode_cwd",
    "estimate_context_tokens",
    "estimate_tokens",
    "find_cut_point",
    "find_turn_start",
    "format_file_operations",
    "migrate_values",
    "prepare_branch_entries",
    "prepare_compaction",
    "serialize_conversation",
    "session_file_name",
    "sessions_dir_for",
    "sessions_root",
    "should_compact",
    "valid_cut_points",
]
