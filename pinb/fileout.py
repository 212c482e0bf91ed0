"""Moved to :mod:`pinb.core.atomic` (pinb's one atomic writer); this name stays for old imports."""

from __future__ import annotations

from .core.atomic import replace_file, write_new_file

__all__ = ["replace_file", "write_new_file"]
