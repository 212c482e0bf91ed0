"""pinb: the Pi coding agent's session memory in Jupyter.

The facade re-exports the names most users need; everything heavy is imported lazily so
``import pinb`` stays as light as the core.
"""

from __future__ import annotations

from typing import Any

from .core import Session, SessionContext, build_session_context, convert_to_llm
from .errors import PinbError

__version__ = "0.1.0"

__all__ = [
    "PinbError",
    "Session",
    "SessionContext",
    "__version__",
    "build_session_context",
    "convert_to_llm",
    "load_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext pinb``: register the ``%pi`` / ``%%pi`` magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)
