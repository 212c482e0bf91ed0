"""The ``write`` tool: create or overwrite a file, making its parent folders."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from pinb.core.js.wire import utf16_len

from ...core.file.special import special_kind
from ..tool import ToolContext, ToolResult
from .paths import ToolInputError, expand_path, required_str, tool_cwd

__all__ = ["WriteTool", "write_text_file"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def write_text_file(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 exactly as given (no newline translation).

    A lone surrogate (possible in JSON strings) is written as U+FFFD, as Node does.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")
    path.write_bytes(data)


_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path of the file to write, relative to the working directory or absolute",
        },
        "content": {"type": "string", "description": "The complete new content of the file"},
    },
    "required": ["path", "content"],
}


class WriteTool:
    """Write a whole file for the model, creating missing parent folders.

    The result is Pi's ``Successfully wrote <n> bytes to <path>``, where ``n`` is the
    content's JavaScript string length (UTF-16 code units) and ``path`` is the path as the
    model wrote it; no ``details``.

    Parameters
    ----------
    cwd:
        Pin the tool to this folder; by default it works in the run's ``context.cwd``.
    """

    name = "write"
    description = (
        "Write content to a file. Creates the file if it does not exist and overwrites it if it "
        "does; missing parent directories are created. Use edit for small changes to an "
        "existing file."
    )

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(_PARAMETERS)
        self.cwd = Path(cwd) if cwd is not None else None

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Write ``arguments["content"]`` to ``arguments["path"]``."""
        try:
            path = required_str(arguments, "path")
            content = required_str(arguments, "content")
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        target = expand_path(path, tool_cwd(self.cwd, context.cwd))
        if target.is_dir():
            return ToolResult.error(f"Cannot write to {path}: it is a directory.")
        kind = special_kind(target)
        if kind is not None:  # opening a FIFO for writing waits for a reader
            return ToolResult.error(f"Cannot write to {path}: it is {kind}, not a regular file.")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            return ToolResult.error(
                f"Cannot write to {path}: a parent of it is a file, not a directory."
            )
        except PermissionError:
            return ToolResult.error(
                f"Cannot write to {path}: permission denied creating {target.parent}."
            )
        try:
            write_text_file(target, content)
        except PermissionError:
            return ToolResult.error(f"Cannot write to {path}: permission denied.")
        return ToolResult.text(f"Successfully wrote {utf16_len(content)} bytes to {path}")
