"""``Problem``: something odd in a session file that reading tolerated, named with its file and line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Problem"]


@dataclass(frozen=True)
class Problem:
    """Something odd in a session file that was tolerated, not silently lost.

    ``kind`` is one of ``malformed-line``, ``not-an-entry``, ``duplicate-header``,
    ``duplicate-id``, ``orphan``, ``cycle``, ``missing-leaf-target``, ``torn-line``,
    ``malformed-entry`` (:func:`~pinb.core.format.entries.entry_flaw`), ``unknown-version``,
    ``odd-field`` (a field the core reads holds an odd type; see
    :mod:`pinb.core.format.fieldtypes`). Reading the file makes the first kinds
    (:mod:`pinb.core.file.read`), the index the ones about ids and links
    (:mod:`pinb.core.format.tree`).
    """

    kind: str
    message: str
    path: Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path or '<memory>'}"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.message}"
