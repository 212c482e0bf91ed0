"""Many sessions as data: pandas frames, fork-aware totals, plots, dask, Parquet, a citable
search index, importers and exports."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "SessionCatalog",
    "UsageTotalsView",
    "compaction_ledger",
    "compactions_frame",
    "compare_branches",
    "entries_frame",
    "export_html",
    "export_ipynb",
    "export_markdown",
    "frame_of",
    "import_claude",
    "import_codex",
    "list_indexed",
    "messages_frame",
    "plot_branches",
    "plot_cost",
    "plot_tokens",
    "plot_tool_use",
    "search",
    "sessions_frame",
    "tool_calls_frame",
    "usage_calibration",
    "usage_totals",
    "what_if",
    "write_export",
    "write_parquet",
]

# Loaded on first use, so importing pinb.analysis (the CLI does) costs no pandas or matplotlib.
_HOMES = {
    "compactions_frame": "frames",
    "entries_frame": "frames",
    "messages_frame": "frames",
    "sessions_frame": "frames",
    "tool_calls_frame": "frames",
    "usage_totals": "totals",
    "frame_of": "parquet",
    "write_parquet": "parquet",
    "plot_branches": "plots",
    "plot_cost": "plots",
    "plot_tokens": "plots",
    "plot_tool_use": "plots",
    "export_html": "export",
    "export_ipynb": "export",
    "export_markdown": "export",
    "write_export": "export",
    "SessionCatalog": "searching.index",
    "list_indexed": "searching.index",
    "search": "searching.index",
    "import_claude": "importers",
    "import_codex": "importers",
    "compare_branches": "compare",
    "compaction_ledger": "compaction.ledger",
    "usage_calibration": "compaction.ledger",
    "what_if": "compaction.ledger",
}


#: Names that moved up to the views and stay here for old imports: loaded by name on first
#: use, so analysis never imports the views.
_MOVED = {"UsageTotalsView": "pinb.views.totals"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return getattr(importlib.import_module(_MOVED[name]), name)
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
