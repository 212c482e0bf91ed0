"""The ``ls`` tool: one directory's entries, sorted, with ``/`` after folder names."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from ..tool import ToolContext, ToolResult
from .find import listing_result
from .paths import ToolInputError, expand_path, optional_int, optional_str, tool_cwd
from .truncate import DEFAULT_MAX_BYTES

__all__ = ["LsTool"]


_DEFAULT_LIMIT = 500
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list (default: current directory)"},
        "limit": {
            "type": "number",
            "description": f"Maximum number of entries to return (default: {_DEFAULT_LIMIT})",
        },
    },
}


class LsTool:
    """List one directory for the model, as Pi's ``ls`` tool does.

    Entries are sorted case-insensitively, dotfiles included, folders marked with a
    trailing ``/``. Unlike ``find`` and ``grep`` nothing is hidden: asking for one folder's
    contents should show ``.git`` or ``.venv`` when they are there. Past ``limit`` entries
    (default 500) the output says so and ``details`` holds ``{"entryLimitReached": limit}``.

    Parameters
    ----------
    cwd:
        Pin the tool to this folder; by default it works in the run's ``context.cwd``.
    """

    name = "ls"
    default_limit = _DEFAULT_LIMIT
    description = (
        "List a directory's contents. Entries are sorted alphabetically, with '/' after "
        "directory names; dotfiles are included. Output is limited to "
        f"{default_limit} entries or {DEFAULT_MAX_BYTES // 1024}KB, whichever comes first."
    )

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(_PARAMETERS)
        self.cwd = Path(cwd) if cwd is not None else None

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """List the directory ``arguments["path"]`` (default: the working directory)."""
        try:
            where = optional_str(arguments, "path") or "."
            limit = optional_int(arguments, "limit", minimum=1) or self.default_limit
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        folder = expand_path(where, tool_cwd(self.cwd, context.cwd))
        if not folder.exists():
            return ToolResult.error(f"Path not found: {folder}")
        if not folder.is_dir():
            return ToolResult.error(f"Not a directory: {folder}")
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError as exc:
            return ToolResult.error(f"Cannot read directory {folder}: {exc.strerror or exc}")

        entries.sort(key=lambda entry: (entry.name.lower(), entry.name))
        names: list[str] = []
        for entry in entries[:limit]:
            try:
                names.append(entry.name + "/" if entry.is_dir() else entry.name)
            except OSError:
                continue  # vanished or unreadable: skipped, as Pi does
        notice = f"{limit} entries limit reached. Use limit={limit * 2} for more"
        return listing_result(
            names,
            empty="(empty directory)",
            limit_hit=(notice, "entryLimitReached", limit) if len(entries) > limit else None,
        )
