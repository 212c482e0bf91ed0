"""The ``grep`` tool: search file contents by regex or literal text, in pure Python."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from ...core.file.special import read_regular
from ..tool import ToolContext, ToolResult
from .find import WalkAborted, listing_result, path_matches, walk
from .paths import (
    ToolInputError,
    expand_path,
    is_cancelled,
    optional_bool,
    optional_int,
    optional_str,
    required_str,
    tool_cwd,
)
from .truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncate_line

__all__ = ["GrepTool"]

#: Files whose first bytes hold a NUL are binary and skipped, as ripgrep does.
_BINARY_SNIFF = 8192
#: The first this many bytes of a file are searched (a 2 GB log is not loaded whole).
GREP_FILE_LIMIT = 64 * 1024 * 1024


def _read_lines(path: Path) -> list[str] | None:
    """The file's lines (``\\r\\n`` or ``\\n``), or None for binary or unreadable files."""
    try:
        data = read_regular(path, GREP_FILE_LIMIT)  # a FIFO or device is skipped, not waited on
    except OSError:
        return None
    if b"\x00" in data[:_BINARY_SNIFF]:
        return None
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


_DEFAULT_LIMIT = 100
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Search pattern (regular expression, or literal string with literal=true)",
        },
        "path": {
            "type": "string",
            "description": "Directory or file to search (default: current directory)",
        },
        "glob": {
            "type": "string",
            "description": "Only search files matching this glob, e.g. '*.py' or 'src/**/*.ts'",
        },
        "ignoreCase": {
            "type": "boolean",
            "description": "Case-insensitive search (default: false)",
        },
        "literal": {
            "type": "boolean",
            "description": "Treat the pattern as a literal string instead of a regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {
            "type": "number",
            "description": f"Maximum number of matches to return (default: {_DEFAULT_LIMIT})",
        },
    },
    "required": ["pattern"],
}


class GrepTool:
    """Search file contents for the model, in pure Python (no ripgrep needed).

    Each match is ``path:line: text``; with ``context``, neighbouring lines are
    ``path-line- text`` (overlapping windows are merged). Paths are relative to the
    searched folder (a searched file shows its name). Files are visited in sorted order;
    binary files, ``.git``, ``node_modules``, ``.venv`` and git-ignored files are skipped.
    Past ``limit`` matches (default 100) the output says so and ``details`` holds
    ``{"matchLimitReached": limit}``; lines longer than 500 characters are cut
    (``linesTruncated``).

    Parameters
    ----------
    cwd:
        Pin the tool to this folder; by default it works in the run's ``context.cwd``.
    """

    name = "grep"
    default_limit = _DEFAULT_LIMIT
    description = (
        "Search file contents for a pattern (a Python regular expression, or literal text with "
        "literal=true). Returns matching lines with file paths and line numbers. Respects "
        ".gitignore and skips binary files, .git, node_modules and .venv. Output is limited to "
        f"{default_limit} matches or {DEFAULT_MAX_BYTES // 1024}KB, whichever comes first; lines "
        f"longer than {GREP_MAX_LINE_LENGTH} characters are cut."
    )

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(_PARAMETERS)
        self.cwd = Path(cwd) if cwd is not None else None

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Search for ``arguments["pattern"]``; see the class docstring."""
        try:
            pattern = required_str(arguments, "pattern")
            where = optional_str(arguments, "path") or "."
            glob = optional_str(arguments, "glob")
            ignore_case = optional_bool(arguments, "ignoreCase")
            literal = optional_bool(arguments, "literal")
            around = max(0, optional_int(arguments, "context") or 0)
            limit = optional_int(arguments, "limit", minimum=1) or self.default_limit
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        try:
            regex = re.compile(
                re.escape(pattern) if literal else pattern, re.IGNORECASE if ignore_case else 0
            )
        except re.error as exc:
            return ToolResult.error(
                f"Invalid regex pattern {pattern!r}: {exc}. Escape special characters or pass literal=true."
            )
        root = expand_path(where, tool_cwd(self.cwd, context.cwd))
        if not root.exists():
            return ToolResult.error(f"Path not found: {root}")

        if root.is_dir():
            try:
                files = sorted(
                    (rel, path)
                    for rel, path, is_dir in walk(root, context.cancel)
                    if not is_dir and (glob is None or path_matches(glob, rel))
                )
            except WalkAborted:
                return ToolResult.error("Operation aborted")
        else:
            files = [(root.name, root)]

        output: list[str] = []
        matches = 0
        more = False
        cut_lines = False
        for rel, path in files:
            if is_cancelled(context.cancel):
                return ToolResult.error("Operation aborted")
            lines = _read_lines(path)
            if not lines:
                continue
            hits: list[int] = []
            for number, line in enumerate(lines):
                if regex.search(line):
                    if matches == limit:
                        more = True
                        break
                    hits.append(number)
                    matches += 1
            block, cut = _format_block(rel, lines, hits, around)
            output.extend(block)
            cut_lines = cut_lines or cut
            if more:
                break

        if not matches:
            return ToolResult.text("No matches found")
        notice = f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern"
        cut_notice = (
            f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        )
        return listing_result(
            output,
            empty="No matches found",
            limit_hit=(notice, "matchLimitReached", limit) if more else None,
            extra=[(cut_notice, "linesTruncated", True)] if cut_lines else (),
        )


def _format_block(
    rel: str, lines: list[str], hits: list[int], around: int
) -> tuple[list[str], bool]:
    """The output lines for one file's matches (0-based line indexes) and whether any was cut."""
    shown: dict[int, bool] = {}  # line index -> is a match
    for hit in hits:
        for index in range(max(0, hit - around), min(len(lines), hit + around + 1)):
            shown[index] = shown.get(index, False) or index == hit
    block: list[str] = []
    cut_any = False
    for index in sorted(shown):
        text, cut = truncate_line(lines[index])
        cut_any = cut_any or cut
        separator = ":" if shown[index] else "-"
        block.append(f"{rel}{separator}{index + 1}{separator} {text}")
    return block, cut_any
