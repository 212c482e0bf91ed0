"""The pure session core: Pi's file format, tree, context, tokens and compaction planning.

Only the standard library and pydantic are imported here (and orjson and msgspec when
installed); no IPython, httpx, pandas or matplotlib (a test checks this).

The sub-packages and modules form layers, each importing only those below it (module-level,
in-function and ``TYPE_CHECKING`` imports alike)::

    opening · describe       a file a person named; an entry's kind, preview and size
    compaction/              plan, span, branch summaries, summarize, operations (compact, navigate)
    forks                    copying sessions into new files (fork, clone, fork from elsewhere)
    session · appends        ``Session``: the entries, the leaf, appends, navigation
    file/                    reading, writing, locks and turns, listing, paths, the trash
    context/                 the context the model sees, the system prompt, tokens, accounting
    format/                  entries, Pi's models, migration, field types, the tree, problems
    js/ · gc                 JavaScript's JSON, lengths and dates; the collector's pause

``Session``'s conveniences over what is built on it (:meth:`~pinb.core.session.Session.fork`,
``clone``, ``compact``, ``navigate``, ``compare``) load their modules by name when called:
the one way back, listed in ``tests/test_layers.py``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below load on first use (see __getattr__)
    from .compaction.branch import (
        BRANCH_SUMMARY_PREAMBLE,
        NO_CONTENT_SUMMARY,
        BranchCollection,
        BranchPreparation,
        collect_entries_for_branch_summary,
        prepare_branch_entries,
    )
    from .compaction.fileops import FileOperations, format_file_operations
    from .compaction.lost import LostFacts, lost_facts
    from .compaction.operations import (
        compact,
        compaction_due,
        load_compaction_settings,
        navigate,
        plan_compaction,
    )
    from .compaction.plan import (
        CompactionPreparation,
        CutPoint,
        PlannedMessage,
        find_cut_point,
        find_turn_start,
        prepare_compaction,
        serialize_conversation,
        valid_cut_points,
    )
    from .compaction.reports import BranchReport, CompactionReport
    from .compaction.summarize import ExtractiveSummarizer, ModelSummarizer, Summarizer
    from .compaction.uncompact import GivenBack, uncompact
    from .context.build import (
        BRANCH_SUMMARY_PREFIX,
        BRANCH_SUMMARY_SUFFIX,
        COMPACTION_SUMMARY_PREFIX,
        COMPACTION_SUMMARY_SUFFIX,
        UNSET,
        SessionContext,
        build_session_context,
        convert_to_llm,
    )
    from .context.tokens import (
        CompactionSettings,
        ContextEstimate,
        estimate_context_tokens,
        estimate_projected_tokens,
        estimate_tokens,
        should_compact,
        tokens_by_role,
    )
    from .file.paths import (
        agent_dir,
        encode_cwd,
        session_file_name,
        sessions_dir_for,
        sessions_root,
    )
    from .format.entries import Entry
    from .format.migrate import migrate_values
    from .format.problems import Problem
    from .format.target import DEFAULT_PI, Pi, PiLike
    from .format.tree import SessionIndex, TreeNode
    from .session import Session

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
    "GivenBack",
    "LostFacts",
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
    "lost_facts",
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
    "uncompact",
    "valid_cut_points",
]


#: Where each public name lives: importing ``pinb.core`` (or one of its modules, which
#: runs this file first) stays cheap, and a command that needs two functions loads two
#: modules, not the whole core.
_HOMES: dict[str, str] = {
    "BRANCH_SUMMARY_PREAMBLE": "compaction.branch",
    "BRANCH_SUMMARY_PREFIX": "context.build",
    "BRANCH_SUMMARY_SUFFIX": "context.build",
    "BranchCollection": "compaction.branch",
    "BranchPreparation": "compaction.branch",
    "BranchReport": "compaction.reports",
    "COMPACTION_SUMMARY_PREFIX": "context.build",
    "COMPACTION_SUMMARY_SUFFIX": "context.build",
    "CompactionPreparation": "compaction.plan",
    "CompactionReport": "compaction.reports",
    "CompactionSettings": "context.tokens",
    "ContextEstimate": "context.tokens",
    "CutPoint": "compaction.plan",
    "DEFAULT_PI": "format.target",
    "Entry": "format.entries",
    "ExtractiveSummarizer": "compaction.summarize",
    "FileOperations": "compaction.fileops",
    "GivenBack": "compaction.uncompact",
    "LostFacts": "compaction.lost",
    "ModelSummarizer": "compaction.summarize",
    "NO_CONTENT_SUMMARY": "compaction.branch",
    "Pi": "format.target",
    "PiLike": "format.target",
    "PlannedMessage": "compaction.plan",
    "Problem": "format.problems",
    "Session": "session",
    "SessionContext": "context.build",
    "SessionIndex": "format.tree",
    "Summarizer": "compaction.summarize",
    "TreeNode": "format.tree",
    "UNSET": "context.build",
    "agent_dir": "file.paths",
    "build_session_context": "context.build",
    "collect_entries_for_branch_summary": "compaction.branch",
    "compact": "compaction.operations",
    "compaction_due": "compaction.operations",
    "convert_to_llm": "context.build",
    "encode_cwd": "file.paths",
    "estimate_context_tokens": "context.tokens",
    "estimate_projected_tokens": "context.tokens",
    "estimate_tokens": "context.tokens",
    "find_cut_point": "compaction.plan",
    "find_turn_start": "compaction.plan",
    "format_file_operations": "compaction.fileops",
    "load_compaction_settings": "compaction.operations",
    "lost_facts": "compaction.lost",
    "migrate_values": "format.migrate",
    "navigate": "compaction.operations",
    "plan_compaction": "compaction.operations",
    "prepare_branch_entries": "compaction.branch",
    "prepare_compaction": "compaction.plan",
    "serialize_conversation": "compaction.plan",
    "session_file_name": "file.paths",
    "sessions_dir_for": "file.paths",
    "sessions_root": "file.paths",
    "should_compact": "context.tokens",
    "tokens_by_role": "context.tokens",
    "uncompact": "compaction.uncompact",
    "valid_cut_points": "compaction.plan",
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
