"""The agent: a loop that streams model turns, runs tools and appends to a Pi session."""

from __future__ import annotations

from .events import (
    AgentEnd,
    AgentEvent,
    CompactionDone,
    EntrySaved,
    ModelEvent,
    ToolEnd,
    ToolStart,
    TurnStart,
)
from .loop import Agent, AgentConfig
from .prompt import build_system_prompt, context_files
from .tool import Tool, ToolContext, ToolResult

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentEnd",
    "AgentEvent",
    "CompactionDone",
    "EntrySaved",
    "ModelEvent",
    "Tool",
    "ToolContext",
    "ToolEnd",
    "ToolResult",
    "ToolStart",
    "TurnStart",
    "build_system_prompt",
    "context_files",
]
