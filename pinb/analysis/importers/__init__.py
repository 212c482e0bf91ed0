"""Import Claude Code transcripts and Codex CLI rollouts as new Pi session files (sources only read)."""

from __future__ import annotations

from ._pi import ImportFormatError, ImportResult, transcript_files
from .claude import import_claude
from .codex import import_codex

__all__ = ["ImportFormatError", "ImportResult", "import_claude", "import_codex", "transcript_files"]
