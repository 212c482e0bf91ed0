"""Moved to :mod:`pinb.cli.output`; this name stays for old imports."""

from __future__ import annotations

from .cli.output import printable, quiet_stdout, say, write

__all__ = ["printable", "quiet_stdout", "say", "write"]
