"""Moved to :mod:`pinb.agent.tools.memory`; this old name stays an alias of that module.

Memory never depends on the agent: the alias is loaded by name, only when something
imports this old path (or ``pinb.memory.memory_tools``), and it is the very same module.
"""

from __future__ import annotations

import importlib
import sys

sys.modules[__name__] = importlib.import_module("pinb.agent.tools.memory")
