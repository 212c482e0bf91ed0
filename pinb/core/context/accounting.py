"""One token account of a context: every figure a view or command shows, and how it was made.

Pi judges a context's size with one number (last reported usage plus a chars/4 estimate
of what follows it, or the pure estimate where no usage is trustworthy). Views also want
the pure chars/4 estimate of every message, its split by role, the window, the threshold
and the share in use. :func:`context_usage` computes them all from one context, so the
cell footer, ``%pi context``, ``pinb tokens`` and every view print the same numbers for
the same measure, each labelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from ..format.target import Pi
from .build import SessionContext, current_system_message
from .tokens import CompactionSettings, estimate_tokens, estimate_trigger_tokens

__all__ = [
    "ESTIMATE",
    "USAGE_PLUS_ESTIMATE",
    "ContextUsage",
    "context_usage",
    "estimated_by_role",
    "saved_share",
    "thousands",
]

#: How :attr:`ContextUsage.tokens` was made.
USAGE_PLUS_ESTIMATE: Final = "usage+estimate"
ESTIMATE: Final = "estimate"


def thousands(value: float | None) -> str:
    """``12,345`` (``—`` for an unknown value)."""
    return "—" if value is None else f"{value:,.0f}"


def saved_share(saved: float, before: float | None) -> str:
    """``9,534 (65%)``: what a compaction or a masking removed, and its share of the context
    before it (one measure on both sides); every view's words for it."""
    share = f" ({saved / before:.0%})" if before else ""
    return f"{thousands(saved)}{share}"


@dataclass(frozen=True)
class ContextUsage:
    """The size of a context, every way pinb shows it.

    Attributes
    ----------
    tokens:
        The figure the compaction trigger compares with the threshold, pinb's and Pi's
        alike (:func:`~pinb.core.context.tokens.estimate_trigger_tokens`): the last
        trustworthy reported usage plus chars/4 for the messages after it, or
        (``measure == "estimate"``) chars/4 of every message, each system message counted.
        Pi 1.x distrusts usage older than the latest context edit or compaction.
    measure:
        ``"usage+estimate"`` or ``"estimate"``.
    reported_tokens / trailing_tokens / reported_index:
        The two parts of ``tokens`` and the message whose usage was used.
    estimated_tokens:
        chars/4 of every message (what the model is sent, estimated); equals the sum of
        :attr:`by_role`. Compare before and after a compaction with this figure.
    by_role:
        ``estimated_tokens`` split by message role.
    messages:
        Number of messages in the context.
    window / window_source:
        The context window and where it came from (``"setting"``, ``"model registry"``,
        ``"server"``, ``"assumed"``, or ``"unknown"`` with no window).
    settings:
        The compaction settings in force, already fitted to the window.
    window_note:
        What contradicts the window, if anything (the session's own compactions ran far
        below it: :func:`pinb.llm.window.compaction_evidence`).
    fitted:
        Whether ``settings`` were fitted to the window as pinb's agent fits them
        (``False``: the settings as they are, as the user's own Pi compacts).
    """

    tokens: int
    measure: str
    reported_tokens: int
    trailing_tokens: int
    reported_index: int | None
    estimated_tokens: int
    by_role: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    window: int | None = None
    window_source: str = "unknown"
    settings: CompactionSettings = field(default_factory=CompactionSettings)
    window_note: str = ""
    #: What the next request adds before it is sent (another engine's system prompt), said
    #: by whoever knows it: the figure above is the file's, this is the next request's.
    next_note: str = ""
    fitted: bool = True

    @property
    def threshold(self) -> int | None:
        """Size above which automatic compaction starts (``None`` without a window)."""
        if not self.window:
            return None
        return int(self.settings.threshold(self.window))

    @property
    def share(self) -> float | None:
        """Share of the window in use (``tokens / window``)."""
        return self.tokens / self.window if self.window else None

    @property
    def over_threshold(self) -> bool:
        """Whether Pi would compact now (``tokens > threshold``, compaction enabled)."""
        threshold = self.threshold
        return threshold is not None and self.settings.enabled and self.tokens > threshold

    @property
    def covered_tokens(self) -> int:
        """chars/4 of the messages the reported usage covers (all but the later ones)."""
        return max(0, self.estimated_tokens - self.trailing_tokens)

    @property
    def usage_implausible(self) -> bool:
        """The reported usage is under half the chars/4 estimate of what it covered.

        A tokenizer never counts a text at less than half its chars/4 estimate; a server
        that reports less counts something else (a stand-in, a proxy that forgets the
        prompt). Pi takes the report as it is, and so does :attr:`tokens`; the views say so.
        """
        return self.measure == USAGE_PLUS_ESTIMATE and self.reported_tokens * 2 < (
            self.covered_tokens
        )

    def notes(self) -> list[str]:
        """What the figures cannot say alone: a report far below the estimate, and a window
        the session's own compactions contradict."""
        notes: list[str] = []
        if self.usage_implausible:
            notes.append(
                f"the reported usage is far below chars/4 of the messages it covered "
                f"({thousands(self.covered_tokens)}): the server counts differently, and "
                "compaction goes by its report all the same, as in Pi"
            )
        if self.window and self.window_note:
            notes.append(self.window_note)
        if self.next_note:
            notes.append(self.next_note)
        return notes

    @property
    def measure_label(self) -> str:
        """How :attr:`tokens` was made, in words."""
        if self.measure == USAGE_PLUS_ESTIMATE:
            return (
                f"last reported usage {thousands(self.reported_tokens)} + "
                f"{thousands(self.trailing_tokens)} estimated for later messages"
            )
        return "chars/4 estimate: no reported usage to trust"

    def describe(self) -> str:
        """One line: the figure, how it was made, the share of the window, the threshold."""
        text = f"{thousands(self.tokens)} tokens ({self.measure_label})"
        if self.window:
            share = self.share or 0.0
            shown = "<0.1%" if 0 < share < 0.001 else f"{share:.1%}"
            text += f" · {shown} of a {thousands(self.window)} window ({self.window_source})"
            threshold = self.threshold or 0
            fitted = self.settings.fit_window(self.window)
            if not self.settings.enabled:
                text += " · automatic compaction off"
            elif threshold > 0 and not self.fitted and fitted != self.settings:
                # Pi's own threshold, beside the one pinb's agent would use on this window.
                text += (
                    f" · compacts above {thousands(threshold)} (Pi's own reserve, "
                    f"{thousands(self.settings.reserve_tokens)}; pinb's agent fits it to this "
                    f"window and compacts above {thousands(fitted.threshold(self.window))})"
                )
            elif threshold > 0:
                text += f" · compacts above {thousands(threshold)}"
            elif self.fitted:  # a reserve as large as the window: every request is over it
                text += (
                    f" · compacts before every request (a reserve of "
                    f"{thousands(self.settings.reserve_tokens)} leaves no room)"
                )
            else:
                # Pi checks before every request, but its planner keeps the last
                # keepRecentTokens and finds nothing older to summarize until there is more.
                keep = self.settings.keep_recent_tokens
                text += (
                    f" · Pi tries to compact before every request (a reserve of "
                    f"{thousands(self.settings.reserve_tokens)} leaves no room) but keeps the "
                    f"last {thousands(keep)} tokens (keepRecentTokens): it compacts nothing "
                    f"until the conversation is longer than that"
                )
        else:
            text += " · window unknown"
        for note in self.notes():
            text += f" · {note}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Plain values (camelCase like Pi's JSON) for ``--json`` output and frames."""
        return {
            "tokens": self.tokens,
            "measure": self.measure,
            "reportedTokens": self.reported_tokens,
            "trailingTokens": self.trailing_tokens,
            "reportedIndex": self.reported_index,
            "estimatedTokens": self.estimated_tokens,
            "byRole": dict(self.by_role),
            "messages": self.messages,
            "window": self.window,
            "windowSource": self.window_source,
            "threshold": self.threshold,
            "share": self.share,
            "reserveTokens": self.settings.reserve_tokens,
            "keepRecentTokens": self.settings.keep_recent_tokens,
            "windowNote": self.window_note,
            "usageImplausible": self.usage_implausible,
        }


