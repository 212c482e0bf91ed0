"""Helpers for the memory tests: stub summarizers and messages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinb.testing import messages


class StubSummarizer:
    """The compaction summarizer protocol, answering from a script and recording its calls."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def summarize(
        self,
        serialized_conversation: str,
        *,
        previous_summary: str | None,
        instructions: str | None,
        max_tokens: int,
    ) -> str:
        self.calls.append(
            {
                "text": serialized_conversation,
                "previous_summary": previous_summary,
                "instructions": instructions,
                "max_tokens": max_tokens,
            }
        )
        return self.answers.pop(0)


class FailingSummarizer:
    """A summarizer whose model is down."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, serialized_conversation: str, **_: Any) -> str:
        self.calls += 1
        raise ConnectionError("model endpoint unreachable")


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return messages.user(text, ts=ts)


def assistant(text: str, ts: int = 2) -> dict[str, Any]:
    return messages.assistant(text, usage=messages.usage(15, input_tokens=10, cost=0), ts=ts)


SessionWriter = Callable[..., Path]
