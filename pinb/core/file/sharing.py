"""A session file other processes write too: reading their lines, the turn, a torn last line.

The rules (docs/design.md, "Who writes a session"):

- Every pinb write happens in a **turn** (:meth:`SharedFileMixin.turn`): the session's turn
  lock (:mod:`pinb.core.file.writers`) is held, so pinb writers in other processes wait or are
  told "busy", never interleaved. A single write outside a turn is a turn of its own.
- At the start of a turn the session **reads what others appended** and continues from the
  file's leaf as Pi would resolve it (the last entry, seen through a trailing navigation
  marker), unless this session had moved its leaf elsewhere (an explicit navigation that
  the file does not record). A stale in-memory leaf never decides a parent.
- Within a turn each entry continues the turn's own chain: lines others append meanwhile
  (Pi takes no lock) are read before each append, kept in :attr:`Turn.others`, and not
  followed.
- A **torn last line** (a writer that crashed or hit a full disk mid-line) is closed off
  with a newline before anything else is written, so Pi's reader skips it as one bad line;
  it is never continued.
- A file **replaced** by another program (same path, new inode: Pi rewrites old-version
  files) is read again when it still holds every entry this session had read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ...errors import SessionFileError
from ..format.entries import MISSING, Entry
from ..format.problems import Problem
from ..format.target import Pi
from ..format.tree import SessionIndex
from .read import LoadedFile, value_entry
from .write import FileReplacedError, SessionFile
from .writers import DEFAULT_WAIT, UNKNOWN_WRITER, Holder, TurnLock, TurnRecord, outside_writer

if TYPE_CHECKING:  # the session's kept context, which this mixin only drops
    from ..context.build import SessionContext

__all__ = ["Appended", "PathChange", "SharedFileMixin", "Turn"]

#: Entry types that change nothing the model sees: a leaf past them is the same leaf.
_INERT = frozenset({"label", "custom"})
#: Who appended entries when nothing can say (no record, no process naming the file).
_UNKNOWN = Holder(UNKNOWN_WRITER, kind="process", who=UNKNOWN_WRITER)
#: How long a torn last line must stay unchanged before it is taken for torn, not in
#: the middle of another writer's single write.
_TORN_SETTLE = 0.05


@dataclass(frozen=True)
class Appended:
    """Entries one writer appended to the session (see :meth:`Turn.appended_by`)."""

    writer: Holder
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class PathChange:
    """The path a session was on, left behind by entries another writer appended.

    The rule (docs/design.md, "Who writes a session"): the path from the root to where
    the session last stood by its own doing (its last turn's end, where it was opened or
    moved to) is compared with the path that continues after what others appended.
    Entries of the old path that are not on the new one have left it; the last of them is
    the old leaf, where ``goto`` brings them back. Turns are counted as user messages.

    Attributes
    ----------
    old_leaf:
        Where the session stood: the ``goto`` target that brings the path back.
    new_leaf:
        Where the path continues now.
    fork:
        The last entry both paths share (``None``: they share nothing).
    left:
        The entries no longer on the path, root first.
    appended:
        The others' entries now on the path after ``fork``, with who appended them.
    moved_by:
        When none of them is new (another writer's ``goto`` moved the file's leaf to an
        older entry): who appended what moved it.
    """

    old_leaf: str
    new_leaf: str | None
    fork: str | None
    left: tuple[Entry, ...]
    appended: tuple[Appended, ...]
    moved_by: tuple[Appended, ...] = ()

    @property
    def turns(self) -> int:
        """The turns (user messages) among the entries that left the path."""
        return sum(1 for e in self.left if e.role == "user")

    def line(self, goto: str = "%pi goto") -> str:
        """The one line a cell, the chat or a command shows; ``goto`` moves the leaf."""
        count = sum(len(a.entries) for a in self.appended)
        if count:
            where = f"under {self.fork}" if self.fork else "on a root of their own"
            did = f"{_writers(self.appended)} appended {count} {_entries(count)} {where}"
        else:
            who = _writers(self.moved_by) if self.moved_by else "another writer"
            did = f"{who} moved the path to {self.new_leaf}"
        n, k = len(self.left), self.turns
        gone = f"{k} of your turns ({n} {_entries(n)})" if k else f"{n} {_entries(n)} you were on"
        back = f"`{goto} {self.old_leaf}` goes back to them"
        if self.left and (self.left[-1].role == "user" or self.left[-1].type == "custom_message"):
            back += " (to just before that last message, whose text it gives to send again)"
        return f"{did}, leaving {gone} off the path (last: {self.old_leaf}); {back}"


@dataclass
class Turn:
    """One turn on a session (see :meth:`SharedFileMixin.turn`).

    Attributes
    ----------
    caught_up:
        Entries other writers had appended before the turn, read at its start: the turn
        continued after them.
    appended_by:
        Who appended ``caught_up``, by writer (the turn lock's records, else a ``pi``
        process naming the file, else "another program").
    change:
        The path the session was on, when what others appended left part of it
        (:class:`PathChange`); ``None`` when the path only grew.
    others:
        Entries other writers appended during the turn (Pi in a terminal, say), which the
        turn's own entries did not follow.
    continued:
        Those of ``others`` that continue after the turn (another program took it up):
        the session stands after them when the turn ends.
    side:
        Those of ``others`` left on a branch of their own; the file resumes after the
        turn, as pinb does, not after them.
    goto:
        The command that moves the leaf where the notes are read (``%pi goto`` in a cell,
        ``/goto`` in the chat, ``pinb goto FILE`` on the command line).
    """

    caught_up: list[Entry] = field(default_factory=list)
    appended_by: list[Appended] = field(default_factory=list)
    change: PathChange | None = None
    others: list[Entry] = field(default_factory=list)
    continued: list[Entry] = field(default_factory=list)
    side: list[Entry] = field(default_factory=list)
    goto: str = "%pi goto"
    outsider: Holder | None = None  # who appended ``others`` (found at the turn's end)
    told: bool = False  # start_note() said the change: a turn nobody shows leaves it to the next

    def start_note(self) -> str | None:
        """What was read at the turn's start, said in one line (``None``: nothing).

        Asking for it marks a :class:`PathChange` said; one that a turn nobody shows (a
        label, ``%pi name``) did not say is said by the next turn that shows its notes.
        """
        if self.change is not None:
            self.told = True
            return self.change.line(self.goto)
        if not self.caught_up:
            return None
        n = len(self.caught_up)
        return (
            f"read {n} {_entries(n)} {_writers(self.appended_by)} appended to this session; "
            "this turn continued after them"
        )

    def end_note(self) -> str | None:
        """What others appended during the turn, said in one line (``None``: nothing)."""
        notes = []
        who = self.outsider.name if self.outsider is not None else UNKNOWN_WRITER
        if self.continued:
            n = len(self.continued)
            notes.append(
                f"{who} continued this turn with {n} {_entries(n)}; the session continues "
                "after them"
            )
        if self.side:
            n = len(self.side)
            last = self.side[-1].id
            notes.append(
                f"{who} appended {n} {_entries(n)} to this session during this turn, on a "
                f"branch of their own ending at {last} (`{self.goto} {last}` continues there)"
            )
        return "; ".join(notes) or None


def _entries(n: int) -> str:
    return "entry" if n == 1 else "entries"


def _writers(groups: list[Appended] | tuple[Appended, ...]) -> str:
    """Who appended, in a few words: one writer's name, or each with its count."""
    names: dict[str, int] = {}
    for group in groups:
        names[group.writer.name] = names.get(group.writer.name, 0) + len(group.entries)
    if len(names) == 1:
        return next(iter(names))
    if not names:
        return UNKNOWN_WRITER
    return "others (" + ", ".join(f"{n} by {name}" for name, n in names.items()) + ")"


