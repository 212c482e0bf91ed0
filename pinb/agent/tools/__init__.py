"""Pi's built-in tools (read, write, edit, bash, ls, grep, find) with Pi's argument and result shapes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from ..tool import Tool
from .bash import BashTool
from .edit import EditTool
from .find import FindTool
from .grep import GrepTool
from .ls import LsTool
from .read import ReadTool
from .write import WriteTool

__all__ = [
    "ALL_TOOL_NAMES",
    "DEFAULT_TOOL_NAMES",
    "READ_ONLY_TOOL_NAMES",
    "BashTool",
    "EditTool",
    "FindTool",
    "GrepTool",
    "LsTool",
    "ReadTool",
    "WriteTool",
    "all_tools",
    "default_tools",
    "read_only_tools",
    "tools_by_name",
]

_FACTORIES: dict[str, Callable[[str | os.PathLike[str] | None], Tool]] = {
    "read": ReadTool,
    "bash": BashTool,
    "edit": EditTool,
    "write": WriteTool,
    "grep": GrepTool,
    "find": FindTool,
    "ls": LsTool,
}

#: Every built-in tool, in Pi's order.
ALL_TOOL_NAMES = tuple(_FACTORIES)
#: The tools Pi enables by default (its ``--tools`` default).
DEFAULT_TOOL_NAMES = ("read", "bash", "edit", "write")
#: Tools that only look: Pi's read-only set.
READ_ONLY_TOOL_NAMES = ("read", "grep", "find", "ls")


def tools_by_name(
    names: str | Iterable[str], cwd: str | os.PathLike[str] | None = None
) -> list[Tool]:
    """Build built-in tools by name, in the order given.

    Parameters
    ----------
    names:
        Tool names, as an iterable or a comma-separated string (``"read,grep"``); blanks
        and repeats are ignored.
    cwd:
        Pin the tools to this folder; by default each works in the run's ``context.cwd``.

    Returns
    -------
    list[Tool]

    Raises
    ------
    ValueError
        For a name that is not a built-in tool; the message lists the known names.

    Examples
    --------
    >>> [tool.name for tool in tools_by_name("read, ls")]
    ['read', 'ls']
    """
    wanted = names.split(",") if isinstance(names, str) else list(names)
    tools: list[Tool] = []
    seen: set[str] = set()
    for raw in wanted:
        name = raw.strip()
        if not name or name in seen:
            continue
        factory = _FACTORIES.get(name)
        if factory is None:
            raise ValueError(
                f"Unknown tool {name!r}; built-in tools are: {', '.join(ALL_TOOL_NAMES)}"
            )
        seen.add(name)
        tools.append(factory(cwd))
    return tools


def default_tools(cwd: str | os.PathLike[str] | None = None) -> list[Tool]:
    """Pi's default tool set: ``read``, ``bash``, ``edit``, ``write``.

    ``cwd`` pins the tools to a folder; by default each works in the run's ``context.cwd``.
    """
    return tools_by_name(DEFAULT_TOOL_NAMES, cwd)


def read_only_tools(cwd: str | os.PathLike[str] | None = None) -> list[Tool]:
    """Tools that cannot change anything: ``read``, ``grep``, ``find``, ``ls``."""
    return tools_by_name(READ_ONLY_TOOL_NAMES, cwd)


def all_tools(cwd: str | os.PathLike[str] | None = None) -> list[Tool]:
    """Every built-in tool: ``read``, ``bash``, ``edit``, ``write``, ``grep``, ``find``, ``ls``."""
    return tools_by_name(ALL_TOOL_NAMES, cwd)
