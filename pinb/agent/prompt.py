"""The agent's system prompt, with AGENTS.md / CLAUDE.md files loaded as Pi loads them."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.file.paths import agent_dir

__all__ = ["build_system_prompt", "context_files", "prompt_sections"]

_CONTEXT_NAMES = ("AGENTS.md", "CLAUDE.md")

_BASE = """You are a coding assistant working in the user's project, run from a Jupyter notebook \
through pinb. You read files, run commands, edit code and write new files with the tools \
below, and you answer questions about the project.

How to work:
- Look before you change: read the relevant files (or search with grep/find) first.
- Make focused edits with `edit`; use `write` for new files or complete rewrites.
- Run commands with `bash` to check your work (tests, linters) when that is cheap.
- Say briefly what you did and what is left; show file paths relative to the project.
- When a request is unclear, ask instead of guessing."""


def context_files(cwd: str | os.PathLike[str]) -> list[Path]:
    """Pi's context files: the global one, then one per folder from the root down to ``cwd``.

    In each folder ``AGENTS.md`` is used, or ``CLAUDE.md`` when there is no AGENTS.md.
    """
    found: list[Path] = []

    def pick(folder: Path) -> None:
        for name in _CONTEXT_NAMES:
            candidate = folder / name
            if candidate.is_file():
                if candidate.resolve() not in {f.resolve() for f in found}:
                    found.append(candidate)
                return

    pick(agent_dir())
    here = Path(cwd).resolve()
    for folder in [*reversed(here.parents), here]:
        pick(folder)
    return found


def prompt_sections(
    cwd: str | os.PathLike[str],
    tools: Sequence[Any] = (),
    *,
    custom: str | None = None,
    append: str | None = None,
    today: _dt.date | None = None,
) -> dict[str, str]:
    """The system prompt as named parts, the way Pi 1.x stores it in ``system`` messages.

    ``preamble`` (pinb's base text, or ``custom``), ``tools`` (one line per tool),
    ``project_context`` (AGENTS.md / CLAUDE.md files, each under its path),
    ``environment`` (date and working directory) and ``addendum`` (``append``, e.g.
    recalled memory). A later change is stored as a patch of the parts that changed.
    """
    sections = {"preamble": custom or _BASE}
    if tools:
        lines = [
            f"- {tool.name}: {str(getattr(tool, 'description', '')).splitlines()[0]}"
            for tool in tools
        ]
        sections["tools"] = "Available tools:\n" + "\n".join(lines)
    files = []
    for path in context_files(cwd):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        files.append(f"# Project context from {path}\n\n{text.strip()}")
    if files:
        sections["project_context"] = "\n\n".join(files)
    date = (today or _dt.date.today()).isoformat()
    sections["environment"] = (
        f"Current date: {date}\nCurrent working directory: {Path(cwd).resolve()}"
    )
    if append:
        sections["addendum"] = append
    return sections


def build_system_prompt(
    cwd: str | os.PathLike[str],
    tools: Sequence[Any] = (),
    *,
    custom: str | None = None,
    append: str | None = None,
    today: _dt.date | None = None,
) -> str:
    """The system prompt for a run in ``cwd`` with these tools: `prompt_sections` joined.

    ``custom`` replaces pinb's base text; ``append`` is added at the end (for example
    recalled memory). Context files are included verbatim, each under its path.
    """
    sections = prompt_sections(cwd, tools, custom=custom, append=append, today=today)
    return "\n\n".join(sections.values())
