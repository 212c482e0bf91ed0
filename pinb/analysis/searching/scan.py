"""A search answered from the session files themselves, while the index is being built.

The first search of a folder (no index yet, or one missing many sessions) reads the files
instead of waiting for the index: a byte scan for the query's words
(:mod:`pinb.analysis.searching.scanfiles`), that decodes only the lines that may hold them; each
such line is then judged the way the index would judge it
(:mod:`pinb.analysis.searching.scanlines`): the same value read from the same bytes, the same text
extracted, the same FTS5 tokenizer matching the same expression, the same filters,
folding and snippets. So every hit of a scan is a hit of the index, cited alike
(``path:line#entry-id``), and the scan misses none of the index's: a word is looked for as
the index folds it (:mod:`pinb.analysis.searching.folding`, FTS5's own table), in every spelling a
line can hold (any letter that folds to its letters, accented or of another case or
script, as UTF-8 or a JSON ``\\u`` escape). Plain ASCII is found in whole batches at C
speed; only the lines holding bytes that could spell a word otherwise are matched by its
full expression.

A scan lists hits in the order it finds them, without a relevance score: the sessions
changed most recently first, and in each session its last lines first (so, about newest
first). It stops at the end of a session once it has ``limit`` hits: a hit's copies are
then those in the sessions it read.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...core.file.listing import (
    Progress,
    SessionInfo,
    Skipped,
    read_listing,
    session_info_from_bytes,
)
from .catalog import SearchTimeoutError, _dt, _stored_info, _text, _ts
from .cite import Citation
from .hits import OnHit, SearchHit, SearchResults, fts_snippets, mark
from .query import SearchQuery
from .scanfiles import BATCH, Batch, Finder, Unusual, pieces, read_batches
from .scanlines import Found, Searcher

__all__ = ["scan_search"]


class _Scan:
    """The hits found so far, folded as the index folds them."""

    def __init__(
        self, query: SearchQuery, fold: bool, limit: int, on_hit: OnHit | None, vectors: bool
    ) -> None:
        self.query = query
        self.fold = fold
        self.limit = limit
        self.on_hit = on_hit
        self.searcher = Searcher(query, fold, vectors=vectors)
        self.groups: dict[Any, list[Found]] = {}
        self.infos: dict[str, SessionInfo | None] = {}
        self.created: dict[str, float | None] = {}
        self.streamed = 0  # groups handed to on_hit, in the order found

    def close(self) -> None:
        self.searcher.close()

    @property
    def enough(self) -> bool:
        return len(self.groups) >= self.limit

    def file(self, path: str, found: list[Found], data: bytes | None, mtime_ns: int) -> None:
        """Keep a file's matching entries (``data``: its bytes, when they are at hand)."""
        if not found:
            return
        if path not in self.infos:
            info = _listed(path, data, mtime_ns)
            self.infos[path] = _stored_info(info) if info is not None else None
            self.created[path] = _ts(info.created) if info is not None else None
        if self.infos[path] is None:
            return  # not a Pi session (Pi does not list it): the index never reads it
        for item in reversed(found):  # a session's last lines first
            key = item.entry.digest if self.fold else (item.path, item.entry.line)
            self.groups.setdefault(key, []).append(item)

    def flush(self) -> None:
        """Hand the groups found since the last flush to ``on_hit`` (up to the limit),
        each as its earliest copy found so far."""
        if self.on_hit is None:
            return
        groups = list(self.groups.values())[self.streamed : self.limit]
        self.streamed += len(groups)
        for members in groups:
            ordered = sorted(members, key=self.earliest)
            self.on_hit(self.hit(ordered[0], ordered[1:]))

    def earliest(self, item: Found) -> tuple[float, float, str, int]:
        """The index's order of a hit's copies: by time, then the older session, path,
        line (the first of them is the hit)."""
        never = float("inf")
        created = self.created.get(item.path)
        stamp = item.entry.timestamp
        return (
            stamp if stamp is not None else never,
            created if created is not None else never,
            item.path,
            item.entry.line,
        )

    def hit(self, item: Found, copies: Sequence[Found], snippet: str | None = None) -> SearchHit:
        info = self.infos[item.path]
        assert info is not None  # only sessions' entries are kept
        entry = item.entry
        if snippet is None:
            snippet = self.snippets({0: item.body}).get(0, "")
        return SearchHit(
            info=info,
            line=entry.line,
            entry_id=_text(entry.entry_id),
            role=_text(entry.role),
            timestamp=_dt(entry.timestamp),
            snippet=mark(snippet),
            score=0.0,
            copies=tuple(
                Citation(Path(c.path), c.entry.line, _text(c.entry.entry_id)) for c in copies
            ),
            _marked=snippet,
        )

    def snippets(self, bodies: dict[int, str]) -> dict[int, str]:
        """The snippets the index gives these texts (FTS5's own, or their start)."""
        match = self.query.match()
        if match is None:
            return {key: body[:200] for key, body in bodies.items()}
        return fts_snippets(self.searcher.db, bodies, match)

    def hits(self) -> list[SearchHit]:
        """The groups in the order found (up to the limit), each the earliest of its
        copies."""
        found = list(self.groups.values())[: max(self.limit, 0)]
        ordered = [sorted(members, key=self.earliest) for members in found]
        snippets = self.snippets({i: members[0].body for i, members in enumerate(ordered)})
        return [
            self.hit(members[0], members[1:], snippets.get(i, ""))
            for i, members in enumerate(ordered)
        ]


