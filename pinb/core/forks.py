"""Copying sessions into new files: fork from a message, clone a branch, fork across projects (§9)."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Literal

from ..errors import EntryNotFoundError, InvalidEntryError, SessionFileError
from .file.paths import iso_now, resolve_cwd, session_file_name, sessions_dir_for
from .file.write import atomic_write_lines, serialize_line
from .format.entries import MISSING, Entry, id_key
from .format.migrate import new_entry_id
from .format.target import Pi, PiLike
from .session import Session, _new_header

__all__ = [
    "ForkKind",
    "clone_session",
    "create_branched_session",
    "fork_at",
    "fork_from",
    "fork_kind",
    "fork_session",
    "user_text",
]

#: What forking at an entry does: ``"fork"`` (a new file ending before a user message,
#: whose text comes back to send again) or ``"clone"`` (the path up to and including it).
ForkKind = Literal["fork", "clone"]


def user_text(message: Any) -> str:
    """A user (or custom) message's text: string content, or text blocks concatenated."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _target_folder(session: Session, sessions_dir: str | os.PathLike[str] | None) -> Path:
    if sessions_dir is not None:
        return Path(sessions_dir)
    if session.path is not None:
        return session.path.parent
    return sessions_dir_for(session.cwd or os.getcwd())


def _new_session(
    header: dict[str, Any], raws: list[dict[str, Any]], folder: Path, source: Session
) -> Session:
    path = folder / session_file_name(header["timestamp"], header["id"])
    new = Session(
        header,
        [Entry(raw) for raw in raws],
        path=path,
        flushed=False,
        id_generator=source._id_generator,
        pi=source.pi,
    )
    new.run_window = source.run_window  # a fork runs with the window its source ran with
    if source.path is not None and new._starts_conversation():
        new._flush()  # otherwise written at the first user (or assistant) message, as in Pi
    return new


def create_branched_session(
    session: Session,
    leaf_id: str,
    *,
    sessions_dir: str | os.PathLike[str] | None = None,
) -> Session:
    """Copy the path root → ``leaf_id`` into a new session whose header names this file.

    Label entries on the path are dropped and the labels in effect on copied entries are
    re-created after the path. Pi 1.x re-chains the copied entries around the dropped
    labels (each copied entry's parent is the previous copied one), points a compaction
    that kept from a dropped label at the next copied entry, and keeps the labels' own
    timestamps; v0.58.3 copies parents as they were, which can orphan entries (§12.5).
    """
    path = session.path_to(leaf_id)
    if not path:
        raise EntryNotFoundError(leaf_id)
    rechain = session.pi >= Pi.V1_6
    raws: list[dict[str, Any]] = []
    previous: Any = None
    pending_labels: list[Any] = []
    replacement: dict[object, Any] = {}
    for entry in path:
        if entry.type == "label":
            pending_labels.append(entry.raw.get("id"))
            continue
        for label_id in pending_labels:
            replacement[id_key(label_id)] = entry.raw.get("id")
        pending_labels.clear()
        raw = copy.deepcopy(entry.raw)
        if rechain:
            raw["parentId"] = previous
            kept = raw.get("firstKeptEntryId", MISSING)
            if raw.get("type") == "compaction" and id_key(kept) in replacement:
                if not (kept == raw.get("id") and isinstance(kept, str)):
                    raw["firstKeptEntryId"] = replacement[id_key(kept)]
        previous = raw.get("id")
        raws.append(raw)
    copied = {id_key(r.get("id", MISSING)) for r in raws}
    used: set[object] = set(copied)
    parent = previous
    for target, text, stamp in session.index.label_records():
        if id_key(target) not in copied:
            continue
        label_id = new_entry_id(used, session._id_generator)
        used.add(label_id)
        label: dict[str, Any] = {"type": "label", "id": label_id, "parentId": parent}
        if not rechain:
            label["timestamp"] = iso_now()
        elif stamp is not None and stamp is not MISSING:
            label["timestamp"] = stamp
        label.update({"targetId": target, "label": text})
        raws.append(label)
        parent = label_id
    header = _new_header(
        session.cwd,
        session_id=None,
        parent_session=os.fspath(session.path) if session.path is not None else None,
        pi=session.pi,
    )
    return _new_session(header, raws, _target_folder(session, sessions_dir), session)


