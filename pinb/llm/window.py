"""The one rule for a context window: which number every view, command and footer shows, and why.

Four things can know a window: a setting (``%config PiMagics.context_window``, ``--window``,
``context_window=`` given to a view), the model in use (its registry entry, or what its
server reported — an answer to a discovery request or an overflow message), the window the
session last ran with (:attr:`pinb.core.Session.run_window`, set by whoever ran it: an
agent, the magics), and the model registry's entry for the model the session recorded
(or, for the offline demo model, its own window).
:func:`resolve_window` takes them in that order and returns the window with where it came
from; without any of them the window is unknown, and every caller says so the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["UNKNOWN", "ContextWindow", "resolve_window"]

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

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def describe(self) -> str:
        """``"6,000 (setting)"``, or ``"unknown"``."""
        return f"{self.tokens:,} ({self.source})" if self.tokens else UNKNOWN


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
        assumes one.
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
    from pinb.llm.offline import OFFLINE_MODEL, OFFLINE_WINDOW
    from pinb.llm.registry import window_of

    if (recorded.get("provider"), recorded.get("modelId")) == OFFLINE_MODEL:
        return ContextWindow(OFFLINE_WINDOW, "model")  # the demo model, which no registry lists

    tokens, source = window_of(recorded, registry)
    return ContextWindow(tokens, source) if tokens else ContextWindow(None, UNKNOWN)
