"""``Session``: one Pi session file — its entries, the current leaf, appends, navigation.

A session is read with the rules of one Pi release (:class:`~pinb.core.format.target.Pi`, today's
Pi by default), migrated in memory, and appended to one line at a time under a file lock.
A new session is written once it holds a conversation (a user or assistant message in Pi
1.x, an assistant message in v0.58.3), without Pi's old duplicate-line defect (§12.2). As
in Pi, the leaf on load is the last entry of the file. Navigation that appends nothing is
persisted with an inert ``custom`` entry (:data:`NAVIGATE_TYPE`) whose ``parentId`` is the
target, so Pi, which takes the last line as the leaf and walks up from it, resumes there.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import (
    EntryNotFoundError,
    InvalidEntryError,
    NotPersistedError,
    SessionFileError,
)
from .appends import AppendMixin
from .context.build import (
    UNSET,
    SessionContext,
    build_session_context,
    context_entries,
    extend_context,
)
from .file.paths import iso_now, resolve_cwd, session_file_name, sessions_dir_for
from .file.read import (
    LoadedFile,
    is_valid_header,
    load_session_bytes,
    read_session_file,
    split_entries,
)
from .file.sharing import SharedFileMixin, Turn, file_error
from .file.write import SessionFile, serialize_line, upgraded_lines
from .format.entries import MISSING, NAVIGATE_TYPE, Entry, id_key
from .format.migrate import (
    CURRENT_VERSION,
    IdGenerator,
    check_session_id,
    migrate_values,
    new_entry_id,
    new_session_id,
)
from .format.problems import Problem
from .format.target import Pi, PiLike
from .format.tree import SessionIndex, TreeNode
from .gc import gc_paused
from .js.jsontext import short_repr

__all__ = ["NAVIGATE_TYPE", "Session"]

#: Where :meth:`Session.compare` finds the comparison (an analysis, one layer up).
_COMPARE_MODULE = "pinb.analysis.compare"
#: Where :meth:`Session.fork` and :meth:`Session.clone` find the copies (above the session).
_FORKS_MODULE = "pinb.core.forks"
#: Where :meth:`Session.compact` and :meth:`Session.navigate` find the operations (above it).
_OPERATIONS_MODULE = "pinb.core.compaction.operations"


def _new_header(
    cwd: str, *, session_id: str | None, parent_session: str | None, pi: Pi
) -> dict[str, Any]:
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": check_session_id(session_id) if session_id is not None else new_session_id(pi),
        "timestamp": iso_now(),
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


class Session(AppendMixin, SharedFileMixin):
    """A Pi session: entries in file order, a current leaf, and the file they live in.

    Create one with :meth:`open`, :meth:`create`, :meth:`in_memory` or
    :meth:`continue_recent`; the constructor is internal.

    Examples
    --------
    >>> s = Session.in_memory(cwd="/tmp/demo")
    >>> user = s.append_message({"role": "user", "content": "hi", "timestamp": 1})
    >>> [m["role"] for m in s.build_context().messages]
    ['user']
    """

    def __init__(
        self,
        header: dict[str, Any],
        entries: Sequence[Entry] = (),
        *,
        path: Path | None = None,
        problems: Sequence[Problem] = (),
        flushed: bool = False,
        persist: bool = True,
        id_generator: IdGenerator | None = None,
        loaded: LoadedFile | None = None,
        read_only: bool = False,
        pi: PiLike | None = None,
    ) -> None:
        self._pi = Pi.resolve(pi)
        self._header = header
        self._path = path
        self._index = SessionIndex(entries, path)
        self._index.problems[:0] = list(problems)
        self._flushed = flushed
        self._persist = persist and path is not None
        self._id_generator = id_generator
        self._read_only = read_only or any(p.kind == "unknown-version" for p in problems)
        self._needs_rewrite = bool(loaded and loaded.migrated)
        self._blank_file = bool(loaded and loaded.blank)
        self._loaded = loaded
        self._file = SessionFile(path, loaded) if path is not None else None
        self._leaf_id: Any = self._resume_leaf()
        self._check_leaf()
        # The context at the current leaf, extended on each append (see build_context).
        self._context: SessionContext | None = None
        self._context_generation = 0
        # The turn being written, if any (see SharedFileMixin.turn).
        self._turn: Turn | None = None
        self._turn_depth = 0
        self._unreported: list[Entry] = []  # others' entries read outside a turn
        # Where the session last stood by its own doing (opened there, its last turn, a
        # move): the path it was on, which another writer's entries may leave (Turn.change).
        self._stood: Any = self._leaf_id
        self._fresh = True  # no turn yet: the file's last pinb turn says where pinb stood
        self._last_turn: Any = None  # the last turn: a path change it did not say is said next
        #: The context window the session last ran with, ``(tokens, source)``, set by what
        #: runs it (an agent, the magics); in memory only, as Pi's file records no window.
        #: The views read it through `pinb.llm.window.resolve_window`.
        self.run_window: tuple[int, str] | None = None

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        pi: PiLike | None = None,
        id_generator: IdGenerator | None = None,
        strict: bool = True,
    ) -> Session:
        """Open an existing session file (reading never writes).

        Version 1 and 2 files are migrated in memory; the file itself is upgraded (with a
        backup beside it) only when something is first appended.

        Parameters
        ----------
        path:
            The ``.jsonl`` file.
        pi:
            The Pi release whose rules apply to everything done with the session: ``None``
            (today's Pi, 1.6), ``"1.6"`` or ``"0.58"`` (see :class:`~pinb.core.format.target.Pi`).
        id_generator:
            Draws ids for entries of version 1 files (and for new entries); random by default.
        strict:
            When false, a file without a valid header (or in Pi's version 4 layout) opens as
            an empty, read-only session, as Pi v0.58.3 would see it; ``loaded.refused``
            says whether Pi 1.x would refuse it.

        Raises
        ------
        FileNotFoundError
            The file does not exist (use :meth:`create` for a new session).
        IsADirectoryError, SpecialFileError
            It is a folder, or a FIFO, device or socket (refused at once: opening never
            waits on a FIFO, see :mod:`pinb.core.file.special`).
        InvalidHeaderError
            The file is not empty but its first JSON line is not a session header.
        UnsupportedVersionError
            The file uses Pi's experimental version 4 layout.
        """
        file_path = Path(path)
        with gc_paused():
            loaded = read_session_file(file_path, strict=strict, pi=pi, lazy=True)
            return cls._from_loaded(loaded, id_generator=id_generator)

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        *,
        source: str | None = None,
        pi: PiLike | None = None,
        id_generator: IdGenerator | None = None,
        strict: bool = True,
    ) -> Session:
        """A session parsed from a session file's bytes, kept in memory.

        For files that do not live on a local disk (object storage, an archive, a
        notebook upload). The session has no path: what is appended stays in memory.

        Parameters
        ----------
        data:
            The whole file.
        source:
            Where the bytes came from (``"s3://bucket/2026/a.jsonl"``), named by errors.
        pi, id_generator, strict:
            As for :meth:`open`.

        Raises
        ------
        InvalidHeaderError, UnsupportedVersionError
            As for :meth:`open`.
        """
        with gc_paused():
            loaded = load_session_bytes(data, None, strict=strict, pi=pi, source=source, lazy=True)
            return cls._from_loaded(loaded, id_generator=id_generator)

    @classmethod
    def _from_loaded(cls, loaded: LoadedFile, *, id_generator: IdGenerator | None) -> Session:
        values = loaded.values
        valid = bool(values) and is_valid_header(values[0])
        if valid:
            loaded.version_before = values[0].get("version", MISSING)
            loaded.migrated = migrate_values(values, id_generator)
        split_entries(loaded)
        if loaded.header is None:
            # Blank file (a new session will be written into it) or, non-strict, unreadable.
            header = _new_header(os.getcwd(), session_id=None, parent_session=None, pi=loaded.pi)
            return cls(
                header,
                path=loaded.path,
                problems=loaded.problems,
                flushed=False,
                id_generator=id_generator,
                loaded=loaded,
                read_only=not loaded.blank,
                pi=loaded.pi,
            )
        session = cls(
            loaded.header,
            loaded.entries,
            path=loaded.path,
            problems=loaded.problems,
            flushed=True,
            id_generator=id_generator,
            loaded=loaded,
            pi=loaded.pi,
        )
        # A lazy open decodes what the leaf's context reads, and nothing else.
        for entry in context_entries(session._index, session._leaf_id, pi=session._pi):
            if entry._raw is None:
                entry._decode()
        return session

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        sessions_dir: str | os.PathLike[str] | None = None,
        *,
        session_id: str | None = None,
        parent_session: str | os.PathLike[str] | None = None,
        id_generator: IdGenerator | None = None,
        pi: PiLike | None = None,
    ) -> Session:
        """Start a new session for ``cwd`` in Pi's folder for it (or ``sessions_dir``).

        Nothing is written until the conversation starts (the first user or assistant
        message in Pi 1.x); the file is then created exclusively, never over anything.

        Raises
        ------
        InvalidEntryError
            ``session_id`` is not a safe file-name part (Pi 1.x's rule).
        """
        target = Pi.resolve(pi)
        cwd_text = resolve_cwd(cwd)
        folder = Path(sessions_dir) if sessions_dir is not None else sessions_dir_for(cwd_text)
        header = _new_header(
            cwd_text,
            session_id=session_id,
            parent_session=os.fspath(parent_session) if parent_session is not None else None,
            pi=target,
        )
        path = folder / session_file_name(header["timestamp"], header["id"])
        return cls(header, path=path, flushed=False, id_generator=id_generator, pi=target)

    @classmethod
    def in_memory(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        id_generator: IdGenerator | None = None,
        pi: PiLike | None = None,
    ) -> Session:
        """A session that never touches the disk (Pi's "no session" mode)."""
        target = Pi.resolve(pi)
        header = _new_header(resolve_cwd(cwd), session_id=None, parent_session=None, pi=target)
        return cls(
            header, path=None, flushed=False, persist=False, id_generator=id_generator, pi=target
        )

    @classmethod
    def continue_recent(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        sessions_dir: str | os.PathLike[str] | None = None,
        *,
        pi: PiLike | None = None,
    ) -> Session:
        """Open the most recently modified session of ``cwd`` (or create a new one)."""
        from .file.listing import most_recent_session

        cwd_text = resolve_cwd(cwd)
        folder = Path(sessions_dir) if sessions_dir is not None else sessions_dir_for(cwd_text)
        recent = most_recent_session(folder, cwd=cwd_text if sessions_dir is not None else None)
        if recent is not None:
            return cls.open(recent, pi=pi)
        return cls.create(cwd_text, folder, pi=pi)

    # -- basic properties -----------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The session file (``None`` for an in-memory session)."""
        return self._path

    @property
    def pi(self) -> Pi:
        """The Pi release whose rules this session follows."""
        return self._pi

    @property
    def header(self) -> dict[str, Any]:
        """The header line's dict (read-only by convention)."""
        return self._header

    @property
    def id(self) -> str:
        return str(self._header.get("id"))

    @property
    def cwd(self) -> str:
        cwd = self._header.get("cwd")
        return cwd if isinstance(cwd, str) else ""

    @property
    def parent_session(self) -> str | None:
        parent = self._header.get("parentSession")
        return parent if isinstance(parent, str) else None

    @property
    def entries(self) -> list[Entry]:
        """All non-header entries in file order (every branch)."""
        return self._index.entries

    @property
    def index(self) -> SessionIndex:
        """The id index and tree operations over :attr:`entries`."""
        return self._index

    @property
    def loaded(self) -> LoadedFile | None:
        """How the file read when opened: parsed values, version before migration, size."""
        return self._loaded

    @property
    def problems(self) -> list[Problem]:
        """Everything odd that reading tolerated: skipped lines, orphans, cycles, duplicates."""
        return self._index.problems

    @property
    def is_persisted(self) -> bool:
        """Whether the session is on disk (a new session is written at its first reply)."""
        return self._flushed and self._path is not None

    @property
    def leaf_id(self) -> Any:
        """The current leaf's id, or ``None`` when positioned before the first entry."""
        return self._leaf_id

    @property
    def leaf(self) -> Entry | None:
        return self._index.get(self._leaf_id) if self._leaf_id is not None else None

    @property
    def name(self) -> str | None:
        """The session's name as Pi shows it (``getSessionName``), or ``None``."""
        name = self._index.session_name(self._pi)
        return name if isinstance(name, str) else None

    @property
    def archived(self) -> dict[Any, Entry]:
        """Branches archived with :meth:`archive` (hidden in pinb's views): id → marker."""
        return self._index.archived

    @property
    def labels(self) -> dict[Any, str]:
        return self._index.labels

    def __len__(self) -> int:
        return len(self._index)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._index.entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._index

    def __getitem__(self, entry_id: object) -> Entry:
        entry = self._index.get(entry_id)
        if entry is None:
            raise EntryNotFoundError(str(entry_id))
        return entry

    def get(self, entry_id: object) -> Entry | None:
        return self._index.get(entry_id)

    def __repr__(self) -> str:
        where = str(self._path) if self._path else "in memory"
        return (
            f"<Session {self.id[:8]} entries={len(self)} leaf={short_repr(self._leaf_id)} "
            f"({where}{'' if self.is_persisted or not self._path else ', not yet written'})>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # Drawn by the view registered in pinb.display (pinb.views.session_mimebundle).
        from ..display import mimebundle_of

        return mimebundle_of(self, include, exclude)

    # -- tree -----------------------------------------------------------------------------

    def path_to(self, entry_id: object = UNSET) -> list[Entry]:
        """Entries from the root to ``entry_id`` (default: the current leaf), all types."""
        target = self._leaf_id if entry_id is UNSET else entry_id
        return self._index.path_to(target)

    def children(self, entry_id: object) -> list[Entry]:
        return self._index.children(entry_id)

    def tree(self) -> list[TreeNode]:
        """The whole forest, children sorted by timestamp (Pi's ``getTree``)."""
        return self._index.tree()

    def common_ancestor(self, a: object, b: object) -> Entry | None:
        return self._index.common_ancestor(a, b)

    def label(self, entry_id: object) -> str | None:
        return self._index.label(entry_id)

    def build_context(self, leaf_id: object = UNSET, **options: Any) -> SessionContext:
        """The context the model sees from ``leaf_id`` (default: the current leaf).

        ``None`` means "before the first entry" (empty). Options are passed to
        :func:`~pinb.core.context.build.build_session_context`.
        """
        leaf = self._leaf_id if leaf_id is UNSET else leaf_id
        own = leaf is self._leaf_id or (leaf == self._leaf_id and leaf is not None)
        if own and options.get("pi", self._pi) is self._pi and len(options) <= 1:
            return self.current_context().copy()  # the kept context; callers get their own
        options.setdefault("pi", self._pi)
        return build_session_context(self._index, leaf, **options)

    def current_context(self) -> SessionContext:
        """The context at the current leaf, kept by the session and extended on append.

        Shared, not copied, so reading it costs nothing however long the path: read it,
        never change it (:meth:`build_context` gives a context of your own). A long
        session's turn does not walk its whole path again.
        """
        if self._context is None or self._context_generation != self._index.generation:
            self._context = build_session_context(self._index, self._leaf_id, pi=self._pi)
            # Kept converted, with its replayed prompt, and extended the same way.
            self._context.to_llm(system=False)
            self._context.system_message()
            self._context_generation = self._index.generation
        return self._context

    # -- navigation -----------------------------------------------------------------------

    def branch(self, entry_id: str, *, persist: bool = True) -> None:
        """Move the leaf to ``entry_id``; the next append becomes its child.

        With ``persist`` (default) an inert ``custom`` entry (:data:`NAVIGATE_TYPE`) is
        appended as a child of ``entry_id``, so reopening the file — in pinb or in Pi,
        which resume at the last line — continues here. Pi itself keeps such a move in
        memory only.
        """
        if entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        self._move_leaf(entry_id, persist)

    def reset_leaf(self, *, persist: bool = True) -> None:
        """Move before the first entry: the next append starts a new root."""
        self._move_leaf(None, persist)

    def _move_leaf(self, target: str | None, persist: bool) -> None:
        if target == self._leaf_id:
            return
        if persist and len(self._index):
            # parentId = target: see the module docstring. The marker is a dead end; the
            # leaf stays on the target, and reopening sees through a trailing marker.
            marker = {"type": "custom", "customType": NAVIGATE_TYPE, "data": {"targetId": target}}
            self._write(marker, parent=target, move_leaf=False)
        self._leaf_id = target
        self._context = None
        self._stood, self._fresh = target, False  # moved on purpose: this is its path now
        self._last_turn = None  # and what left the path before is no news any more

    # -- writing --------------------------------------------------------------------------

    def _write(
        self,
        fields: dict[str, Any],
        *,
        parent: Any = UNSET,
        move_leaf: bool = True,
        entry_id: str | None = None,
        timestamp: str | None = None,
    ) -> Entry:
        if self._read_only:
            reason = next(
                (p.message for p in self._index.problems if p.kind == "unknown-version"),
                "this file did not read as a Pi session, so pinb will not write to it",
            )
            raise SessionFileError(reason, path=self._path)
        if self._persist and self._flushed and self._turn is None:
            # A write outside a turn is a turn of its own: it continues from the file's leaf.
            with self.turn():
                return self._write(
                    fields, parent=parent, move_leaf=move_leaf, entry_id=entry_id,
                    timestamp=timestamp,
                )  # fmt: skip
        if self._persist and self._flushed:
            with self._locked() as (file, handle):
                entry = self._make_entry(fields, parent, entry_id, timestamp)
                entry.line = file.append(handle, serialize_line(entry.raw))
                self._index.add(entry)
        else:
            entry = self._make_entry(fields, parent, entry_id, timestamp)
            if self._persist and self._starts_conversation(entry):
                self._flush(entry)  # raises before anything changes in memory
            self._index.add(entry)
        if move_leaf:
            self._follow(entry)
        return entry

    def _follow(self, entry: Entry) -> None:
        """Move the leaf to a new child of the leaf, extending the kept context with it."""
        context = self._context
        if context is not None and not (
            entry.parent_id == self._leaf_id and extend_context(context, entry)
        ):
            self._context = None
        self._leaf_id = entry.id

    def _make_entry(
        self, fields: dict[str, Any], parent: Any, entry_id: str | None, timestamp: str | None
    ) -> Entry:
        kind = fields["type"]
        if entry_id is None:
            entry_id = new_entry_id(self._index.by_id, self._id_generator)
        parent_id = self._leaf_id if parent is UNSET else parent
        base = {"id": entry_id, "parentId": parent_id, "timestamp": timestamp or iso_now()}
        if kind in ("custom", "custom_message"):
            raw = {**fields, **base}  # Pi writes these with the payload first
        else:
            raw = {"type": kind, **base, **{k: v for k, v in fields.items() if k != "type"}}
        if kind != "message":
            from .format.models import parse_entry  # pydantic loads on the first typed check

            try:
                parse_entry(raw)
            except ValueError as exc:
                raise InvalidEntryError(f"invalid {kind!r} entry: {exc}") from exc
        return Entry(raw)

    def _upgraded_lines(self, data: bytes) -> list[bytes]:
        """The file in version 3 form with every line it held, each in its place."""
        values = {e.line: e.value for e in self._index.entries if e.line is not None}
        header_line = self._loaded.header_line if self._loaded is not None else None
        values[header_line or 1] = self._header
        return upgraded_lines(data, values)

    def _all_lines(self, *extra: Entry) -> list[bytes]:
        entries = [*self._index.entries, *extra]
        lines = [serialize_line(self._header)]
        lines.extend(serialize_line(e.value) for e in entries)
        for number, entry in enumerate(entries, start=2):
            entry.line = number
        return lines

    def _starts_conversation(self, *extra: Entry) -> bool:
        """Whether a new session holds a conversation yet, and so is written (§2.5).

        Pi 1.x writes the file at the first user or assistant message, v0.58.3 at the
        first assistant message; setup entries alone never create a file.
        """
        roles = ("user", "assistant") if self._pi >= Pi.V1_6 else ("assistant",)
        return any(e.role in roles for e in (*self._index.entries, *extra))

    def _flush(self, *extra: Entry) -> None:
        """First write of a new session: header and every entry, in one go, never over a file."""
        assert self._file is not None and self._path is not None
        try:
            self._file.write_all(self._all_lines(*extra), exclusive=not self._blank_file)
        except OSError as exc:
            raise file_error(exc, self._path, "write the new session file") from exc
        self._flushed = True
        self._blank_file = False

    def _check_leaf(self) -> None:
        leaf = self._leaf_id
        if leaf is not None and id_key(leaf) not in self._index.by_id:
            last = self._index.entries[-1] if self._index.entries else None
            self._index.problems.append(
                Problem(
                    "missing-leaf-target",
                    f"leaf entry points at unknown entry {short_repr(leaf)}; using the last entry",
                    self._path,
                    last.line if last else None,
                )
            )
            self._leaf_id = self._index.last_entry_id
        for orphan in self._index.orphans():
            self._index.problems.append(
                Problem(
                    "orphan",
                    f"entry {short_repr(orphan.id)} names unknown parent {short_repr(orphan.parent_id)}; "
                    "a context through it starts there",
                    self._path,
                    orphan.line,
                )
            )

    # -- conveniences over the modules above the session ---------------------------------
    #
    # Forks (pinb.core.forks), compaction and navigation (pinb.core.compaction.operations)
    # and comparison (pinb.analysis.compare) are built on Session, above it. These
    # accessors are the one way back down: each loads its module by name when called, as
    # pandas' DataFrame.plot loads its backend, so nothing below imports what is above it
    # (tests/test_layers.py lists every such load).

    def fork(
        self, entry_id: str, *, sessions_dir: str | os.PathLike[str] | None = None
    ) -> tuple[Session, str]:
        """Pi's ``/fork`` from a user message: ``(new session, the message's text)``.

        See :func:`pinb.core.forks.fork_session` (loaded by name when this is called).
        """
        fork_session = importlib.import_module(_FORKS_MODULE).fork_session
        result: tuple[Session, str] = fork_session(self, entry_id, sessions_dir=sessions_dir)
        return result

    def clone(
        self, leaf_id: str | None = None, *, sessions_dir: str | os.PathLike[str] | None = None
    ) -> Session:
        """Copy the branch up to ``leaf_id`` (default: the leaf) into a new session file.

        See :func:`pinb.core.forks.clone_session` (loaded by name when this is called).
        """
        clone_session = importlib.import_module(_FORKS_MODULE).clone_session
        result: Session = clone_session(self, leaf_id, sessions_dir=sessions_dir)
        return result

    def compact(
        self, summarizer: Any, instructions: str | None = None, settings: Any = None
    ) -> Any:
        """Compact the active path; see :func:`pinb.core.compaction.operations.compact`
        (loaded by name when this is called)."""
        compact = importlib.import_module(_OPERATIONS_MODULE).compact
        return compact(self, summarizer, instructions, settings)

    def compare(
        self,
        a: str | None = None,
        b: str | None = None,
        *,
        other: Session | str | os.PathLike[str] | None = None,
    ) -> Any:
        """Compare the branches to leaves ``a`` and ``b`` from their common ancestor.

        ``b`` is an entry of ``other`` (a fork's file, or the file this one was forked
        from) when given, else of this session; each defaults to its session's leaf.
        Returns a :class:`pinb.analysis.compare.BranchComparison` (see
        :func:`pinb.analysis.compare.compare_branches`, which pandas is not needed for).

        A convenience accessor, as pandas' ``DataFrame.plot`` is: the comparison is an
        analysis and lives in :mod:`pinb.analysis.compare`, loaded by name when this is
        called, so the core never imports the layer above it.
        """
        compare_branches = importlib.import_module(_COMPARE_MODULE).compare_branches
        return compare_branches(self, a, b, other=other)

    def navigate(self, target_id: str, **options: Any) -> Any:
        """Move to ``target_id``, optionally with a branch summary; see
        :func:`pinb.core.compaction.operations.navigate` (loaded by name when this is called)."""
        navigate = importlib.import_module(_OPERATIONS_MODULE).navigate
        return navigate(self, target_id, **options)

    def require_path(self) -> Path:
        if self._path is None:
            raise NotPersistedError("an in-memory session has no file")
        return self._path
