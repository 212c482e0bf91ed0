"""The shared IPython shell with pinb's magics as a fresh kernel has them, for one test."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def pi_shell(renderer: str = "auto") -> Iterator[Any]:
    """``InteractiveShell.instance()`` with pinb loaded and no session, model or Pi engine
    left from an earlier test; after it, the Pi engine is closed and the magics' state put
    back (the shell is shared by every test of a worker)."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "pinb")
    magics = ip.magics_manager.registry["PiMagics"]
    magics.session = None
    magics._model = None
    magics._model_spec = None
    magics.model = ""
    magics.engine = "pinb"
    before, magics.renderer = magics.renderer, renderer
    try:
        yield ip
    finally:
        magics.pi_engine.close()
        magics.session = None
        magics._model = None
        magics._model_spec = None
        magics.engine = "pinb"  # a test may have made Pi the default
        magics.renderer = before
