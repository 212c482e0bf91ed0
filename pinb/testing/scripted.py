"""`ScriptedLLM` for tests: it lives in :mod:`pinb.llm.providers.scripted` (the offline demo model is one)."""

from __future__ import annotations

from ..llm.providers.scripted import (
    OVERFLOW_ERROR,
    Reply,
    ScriptedCall,
    ScriptedLLM,
    ScriptExhaustedError,
)

__all__ = ["OVERFLOW_ERROR", "Reply", "ScriptExhaustedError", "ScriptedCall", "ScriptedLLM"]
