"""pinb: the Pi coding agent's session memory in Jupyter.

The facade re-exports the names most users need; everything heavy is imported lazily so
``import pinb`` stays as light as the core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .core import Session, SessionContext, build_session_context, convert_to_llm
    from .errors import PinbError

__all__ = [
    "PinbError",
    "Session",
    "SessionContext",
    "__version__",
    "build_session_context",
    "convert_to_llm",
    "load_ipython_extension",
]


_HOMES = {
    "PinbError": "pinb.errors",
    "Session": "pinb.core",
    "SessionContext": "pinb.core",
    "build_session_context": "pinb.core",
    "convert_to_llm": "pinb.core",
}


def __getattr__(name: str) -> Any:
    """The facade's names load on first use, so ``import pinb`` (and the CLI) start fast."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext pinb``: register the ``%pi`` / ``%%pi`` magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)
