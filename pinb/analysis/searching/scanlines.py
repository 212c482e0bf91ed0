"""A session file's lines judged as the search index judges them, for a scan.

:class:`Searcher` finds the lines of a file that may hold a query's hit (its words' bytes
in any ASCII case, a role's bytes), reads just those as the session reader reads them,
extracts the text the index keeps (:func:`~pinb.analysis.searching.cite.index_entries`), and keeps
the entries that pass the query's filters and whose text FTS5 matches with the index's
own tokenizer. A file that is not plain version 3 is read whole, as the index reads it.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.file.read import is_valid_header, parse_line
from ...core.format.entries import Entry
from ...core.js.wire import loads_line
from .catalog import _text
from .cite import IndexedEntry, index_entries
from .folding import Spelling, spelling, word_tokens
from .query import Filter, SearchQuery, parse_time
from .scanfiles import Unusual
from .schema import TOKENIZER

__all__ = ["Found", "Plan", "Searcher", "plan"]

#: Bytes that stand for each role in the line of an entry of that role.
_ROLE_BYTES = {
    "user": (b'"user"',),
    "assistant": (b'"assistant"',),
    "toolResult": (b'"toolResult"',),
    "bashExecution": (b'"bashExecution"',),
    "custom": (b'"custom"', b'"custom_message"'),
    "branchSummary": (b'"branchSummary"', b'"branch_summary"'),
    "compactionSummary": (b'"compactionSummary"', b'"compaction"'),
}


@dataclass(frozen=True)
class Plan:
    """What a line must hold to be looked at, and how a looked-at entry is judged."""

    #: Each word of the query as the index folds it, and every way a line can spell it.
    words: tuple[Spelling, ...]
    #: When not empty, the line holds one of these (a ``role:`` filter).
    roles: tuple[bytes, ...]
    #: A ``tool:`` or ``file:`` filter: a tool result needs the call it answers.
    calls: bool
    #: The FTS5 expression a hit matches (``None``: none), or that none matches.
    match: str | None
    excluded: str | None
    filters: tuple[Filter, ...]


def plan(query: SearchQuery, db: sqlite3.Connection) -> Plan:
    """The words the scan looks for (the query's own words as FTS5 makes them of it,
    ``db`` asked), and the checks of what it finds."""
    texts = [term.text for term in query.terms if not term.negated]
    found: dict[str, None] = {}
    for tokens in word_tokens(db, texts) if texts else []:
        found.update(dict.fromkeys(tokens))
    # A word inside another one is found with it (each of its letters is spelled alike).
    kept = [w for w in found if not any(w in other and w != other for other in found)]
    # Plain words first (the batch finder's), the longest first: the fewest false starts.
    kept.sort(key=lambda w: (not w.isascii(), -len(w)))
    roles: tuple[bytes, ...] = ()
    positive = [f.value for f in query.filters if f.field == "role" and not f.negated]
    if positive:
        roles = tuple(dict.fromkeys(b for r in positive for b in _ROLE_BYTES[r]))
    calls = any(f.field in ("tool", "file") for f in query.filters)
    excluded = query.excluded()
    words = tuple(spelling(w) for w in kept)
    return Plan(words, roles, calls, query.match(), excluded, query.filters)


# -- filters ---------------------------------------------------------------------------------


def _holds(item: Filter, entry: IndexedEntry, session_id: str | None) -> bool:
    """One filter's condition on an entry, as :func:`pinb.analysis.searching.query.sql_filters`
    states it in SQL (a missing value does not hold)."""
    value = item.value
    if item.field == "role":
        return _text(entry.role) == value
    if item.field == "tool":
        return value.lower() in (_text(t) for t in entry.tools)
    if item.field == "file":
        path = value[2:] if value.startswith("./") else value
        stored = (_text(f) or "" for f in entry.files)
        return any(f == path or f.endswith("/" + path) for f in stored)
    if item.field == "session":
        wanted = value.lower()
        return session_id is not None and session_id[: len(wanted)] == wanted
    if entry.timestamp is None:
        return False
    if item.field == "after":
        return entry.timestamp >= parse_time(value)
    return entry.timestamp < parse_time(value)  # before


def _passes(filters: Sequence[Filter], entry: IndexedEntry, session_id: str | None) -> bool:
    """Filters on one field are alternatives, the fields all hold, a negated one must not."""
    by_field: dict[tuple[str, bool], list[Filter]] = {}
    for item in filters:
        by_field.setdefault((item.field, item.negated), []).append(item)
    for (_, negated), items in by_field.items():
        if any(_holds(i, entry, session_id) for i in items) == negated:
            return False
    return True


# -- one file ----------------------------------------------------------------------------


@dataclass
class Found:
    """An entry of a session that matches: what a hit and the folding need."""

    path: str
    entry: IndexedEntry
    body: str


def _outside_keys(low: bytes, needle: bytes, start: int, end: int) -> bool:
    """Whether ``needle`` occurs in ``low[start:end]`` other than inside an object key
    (``{"content":`` holds no text of the entry; a key's string is told by the ``{`` or
    ``,`` before it and the ``:`` after it, and holds no escape)."""
    find, rfind = low.find, low.rfind
    at = find(needle, start, end)
    while at >= 0:
        opened = rfind(b'"', start, at)
        closed = find(b'"', at + len(needle), end)
        if (
            opened < 0
            or closed < 0
            or low[closed + 1 : closed + 2] != b":"
            or low[opened - 1 : opened] not in (b"{", b",")
            or find(b"\\", opened, closed) >= 0
        ):
            return True
        at = find(needle, closed, end)
    return False


class Searcher:
    """The per-file work of a scan: find the candidate lines, read and judge them."""

    def __init__(self, query: SearchQuery, fold: bool, *, vectors: bool = True) -> None:
        self.query = query
        self.db = sqlite3.connect(":memory:")
        self.plan = plan(query, self.db)
        self.fold = fold
        #: Where a piece may spell a word otherwise than plainly (for pieces no batch
        #: finder looked at).
        self.unusual = Unusual.of(self.plan.words, vectors=vectors)
        #: Every tool call of the file being read, by id, when one was looked for far back.
        self._far_calls: dict[str, list[Entry]] | None = None
        self.db.execute(f"CREATE VIRTUAL TABLE judged USING fts5(body, content='', {TOKENIZER})")

    def close(self) -> None:
        self.db.close()

    def file(
        self,
        path: str,
        pieces: Iterator[tuple[bytes, int]],
        reread: Callable[[], Iterator[tuple[bytes, int]]] | None = None,
        unusual: list[int] | None = None,
    ) -> list[Found]:
        """The matching entries of one session file, read as ``(bytes, first line)``
        pieces of whole lines (``reread``: the same pieces again, for a file read in
        more than one; ``unusual``: where :class:`~pinb.analysis.searching.scanfiles.Unusual`
        found bytes in a file read in one piece, when a batch finder looked)."""
        self._far_calls = None
        found: list[Found] = []
        header: dict[str, Any] | None = None
        previous: tuple[bytes, int] | None = None
        for data, first_line in pieces:
            if first_line == 1:
                header = _v3_header(data)
                if header is None:
                    # Not a plain version 3 file (an old version to migrate, an odd first
                    # line): read whole, as the index reads it, if it may hold a hit.
                    # (Its roles may be renamed by the migration: only its words are looked
                    # for first.)
                    whole = b"".join([data, *(piece for piece, _ in pieces)])
                    if self._lowered(whole, None, roles=False) is None:
                        return []
                    return self._whole(path, whole)
            read = self._lowered(data, unusual if first_line == 1 else None)
            if read is not None:
                lines = self._candidates(read[0], data, first_line, read[1])
                found += self._judge(path, (data, first_line), previous, lines, header, reread)
            previous = (data, first_line)
        return found

    def _lowered(
        self, data: bytes, unusual: list[int] | None, *, roles: bool = True
    ) -> tuple[bytes, list[int]] | None:
        """``data`` in lower case (as is when no word is looked for) and where it may spell
        a word unusually (``unusual``, or found now), or ``None`` when it cannot hold a
        hit (``roles``: nor when it holds none of a role's bytes)."""
        plan = self.plan
        if roles and plan.roles and not any(r in data for r in plan.roles):
            return None
        if not plan.words:
            return data, []
        if unusual is None:
            unusual = self.unusual.positions(data)
        low = data.lower()
        if unusual or all(w.plain is not None and w.plain in low for w in plan.words):
            return low, unusual
        return None

    def _candidates(
        self, low: bytes, data: bytes, first_line: int, unusual: list[int]
    ) -> list[tuple[int, int, int]]:
        """``(start, end, line)`` of the lines holding every word (and a role's bytes)."""
        find, count = low.find, data.count
        out: list[tuple[int, int, int]] = []
        counted, line = 0, first_line
        for start in self._starts(low, data, unusual):
            end = find(b"\n", start)
            end = len(data) if end < 0 else end
            odd = bisect.bisect_left(unusual, start) < bisect.bisect_left(unusual, end)
            if self._holds_all(low, data, start, end, odd):
                line += count(b"\n", counted, start)
                counted = start
                out.append((start, end, line))
        return out

    def _starts(self, low: bytes, data: bytes, unusual: list[int]) -> Iterator[int]:
        """The start of each line holding the first word (plainly, or where it may be
        spelled otherwise), else a role's bytes, else of every line; in order."""
        plan = self.plan
        if not plan.words and not plan.roles:
            yield from _line_starts(data)
            return
        rfind = data.rfind
        if not plan.words:
            pattern = re.compile(b"|".join(re.escape(f) for f in plan.roles))
            at = 0
            while (hit := pattern.search(data, at)) is not None:
                yield rfind(b"\n", 0, hit.start()) + 1
                at = data.find(b"\n", hit.start())
                if at < 0:
                    return
            return
        starts = self._plain_starts(low, plan.words[0].plain) if plan.words[0].plain else []
        if unusual:
            odd = {rfind(b"\n", 0, at) + 1 for at in unusual}
            starts = sorted(odd.union(starts))
        yield from starts

    @staticmethod
    def _plain_starts(low: bytes, needle: bytes) -> list[int]:
        find, rfind = low.find, low.rfind
        starts: list[int] = []
        at = find(needle)
        while at >= 0:
            starts.append(rfind(b"\n", 0, at) + 1)
            newline = find(b"\n", at)  # a word holds no line break
            if newline < 0:
                break
            at = find(needle, newline)
        return starts

    def _holds_all(self, low: bytes, data: bytes, start: int, end: int, odd: bool) -> bool:
        """Whether the line holds every word (``odd``: it holds unusual bytes, so a word
        may be spelled there otherwise than plainly) and a role's bytes."""
        plan = self.plan
        if plan.roles and not any(data.find(r, start, end) >= 0 for r in plan.roles):
            return False
        for word in plan.words:
            if word.plain is not None and _outside_keys(low, word.plain, start, end):
                continue
            if odd and word.pattern.search(data, start, end) is not None:
                continue
            return False
        return True

    def _judge(
        self,
        path: str,
        piece: tuple[bytes, int],
        previous: tuple[bytes, int] | None,
        lines: list[tuple[int, int, int]],
        header: dict[str, Any] | None,
        reread: Callable[[], Iterator[tuple[bytes, int]]] | None,
    ) -> list[Found]:
        """The entries of candidate lines that match, judged as the index judges them."""
        data = piece[0]
        made: list[IndexedEntry] = []
        for start, end, line in lines:
            if line == 1:
                continue  # the header
            value = _value(data[start:end], line)
            if value is None:
                continue
            entry = Entry(value, line)
            call = self._call_of(entry, piece, start, previous, reread) if self.plan.calls else None
            items = index_entries([call, entry] if call is not None else [entry], path)
            if items and items[-1].line == line:
                made.append(items[-1])
        session_id = _text(header.get("id")) if header is not None else None
        return self._matching(path, made, session_id)

    def _matching(self, path: str, made: list[IndexedEntry], session_id: str | None) -> list[Found]:
        plan = self.plan
        kept = [e for e in made if _passes(plan.filters, e, session_id)]
        if not kept:
            return []
        bodies = [_text(e.body) or "" for e in kept]
        matched = self._fts(bodies)
        return [Found(path, e, b) for i, (e, b) in enumerate(zip(kept, bodies, strict=True))
                if i in matched]  # fmt: skip

    def _fts(self, bodies: list[str]) -> set[int]:
        """Which of ``bodies`` the query's words match, by FTS5 itself."""
        plan = self.plan
        if plan.match is None and plan.excluded is None:
            return set(range(len(bodies)))
        db = self.db
        db.executemany("INSERT INTO judged(rowid, body) VALUES (?, ?)", enumerate(bodies))
        try:
            expression = plan.match if plan.match is not None else plan.excluded
            rows = {r for (r,) in db.execute(
                "SELECT rowid FROM judged WHERE judged MATCH ?", (expression,))}  # fmt: skip
        finally:
            db.execute("INSERT INTO judged(judged) VALUES ('delete-all')")
        return rows if plan.match is not None else set(range(len(bodies))) - rows

    def _call_of(
        self,
        entry: Entry,
        piece: tuple[bytes, int],
        start: int,
        previous: tuple[bytes, int] | None,
        reread: Callable[[], Iterator[tuple[bytes, int]]] | None,
    ) -> Entry | None:
        """The assistant entry before ``start`` whose tool call ``entry`` (a tool result)
        answers: the last such line, as the index's reading in file order keeps it. (A
        file read in pieces is looked at in this piece and the one before, and, when the
        call is further back, read again.)"""
        message = entry.raw.get("message") if entry.type == "message" else None
        if not isinstance(message, dict) or message.get("role") != "toolResult":
            return None
        call_id = message.get("toolCallId")
        if not isinstance(call_id, str):
            return None
        needle = b'"' + call_id.encode("utf-8", "surrogatepass") + b'"'
        found = _last_call(piece[0], piece[1], start, needle, call_id)
        if found is None and previous is not None:
            found = _last_call(previous[0], previous[1], len(previous[0]), needle, call_id)
            if found is None and reread is not None:
                if self._far_calls is None:
                    self._far_calls = _all_calls(reread())
                before = [
                    e for e in self._far_calls.get(call_id, ()) if (e.line or 0) < previous[1]
                ]
                found = before[-1] if before else None
        return found

    def _whole(self, path: str, data: bytes) -> list[Found]:
        """Every entry of a file that is not plain version 3, read as the index reads it."""
        from .entrylines import entries_of_bytes

        header = _header(data)
        made = entries_of_bytes(path, data, quiet=True) or []  # the index says why not
        session_id = _text(header.get("id")) if header is not None else None
        return self._matching(path, made, session_id)


def _line_starts(data: bytes) -> Iterator[int]:
    find = data.find
    at = 0
    while at < len(data):
        yield at
        newline = find(b"\n", at)
        if newline < 0:
            return
        at = newline + 1


def _value(line: bytes, number: int) -> dict[str, Any] | None:
    """The entry object a line holds, as the session reader reads it (``None``: none)."""
    values: list[Any] = []
    parse_line(line, number, None, [], True, values, [])
    value = values[0] if values else None
    if value.__class__ is not dict or value.get("type") == "session":
        return None
    return value


def _last_call(data: bytes, first_line: int, end: int, needle: bytes, call_id: str) -> Entry | None:
    """The last line of ``data[:end]`` (which starts at line ``first_line``) that is an
    assistant message making the tool call ``call_id`` (its id's JSON is ``needle``)."""
    at = data.rfind(needle, 0, end)
    while at >= 0:
        begin = data.rfind(b"\n", 0, at) + 1
        stop = data.find(b"\n", at)
        line = first_line + data.count(b"\n", 0, begin)
        value = _value(data[begin : stop if stop >= 0 else len(data)], line)
        if value is not None and line > 1 and call_id in _call_ids(value):
            return Entry(value, line)
        at = data.rfind(needle, 0, begin)
    return None


def _all_calls(pieces: Iterator[tuple[bytes, int]]) -> dict[str, list[Entry]]:
    """The assistant entries of a file making each tool call, by call id, in file order."""
    found: dict[str, list[Entry]] = {}
    for data, first_line in pieces:
        line, counted = first_line, 0
        at = data.find(b'"toolCall"')
        while at >= 0:
            begin = data.rfind(b"\n", 0, at) + 1
            stop = data.find(b"\n", at)
            stop = len(data) if stop < 0 else stop
            line += data.count(b"\n", counted, begin)
            counted = begin
            value = _value(data[begin:stop], line)
            if value is not None and line > 1:
                for call_id in _call_ids(value):
                    found.setdefault(call_id, []).append(Entry(value, line))
            at = data.find(b'"toolCall"', stop)
    return found


def _call_ids(value: dict[str, Any]) -> set[str]:
    """The ids of the tool calls an entry makes, when it is an assistant message."""
    message = value.get("message") if value.get("type") == "message" else None
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return set()
    blocks = message.get("content")
    if not isinstance(blocks, list):
        return set()
    return {
        b["id"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    }


def _v3_header(data: bytes) -> dict[str, Any] | None:
    """The first line's header when it is a valid one of version 3 (``None`` otherwise)."""
    header = _header(data)
    version = header.get("version") if header is not None else None
    return header if version.__class__ is int and version == 3 else None


def _header(data: bytes) -> dict[str, Any] | None:
    if data[:1] != b"{":
        return None
    end = data.find(b"\n")
    try:
        value = loads_line(data if end < 0 else data[:end])
    except (ValueError, RecursionError):
        return None
    return value if is_valid_header(value) else None
