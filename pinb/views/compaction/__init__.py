"""The views of compaction: what one kept and summarized, what pinb masked, kept and gave back,
what it lost fact by fact, the ledger of all of them, and the context over requests, drawn.

``view`` (:class:`CompactionView`), ``masking``, ``given_back``, ``retention``, ``ledger``,
``context_chart``: each renders a result of the core or analysis and computes nothing.
"""

from __future__ import annotations

from .context_chart import ContextChartView
from .masking import MaskingView
from .retention import RetentionView
from .view import CompactionView

__all__ = ["CompactionView", "ContextChartView", "MaskingView", "RetentionView"]
