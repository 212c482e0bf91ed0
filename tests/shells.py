"""The shared IPython shell with pinb's magics as a fresh kernel has them, for one test."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any


def fresh_magics(magics: Any) -> None:
    """Put ``PiMagics`` back as ``%load_ext pinb`` makes it in a fresh kernel: every setting
    at its default, no session (its hold dropped), model, observation or server URL."""
    for name, trait in magics.traits(config=True).items():
        setattr(magics, name, copy.copy(trait.default()))
    magics.session = None
    magics._model = None
    magics._model_spec = None
    magics._observe = False
    magics.base_urls = {}
    magics.thinking_chosen = False  # after ``thinking``, whose observer sets it


@contextlib.contextmanager
def pi_shell(renderer: str = "auto", **settings: Any) -> Iterator[Any]:
    """``InteractiveShell.instance()`` with pinb loaded, its magics fresh (:func:`fresh_magics`)
    and then given ``renderer`` and ``settings``; after it, the Pi engine is closed and the
    magics fresh again (the shell is shared by every test of a worker)."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "pinb")
    magics = ip.magics_manager.registry["PiMagics"]
    fresh_magics(magics)
    magics.renderer = renderer
    for name, value in settings.items():
        setattr(magics, name, value)
    try:
        yield ip
    finally:
        magics.pi_engine.close()
        fresh_magics(magics)
