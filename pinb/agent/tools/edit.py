"""The ``edit`` tool: replace one exact, unique piece of text in a file and report the diff."""

from __future__ import annotations

import copy
import difflib
import os
import re
from pathlib import Path
from typing import Any

from ...core.file.special import special_kind
from ..tool import ToolContext, ToolResult
from .paths import ToolInputError, expand_path, required_str, tool_cwd
from .write import write_text_file

__all__ = ["EditTool", "diff_text"]

_BOM = "\ufeff"
# A line with its "\n" (str.splitlines would also break at \f, \x1c, U+2028 ...).
_LINE = re.compile(r"[^\n]*\n|[^\n]+")


def _line_ending(text: str) -> str:
    # The file's style is that of its first line break.
    first_lf = text.find("\n")
    return "\r\n" if first_lf > 0 and text[first_lf - 1] == "\r" else "\n"


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def diff_text(old: str, new: str, context_lines: int = 4) -> tuple[str, int | None]:
    """A numbered line diff in the form Pi shows for edits, and the first changed line.

    Each changed line is ``+<n> text`` (new-file number) or ``-<n> text`` (old-file
    number); up to ``context_lines`` unchanged lines `` <n> text`` surround each change and
    `` ...`` marks the lines left out. Numbers are right-aligned to the widest one.

    Returns
    -------
    tuple[str, int | None]
        The diff text and the 1-based line of the first change in the new text (None when
        the texts are equal).

    Examples
    --------
    >>> text, first = diff_text("a\\nb\\nc\\n", "a\\nB\\nc\\n")
    >>> print(text)
     1 a
    -2 b
    +2 B
     3 c
    >>> first
    2
    """
    old_tokens = _LINE.findall(old)
    new_tokens = _LINE.findall(new)
    # Parts as jsdiff's diffLines yields them: (kind, lines), removals before additions.
    parts: list[tuple[str, list[str]]] = []
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            parts.append(("=", old_tokens[i1:i2]))
            continue
        if i2 > i1:
            parts.append(("-", old_tokens[i1:i2]))
        if j2 > j1:
            parts.append(("+", new_tokens[j1:j2]))

    width = len(str(max(len(old.split("\n")), len(new.split("\n")))))
    gap = f" {'':>{width}} ..."
    output: list[str] = []
    old_no = new_no = 1
    first_changed: int | None = None
    last_was_change = False
    for index, (kind, tokens) in enumerate(parts):
        lines = "".join(tokens).split("\n")
        if lines[-1] == "":
            lines.pop()
        if kind != "=":
            if first_changed is None:
                first_changed = new_no
            for line in lines:
                if kind == "+":
                    output.append(f"+{new_no:>{width}} {line}")
                    new_no += 1
                else:
                    output.append(f"-{old_no:>{width}} {line}")
                    old_no += 1
            last_was_change = True
            continue
        next_is_change = index < len(parts) - 1 and parts[index + 1][0] != "="
        if not (last_was_change or next_is_change):
            old_no += len(lines)
            new_no += len(lines)
            continue
        shown = lines
        skip_start = skip_end = 0
        if not last_was_change:
            skip_start = max(0, len(lines) - context_lines)
            shown = lines[skip_start:]
        if not next_is_change and len(shown) > context_lines:
            skip_end = len(shown) - context_lines
            shown = shown[:context_lines]
        if skip_start:
            output.append(gap)
            old_no += skip_start
            new_no += skip_start
        for line in shown:
            output.append(f" {old_no:>{width}} {line}")
            old_no += 1
            new_no += 1
        if skip_end:
            output.append(gap)
            old_no += skip_end
            new_no += skip_end
        last_was_change = False
    return "\n".join(output), first_changed


_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path of the file to edit, relative to the working directory or absolute",
        },
        "oldText": {
            "type": "string",
            "description": "Exact text to find and replace (must match exactly and occur once)",
        },
        "newText": {"type": "string", "description": "Text to put in its place"},
    },
    "required": ["path", "oldText", "newText"],
}


class EditTool:
    """Replace one exact piece of text in a file, as Pi's ``edit`` tool does.

    ``oldText`` must occur exactly once (line endings are compared as ``\\n``, and a
    byte-order mark is ignored); the file keeps its line-ending style and BOM. Success
    gives ``Successfully replaced text in <path>.`` with ``details: {"diff": ...,
    "firstChangedLine": n}``; no match, several matches or no change give error results
    that tell the model what to do.

    Parameters
    ----------
    cwd:
        Pin the tool to this folder; by default it works in the run's ``context.cwd``.
    """

    name = "edit"
    description = (
        "Edit a file by replacing exact text. oldText must match the file exactly, including "
        "whitespace and indentation, and must occur exactly once; include enough surrounding "
        "lines to make it unique. Use this for precise, surgical edits; use write to replace a "
        "whole file."
    )

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(_PARAMETERS)
        self.cwd = Path(cwd) if cwd is not None else None

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Replace ``oldText`` by ``newText`` in the file ``path``."""
        try:
            path = required_str(arguments, "path")
            old_text = required_str(arguments, "oldText")
            new_text = required_str(arguments, "newText")
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        target = expand_path(path, tool_cwd(self.cwd, context.cwd))
        if not target.exists():
            return ToolResult.error(f"File not found: {path}")
        if target.is_dir():
            return ToolResult.error(f"Cannot edit {path}: it is a directory.")
        if not os.access(target, os.R_OK | os.W_OK):
            return ToolResult.error(f"Cannot edit {path}: permission denied.")
        kind = special_kind(target)
        if kind is not None:  # opening a FIFO or device would wait, or never end
            return ToolResult.error(f"Cannot edit {path}: it is {kind}, not a regular file.")
        try:
            raw = target.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult.error(
                f"Cannot edit {path}: it is not UTF-8 text. Use bash to change binary files."
            )
        if not old_text:
            return ToolResult.error(
                f"oldText is empty. Give the exact text to replace in {path}, or use write to create the file."
            )

        bom = _BOM if raw.startswith(_BOM) else ""
        content = raw[len(bom) :]
        ending = _line_ending(content)
        content = _to_lf(content)
        old_lf, new_lf = _to_lf(old_text), _to_lf(new_text)

        count = content.count(old_lf)
        if count == 0:
            return ToolResult.error(
                f"Could not find the exact text in {path}. The old text must match exactly "
                "including all whitespace and newlines."
            )
        if count > 1:
            return ToolResult.error(
                f"Found {count} occurrences of the text in {path}. The text must be unique. "
                "Please provide more context to make it unique."
            )
        at = content.index(old_lf)
        updated = content[:at] + new_lf + content[at + len(old_lf) :]
        if updated == content:
            return ToolResult.error(
                f"No changes made to {path}. The replacement produced identical content. "
                "oldText and newText are the same."
            )
        final = updated.replace("\n", "\r\n") if ending == "\r\n" else updated
        write_text_file(target, bom + final)
        diff, first_changed = diff_text(content, updated)
        details: dict[str, Any] = {"diff": diff}
        if first_changed is not None:
            details["firstChangedLine"] = first_changed
        return ToolResult.text(f"Successfully replaced text in {path}.", details=details)
