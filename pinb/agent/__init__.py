"""The agent: a loop that streams model turns, runs tools and appends to a Pi session."""

from __future__ import annotations

from .events import (
    AgentEnd,
    AgentEvent,
    CompactionDone,
    EntrySaved,
    MaskingDone,
    ModelEvent,
    Notice,
    RetryScheduled,
    ToolEnd,
    ToolStart,
    TurnStart,
    UsageEstimated,
)
from .loop import Agent, AgentConfig
from .prompt import build_system_prompt, context_files, prompt_sections
from .recovery import load_retry_policy
from .tool import Tool, ToolContext, ToolResult

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentEnd",
    "AgentEvent",
    "CompactionDone",
    "EntrySaved",
    "MaskingDone",
    "ModelEvent",
    "Notice",
    "RetryScheduled",
    "Tool",
    "ToolContext",
    "ToolEnd",
    "ToolResult",
    "ToolStart",
    "TurnStart",
    "UsageEstimated",
    "build_system_prompt",
    "context_files",
    "load_retry_policy",
    "prompt_sections",
]