def _attribute(
    entries: list[Entry], index: SessionIndex, turns: list[TurnRecord], outsider: Any
) -> list[Appended]:
    """Who appended each of ``entries``, grouped in file order.

    An entry after a kept turn's ``start`` up to its ``end`` (file order), and not among
    its ``others``, is that turn's writer's; any other was appended by a program that
    keeps no record (Pi): ``outsider()`` names it, once.
    """
    if not entries:
        return []
    position = {e.raw.get("id"): i for i, e in enumerate(index.entries)}
    spans = []
    for record in turns:
        end = position.get(record.end)
        if end is None:
            continue
        start = position.get(record.start, -1) if record.start is not None else -1
        spans.append((start, end, set(record.others), record.writer))
    groups: list[tuple[Holder, list[Entry]]] = []
    outside: Holder | None = None
    for entry in entries:
        at = position.get(entry.raw.get("id"), -1)
        who = next(
            (w for s, e, others, w in reversed(spans) if s < at <= e and entry.id not in others),
            None,
        )
        if who is None:
            outside = outside or outsider()
            who = outside
        if groups and groups[-1][0] == who:
            groups[-1][1].append(entry)
        else:
            groups.append((who, [entry]))
    return [Appended(w, tuple(es)) for w, es in groups]


class SharedFileMixin:
    """The :class:`~pinb.core.session.Session` methods for a file shared with other writers."""

    _index: SessionIndex
    _leaf_id: Any
    _pi: Pi
    _path: Path | None
    _file: SessionFile | None
    _loaded: LoadedFile | None
    _flushed: bool
    _persist: bool
    _needs_rewrite: bool
    _context: SessionContext | None
    _turn_depth: int
    _turn: Turn | None
    _unreported: list[Entry]
    _stood: Any
    _fresh: bool
    _last_turn: Turn | None

    def _upgraded_lines(self, data: bytes) -> list[bytes]:
        raise NotImplementedError

    # -- the turn -------------------------------------------------------------------------

    @contextlib.contextmanager
    def turn(
        self,
        what: str = "",
        *,
        wait: float = DEFAULT_WAIT,
        role: str = "",
        who: str = "",
        long: bool = False,
    ) -> Iterator[Turn]:
        """Hold the session's turn lock for a whole turn, continuing from the file's leaf.

        Parameters
        ----------
        what:
            What writes (``"pinb's agent"``), for the "busy" answer other writers get.
        wait:
            Seconds to wait for another pinb writer's short turn before giving up.
        role, who:
            What the writer is (``"chat"``, ``"cell"``, ``"command"``) and how a person
            names it; by default this process's (:func:`pinb.core.file.writers.default_role`).
        long:
            The turn waits on a model: other writers are told "busy" at once.

        Raises
        ------
        SessionBusyError
            Another pinb writer (another kernel, the chat panel, the CLI) is running a turn.
        SessionFileError
            The file disappeared, or was replaced without what this session had read.
        """
        if self._turn is not None:  # nested: the outer turn holds the lock
            self._turn_depth += 1
            try:
                yield self._turn
            finally:
                self._turn_depth -= 1
            return
        lock = None
        if self._path is not None and self._persist and self._flushed:
            lock = TurnLock(self._path, what, wait=wait, role=role, who=who, long=long)
            try:
                lock.acquire()
            except OSError as exc:
                raise file_error(exc, self._path, "take the session's turn lock") from exc
        turn = Turn()
        self._turn, self._turn_depth = turn, 1
        start: str | None = None
        try:
            if lock is not None:
                stood = self._stood
                turn.caught_up = [*self._unreported, *self._catch_up()]
                self._unreported = []
                start = self._last_id()
                self._tell(turn, lock, stood)
            yield turn
            if lock is not None:
                self._settle(turn)
        finally:
            self._turn, self._turn_depth = None, 0
            self._stood, self._fresh = self._leaf_id, False
            self._last_turn = turn  # its change, if nobody asked for its note, is said next
            if lock is not None:
                lock.release(self._record(lock, turn, start))

    # -- who appended what, and the path left behind ---------------------------------------

    def _last_id(self) -> str | None:
        entries = self._index.entries
        value = entries[-1].raw.get("id") if entries else None
        return value if isinstance(value, str) else None

    def _tell(self, turn: Turn, lock: TurnLock, stood: Any) -> None:
        """Say who appended what the turn read, and what path it left (Turn.change).

        The path is where the session last stood by its own doing; a session that has not
        had a turn since it was opened stood where pinb's last turn left the file, when
        that turn ended before it was opened (the file's leaf may have moved since).
        """
        last_turn = self._last_turn  # a change the last turn (a label, say) did not show
        untold = last_turn.change if last_turn is not None and not last_turn.told else None
        if not turn.caught_up and not self._fresh and stood == self._leaf_id and untold is None:
            return  # nothing read, nowhere else to have stood: the usual turn costs nothing
        records = lock.turns
        path = self._path
        cache: list[Holder] = []

        def outsider() -> Holder:
            if not cache:
                cache.append(outside_writer(path) if path is not None else _UNKNOWN)
            return cache[0]

        turn.appended_by = _attribute(turn.caught_up, self._index, records, outsider)
        appended = turn.caught_up
        last = records[-1] if records else None
        if (
            self._fresh
            and last is not None
            and last.leaf is not None
            and last.leaf != self._leaf_id
            and last.leaf in self._index.by_id
            and last.end in self._index.by_id
            and last.end not in {e.id for e in turn.caught_up}
        ):
            stood = last.leaf
            ids = [e.raw.get("id") for e in self._index.entries]
            appended = self._index.entries[ids.index(last.end) + 1 :]
        turn.change = self._path_change(stood, appended, records, outsider)
        if untold is not None:
            again = self._path_change(untold.old_leaf, [], records, outsider)
            if again is not None:  # still off the path: said now, with who did it
                turn.change = dataclasses.replace(
                    again, appended=untold.appended, moved_by=untold.moved_by
                )

    def _path_change(
        self, stood: Any, appended: list[Entry], records: list[TurnRecord], outsider: Any
    ) -> PathChange | None:
        """The rule of :class:`PathChange`: the entries of the path to ``stood`` that are
        not on the path to the leaf now, and ``appended``'s entries that took their place."""
        if not isinstance(stood, str) or stood == self._leaf_id or stood not in self._index.by_id:
            return None
        old = self.path_to(stood)  # type: ignore[attr-defined]
        new = self.path_to()  # type: ignore[attr-defined]
        on_new = {e.id for e in new}
        shared = 0
        while shared < len(old) and old[shared].id in on_new:
            shared += 1
        left = old[shared:]
        if not left:
            return None  # the path only grew
        fork = old[shared - 1].id if shared else None
        theirs = {id(e) for e in appended}
        after = [e for e in new[shared:] if id(e) in theirs]
        groups = _attribute(after, self._index, records, outsider)
        moved = () if after else tuple(_attribute(appended, self._index, records, outsider))
        leaf = self._leaf_id if isinstance(self._leaf_id, str) else None
        return PathChange(stood, leaf, fork, tuple(left), tuple(groups), moved)

    def _record(self, lock: TurnLock, turn: Turn, start: str | None) -> TurnRecord | None:
        """This turn, for the turn lock's note: the next writer can tell its entries apart."""
        holder = lock.holder
        if holder is None:
            return None
        leaf = self._leaf_id
        others = tuple(str(e.id) for e in turn.others if isinstance(e.id, str))
        return TurnRecord(
            holder, start, self._last_id(), leaf if isinstance(leaf, str) else None, others
        )

    def _catch_up(self) -> list[Entry]:
        """Read what others appended and follow the file's leaf; close off a torn line."""
        new = self._absorb(follow=True)
        file = self._file
        assert file is not None
        if file.has_torn_tail or not file.ends_with_newline:
            with self._append_lock() as handle:
                new += self._absorb(follow=True)
                new += self._seal(file, handle, follow=True)
        return new

    @property
    def at_file_leaf(self) -> bool:
        """Whether the file resumes where this session is (Pi, reopening it, would continue
        from the current leaf); see :meth:`keep_leaf`."""
        return self._at_file_leaf()

    def keep_leaf(self) -> None:
        """Make the file resume at the current leaf (a navigation marker when it would not).

        Before another program continues the file (the Pi engine, ``pi --session``), so it
        continues where this session is, not from the file's last line.
        """
        if self._at_file_leaf() or self._leaf_id is None:
            return
        from ..format.entries import NAVIGATE_TYPE

        marker = {
            "type": "custom",
            "customType": NAVIGATE_TYPE,
            "data": {"targetId": self._leaf_id},
        }
        self._write(marker, parent=self._leaf_id, move_leaf=False)  # type: ignore[attr-defined]

    def _settle(self, turn: Turn) -> None:
        """End a turn with the file resuming where pinb does.

        Pi takes no lock, so another program may have appended during the turn. When what
        it wrote continues after the turn's last entry, the session moves on to it (it
        took the conversation up). Otherwise Pi (``pi --resume``) and pinb would resume in
        different places; a navigation marker at the turn's leaf makes the file resume
        here, and the other program's entries stay whole on a branch of their own.
        """
        if self._file is None or not self._path or not self._path.exists():
            return
        self._absorb(follow=False)
        if not turn.others:
            return
        turn.outsider = outside_writer(self._path)  # pinb's writers were kept out: not pinb
        if not self._at_file_leaf():
            file_leaf = self._resume_leaf()
            if self._leaf_id in {e.id for e in self.path_to(file_leaf)}:  # type: ignore[attr-defined]
                self._leaf_id = file_leaf  # the other program continued this turn
                self._context = None
            else:
                self.keep_leaf()
        on_path = {e.id for e in self.path_to()}  # type: ignore[attr-defined]
        turn.continued = [e for e in turn.others if e.id in on_path]
        turn.side = [e for e in turn.others if e.id not in on_path and e.type not in _INERT]

    # -- reading others' lines ------------------------------------------------------------

    def refresh(self, *, follow: bool = True) -> list[Entry]:
        """Read entries another process (Pi, another kernel) appended since the last read.

        Only the new bytes are read. With ``follow`` the leaf moves to the file's leaf
        when it was at the file's leaf before. Returns the new entries.
        """
        if self._file is None or not self._flushed:
            return []
        return self._absorb(follow=follow)

    def _absorb(self, *, follow: bool) -> list[Entry]:
        """Index the lines others appended since our last read."""
        file = self._file
        assert file is not None
        try:
            parsed, problems = file.read_new()
        except FileReplacedError:
            return self._reread_replaced()
        except FileNotFoundError as exc:
            raise _missing(file.path) from exc
        if not parsed and not problems:
            return []
        # A torn line reported at open that has since been completed is no longer a problem.
        completed = {line for _, line in parsed}
        self._index.problems[:] = [
            p for p in self._index.problems if not (p.kind == "torn-line" and p.line in completed)
        ]
        was_at_end = follow and self._at_file_leaf()
        new_entries: list[Entry] = []
        for value, line in parsed:
            if not isinstance(value, dict):
                entry = value_entry(value, line, self._pi, self._path, problems)
                if entry is not None:
                    self._index.add(entry)
                    new_entries.append(entry)
                continue
            if value.get("type") == "session":
                problems.append(Problem("duplicate-header", "line ignored", self._path, line))
                continue
            entry = Entry(value, line)
            self._index.add(entry)
            new_entries.append(entry)
        self._index.problems.extend(problems)
        if was_at_end and new_entries:
            self._leaf_id = self._resume_leaf()
            self._context = None
        if self._turn is None:
            self._unreported.extend(new_entries)  # the next turn says it continues after them
        elif not follow:
            self._turn.others.extend(new_entries)
        return new_entries

    def _resume_leaf(self) -> Any:
        """Pi's leaf on load (the last entry), or the target of a trailing navigation marker."""
        entries = self._index.entries
        if not entries:
            return None
        last = entries[-1]
        if last.is_navigation:
            return last.raw.get("parentId")
        return last.raw.get("id", MISSING)

    def _at_file_leaf(self) -> bool:
        """Whether the leaf is the file's leaf, up to labels and markers appended after it.

        A label or an archive marker pinb appends after a navigation marker leaves the
        file's last entry past the leaf without changing what the model sees: the session
        is still where the file resumes.
        """
        target = self._leaf_id
        current = self._resume_leaf()
        for _ in range(len(self._index.entries) + 1):
            if current == target:
                return True
            entry = self._index.get(current) if current is not None else None
            if entry is None or entry.type not in _INERT:
                return False
            current = entry.raw.get("parentId")
        return False

    # -- writing under the lock -----------------------------------------------------------

    @contextlib.contextmanager
    def _append_lock(self) -> Iterator[IO[bytes]]:
        file = self._file
        assert file is not None and self._path is not None
        try:
            with file.lock() as handle:
                yield handle
        except FileNotFoundError as exc:
            raise _missing(self._path) from exc
        except (PermissionError, IsADirectoryError) as exc:
            raise file_error(exc, self._path, "append to the session") from exc
        except OSError as exc:
            if isinstance(exc, SessionFileError):
                raise
            raise file_error(exc, self._path, "append to the session") from exc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[SessionFile, IO[bytes]]]:
        """The append lock, with other writers' entries read, a torn line closed off and an
        old file upgraded first."""
        file = self._file
        assert file is not None and self._path is not None
        if not self._path.exists():
            raise _missing(self._path)
        file.check_writable()
        if self._needs_rewrite:
            with self._append_lock():
                self._absorb(follow=False)
                try:
                    file.upgrade(self._upgraded_lines)
                except OSError as exc:
                    raise file_error(exc, self._path, "upgrade the session file") from exc
                self._needs_rewrite = False
        with self._append_lock() as handle:
            self._absorb(follow=False)
            self._seal(file, handle)
            yield file, handle

    def _seal(self, file: SessionFile, handle: IO[bytes], *, follow: bool = False) -> list[Entry]:
        """End the file's last line before anything is written after it (under the lock).

        A torn line (a writer that died mid-line) stays where it is, a line Pi's reader
        skips, and is reported; a whole last line without its newline is simply ended.
        Returns the entries read meanwhile (``follow`` as for :meth:`_absorb`).
        """
        new: list[Entry] = []
        if not (file.has_torn_tail or not file.ends_with_newline):
            return new
        if file.has_torn_tail:
            # Another writer's single write may be under way: give it a moment, then read.
            time.sleep(_TORN_SETTLE)
            new = self._absorb(follow=follow)
            if not (file.has_torn_tail or not file.ends_with_newline):
                return new
        torn = file.has_torn_tail
        try:
            file.seal(handle)
        except OSError as exc:
            raise file_error(exc, file.path, "close off the file's torn last line") from exc
        if torn:
            self._index.problems.append(
                Problem(
                    "torn-line",
                    "incomplete last line left by a writer that stopped mid-line; ended with "
                    "a newline so that nothing is appended onto it",
                    self._path,
                    file.newlines,
                )
            )
        return new

    # -- a replaced file ------------------------------------------------------------------

    def _reread_replaced(self) -> list[Entry]:
        """Read a file that was replaced under this session, if it still holds our entries."""
        path = self._path
        assert path is not None
        try:
            fresh = type(self).open(path, pi=self._pi)  # type: ignore[attr-defined]
        except FileNotFoundError as exc:
            raise _missing(path) from exc
        ids = {e.raw.get("id", MISSING) for e in fresh._index.entries}
        lost = sum(1 for e in self._index.entries if e.raw.get("id", MISSING) not in ids)
        if lost:
            raise SessionFileError(
                "the session file was replaced by another program and no longer holds "
                f"{lost} of the entries pinb had read; open it again",
                path=path,
            )
        known = {e.raw.get("id", MISSING) for e in self._index.entries}
        leaf = self._leaf_id
        at_end = self._at_file_leaf()
        for name in ("_header", "_index", "_loaded", "_file", "_needs_rewrite", "_read_only"):
            setattr(self, name, getattr(fresh, name))
        self._leaf_id = self._resume_leaf() if at_end or leaf not in known else leaf
        self._context = None
        new = [e for e in self._index.entries if e.raw.get("id", MISSING) not in known]
        if self._turn is not None:
            self._turn.others.extend(new)
        return new


def _missing(path: Path) -> SessionFileError:
    """The session file is gone: say where ``pinb rm`` put it, when it did."""
    from .trash import trashed_as

    moved = trashed_as(path)
    if moved is not None:
        return SessionFileError(
            f"the session file was moved to the trash ({moved}); `pinb restore {moved.name}` "
            "brings it back",
            path=path,
        )
    return SessionFileError(
        "the session file is gone (moved or deleted by another program); open it where it "
        "is now, or start a new session",
        path=path,
    )


def file_error(exc: OSError, path: Path, doing: str) -> SessionFileError:
    """An operating-system error as pinb's one line: what failed, why, what to do."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    hint = {
        "EROFS": "the file system is read-only",
        "ENOSPC": "the disk is full: free some space and run it again",
        "EDQUOT": "the disk quota is used up: free some space and run it again",
        "EACCES": "pinb may not write there",
        "EPERM": "pinb may not write there",
    }
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    extra = f" ({hint[name]})" if name in hint else ""
    return SessionFileError(f"could not {doing}: {reason}{extra}", path=path)
