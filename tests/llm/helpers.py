"""Helpers for the LLM tests: a deadline for every coroutine, a recorder of retry sleeps, a user message."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from pinb.testing import messages

#: Every test coroutine runs under this deadline, so a hang fails instead of blocking CI.
DEADLINE = 15.0


SPECS = {"openai": "openai/gpt-4o", "anthropic": "anthropic/claude-sonnet-4-5"}


def arun(coro: Coroutine[Any, Any, Any], timeout: float = DEADLINE) -> Any:
    """Run a coroutine to completion with a deadline."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


class SleepRecorder:
    """An injected retry sleep that records the delays and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


def user(text: str, ts: int = 1) -> dict[str, Any]:
    """A Pi user message with one text block."""
    return messages.user(text, ts=ts)
