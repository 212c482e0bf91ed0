"""The notebook front end: ``%%pi`` / ``%pi`` magics (the only package that imports IPython)."""

from __future__ import annotations

from typing import Any

from .magics import PiMagics

__all__ = ["PiMagics", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics; ``%config PiMagics.<setting>`` works afterwards."""
    magics = PiMagics(ipython)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)


def unload_ipython_extension(ipython: Any) -> None:
    """Nothing to undo beyond IPython's own bookkeeping."""
