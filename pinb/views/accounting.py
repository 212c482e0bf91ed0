"""One token account for every view: the window, where it came from, and how to show it.

The numbers come from :func:`pinb.core.context.accounting.context_usage`; this module only finds
the context window (given, or looked up for the session's model in the model registry,
never assumed) and writes the account the same way in every view, each figure labelled
with how it was made.
"""

from __future__ import annotations

from typing import Any

from ..core import CompactionSettings, Session, SessionContext
from ..core.context.accounting import ContextUsage, context_usage, thousands
from ..render.html import escape, gauge, style

__all__ = ["account", "resolve_window", "usage_html", "usage_rows"]


def resolve_window(
    context: SessionContext | None,
    context_window: int | None = None,
    window_source: str | None = None,
    *,
    session: Session | None = None,
) -> tuple[int | None, str]:
    """The window to show and where it came from, by the one rule
    (:func:`pinb.llm.window.resolve_window`): given, else the window ``session`` last ran
    with, else the model registry's entry for the context's recorded model.

    Without any of them, ``(None, "unknown")``: no view assumes a window.
    """
    from ..llm.window import resolve_window as resolve  # the LLM layer loads only when needed

    found = resolve(
        setting=context_window, setting_source=window_source, session=session, context=context
    )
    return found.tokens, found.source


def account(
    context: SessionContext,
    *,
    context_window: int | None = None,
    window_source: str | None = None,
    settings: CompactionSettings | None = None,
    session: Session | None = None,
    fit: bool = True,
) -> ContextUsage:
    """:func:`~pinb.core.context.accounting.context_usage` with the window resolved as above (and
    the note when the session's own compactions contradict the window it assumes)."""
    from ..llm.window import resolve_window as resolve

    found = resolve(
        setting=context_window, setting_source=window_source, session=session, context=context
    )
    return context_usage(
        context,
        window=found.tokens,
        window_source=found.source,
        settings=settings,
        window_note=found.note,
        fit=fit,
    )


def usage_rows(usage: ContextUsage) -> list[tuple[str, str, str]]:
    """``(figure, value, how it was made)`` rows of an account, for tables and text."""
    rows = [
        ("context size", f"{thousands(usage.tokens)} tokens", usage.measure_label),
        (
            "estimate of every message",
            f"{thousands(usage.estimated_tokens)} tokens",
            f"chars/4 of the {usage.messages:,} messages the model is sent",
        ),
    ]
    if usage.window:
        rows.append(
            ("window", f"{thousands(usage.window)} tokens", f"from the {usage.window_source}")
        )
        rows.append(
            (
                "share in use",
                f"{usage.share:.1%}" if usage.share is not None else "—",
                "context size ÷ window",
            )
        )
        rows.append(
            (
                "compaction threshold",
                f"{thousands(usage.threshold)} tokens",
                f"window − reserve {thousands(usage.settings.reserve_tokens)}",
            )
        )
    else:
        rows.append(("window", "unknown", "no window given and no model the registry knows"))
    return rows


def usage_html(usage: ContextUsage) -> str:
    """The account in one block: the figure and how it was made, the share of the window
    as a text gauge, the threshold, and the chars/4 estimate beside it."""
    head = (
        f"<b>{thousands(usage.tokens)} tokens</b> in the context "
        f"<span{style('muted')}>({escape(usage.measure_label)})</span>"
    )
    if usage.window and usage.share is not None:
        tone = "error" if usage.over_threshold else "ok"
        state = "over the compaction threshold" if usage.over_threshold else "below it"
        line = (
            f"<div><span{style('gauge')}>{gauge(usage.share)}</span> "
            f"<b>{usage.share:.1%}</b> of a {thousands(usage.window)}-token window "
            f"<span{style('muted')}>({escape(usage.window_source)})</span> · compaction "
            f"threshold {thousands(usage.threshold)} · <span{style(tone)}>{state}</span></div>"
        )
    else:
        line = (
            f"<div{style('muted')}>window unknown: pass context_window= (or set the "
            "session's model) to see the share in use</div>"
        )
    estimate = (
        f"<div{style('muted')}>chars/4 estimate of every message the model is sent: "
        f"{thousands(usage.estimated_tokens)} tokens in {usage.messages:,} messages</div>"
    )
    notes = "".join(f"<div{style('error')}>{escape(note)}</div>" for note in usage.notes())
    return f"<div>{head}</div>{line}{estimate}{notes}"


def describe(usage: ContextUsage) -> str:
    """The core's one-line account (for ``text/plain``)."""
    text: Any = usage.describe()
    return str(text)
