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
from .compact import compact, compaction_due, load_compaction_settings, navigate, plan_compaction
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
