"""The one rule for a context window: which number every view, command and footer shows, and why.

Four things can know a window: a setting (``%config PiMagics.context_window``, ``--window``,
``context_window=`` given to a view), the model in use (its registry entry, or what its
server reported — an answer to a discovery request or an overflow message), the window the
session last ran with (:attr:`pinb.core.Session.run_window`, set by whoever ran it: an
agent, the magics), and the model registry's entry for the model the session recorded
(or, for the offline demo model, its own window).
:func:`resolve_window` takes them in that order and returns the window with where it came
from; without any of them the window is unknown, and every caller says so the same way.

A window assumed from the recorded model is checked against the session's own evidence:
when every compaction the session recorded ran far below what that window would compact
at (``tokensBefore`` under a tenth of it), the session ran with a smaller window (or was
compacted by hand), and the window comes with a note saying so (:attr:`ContextWindow.note`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["UNKNOWN", "ContextWindow", "compaction_evidence", "resolve_window"]

#: The source of a window nobody knows.
UNKNOWN: Final = "unknown"


@dataclass(frozen=True)
class ContextWindow:
    """A context window and where it came from.

    Attributes
    ----------
    tokens:
        The window in tokens, ``None`` when unknown.
    source:
        ``"setting"``, ``"server"``, ``"model registry"``, ``"provider default"`` (a model
        the registry does not list), another label a caller gave, or ``"unknown"``.
    """

    tokens: int | None
    source: str = UNKNOWN
    note: str = ""

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def describe(self) -> str:
        """``"6,000 (setting)"``, or ``"unknown"`` (and the note, if any)."""
        text = f"{self.tokens:,} ({self.source})" if self.tokens else UNKNOWN
        return f"{text}; {self.note}" if self.note else text


#: A compaction below this share of the assumed window contradicts it (Pi compacts near
#: the window; a session whose every compaction ran far below it had a smaller one).
_EVIDENCE_SHARE = 0.1


def compaction_evidence(session: Any, window: int) -> str:
    """A note when the session's own compactions contradict ``window`` (else ``""``).

    Every ``tokensBefore`` Pi recorded below a tenth of the window: the session ran
    with a smaller window, or was compacted by hand.
    """
    entries = getattr(session, "entries", None)
    if not entries or not window:
        return ""
    recorded = [
        e.raw.get("tokensBefore")
        for e in entries
        if e.type == "compaction" and isinstance(e.raw.get("tokensBefore"), int)
    ]
    sizes = [t for t in recorded if t > 0]
    if not sizes or max(sizes) >= window * _EVIDENCE_SHARE:
        return ""
    low, high = min(sizes), max(sizes)
    span = f"{high:,}" if low == high else f"{low:,}–{high:,}"
    count = "its compaction" if len(sizes) == 1 else f"its {len(sizes)} compactions"
    return (
        f"but {count} ran at {span} tokens, far below what a {window:,}-token window "
        "compacts at: it ran with a smaller window (or was compacted by hand); give the "
        "window it ran with (context_window=, %config PiMagics.context_window)"
    )


def _model_window(model: Any) -> ContextWindow | None:
    """The window of a model in use (a ``ChatModel`` or its ``ModelInfo``)."""
    info = getattr(model, "info", model)
    tokens = getattr(info, "context_window", None)
    if not isinstance(tokens, int) or tokens <= 0:
        return None
    origin = getattr(info, "window_origin", None)
    return ContextWindow(tokens, origin if isinstance(origin, str) and origin else "model")


def _recorded_model(session: Any, context: Any) -> Mapping[str, Any] | None:
    if context is None and session is not None:
        current = getattr(session, "current_context", None)
        context = current() if callable(current) else None
    model = getattr(context, "model", None)
    return model if isinstance(model, Mapping) else None


def resolve_window(
    *,
    setting: int | None = None,
    setting_source: str | None = None,
    model: Any = None,
    session: Any = None,
    context: Any = None,
    registry: Any = None,
) -> ContextWindow:
    """The context window to use and show, with its source.

    Parameters
    ----------
    setting / setting_source:
        A window the user gave (and how to label it; ``"setting"`` by default). Wins.
    model:
        The model in use (a ``ChatModel`` or ``ModelInfo``): its window, labelled with
        where the model's own window came from (``ModelInfo.window_origin``: the registry,
        a setting, or the server).
    session:
        The session shown: the window it last ran with (``Session.run_window``), else
        the registry's entry for the model its context recorded.
    context:
        The built context whose recorded model to look up (default: the session's current
        one).
    registry:
        The model registry (default: the process-wide one).

    Returns
    -------
    ContextWindow
        ``ContextWindow(None, "unknown")`` when nothing above knows a window: no caller
        assumes one. A window from the recorded model carries a ``note`` when the
        session's own compactions contradict it (:func:`compaction_evidence`).
    """
    if setting:
        return ContextWindow(int(setting), setting_source or "setting")
    if model is not None:
        found = _model_window(model)
        if found is not None:
            return found
    ran = getattr(session, "run_window", None) if session is not None else None
    if isinstance(ran, tuple) and len(ran) == 2 and isinstance(ran[0], int) and ran[0] > 0:
        return ContextWindow(ran[0], str(ran[1] or "model"))
    recorded = _recorded_model(session, context)
    if recorded is None:
        return ContextWindow(None, UNKNOWN)
    from pinb.llm.config.registry import window_of
    from pinb.llm.providers.offline import OFFLINE_MODEL, OFFLINE_WINDOW

    if (recorded.get("provider"), recorded.get("modelId")) == OFFLINE_MODEL:
        found = ContextWindow(OFFLINE_WINDOW, "model")  # the demo model, which no registry lists
    else:
        tokens, source = window_of(recorded, registry)
        if not tokens:
            return ContextWindow(None, UNKNOWN)
        found = ContextWindow(tokens, source)
    # An assumed window: does the session's own history agree with it?
    note = compaction_evidence(session, found.tokens or 0)
    return ContextWindow(found.tokens, found.source, note) if note else found