def _listed(path: str, data: bytes | None, mtime_ns: int) -> SessionInfo | None:
    """The session's listing row, as the catalog reads it (``None``: not a Pi session)."""
    if data is None:
        return read_listing(path).info
    # The seconds as ``os.stat`` gives them (the row's fallback time), to the last bit.
    seconds = mtime_ns // 10**9 + (mtime_ns % 10**9) * 1e-9
    return session_info_from_bytes(data, Path(path), seconds, text=False)


_Parts = Iterator[tuple[bytes, int]]


def _batch_files(
    batch: Batch, word: bytes | None, size: int, failed: list[tuple[str, str]]
) -> Iterator[tuple[int, str, bytes | None, _Parts, Callable[[], _Parts] | None, list[int] | None]]:
    """The files of a batch that may hold a hit: ``(files of the batch searched up to
    this one, path, bytes, pieces, the pieces again, where it holds unusual bytes)``.
    When the batch was searched for the words, only those holding the first one plainly
    (``word``) or bytes that may spell a word otherwise; a large file (or one that grew
    past its place) is read in pieces; a file that cannot be read is added to
    ``failed``."""
    failed += batch.failed
    view = batch.view()
    files = batch.files
    chosen: Sequence[int] = range(len(files))
    odd: dict[int, list[int]] = {}
    if batch.unusual is not None:
        index = 0
        for at in batch.unusual:  # positions and files in order
            while files[index][2] <= at:
                index += 1
            odd.setdefault(index, []).append(at - files[index][1])
    if batch.unusual is not None:
        # The files holding the word, from where it occurs (positions and files in order).
        plain: list[int] = []
        index = 0
        for at in batch.found or ():
            while files[index][2] <= at:
                index += 1
            if word is not None and at + len(word) <= files[index][2]:
                if not plain or plain[-1] != index:
                    plain.append(index)
        chosen = sorted(set(plain).union(odd))
    for index in chosen:
        path, start, end = files[index]
        data = bytes(view[start:end])
        unusual = odd.get(index, []) if batch.unusual is not None else None
        yield index + 1, path, data, iter(((data, 1),)), None, unusual
    for n, large in enumerate([batch.large] if batch.large is not None else batch.alone, 1):
        yield (
            len(files) + n,
            large,
            None,
            pieces(large, size, failed),
            functools.partial(pieces, large, size),
            None,
        )


def scan_search(
    text: str,
    query: SearchQuery,
    files: Sequence[tuple[str, int, int]],
    *,
    root: str | os.PathLike[str] | None,
    limit: int,
    fold: bool,
    timeout: float | None = None,
    on_hit: OnHit | None = None,
    progress: Progress | None = None,
    vectors: bool = True,
    batch: int = BATCH,
) -> SearchResults:
    """Search ``files`` (``(path, size, mtime_ns)``) by reading them; see the module notes.

    Parameters
    ----------
    text, query:
        The query as typed and parsed (not a raw FTS5 query).
    limit, fold:
        As for :meth:`pinb.analysis.searching.index.SessionCatalog.search`.
    timeout:
        Seconds the scan may run (``None``: no limit).
    on_hit:
        Called with each hit as it is found (a session at a time, at most ``limit``),
        before the scan ends; the answer holds the same hits in the same order, except
        that a copy found later and earlier in time is cited instead.
    progress:
        ``progress("scanning", done, total)`` as files are read.
    vectors:
        Find words with numpy when it is installed (``False``: with ``bytes`` alone).
    batch:
        Bytes of files read at a time (:data:`~pinb.analysis.searching.scanfiles.BATCH`); a larger
        file is read alone, in pieces of this size.

    Raises
    ------
    SearchTimeoutError
        The scan ran past ``timeout``.
    """
    deadline = time.monotonic() + timeout if timeout is not None else None
    order = sorted(files, key=lambda f: (-f[2], f[0]))  # changed most recently first
    mtimes = {path: mtime for path, _, mtime in order}
    scan = _Scan(query, fold, limit, on_hit, vectors)
    words = scan.searcher.plan.words
    # The first word in plain ASCII, and the bytes that may spell a word otherwise, are
    # found in whole batches at once.
    word = words[0].plain if words else None
    batches = read_batches(
        [(path, size) for path, size, _ in order],
        batch,
        finder=(lambda: Finder(word, vectors=vectors)) if word is not None else None,
        unusual=(lambda: Unusual.of(words, vectors=vectors)) if words else None,
    )
    read = 0
    failed: list[tuple[str, str]] = []
    try:
        for read_in in batches:
            covered = len(read_in.files) + len(read_in.alone) + (read_in.large is not None)
            for upto, path, data, parts, again, odd in _batch_files(read_in, word, batch, failed):
                found = scan.searcher.file(path, parts, again, odd)
                scan.file(path, found, data, mtimes[path])
                scan.flush()
                if scan.enough:
                    covered = upto  # the rest of the batch is not looked at
                    break
            read += covered
            if progress is not None:
                progress("scanning", read, len(order))
            if deadline is not None and time.monotonic() > deadline:
                raise SearchTimeoutError(
                    f"the scan of the session files took longer than {timeout:g} s and was "
                    "stopped; narrow it with more words or filters (role:, after:, file:), "
                    "or give it more time (timeout=, --timeout)"
                )
            if scan.enough:
                break
        hits = scan.hits()
    finally:
        batches.close()  # the reading thread stops
        scan.close()
    return SearchResults(
        hits,
        text,
        query,
        root=root,
        source="scan",
        scanned=read,
        complete=read == len(order),
        skipped=[Skipped(path, why) for path, why in dict(failed).items()],
    )
