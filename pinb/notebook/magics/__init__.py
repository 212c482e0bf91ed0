"""The ``%%pi`` / ``%pi`` magics: dispatch (:mod:`.magic`), settings and state
(:mod:`.settings`), and one module per command group: :mod:`.sessions`, :mod:`.views`,
:mod:`.analysis`, :mod:`.memory`, :mod:`.model`."""

from __future__ import annotations

from .magic import COMMANDS_HELP, PiMagics

__all__ = ["COMMANDS_HELP", "PiMagics"]
