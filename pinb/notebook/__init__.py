"""The notebook front end: ``%%pi`` / ``%pi`` magics (the only package that imports IPython)."""

from __future__ import annotations

import sys
from typing import Any

from .magics import PiMagics

__all__ = ["PiMagics", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics; ``%config PiMagics.<setting>`` works afterwards."""
    magics = PiMagics(ipython)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)
    _show_figures(ipython)


def _show_figures(ipython: Any) -> None:
    """Display the matplotlib ``Figure`` objects pinb's plots return, even without pyplot."""
    formatter = ipython.display_formatter.formatters.get("image/png")
    if formatter is None:
        return

    def png(figure: Any) -> bytes:
        import io

        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()

    if formatter.lookup_by_type is None or not _has_figure_printer(formatter):
        formatter.for_type_by_name("matplotlib.figure", "Figure", png)


def _has_figure_printer(formatter: Any) -> bool:
    # Asked without importing matplotlib (a second or more to load): until something has
    # imported it, a printer for Figure can only be registered by name.
    if "matplotlib.figure" not in sys.modules:
        return ("matplotlib.figure", "Figure") in formatter.deferred_printers
    from matplotlib.figure import Figure

    try:
        formatter.lookup_by_type(Figure)
        return True
    except KeyError:
        return False


def unload_ipython_extension(ipython: Any) -> None:
    """Stop the user's Pi if a ``--engine pi`` cell started one (kernel exit does it too)."""
    magics = ipython.magics_manager.registry.get("PiMagics")
    engine = getattr(magics, "_pi_engine", None)  # made at the first Pi cell, if any
    if engine is not None:
        engine.close()
