"""Moved to :mod:`pinb.llm.offline` (the offline demo model is an llm provider)."""

from __future__ import annotations

from ..llm.offline import DEMO_LABEL, OfflineDemoModel

__all__ = ["DEMO_LABEL", "OfflineDemoModel"]
