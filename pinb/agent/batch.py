"""Running one turn's tool calls: read-only ones together, each call answered by one saved result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..core import Session
from ..llm.types import CancelToken
from .events import AgentEvent, ToolEnd, ToolStart
from .recovery import ABORTED_TEXT
from .tool import Tool, ToolContext, ToolResult

__all__ = ["READ_ONLY_TOOLS", "run_tool_calls", "tool_result_message"]

#: Tools that only look: several of them may run at the same time.
READ_ONLY_TOOLS = frozenset({"read", "ls", "grep", "find", "memory_recall"})


async def run_tool_calls(
    tools: Sequence[Tool],
    calls: list[dict[str, Any]],
    session: Session,
    context: ToolContext,
    token: CancelToken,
) -> AsyncIterator[AgentEvent]:
    """Run a turn's tool calls (read-only ones concurrently) and save one result each.

    A call that has not started when the run is stopped gets Pi's ``Operation aborted``
    result, so every call of the batch is answered in the file.
    """
    by_name = {t.name: t for t in tools}

    async def execute(call: dict[str, Any]) -> ToolResult:
        if token.cancelled:  # checked first, as Pi does: no hook or tool runs after a stop
            return ToolResult.error(ABORTED_TEXT)
        name = str(call.get("name"))
        tool = by_name.get(name)
        if tool is None:
            return ToolResult.error(f"Tool {name} not found")
        arguments = call.get("arguments")
        if not isinstance(arguments, dict):
            return ToolResult.error(f"Invalid arguments for tool {name}: expected an object")
        missing = [k for k in tool.parameters.get("required", []) if k not in arguments]
        if missing:
            return ToolResult.error(
                f"Invalid arguments for tool {name}: missing {', '.join(missing)}"
            )
        try:
            return await asyncio.to_thread(tool.execute, arguments, context)
        except Exception as exc:  # a tool's failure is the model's information
            return ToolResult.error(f"{type(exc).__name__}: {exc}")

    # Consecutive read-only calls run together; anything that changes state runs alone.
    groups: list[list[dict[str, Any]]] = []
    for call in calls:
        if (
            groups
            and call.get("name") in READ_ONLY_TOOLS
            and all(c.get("name") in READ_ONLY_TOOLS for c in groups[-1])
        ):
            groups[-1].append(call)
        else:
            groups.append([call])
    for group in groups:
        for call in group:
            yield ToolStart(
                str(call.get("id")), str(call.get("name")), dict(call.get("arguments") or {})
            )
        results = await asyncio.gather(*(execute(call) for call in group))
        for call, result in zip(group, results, strict=True):
            entry = session.append_message(tool_result_message(call, result), validate=False)
            yield ToolEnd(str(call.get("id")), str(call.get("name")), result, entry)


def tool_result_message(call: dict[str, Any], result: ToolResult) -> dict[str, Any]:
    """A ``toolResult`` message in Pi's key order."""
    message: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call.get("id"),
        "toolName": call.get("name"),
        "content": result.content,
    }
    if result.details is not None:
        message["details"] = result.details
    message["isError"] = result.is_error
    message["timestamp"] = int(time.time() * 1000)
    return message
