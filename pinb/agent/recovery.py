"""Turns that fail: retry policy and pauses, hiding failed attempts, tool calls that never ran.

As in Pi 1.6 (spec addendum §6.6, §10): a failed reply stays in the file and is hidden
from the model with a ``context_edit`` whose replacement is ``null``, together with the
tool results of its calls; a call that never ran still gets a result, so no saved tool
call is left without one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterable
from typing import Any

from ..core import Session
from ..core.file.paths import read_settings
from ..core.format.entries import Entry
from ..core.format.target import Pi
from ..errors import PinbError
from ..llm.providers.retry import RetryPolicy, is_retryable_error
from ..llm.types import CancelToken, Done

__all__ = [
    "ABORTED_TEXT",
    "can_hide",
    "hide",
    "is_retryable",
    "load_retry_policy",
    "pause",
    "results_for_unrun_calls",
]

log = logging.getLogger("pinb.agent")

#: The result of a call that never started because the run was stopped (Pi's wording).
ABORTED_TEXT = "Operation aborted"
_EDITABLE = ("user", "assistant", "toolResult")


def load_retry_policy(cwd: str | os.PathLike[str] | None = None) -> RetryPolicy:
    """Pi's ``retry`` settings: ``<agentDir>/settings.json`` overlaid by ``<cwd>/.pi/settings.json``.

    Keys as Pi writes them: ``enabled``, ``maxRetries`` (3), ``baseDelayMs`` (2000),
    ``maxAgentDelayMs`` (60000).
    """
    merged: dict[str, Any] = {}
    for data in read_settings(cwd):
        if isinstance(data.get("retry"), dict):
            merged.update(data["retry"])
    return RetryPolicy.from_settings(merged)


def is_retryable(done: Done) -> bool:
    """Whether a failed reply is worth sending again.

    The HTTP adapters know more than the error text (the status, whether the server
    rejected the request as invalid, whether our side could not send it), so their
    verdict wins; other models are judged by the text, as Pi does.
    """
    if done.overflow or done.stop_reason != "error":
        return False
    if done.retryable is not None:
        return done.retryable
    return is_retryable_error(done.message)


async def pause(delay: float, token: CancelToken, policy: RetryPolicy) -> bool:
    """Wait ``delay`` seconds with ``policy.sleep``; False as soon as ``token`` is cancelled."""
    loop = asyncio.get_running_loop()
    cancelled = asyncio.Event()

    def wake() -> None:
        loop.call_soon_threadsafe(cancelled.set)

    remove = token.add_callback(wake)
    sleeper = asyncio.ensure_future(policy.sleep(delay))
    watcher = asyncio.ensure_future(cancelled.wait())
    try:
        await asyncio.wait({sleeper, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        remove()
        for task in (sleeper, watcher):
            task.cancel()
    return not token.cancelled


def results_for_unrun_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Tool results for the calls of a failed or aborted reply, which never run.

    A reply cut inside a call's arguments holds a call no tool should run; Pi 1.x would
    leave it without a result. These results close each call in the file (and are hidden
    with the reply, so the model never sees half a call).
    """
    stop = message.get("stopReason")
    if stop == "aborted":
        text = ABORTED_TEXT
    else:
        reason = str(message.get("errorMessage") or "the reply failed").splitlines()[0][:300]
        text = f"Not run: the reply failed before the call was complete ({reason})"
    results: list[dict[str, Any]] = []
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            results.append(
                {
                    "role": "toolResult",
                    "toolCallId": block.get("id"),
                    "toolName": block.get("name"),
                    "content": [{"type": "text", "text": text}],
                    "details": {},
                    "isError": True,
                    "timestamp": int(time.time() * 1000),
                }
            )
    return results


def can_hide(session: Session) -> bool:
    """Context edits exist from Pi 1.x on; a session kept for v0.58.3 cannot hold them."""
    return session.pi >= Pi.V1_6


def hide(session: Session, entries: Iterable[Entry]) -> list[Entry]:
    """Append ``context_edit`` null entries for ``entries`` not hidden yet (Pi 1.x only)."""
    if not can_hide(session):
        return []
    context = session.build_context()
    saved = []
    for entry in entries:
        editable = (entry.type == "message" and entry.role in _EDITABLE) or (
            entry.type == "custom_message"
        )
        edit = context.edit_of(entry.id)
        if not editable or (edit is not None and edit.raw.get("replacement") is None):
            continue
        try:
            saved.append(session.append_context_edit(str(entry.id), None))
        except PinbError as exc:  # hiding is a courtesy to the next request, never fatal
            log.info("could not hide entry %s: %s", entry.id, exc)
    return saved
