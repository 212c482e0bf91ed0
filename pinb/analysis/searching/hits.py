"""Search hits, citable as ``path:line#entry-id``, and how a list of them displays."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.describe import one_line as _short
from ...core.file.listing import SessionInfo, Skipped
from ...display import Displayable
from .cite import Citation
from .query import SearchQuery

__all__ = [
    "MARK_END",
    "MARK_START",
    "OnHit",
    "SearchHit",
    "SearchResults",
    "fts_snippets",
    "mark",
]

#: How FTS5's ``snippet()`` marks a matched word here (shown as ``«``/``»`` or bold).
MARK_START, MARK_END = "\x02", "\x03"


def fts_snippets(db: sqlite3.Connection, bodies: dict[int, str], match: str) -> dict[int, str]:
    """FTS5's own snippets of ``bodies`` (by key) for ``match``, cut in a scratch table
    of ``db`` holding just them: the words marked with :data:`MARK_START` and
    :data:`MARK_END`."""
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.hit_texts"
        " USING fts5(body, tokenize='unicode61 remove_diacritics 2')"
    )
    db.execute("DELETE FROM temp.hit_texts")
    db.executemany("INSERT INTO temp.hit_texts(rowid, body) VALUES (?, ?)", list(bodies.items()))
    return dict(
        db.execute(
            "SELECT rowid, snippet(hit_texts, 0, ?, ?, '…', 16) FROM temp.hit_texts"
            " WHERE hit_texts MATCH ?",
            (MARK_START, MARK_END, match),
        ).fetchall()
    )


def mark(snippet: str) -> str:
    """A snippet with its marks shown as ``«`` and ``»``."""
    return snippet.replace(MARK_START, "«").replace(MARK_END, "»")


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


#: ``on_hit(hit)``: a hit as a search that reads the files finds it.
OnHit = Callable[[SearchHit], None]


class SearchResults(Displayable, list[SearchHit]):
    """Search hits, best first, that display as a table in a notebook (escaped).

    Attributes
    ----------
    source:
        ``"index"`` (ranked by relevance) or ``"scan"``: the session files were read
        because the index lacked many of them (:mod:`pinb.analysis.searching.scan`; hits in the
        order found, the sessions changed most recently first).
    scanned:
        Session files a scan read (``0`` for the index).
    complete:
        ``False`` when a scan stopped at the limit before reading every session.
    building:
        The index being built in the background after a scan (an
        :class:`~pinb.analysis.searching.building.IndexBuild`), or ``None``.
    skipped:
        Files under the sessions folder left out, and why (a looping or broken link, a
        FIFO, a file that cannot be read: :class:`~pinb.core.file.listing.Skipped`); each was
        also logged as a warning line.
    """

    def __init__(
        self,
        hits: Sequence[SearchHit] = (),
        query: str = "",
        parsed: SearchQuery | None = None,
        root: str | os.PathLike[str] | None = None,
        *,
        source: str = "index",
        scanned: int = 0,
        complete: bool = True,
        skipped: Sequence[Skipped] = (),
    ) -> None:
        super().__init__(hits)
        self.query = query
        self.parsed = parsed if parsed is not None else SearchQuery(query)
        #: The sessions folder searched: the display names files relative to it (each
        #: hit's :attr:`~SearchHit.cite` keeps the full path).
        self.root = Path(root) if root is not None else None
        self.source = source
        self.scanned = scanned
        self.complete = complete
        self.building: Any = None
        self.skipped = list(skipped)

    @property
    def note(self) -> str:
        """How the hits were found, when not from the index (``""`` when they were)."""
        if self.source != "scan":
            return ""
        read = f"{self.scanned:,} session(s) read" + (
            "" if self.complete else ", stopped at the limit"
        )
        later = (
            "; the search index is being built: searches after it rank hits by relevance"
            if self.building is not None
            else ""
        )
        return f"as a scan of the files found them, the latest sessions first ({read}){later}"

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

    def heading(self) -> str:
        """The first line of :meth:`to_text`: how many hits, copies folded, how found."""
        folded = sum(len(h.copies) for h in self)
        note = self.note
        return (
            f"{len(self)} hit(s) for {self.query!r}"
            + (f" ({folded} repeat(s) and fork copies folded in)" if folded else "")
            + (f"; {note}" if note else "")
        )

    def hit_text(self, hit: SearchHit, *, full_paths: bool = False) -> str:
        """The two lines of one hit in :meth:`to_text`."""
        when = f"{hit.timestamp:%Y-%m-%d %H:%M}" if hit.timestamp else " " * 16
        copies = f"  (+{len(hit.copies)} copies)" if hit.copies else ""
        cite = hit.cite if full_paths else self.shown_cite(hit)
        return (
            f"{when}  {hit.role or hit.info.name or '':<10}  {cite}{copies}\n"
            f"    {_short(hit.snippet, 110)}"
        )

    def to_text(self, *, full_paths: bool = False) -> str:
        """One hit per two lines; files relative to the sessions folder unless ``full_paths``."""
        return "\n".join(
            [self.heading(), *(self.hit_text(hit, full_paths=full_paths) for hit in self)]
        )
