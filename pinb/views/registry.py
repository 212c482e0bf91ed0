"""Fills :mod:`pinb.display`: how each of pinb's results is shown.

The results live below (core, analysis) and carry data only; this module registers their
renderers by the types' dotted names, so nothing here imports pandas or the analysis
modules until a value is shown. :mod:`pinb.display` imports :mod:`pinb.views` (and so
this module) by name the first time any value is displayed.
"""

from __future__ import annotations

from typing import Any

from ..display import register

__all__ = ["register_views"]


def _session(session: Any, include: Any, exclude: Any) -> dict[str, Any]:
    from .session import session_mimebundle

    return session_mimebundle(session, include, exclude)


def _compaction_report(report: Any, include: Any, exclude: Any) -> dict[str, Any]:
    from .compaction.view import CompactionView

    bundle: dict[str, Any] = CompactionView(report)._repr_mimebundle_(include, exclude)
    return bundle


def _comparison_text(value: Any) -> str:
    from .compare import comparison_text

    return comparison_text(value)


def _comparison_html(value: Any) -> str:
    from .compare import comparison_html

    return comparison_html(value)


def _ledger_text(value: Any) -> str:
    from .compaction.ledger import ledger_text

    return ledger_text(value)


def _ledger_html(value: Any) -> str:
    from .compaction.ledger import ledger_html

    return ledger_html(value)


def _calibration_text(value: Any) -> str:
    from .compaction.ledger import calibration_text

    return calibration_text(value)


def _calibration_html(value: Any) -> str:
    from .compaction.ledger import calibration_html

    return calibration_html(value)


def _what_if_text(value: Any) -> str:
    from .compaction.ledger import what_if_text

    return what_if_text(value)


def _what_if_html(value: Any) -> str:
    from .compaction.ledger import what_if_html

    return what_if_html(value)


def _search_text(value: Any) -> str:
    text: str = value.to_text()
    return text


def _search_html(value: Any) -> str:
    from .search import search_html

    return search_html(value)


def _retention_text(value: Any) -> str:
    from .compaction.retention import retention_text

    return retention_text(value)


def _retention_html(value: Any) -> str:
    from .compaction.retention import RetentionView

    return RetentionView(value).to_html()


def _masking_text(value: Any) -> str:
    from .compaction.masking import masking_text

    return masking_text(value)


def _masking_html(value: Any) -> str:
    from .compaction.masking import masking_html

    return masking_html(value)


def _given_back_text(value: Any) -> str:
    from .compaction.given_back import given_back_text

    return given_back_text(value)


def _given_back_html(value: Any) -> str:
    from .compaction.given_back import given_back_html

    return given_back_html(value)


def register_views() -> None:
    """Register every result type's renderer (run once, when :mod:`pinb.views` loads)."""
    register("pinb.core.session.Session", bundle=_session)
    register("pinb.core.compaction.reports.CompactionReport", bundle=_compaction_report)
    register("pinb.core.compaction.masking.MaskReport", text=_masking_text, html=_masking_html)
    register("pinb.analysis.compare.BranchComparison", text=_comparison_text, html=_comparison_html)
    register(
        "pinb.analysis.compaction.ledger.CompactionLedger", text=_ledger_text, html=_ledger_html
    )
    register(
        "pinb.analysis.compaction.calibration.Calibration",
        text=_calibration_text,
        html=_calibration_html,
    )
    register("pinb.analysis.compaction.whatif.WhatIf", text=_what_if_text, html=_what_if_html)
    register("pinb.analysis.searching.hits.SearchResults", text=_search_text, html=_search_html)
    register(
        "pinb.analysis.retention.report.RetentionReport", text=_retention_text, html=_retention_html
    )
    register(
        "pinb.core.compaction.uncompact.GivenBack", text=_given_back_text, html=_given_back_html
    )


register_views()
