"""Helpers for testing code that uses pinb: a scripted model, a loopback LLM server, sessions.

``ScriptedLLM`` plays queued replies at the model seam (no HTTP); ``LLMServer`` is a real
HTTP server on 127.0.0.1 speaking the OpenAI and Anthropic wire formats, with faults on
request; ``generate_session`` writes realistic branchy Pi sessions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LLMServer", "Reply", "ScriptedLLM", "SessionShape", "generate_session"]


def __getattr__(name: str) -> Any:
    # Lazy: pinb.testing.conformance must stay importable without httpx.
    if name in ("ScriptedLLM", "Reply"):
        from . import scripted

        return getattr(scripted, name)
    if name == "LLMServer":
        from .llm_server import LLMServer

        return LLMServer
    if name in ("SessionShape", "generate_session"):
        from . import generate

        return getattr(generate, name)
    raise AttributeError(name)
