"""Listing sessions with Pi's ``SessionInfo`` fields, and finding the most recent one (§2.1, §9.4)."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..format.fieldtypes import content_flaws, text_flaw
from ..format.problems import Problem
from ..js.wire import js_date_ms, js_trim, js_truthy
from .lazy import listed_value, listing_reader
from .paths import sessions_root
from .read import is_valid_header, parse_line
from .special import open_regular

__all__ = [
    "TAIL_BYTES",
    "ListingMark",
    "ListingRead",
    "Progress",
    "SessionInfo",
    "Skipped",
    "list_all_sessions",
    "list_sessions",
    "most_recent_session",
    "read_listing",
    "read_session_info",
    "session_info_from_bytes",
]


#: ``progress(what, done, total)``, called as files are read (``what``: ``"listing"``, or
#: ``"indexing"`` while a search index is built).
Progress = Callable[[str, int, int], None]

#: Bytes at the start of a file and just before where a read of it ended that must be
#: unchanged for the file, grown, to be read from there (see :class:`ListingMark`).
TAIL_BYTES = 256
#: Bytes read at a time: a listing never holds a whole file, only a piece and a line.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class SessionInfo:
    """One row of a session listing (Pi's ``SessionInfo``).

    ``message_count`` counts ``message`` entries of every role on every branch, as Pi does.
    ``problems``: the fields the row was read from that hold an odd type (``odd-field``,
    with file and line); the row is Pi's either way.
    """

    path: Path
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime | None
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str
    problems: tuple[Problem, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (snake_case) for tables and frames."""
        return {
            "path": str(self.path),
            "id": self.id,
            "cwd": self.cwd,
            "name": self.name,
            "parent_session_path": self.parent_session_path,
            "created": self.created,
            "modified": self.modified,
            "message_count": self.message_count,
            "first_message": self.first_message,
        }


@dataclass(frozen=True)
class ListingMark:
    """Where a listing's read of a session file ended, so that a file that only grew is
    read from there: its row is the old row brought forward by the new lines.

    Attributes
    ----------
    end:
        Bytes read; the last of them ends a line (a file whose last line is unterminated,
        a write under way, gets no mark and is read whole next time).
    lines:
        Lines in those bytes.
    digest:
        A digest of their first and last :data:`TAIL_BYTES`: while it matches (and the
        file is the same one), the bytes before ``end`` are taken as unchanged. A cheap
        check, not a proof: a file rewritten in place (same inode) with only bytes in
        between changed is not told apart. Pi only appends; pinb and editors replace a
        file by a rename.
    file_id:
        ``"device:inode"`` of the file read (a file replaced by a rename is read whole).
    latest:
        The latest message activity read, in milliseconds (``0``: none).
    first_found:
        Whether ``first_message`` is a user message's text (not the placeholder).
    text:
        Whether ``all_messages_text`` was read too.
    """

    end: int
    lines: int
    digest: str
    file_id: str
    latest: int
    first_found: bool
    text: bool = False


@dataclass(frozen=True)
class ListingRead:
    """What :func:`read_listing` found: the row (``None``: not a Pi session), the mark to
    go on from next time (``None``: none can be kept), the bytes it read, whether it
    went on from an earlier mark, and why the file could not be read (``None``: it was)."""

    info: SessionInfo | None
    mark: ListingMark | None
    bytes_read: int
    resumed: bool
    error: str | None = None


@dataclass(frozen=True)
class Skipped:
    """A file left out of a listing, a search or a report, and why (said, never silent)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _datetime(ms: int | None) -> datetime | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
    return []


def _digest(head: bytes, tail: bytes) -> str:
    return hashlib.blake2b(head + b"\0" + tail, digest_size=12).hexdigest()


# path -> ((size, mtime_ns), with text, SessionInfo, mark), so re-listing a folder only
# re-reads changed files, and a grown file only its new lines.
_cache: dict[Path, tuple[tuple[int, int], bool, SessionInfo | None, ListingMark | None]] = {}


def read_session_info(path: str | os.PathLike[str], *, text: bool = True) -> SessionInfo | None:
    """The :class:`SessionInfo` of one file, or ``None`` when it is not a Pi session.

    ``text=False``: without ``all_messages_text`` (see :func:`session_info_from_bytes`).
    A file read before in this process that only grew since is read from where that read
    ended (:func:`read_listing`).
    """
    file_path = Path(path)
    try:
        stat = file_path.stat()
    except FileNotFoundError:
        return None
    key = (stat.st_size, stat.st_mtime_ns)
    cached = _cache.get(file_path)
    if cached is not None and cached[0] == key and (cached[1] or not text):
        return cached[2]
    since = None
    if cached is not None and cached[2] is not None and cached[3] is not None:
        since = (cached[2], cached[3])
    read = read_listing(file_path, text=text, since=since)
    _cache[file_path] = (key, read.mark.text if read.mark else text, read.info, read.mark)
    return read.info


def read_listing(
    path: str | os.PathLike[str],
    *,
    text: bool = False,
    since: tuple[SessionInfo, ListingMark] | None = None,
) -> ListingRead:
    """A session file's listing row, read in pieces (never the whole file at once).

    Parameters
    ----------
    path:
        The file.
    text:
        Read ``all_messages_text`` too.
    since:
        The row and mark of an earlier read. When the file is the same one, is no shorter
        and the bytes before the mark are unchanged (:class:`ListingMark`), only the bytes
        after it are read and the row is brought forward; otherwise the file is read whole.
        A mark of a read with text goes on with text even when ``text`` is false.

    Returns
    -------
    ListingRead
        The row is the same as :func:`session_info_from_bytes` of the whole file.
    """
    file_path = Path(path)
    try:
        with open_regular(file_path) as handle:  # a FIFO named *.jsonl is skipped, not waited on
            return _read_listing(handle, file_path, text, since)
    except FileNotFoundError:  # gone since it was found: not listed
        return ListingRead(None, None, 0, False)
    except OSError as exc:  # unreadable: not listed, and the caller says why
        return ListingRead(None, None, 0, False, error=exc.strerror or str(exc))


def _read_listing(
    handle: IO[bytes],
    path: Path,
    text: bool,
    since: tuple[SessionInfo, ListingMark] | None,
) -> ListingRead:
    stat = os.fstat(handle.fileno())
    file_id = f"{stat.st_dev}:{stat.st_ino}"
    lister: _Lister | None = None
    read = 0
    head = b""  # the file's first bytes, and
    recent = b""  # the last bytes read, up to the end of the last line: for the mark
    if since is not None:
        before, was = since
        if was.file_id == file_id and (was.text or not text) and was.end <= stat.st_size:
            head = handle.read(TAIL_BYTES)
            size = min(TAIL_BYTES, was.end)
            handle.seek(was.end - size)
            recent = handle.read(size)
            read += len(head) + len(recent)
            if _digest(head[: was.end], recent) == was.digest:
                lister = _Lister.resumed(path, before, was)
    resumed = lister is not None
    if lister is None:
        handle.seek(0)
        lister = _Lister(path, text)
        head = recent = b""
    consumed = 0
    carry: list[bytes] = []  # the start of a line that began in earlier pieces
    while chunk := handle.read(_CHUNK):
        if not resumed and not consumed:
            head = chunk[:TAIL_BYTES]
        read += len(chunk)
        consumed += len(chunk)
        recent = (recent + chunk[-TAIL_BYTES:])[-TAIL_BYTES:]
        if chunk.find(b"\n") < 0:
            carry.append(chunk)
            continue
        pieces = chunk.split(b"\n")
        if carry:
            carry.append(pieces[0])
            pieces[0] = b"".join(carry)
        carry = [pieces.pop()]
        for line in pieces:
            if not lister.feed(line):
                return ListingRead(None, None, read, resumed)
    final = b"".join(carry)
    if not lister.feed(final):
        return ListingRead(None, None, read, resumed)
    info = lister.info(stat.st_mtime)
    mark = None
    if info is not None and not final:
        end = lister.start + consumed
        mark = ListingMark(
            end=end,
            lines=lister.line_no - 1,  # the empty piece after the last newline is no line
            digest=_digest(head[:end], recent),
            file_id=file_id,
            latest=lister.latest,
            first_found=lister.first_message is not None,
            text=lister.text,
        )
    return ListingRead(info, mark, read, resumed)


def session_info_from_bytes(
    data: bytes, path: Path, mtime: float, *, text: bool = True
) -> SessionInfo | None:
    """The :class:`SessionInfo` of a file's bytes (``mtime`` in seconds is the fallback
    ``modified``), or ``None`` when they are not a Pi session.

    With ``text=False`` the row's ``all_messages_text`` is left empty, and of the message
    contents only the user messages' up to the first with text are decoded: what a
    listing shows. Each line is still checked as JSON (with msgspec, the ``fast`` extra,
    without being built; otherwise parsed whole), so the rows are the same either way.
    """
    lister = _Lister(path, text)
    for line in data.split(b"\n"):
        if not lister.feed(line):
            return None
    return lister.info(mtime)


class _Lister:
    """A listing row built line by line: the state a :class:`ListingMark` goes on from."""

    def __init__(self, path: Path, text: bool) -> None:
        self.path = path
        self.text = text
        self.reader = listing_reader()
        self.start = 0  # the byte the lines fed begin at
        self.line_no = 0
        self.headed = False
        self.id = ""
        self.cwd = ""
        self.parent: str | None = None
        self.created: datetime | None = None
        self.name: str | None = None
        self.message_count = 0
        self.first_message: str | None = None
        self.all_texts: list[str] = []
        self.latest = 0
        self.problems: list[Problem] = []
        self._parsed: list[Any] = []
        self._numbers: list[int] = []

    @classmethod
    def resumed(cls, path: Path, info: SessionInfo, mark: ListingMark) -> _Lister:
        """The state after the lines a mark covers, from the row they gave."""
        lister = cls(path, mark.text)
        lister.start = mark.end
        lister.line_no = mark.lines
        lister.headed = True
        lister.id, lister.cwd = info.id, info.cwd
        lister.parent, lister.created = info.parent_session_path, info.created
        lister.name, lister.message_count = info.name, info.message_count
        lister.first_message = info.first_message if mark.first_found else None
        # One string stands for the texts joined so far: joining it to the new ones with a
        # space is the join of them all.
        lister.all_texts = [info.all_messages_text] if mark.text and info.all_messages_text else []
        lister.latest = mark.latest
        lister.problems = list(info.problems)
        return lister

    def _odd(self, phrases: Iterable[str | None], line_no: int) -> None:
        for phrase in phrases:
            if phrase is not None:
                self.problems.append(
                    Problem("odd-field", f"{phrase}; read as Pi reads it", self.path, line_no)
                )

    def feed(self, line: bytes) -> bool:
        """Read the next line; ``False`` when the file turns out not to be a Pi session."""
        self.line_no += 1
        line_no = self.line_no
        reader = self.reader
        row = reader(line) if reader is not None else None
        if row is None:
            parsed = self._parsed
            parse_line(line, line_no, self.path, [], True, parsed, self._numbers)  # Pi 1.x's
            if not parsed:
                return True
            value = parsed.pop()
            self._numbers.clear()
            row = _Row(value) if value.__class__ is dict else None
        if not self.headed:
            if row is None or row.type != "session" or row.id.__class__ is not str:
                return False
            self.headed = True
            self.id = row.id
            cwd, parent = row.cwd, row.parentSession
            self.cwd = cwd if isinstance(cwd, str) else ""
            self.parent = parent if isinstance(parent, str) and js_truthy(parent) else None
            self.created = _datetime(js_date_ms(row.timestamp))
            return True
        if row is None:
            return True
        kind = row.type
        if kind == "session_info":
            # Pi 1.x: the latest session_info decides, even when it clears the name.
            value = row.name
            self.name = (js_trim(value) or None) if isinstance(value, str) else None
            if not isinstance(value, str) and value is not None:
                self._odd([text_flaw("name", value)], line_no)
            return True
        if kind != "message":
            return True
        self.message_count += 1
        message = row.message
        if message is None or message.role not in ("user", "assistant"):
            return True
        if self.text or (self.first_message is None and message.role == "user"):
            content = listed_value(message.content)
            if content.__class__ is not str:
                self._odd(content_flaws("message.content", content), line_no)
            joined = " ".join(_texts(content))
            if joined:
                self.all_texts.append(joined)
                if self.first_message is None and message.role == "user":
                    self.first_message = joined
        stamp = message.timestamp
        if isinstance(stamp, int | float) and not isinstance(stamp, bool) and math.isfinite(stamp):
            activity = int(stamp)
        else:
            activity = js_date_ms(row.timestamp) or 0
        self.latest = max(self.latest, activity)
        return True

    def info(self, mtime: float) -> SessionInfo | None:
        """The row of the lines fed (``mtime`` in seconds: the fallback ``modified``)."""
        if not self.headed:
            return None
        modified = _datetime(self.latest) if self.latest > 0 else self.created
        return SessionInfo(
            path=self.path,
            id=self.id,
            cwd=self.cwd,
            name=self.name,
            parent_session_path=self.parent,
            created=self.created,
            modified=modified or datetime.fromtimestamp(mtime, tz=UTC),
            message_count=self.message_count,
            first_message=self.first_message if self.first_message is not None else "(no messages)",
            all_messages_text=" ".join(self.all_texts) if self.text else "",
            problems=tuple(self.problems),
        )


class _Row:
    """A line parsed whole, read through the listing reader's attribute names."""

    __slots__ = ("cwd", "id", "message", "name", "parentSession", "timestamp", "type")

    def __init__(self, value: dict[str, Any]) -> None:
        self.type = value.get("type")
        self.id = value.get("id")
        self.cwd = value.get("cwd")
        self.timestamp = value.get("timestamp")
        self.parentSession = value.get("parentSession")
        self.name = value.get("name")
        message = value.get("message")
        self.message = _Message(message) if message.__class__ is dict else None


