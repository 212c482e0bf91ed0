"""Moved to :mod:`pinb.cli.analysis`; this old name stays an alias of that module.

Analysis never depends on the command line: the alias is loaded by name, only when
something imports this old path, and it is the very same module object (so patching or
reading either name sees one thing).
"""

from __future__ import annotations

import importlib
import sys

sys.modules[__name__] = importlib.import_module("pinb.cli.analysis")
