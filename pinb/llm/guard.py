"""Turning a cancel token into the cancellation of the one await a request is parked in."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable
from typing import Any, TypeVar

from pinb.llm.types import CancelToken

__all__ = ["Guard", "GuardAborted"]

T = TypeVar("T")


class GuardAborted(Exception):
    """The token was cancelled while (or before) we waited."""


class Guard:
    """Turns a `CancelToken` into a cancellation of the await we are parked in.

    Only our own awaits are armed, so a consumer awaiting something else between two
    events is never cancelled by us; the flag is checked when it comes back.
    """

    def __init__(self, token: CancelToken):
        self.token = token
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[Any] | None = asyncio.current_task()
        self._armed = False
        self._fired = False
        self._remove = token.add_callback(self._on_cancel)

    def _on_cancel(self) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop has nothing left to interrupt
            self._loop.call_soon_threadsafe(self._fire)

    def _fire(self) -> None:
        if self._armed and not self._fired and self._task is not None:
            self._fired = True
            self._task.cancel()

    def check(self) -> None:
        if self.token.cancelled:
            raise GuardAborted

    async def run(self, awaitable: Awaitable[T], until: float | None = None) -> T:
        """Await ``awaitable``; a cancel raises `GuardAborted`, and loop time ``until``
        (``None``: never) raises `TimeoutError`."""
        if self.token.cancelled:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise GuardAborted
        self._task = asyncio.current_task()
        self._armed = True
        try:
            if until is None:
                return await awaitable
            async with asyncio.timeout_at(until):
                return await awaitable
        except asyncio.CancelledError:
            if self._fired:
                self._fired = False
                if self._task is not None:
                    self._task.uncancel()
                raise GuardAborted from None
            raise
        finally:
            self._armed = False

    def close(self) -> None:
        self._remove()
