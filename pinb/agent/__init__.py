"""The agent: a loop that streams model turns, runs tools and appends to a Pi session."""

from __future__ import annotations

from .tool import Tool, ToolContext, ToolResult

__all__ = ["Tool", "ToolContext", "ToolResult"]
