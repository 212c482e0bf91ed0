"""Running one turn's tool calls: read-only ones together, each call answered by one saved result."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..core import Session
from ..llm.providers.assemble import INVALID_ARGUMENTS_KEY
from ..llm.types import CancelToken
from .events import AgentEvent, ToolEnd, ToolStart
from .recovery import ABORTED_TEXT
from .tool import Tool, ToolContext, ToolResult

__all__ = [
    "ABANDON_GRACE",
    "READ_ONLY_TOOLS",
    "run_abandonable",
    "run_tool_calls",
    "tool_result_message",
]

log = logging.getLogger("pinb.agent")

#: Seconds a stopped tool may take to notice the stop before its call is answered without it.
ABANDON_GRACE = 2.0
#: Tools that only look: several of them may run at the same time.
READ_ONLY_TOOLS = frozenset({"read", "ls", "grep", "find", "memory_recall", "recall"})


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
        if INVALID_ARGUMENTS_KEY in arguments:  # refused while parsing (JSON nested too deep)
            return ToolResult.error(
                f"Invalid arguments for tool {name}: {arguments[INVALID_ARGUMENTS_KEY]}. "
                "Call the tool again with plain arguments."
            )
        missing = [k for k in tool.parameters.get("required", []) if k not in arguments]
        if missing:
            return ToolResult.error(
                f"Invalid arguments for tool {name}: missing {', '.join(missing)}"
            )
        try:
            return await run_abandonable(tool.execute, arguments, context, token)
        except Exception as exc:  # a tool's failure is the model's information
            return ToolResult.error(f"{type(exc).__name__}: {exc}")

    # Consecutive read-only calls run together; anything that changes state runs alone. A
    # group is read-only when its first call is (no call joins a state-changing one), so
    # grouping stays linear in the calls.
    groups: list[list[dict[str, Any]]] = []
    for call in calls:
        if (
            groups
            and call.get("name") in READ_ONLY_TOOLS
            and groups[-1][0].get("name") in READ_ONLY_TOOLS
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


async def run_abandonable(
    execute: Callable[[dict[str, Any], ToolContext], ToolResult],
    arguments: dict[str, Any],
    context: ToolContext,
    token: CancelToken,
    grace: float = ABANDON_GRACE,
) -> ToolResult:
    """Run a tool on a daemon thread; after a stop, wait ``grace`` seconds, then stop waiting.

    Tools check the cancel token themselves; one stuck in a system call no token reaches
    (a read that waits on a device, a network file system) would otherwise hold the run,
    and Ctrl-C with it, for ever. Its call is then answered ``Operation aborted`` and the
    thread is left to end on its own (a daemon thread never keeps the kernel alive).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[ToolResult] = loop.create_future()

    def settle(result: ToolResult | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            assert result is not None
            future.set_result(result)

    def work() -> None:
        try:
            result = execute(arguments, context)
        except BaseException as exc:  # handed to the loop, which re-raises it there
            with contextlib.suppress(RuntimeError):  # the loop is already gone
                loop.call_soon_threadsafe(settle, None, exc)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=work, name="pinb-tool", daemon=True).start()
    stopped_at: float | None = None
    while True:
        done, _ = await asyncio.wait({future}, timeout=0.05)
        if done:
            return future.result()
        if token.cancelled:
            stopped_at = stopped_at or time.monotonic()
            if time.monotonic() - stopped_at >= grace:
                log.warning("a tool did not stop %.1f s after the run was stopped", grace)
                return ToolResult.error(ABORTED_TEXT)


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
