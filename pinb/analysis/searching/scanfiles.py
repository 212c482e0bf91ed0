"""Reading many session files for a scan: batches of files read by threads, and where a
word occurs in a batch, case-insensitively, without a pass of Python per file.

Two threads read the files, several to a batch of up to :data:`BATCH` bytes, into
buffers they reuse, and look in each batch for the query's first word
(:class:`Finder`): a read holds no interpreter lock, nor do numpy's passes, so two
batches are read and searched at once while the caller judges the lines found in the
one before. The finder folds case with numpy (when it is installed) as the bytes with
bit ``0x20`` set, which folds exactly the ASCII letters' case and leaves every byte of a
UTF-8 sequence one, a cache-sized piece at a time, compared at the word's rarest byte
and then at its others; without numpy, as ``bytes.lower`` and ``bytes.find``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BATCH", "Batch", "Finder", "Unusual", "pieces", "read_batches", "read_error"]

#: Bytes of files read into one batch; a larger file is read on its own, in pieces.
BATCH = 8 << 20
#: Batches read ahead of the one being searched.
_AHEAD = 2
#: Bytes of the first batch that choose the byte a word is looked for by.
_SAMPLE = 1 << 20
#: Bytes folded and compared at a time (they stay in the processor's cache).
_CHUNK = 1 << 20


@dataclass
class Batch:
    """Files read back to back into one buffer (``files``: ``(path, start, end)`` in
    it, and ``found``: where a :class:`Finder`'s word occurs in it, when one was given),
    or one file too large for a batch (``large``: its path, to read in pieces).
    ``alone``: files of the batch that grew past their place since they were listed, to
    read alone, in pieces."""

    buffer: bytearray
    used: int
    files: list[tuple[str, int, int]]
    large: str | None = None
    found: list[int] | None = None
    alone: tuple[str, ...] = ()
    #: Where an :class:`Unusual` finds bytes that may spell a word otherwise than in plain
    #: ASCII (when one was given): every other place spells it plainly or not at all.
    unusual: list[int] | None = None
    #: Files that could not be read, and why (``(path, reason)``).
    failed: tuple[tuple[str, str], ...] = ()

    def view(self) -> memoryview:
        return memoryview(self.buffer)[: self.used]


def _read_into(path: str, buffer: bytearray, start: int, limit: int) -> int | None:
    """Read the file into ``buffer[start:start + limit]``; its size read (``None``: it
    holds more than ``limit`` bytes now). Raises the ``OSError`` of a file that cannot
    be read."""
    with open(path, "rb", buffering=0) as handle:
        view = memoryview(buffer)[start : start + limit + 1]
        got = 0
        while got < len(view):
            count = handle.readinto(view[got:])
            if not count:
                break
            got += count
    return got if got <= limit else None


def read_error(exc: OSError) -> str:
    """How a file that could not be read is described in a note."""
    return f"cannot be read ({(exc.strerror or str(exc)).lower()})"


def _jobs(files: Sequence[tuple[str, int]], batch: int) -> list[list[tuple[str, int]] | str]:
    """The files in batches (lists of ``(path, size)``) of up to ``batch`` bytes, in
    order; a larger file is a job of its own (its path)."""
    jobs: list[list[tuple[str, int]] | str] = []
    current: list[tuple[str, int]] = []
    used = 0
    for path, size in files:
        if size > batch:
            if current:
                jobs.append(current)
                current, used = [], 0
            jobs.append(path)
            continue
        if used + size > batch and current:
            jobs.append(current)
            current, used = [], 0
        current.append((path, size))
        used += size
    if current:
        jobs.append(current)
    return jobs


def read_batches(
    files: Sequence[tuple[str, int]],
    batch: int = BATCH,
    *,
    finder: Callable[[], Finder] | None = None,
    unusual: Callable[[], Unusual] | None = None,
    threads: int = 2,
) -> Generator[Batch, None, None]:
    """The files (``(path, size)``) in batches of up to ``batch`` bytes, in order, each
    read (and searched with a ``finder()`` and an ``unusual()`` of its thread's own) by
    ``threads`` threads.

    A read and numpy's passes hold no interpreter lock, so the threads work on two
    batches at once while this one judges what they found. A batch's buffer is read
    into again once the next batch is asked for: take what is kept of it
    (``bytes(...)``) before. Closing the iterator early (Ctrl-C included) stops the
    threads.
    """
    jobs = _jobs(files, batch)
    free: queue.Queue[bytearray] = queue.Queue()
    for _ in range(threads + _AHEAD):
        free.put(bytearray(batch + 1))
    done: dict[int, Batch | BaseException] = {}
    ready = threading.Condition()
    stop = threading.Event()
    taken = iter(range(len(jobs)))
    taking = threading.Lock()

    def take() -> bytearray | None:
        while not stop.is_set():
            try:
                return free.get(timeout=0.05)
            except queue.Empty:
                continue
        return None

    def work() -> None:
        search: Finder | None = None
        odd: Unusual | None = None
        while not stop.is_set():
            buffer = take()  # before the job: the job the reader waits for always has one
            if buffer is None:
                return
            with taking:
                index = next(taken, None)
            if index is None:
                free.put(buffer)
                return
            result: Batch | BaseException
            try:
                result = _read_job(jobs[index], buffer, batch)
                if finder is not None and result.large is None:
                    if search is None:
                        search = finder()  # after the first read: it may load numpy
                    result.found = search.positions(result.view())
                if unusual is not None and result.large is None:
                    if odd is None:
                        odd = unusual()
                    result.unusual = odd.positions(result.view())
            except BaseException as exc:  # handed to the reader, which raises it
                result = exc
            if isinstance(result, BaseException) or result.large is not None:
                free.put(buffer)
            with ready:
                done[index] = result
                ready.notify_all()

    workers = [
        threading.Thread(target=work, name=f"pinb-scan-read-{n}", daemon=True)
        for n in range(max(threads, 1))
    ]
    for worker in workers:
        worker.start()
    given: bytearray | None = None
    try:
        for index in range(len(jobs)):
            if given is not None:
                free.put(given)
                given = None
            with ready:
                while index not in done:
                    ready.wait(0.1)
                item = done.pop(index)
            if isinstance(item, BaseException):
                raise item
            if item.large is None:
                given = item.buffer
            yield item
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def _read_job(job: list[tuple[str, int]] | str, buffer: bytearray, batch: int) -> Batch:
    """One job of :func:`read_batches`: a batch read, or a large file."""
    if isinstance(job, str):
        return Batch(bytearray(), 0, [], large=job)
    names: list[tuple[str, int, int]] = []
    alone: list[str] = []
    failed: list[tuple[str, str]] = []
    used = 0
    for path, _ in job:
        try:
            got = _read_into(path, buffer, used, batch - used)
        except FileNotFoundError:
            continue  # gone since it was listed
        except OSError as exc:
            failed.append((path, read_error(exc)))
            continue
        if got is None:
            alone.append(path)  # it grew past its place: read it alone
            continue
        names.append((path, used, used + got))
        used += got
    return Batch(buffer, used, names, alone=tuple(alone), failed=tuple(failed))


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # the notebook extra brings it; without it, bytes.lower and find
        return None
    return numpy


class Finder:
    """Where a lower-case ASCII word (letters and digits) occurs in a batch, in any case.

    Parameters
    ----------
    word:
        The word's bytes, lower case.
    vectors:
        Use numpy when it is installed (``False``: always ``bytes.lower`` and ``find``).
    """

    def __init__(self, word: bytes, *, vectors: bool = True) -> None:
        self.word = word
        self.np: Any = _numpy() if vectors else None
        self._by: int | None = None  # the index of the byte compared first
        self._low: Any = None
        self._hits: Any = None

    def positions(self, view: memoryview) -> list[int]:
        """The starts of the word's occurrences in ``view``, in order."""
        word = self.word
        np = self.np
        if np is None:
            low = view.tobytes().lower()
            found: list[int] = []
            at = low.find(word)
            while at >= 0:
                found.append(at)
                at = low.find(word, at + 1)
            return found
        size = len(view)
        data = np.frombuffer(view, np.uint8)
        if self._by is None:
            self._by = self._rarest(data[:_SAMPLE] | 0x20)
        by, anchor = self._by, word[self._by]
        if self._low is None:
            self._low = np.empty(_CHUNK, np.uint8)
            self._hits = np.empty(_CHUNK, np.bool_)
        # A piece at a time, so the folded bytes and the comparison stay in the cache.
        found_at = []
        for start in range(0, size, _CHUNK):
            piece = data[start : start + _CHUNK]
            low, hits = self._low[: len(piece)], self._hits[: len(piece)]
            np.bitwise_or(piece, 0x20, out=low)
            np.equal(low, anchor, out=hits)
            if hits.any():
                found_at.append(np.flatnonzero(hits) + (start - by))
        if not found_at:
            return []
        starts = np.concatenate(found_at)
        starts = starts[(starts >= 0) & (starts <= size - len(word))]
        for k, byte in enumerate(word):
            if k != by and len(starts):
                starts = starts[(data[starts + k] | 0x20) == byte]
        result: list[int] = starts.tolist()
        return result

    def _rarest(self, sample: Any) -> int:
        """The index of the word's byte that occurs least in ``sample``."""
        np = self.np
        counts = {b: int(np.count_nonzero(sample == b)) for b in set(self.word)}
        return min(range(len(self.word)), key=lambda k: (counts[self.word[k]], k))


class Unusual:
    """Where bytes may spell a query's words otherwise than in plain ASCII.

    A word's :class:`~pinb.analysis.searching.folding.Spelling` names the first two bytes of every
    spelling of its letters that is not plain ASCII (an accented letter, the Kelvin sign,
    a capital of another script, a dropped diacritic) and the code units whose JSON
    escapes may spell a letter. Where none of these occurs, a line spells a word in plain
    ASCII (found by case-insensitive bytes) or not at all; so a scan looks at the lines
    holding one besides those holding the plain word, and misses nothing the index finds.
    In plain ASCII text (and text whose other characters are no letter of the words: an
    em dash, box drawing, emoji) it finds nothing, in a few passes of numpy when it is
    installed (else one regular expression).

    Parameters
    ----------
    pairs:
        ``lead << 8 | next`` of the two first bytes of each unusual spelling.
    escaped:
        Code units whose ``\\uXXXX`` escape may spell a letter.
    vectors:
        Use numpy when it is installed.
    """

    def __init__(
        self, pairs: frozenset[int], escaped: frozenset[int], *, vectors: bool = True
    ) -> None:
        self.pairs = pairs
        self.escaped = escaped
        self.np: Any = _numpy() if vectors else None
        self._lead = min((p >> 8 for p in pairs), default=0x100)
        self._table: Any = None
        self._units: Any = None
        self._hex: Any = None
        self._expression: Any = None

    @classmethod
    def of(cls, spellings: Sequence[Any], *, vectors: bool = True) -> Unusual:
        """The unusual bytes of all these words (:class:`~pinb.analysis.searching.folding.Spelling`)."""
        pairs = frozenset().union(*(s.pairs for s in spellings))
        escaped = frozenset().union(*(s.escaped for s in spellings))
        return cls(pairs, escaped, vectors=vectors)

    def positions(self, view: memoryview | bytes) -> list[int]:
        """Where an unusual spelling may start in ``view``, in order."""
        if self.np is None:
            return self._by_expression(bytes(view))
        return self._by_vectors(view)

    def _by_expression(self, data: bytes) -> list[int]:
        import re

        if self._expression is None:
            leads: dict[int, list[int]] = {}
            for pair in self.pairs:
                leads.setdefault(pair >> 8, []).append(pair & 0xFF)
            parts = [
                re.escape(bytes([lead]))
                + b"["
                + b"".join(re.escape(bytes([n])) for n in sorted(nexts))
                + b"]"
                for lead, nexts in sorted(leads.items())
            ]
            parts.append(rb"\\u([0-9a-fA-F]{4})")
            self._expression = re.compile(b"|".join(parts))
        found: list[int] = []
        for match in self._expression.finditer(data):
            unit = match.group(1)
            if unit is None or int(unit, 16) in self.escaped:
                found.append(match.start())
        return found

    def _by_vectors(self, view: memoryview | bytes) -> list[int]:
        np = self.np
        if self._table is None:
            self._table = np.zeros(1 << 16, np.bool_)
            self._table[list(self.pairs)] = True
            self._units = np.array(sorted(self.escaped), np.int64)
            hexes = np.full(256, -1, np.int64)
            for digit in b"0123456789":
                hexes[digit] = digit - 48
            for digit in b"abcdef":
                hexes[digit] = hexes[digit - 32] = digit - 87
            self._hex = hexes
        data = np.frombuffer(view, np.uint8)
        size = len(data)
        found: list[Any] = []
        for start in range(0, size, _CHUNK):
            # The piece and the five bytes after it: a pair or an escape that starts in it.
            piece = data[start : start + _CHUNK + 5]
            inside = min(_CHUNK, size - start)
            if self._lead < 0x100 and piece.max() >= self._lead:
                at = np.flatnonzero(piece[:inside] >= self._lead)
                at = at[at + 1 < len(piece)]
                keys = (piece[at].astype(np.int64) << 8) | piece[at + 1]
                found.append(at[self._table[keys]] + start)
            slashes = self._escapes(piece, inside)
            if len(slashes):
                slashes = slashes[slashes + 5 < len(piece)]
                if len(slashes):
                    digits = self._hex[np.stack([piece[slashes + k] for k in range(2, 6)])]
                    valid = (digits >= 0).all(axis=0)
                    units = (digits[0] << 12) | (digits[1] << 8) | (digits[2] << 4) | digits[3]
                    keep = valid & np.isin(units, self._units)
                    found.append(slashes[keep] + start)
        if not found:
            return []
        result: list[int] = np.unique(np.concatenate(found)).tolist()
        return result

    def _escapes(self, piece: Any, inside: int) -> Any:
        """Where ``\\u`` starts in ``piece[:inside]``, seen as one 16-bit unit (little
        endian) at even offsets and at odd ones: two compares over half as many units,
        and nothing more where there is none (a backslash alone is everywhere in JSON)."""
        np = self.np
        even = min((inside + 1) // 2, len(piece) // 2)
        odd = min(inside // 2, (len(piece) - 1) // 2)
        at_even = piece[: 2 * even].view("<u2") == 0x755C
        at_odd = piece[1 : 1 + 2 * odd].view("<u2") == 0x755C
        if not (at_even.any() or at_odd.any()):
            return np.flatnonzero(at_even[:0])
        return np.sort(
            np.concatenate([np.flatnonzero(at_even) * 2, np.flatnonzero(at_odd) * 2 + 1])
        )


def pieces(
    path: str, size: int = BATCH, failed: list[tuple[str, str]] | None = None
) -> Iterator[tuple[bytes, int]]:
    """``(bytes, first line)`` of a large file, in pieces of whole lines of about
    ``size`` bytes (a file that cannot be read gives none, and ``(path, why)`` is
    appended to ``failed``)."""
    try:
        handle = open(path, "rb", buffering=0)  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return  # gone since it was listed
    except OSError as exc:
        if failed is not None:
            failed.append((path, read_error(exc)))
        return
    with handle:
        carry, line = b"", 1
        while True:
            try:
                chunk = handle.read(size)
            except OSError as exc:
                if failed is not None:
                    failed.append((path, read_error(exc)))
                return
            if not chunk:
                if carry:
                    yield carry, line
                return
            chunk = carry + chunk
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                carry = chunk
                continue
            piece, carry = chunk[:cut], chunk[cut:]
            yield piece, line
            line += piece.count(b"\n")