def fork_session(
    session: Session, entry_id: str, *, sessions_dir: str | os.PathLike[str] | None = None
) -> tuple[Session, str]:
    """Pi's ``/fork`` from a user message: a new session ending just before it, and its text.

    The text is returned for re-editing, as Pi puts it in the editor.
    """
    entry = session[entry_id]
    if entry.role != "user":
        raise InvalidEntryError(f"entry {entry_id} is not a user message; fork from a user message")
    text = user_text(entry.message)
    parent = entry.parent_id
    if not parent:
        header = _new_header(
            session.cwd,
            session_id=None,
            parent_session=os.fspath(session.path) if session.path is not None else None,
            pi=session.pi,
        )
        return _new_session(header, [], _target_folder(session, sessions_dir), session), text
    return create_branched_session(session, parent, sessions_dir=sessions_dir), text


def fork_kind(entry: Entry) -> ForkKind:
    """The one rule for forking at an entry, as Pi 1.x draws it: ``"fork"`` or ``"clone"``.

    Pi's ``/fork`` picks a user message and starts a new file that ends before it (its
    text goes back to the editor); ``/clone`` copies the branch up to and including an
    entry. So a user message forks, and any other entry clones.
    """
    return "fork" if entry.role == "user" else "clone"


def fork_at(
    session: Session, entry_id: str, *, sessions_dir: str | os.PathLike[str] | None = None
) -> tuple[Session, str | None]:
    """Fork or clone at ``entry_id`` by :func:`fork_kind`: ``(new session, text to resend)``.

    The text is the user message's, for a fork; ``None`` for a clone. ``%pi fork ID`` and
    the explorer's fork button both call this.

    Raises
    ------
    EntryNotFoundError
        ``entry_id`` is not in the session.
    """
    if fork_kind(session[entry_id]) == "fork":
        return fork_session(session, entry_id, sessions_dir=sessions_dir)
    return clone_session(session, entry_id, sessions_dir=sessions_dir), None


def clone_session(
    session: Session,
    leaf_id: str | None = None,
    *,
    sessions_dir: str | os.PathLike[str] | None = None,
) -> Session:
    """[newer] ``/clone``: copy the branch up to and including ``leaf_id`` (default: the leaf)."""
    target = leaf_id if leaf_id is not None else session.leaf_id
    if target is None:
        raise EntryNotFoundError(None)
    return create_branched_session(session, target, sessions_dir=sessions_dir)


def fork_from(
    source: str | os.PathLike[str],
    target_cwd: str | os.PathLike[str],
    *,
    sessions_dir: str | os.PathLike[str] | None = None,
    session_id: str | None = None,
    pi: PiLike | None = None,
) -> Session:
    """Copy a whole session (all branches, verbatim) into another project's folder (§9.2).

    The new file is written at once, with ``parentSession`` naming the source.
    """
    source_path = Path(source).resolve()
    original = Session.open(source_path, pi=pi)
    if not original.entries and original.loaded is not None and original.loaded.header is None:
        raise SessionFileError("cannot fork an empty session", path=source_path)
    cwd = resolve_cwd(target_cwd)
    header = _new_header(
        cwd, session_id=session_id, parent_session=os.fspath(source_path), pi=original.pi
    )
    folder = Path(sessions_dir) if sessions_dir is not None else sessions_dir_for(cwd)
    path = folder / session_file_name(header["timestamp"], header["id"])
    lines = [serialize_line(header)] + [serialize_line(e.raw) for e in original.entries]
    atomic_write_lines(path, lines, exclusive=True)
    return Session.open(path, pi=original.pi)