def estimated_by_role(context: SessionContext) -> dict[str, int]:
    """chars/4 of every message by role, as Pi estimates a whole context.

    Pi 1.x counts the system prompt once, replayed from all system messages (the prompt the
    model is sent), not each system message; so does this.
    """
    pi = context.pi
    by_role: dict[str, int] = {}
    system_seen = False
    for message in context.messages:
        role = message.get("role") if isinstance(message, dict) else None
        key = role if isinstance(role, str) else "?"
        if key == "system" and pi >= Pi.V1_6:
            system_seen = True
            continue
        by_role[key] = by_role.get(key, 0) + estimate_tokens(message, pi=pi)
    if system_seen:
        prompt = current_system_message(context.messages)
        tokens = estimate_tokens(prompt, pi=pi) if prompt is not None else 0
        by_role = {"system": tokens, **by_role}
    return by_role


def context_usage(
    context: SessionContext,
    *,
    window: int | None = None,
    window_source: str | None = None,
    settings: CompactionSettings | None = None,
    fit: bool = True,
    window_note: str = "",
) -> ContextUsage:
    """Account for a built context (see :class:`ContextUsage`).

    Parameters
    ----------
    context:
        From :meth:`Session.build_context` (its release's rules apply).
    window / window_source:
        The model's context window and where it came from; without one, no share or
        threshold is given (pinb never assumes a window silently).
    settings:
        Compaction settings (Pi's defaults when omitted); fitted to a small window.
    fit:
        Fit the settings to the window as pinb's agent does (``False``: as given, the way
        the user's own Pi uses them, for a Pi engine's figures).
    window_note:
        What contradicts the window (:attr:`ContextUsage.window_note`).
    """
    # The compaction trigger's own figure, so what a footer says is what the next check sees.
    estimate = estimate_trigger_tokens(context)
    by_role = estimated_by_role(context)
    fitted = settings or CompactionSettings()
    if fit:
        fitted = fitted.fit_window(window)
    return ContextUsage(
        tokens=estimate.tokens,
        measure=ESTIMATE if estimate.last_usage_index is None else USAGE_PLUS_ESTIMATE,
        reported_tokens=estimate.usage_tokens,
        trailing_tokens=estimate.trailing_tokens,
        reported_index=estimate.last_usage_index,
        estimated_tokens=sum(by_role.values()),
        by_role=by_role,
        messages=len(context.messages),
        window=window or None,
        window_source=(window_source or "setting") if window else "unknown",
        settings=fitted,
        window_note=window_note if window else "",
        fitted=fit,
    )