class _Message:
    __slots__ = ("content", "role", "timestamp")

    def __init__(self, value: dict[str, Any]) -> None:
        self.role = value.get("role")
        self.timestamp = value.get("timestamp")
        self.content = value.get("content")


def _sorted(infos: Iterable[SessionInfo | None]) -> list[SessionInfo]:
    """Most recently active first; ties by path, last first (a stable, repeatable order)."""
    return sorted(
        (i for i in infos if i is not None), key=lambda i: (i.modified, str(i.path)), reverse=True
    )


def list_sessions(folder: str | os.PathLike[str], *, text: bool = True) -> list[SessionInfo]:
    """Sessions of one folder (a project's session directory), newest first.

    ``text=False`` leaves ``all_messages_text`` empty and reads less (a listing's rows).
    """
    directory = Path(folder)
    if not directory.is_dir():
        return []
    return _sorted(
        read_session_info(p, text=text) for p in directory.glob("*.jsonl") if p.is_file()
    )


def list_all_sessions(
    root: str | os.PathLike[str] | None = None,
    *,
    text: bool = True,
    progress: Progress | None = None,
) -> list[SessionInfo]:
    """Sessions of every project under the sessions root (``<agentDir>/sessions``), newest first.

    ``text`` as for :func:`list_sessions`; ``progress("listing", done, total)`` is called
    as files are read.
    """
    base = Path(root) if root is not None else sessions_root()
    if not base.is_dir():
        return []
    paths = [p for p in base.glob("*/*.jsonl") if p.is_file()]
    infos = []
    for done, path in enumerate(paths, 1):
        infos.append(read_session_info(path, text=text))
        if progress is not None:
            progress("listing", done, len(paths))
    return _sorted(infos)


def _header_of(path: Path) -> dict[str, Any] | None:
    try:
        with open_regular(path) as handle:
            head = handle.read(512) or b""  # None: a kernel file with nothing to say
    except OSError:
        return None
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    try:
        from ..js.wire import loads

        value = loads(first)
    except ValueError:
        return None
    return value if is_valid_header(value) else None


def most_recent_session(folder: str | os.PathLike[str], *, cwd: str | None = None) -> Path | None:
    """Pi's "continue most recent": the newest-mtime ``*.jsonl`` with a valid first line.

    With ``cwd``, only files whose header ``cwd`` resolves to it count (newer Pi, for
    shared folders).
    """
    directory = Path(folder)
    if not directory.is_dir():
        return None
    best: tuple[float, Path] | None = None
    wanted = os.path.abspath(cwd) if cwd is not None else None
    for path in directory.glob("*.jsonl"):
        header = _header_of(path)
        if header is None:
            continue
        if wanted is not None:
            header_cwd = header.get("cwd")
            if not isinstance(header_cwd, str) or os.path.abspath(header_cwd) != wanted:
                continue
        mtime = path.stat().st_mtime
        if best is None or mtime > best[0]:
            best = (mtime, path)
    return best[1] if best else None
