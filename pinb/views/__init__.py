"""Views of sessions that display anywhere (``_repr_mimebundle_``), plus the ipywidgets explorer."""

# ``SessionExplorer``/``TreeWidget``, ``CompactionWidget`` (anywidget) and ``MemoryView`` are
# imported on first use, so the plain views work without ipywidgets installed.

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import registry  # noqa: F401  (fills pinb.display: how each result is shown)
from .breakdown import ContextBreakdown
from .compaction.context_chart import ContextChartView
from .compaction.masking import MaskingView
from .compaction.retention import RetentionView
from .compaction.view import CompactionView
from .context_path import ContextPathView
from .entry import EntryView
from .session import session_mimebundle
from .session_list import SessionListView
from .tree import TreeView

if TYPE_CHECKING:
    from .compaction_widget import CompactionWidget
    from .memory import MemoryView
    from .tree_widget import SessionExplorer, TreeWidget

__all__ = [
    "CompactionView",
    "CompactionWidget",
    "ContextBreakdown",
    "ContextChartView",
    "ContextPathView",
    "EntryView",
    "MaskingView",
    "MemoryView",
    "RetentionView",
    "SessionExplorer",
    "SessionListView",
    "TreeView",
    "TreeWidget",
    "session_mimebundle",
]


def __getattr__(name: str) -> Any:
    if name == "CompactionWidget":
        from .compaction_widget import CompactionWidget

        return CompactionWidget
    if name in ("SessionExplorer", "TreeWidget"):
        from . import tree_widget

        return getattr(tree_widget, name)
    if name == "MemoryView":
        from .memory import MemoryView

        return MemoryView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
