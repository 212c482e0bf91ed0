"""Search hits, citable as ``path:line#entry-id``, and how a list of them displays."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.describe import one_line as _short
from ..core.listing import SessionInfo
from ..display import Displayable
from .cite import Citation
from .query import SearchQuery

__all__ = ["MARK_END", "MARK_START", "SearchHit", "SearchResults"]

#: How FTS5's ``snippet()`` marks a matched word here (shown as ``«``/``»`` or bold).
MARK_START, MARK_END = "\x02", "\x03"


@dataclass(frozen=True)
class SearchHit:
    """One matching entry, citable as ``path:line#entry-id``.

    Attributes
    ----------
    info:
        The session's listing row.
    line, entry_id:
        Where the entry is: the 1-based physical line of its JSON in the file, its id.
    role, timestamp:
        The message's role (``None`` for a session name or a label) and time.
    snippet:
        Text around the match, matched words marked with ``«`` and ``»``.
    score:
        FTS5's BM25 rank (lower is better; ``0.0`` for a query of filters only).
    copies:
        The other places holding the same text, folded into this hit: the entry copied
        into forks, or the same text repeated. The hit itself is the earliest of them.
    """

    info: SessionInfo
    line: int
    entry_id: str | None
    role: str | None
    timestamp: datetime | None
    snippet: str
    score: float
    copies: tuple[Citation, ...] = ()
    _marked: str = field(default="", repr=False, compare=False)

    @property
    def path(self) -> Path:
        return self.info.path

    @property
    def citation(self) -> Citation:
        """Where the entry is, as a :class:`Citation`."""
        return Citation(self.info.path, self.line, self.entry_id)

    @property
    def cite(self) -> str:
        """``path:line#entry-id``."""
        return str(self.citation)

    def open(self) -> Any:
        """The :class:`~pinb.core.Session` holding the entry (``session.get(hit.entry_id)``)."""
        return self.citation.open()


class SearchResults(Displayable, list[SearchHit]):
    """Search hits, best first, that display as a table in a notebook (escaped)."""

    def __init__(
        self,
        hits: Sequence[SearchHit] = (),
        query: str = "",
        parsed: SearchQuery | None = None,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(hits)
        self.query = query
        self.parsed = parsed if parsed is not None else SearchQuery(query)
        #: The sessions folder searched: the display names files relative to it (each
        #: hit's :attr:`~SearchHit.cite` keeps the full path).
        self.root = Path(root) if root is not None else None

    def shown_cite(self, hit: SearchHit) -> str:
        """``hit.cite`` with the file named relative to the sessions folder, when inside it."""
        if self.root is not None:
            try:
                relative = Path(hit.info.path).relative_to(self.root)
            except ValueError:
                return hit.cite
            return str(Citation(relative, hit.line, hit.entry_id))
        return hit.cite

    def __repr__(self) -> str:
        return self.to_text()

    def to_text(self, *, full_paths: bool = False) -> str:
        """One hit per two lines; files relative to the sessions folder unless ``full_paths``."""
        folded = sum(len(h.copies) for h in self)
        lines = [f"{len(self)} hit(s) for {self.query!r}"
                 + (f" ({folded} repeat(s) and fork copies folded in)" if folded else "")]  # fmt: skip
        for hit in self:
            when = f"{hit.timestamp:%Y-%m-%d %H:%M}" if hit.timestamp else " " * 16
            copies = f"  (+{len(hit.copies)} copies)" if hit.copies else ""
            lines.append(
                f"{when}  {hit.role or hit.info.name or '':<10}  {hit.cite if full_paths else self.shown_cite(hit)}{copies}"
            )
            lines.append(f"    {_short(hit.snippet, 110)}")
        return "\n".join(lines)
