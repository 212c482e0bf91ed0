"""The tool seam: what the agent loop needs from a tool (built-in, memory, or the user's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["Tool", "ToolContext", "ToolResult"]


@dataclass
class ToolResult:
    """A tool's answer, shaped like Pi's ``toolResult`` message.

    ``content`` holds Pi content blocks (``{"type": "text", "text": ...}`` or images);
    ``details`` is tool-specific metadata that is stored but never sent to the model.
    """

    content: list[dict[str, Any]]
    details: Any = None
    is_error: bool = False

    @classmethod
    def text(cls, text: str, *, details: Any = None, is_error: bool = False) -> ToolResult:
        return cls([{"type": "text", "text": text}], details, is_error)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """An error result as Pi writes it: one text block and ``details: {}``."""
        return cls([{"type": "text", "text": message}], {}, True)


@dataclass
class ToolContext:
    """What a tool may use while it runs."""

    cwd: Path
    session: Any = None  # pinb.core.Session, when the run has one
    cancel: Any = None  # pinb.llm.CancelToken
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Tool(Protocol):
    """A tool the model can call.

    ``parameters`` is a JSON schema object; ``execute`` may raise, and the loop turns the
    exception into an error result (``isError: true``) as Pi does.
    """

    name: str
    description: str
    parameters: dict[str, Any]

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult: ...
