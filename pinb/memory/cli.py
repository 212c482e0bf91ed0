"""Moved to :mod:`pinb.cli.memory`; this old name stays an alias of that module.

Memory never depends on the command line: the alias is loaded by name, only when
something imports this old path, and it is the very same module object.
"""

from __future__ import annotations

import importlib
import sys

sys.modules[__name__] = importlib.import_module("pinb.cli.memory")
