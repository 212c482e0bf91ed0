"""The ``%%pi`` / ``%pi`` magics: dispatch (:mod:`.magic`), settings and state
(:mod:`.settings`), and one module per command group: :mod:`.sessions`, :mod:`.views`,
:mod:`.analysis`, :mod:`.compactions`, :mod:`.memory`, :mod:`.model`, :mod:`.chat`, and
:mod:`.pi` (the cell and the routed commands when the user's Pi is the engine)."""

from __future__ import annotations

from .magic import COMMANDS_HELP, PiMagics

__all__ = ["COMMANDS_HELP", "PiMagics"]
