"""``SessionExplorer``: the interactive tree widget (anywidget); see :mod:`.tree_widget`."""

from __future__ import annotations

from .tree_widget import Fork, Navigate, SessionExplorer, TreeWidget

__all__ = ["Fork", "Navigate", "SessionExplorer", "TreeWidget"]
