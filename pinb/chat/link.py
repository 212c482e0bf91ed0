"""Which Pi session a chat continues: the link between a ``.chat`` file, a session file and a notebook.

A chat panel and a notebook share one session when the chat is **linked** to it. The link
is a small record, kept in two places:

- in the chat's own metadata (``metadata["pinb"]`` of the ``.chat`` file), so the chat
  carries it wherever it goes; only the Jupyter server writes a chat that is open (it keeps
  the chat in memory and saves all of it on every message), so the persona writes it there;
- in a record beside the chat (``.pinb-chat/<chat name>.json``), written atomically by
  whoever links: ``%pi chat`` in a kernel, or ``/session open`` / ``/session new`` in the
  chat. The kernel never rewrites a chat file another process may have open; it creates
  one only when none exists.

The newer of the two wins (:func:`read_link`), so a link made in the notebook reaches the
chat at its next message, and the persona copies it into the chat's metadata. The notebook
keeps its side in the output of ``%pi chat`` (:data:`LINK_MIMETYPE`, saved with the
notebook), which :func:`notebook_link` reads back from the ``.ipynb`` file.

A link is data, whoever wrote it: the session it names is taken from the chat's folder
when relative (``~`` expanded, as ``%pi open`` does), and opened with the one check of a
named session file (:func:`pinb.core.opening.open_session_file`), so a link to a folder,
a FIFO or a file that is no session is one line (:class:`ChatLinkError`), never a hang.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.describe import one_line
from ..core.file.atomic import replace_file, write_new_file
from ..core.file.paths import file_stem
from ..core.js.jsontext import visible
from ..core.opening import open_session_file, session_path
from ..errors import SessionError, SessionFileError

if TYPE_CHECKING:
    from ..core import Session

__all__ = [
    "ANNOUNCED_KEY",
    "LINK_FOLDER",
    "LINK_MIMETYPE",
    "METADATA_KEY",
    "PERSONA_ID",
    "ChatLink",
    "ChatLinkError",
    "announced",
    "default_chat_path",
    "ensure_chat_file",
    "kernel_notebook",
    "link_chat",
    "notebook_link",
    "open_link",
    "read_link",
    "record_path",
    "server_path",
]

#: The key of the link in a chat's metadata (``metadata["pinb"]``).
METADATA_KEY = "pinb"
#: The hidden folder beside a chat that holds its link record.
LINK_FOLDER = ".pinb-chat"
#: The mimetype of the link in a ``%pi chat`` output (saved in the notebook, never drawn).
LINK_MIMETYPE = "application/vnd.pinb.chat-link+json"
#: The persona's user id in a chat (Jupyter AI's ``jupyter-ai-personas::<package>::<class>``).
PERSONA_ID = "jupyter-ai-personas::pinb::PinbPersona"
#: The key, in a chat message's metadata, of the link (its ``linked_at``) the message announced.
ANNOUNCED_KEY = "pinb_link"


def _now() -> str:
    # Microseconds: two links made in the same second must still order.
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class ChatLink:
    """A chat linked to a session file.

    Attributes
    ----------
    chat:
        The ``.chat`` file.
    session:
        The session file both the chat and the notebook continue.
    notebook:
        The notebook that linked it (``None`` when the chat chose the session).
    linked_at:
        When (ISO 8601, UTC, microseconds): the newer link wins.
    linked_by:
        ``"notebook"`` (``%pi chat``) or ``"chat"`` (``/session open``, ``/session new``,
        a chat's first message).
    named:
        The session as the metadata names it (relative, or with ``~``), kept so the link is
        written back as it was and shown as its writer wrote it; ``None`` for a link made
        here (``session`` is what it names).
    """

    chat: Path
    session: Path
    notebook: Path | None = None
    linked_at: str = ""
    linked_by: str = "notebook"
    named: str | None = field(default=None, compare=False)

    def to_metadata(self) -> dict[str, Any]:
        """The link as the chat's metadata holds it: the notebook relative to the chat."""
        notebook = None
        if self.notebook is not None:
            notebook = os.path.relpath(self.notebook, self.chat.parent)
        return {
            "session": self.named if self.named is not None else str(self.session),
            "notebook": notebook,
            "linked_at": self.linked_at,
            "linked_by": self.linked_by,
        }

    @classmethod
    def from_metadata(cls, chat: Path, data: Any) -> ChatLink | None:
        """The link in ``data`` (a chat's ``metadata["pinb"]``), ``None`` if it holds none.

        A relative session is taken from the chat's folder (never the server's working
        folder), ``~`` expanded: :func:`pinb.core.opening.session_path`.
        """
        if not isinstance(data, dict) or not isinstance(data.get("session"), str):
            return None
        notebook = data.get("notebook")
        if isinstance(notebook, str) and "\0" not in notebook:
            notebook_path: Path | None = Path(os.path.abspath(chat.parent / notebook))
        else:
            notebook_path = None
        named = data["session"]
        return cls(
            chat=chat,
            session=session_path(named, chat.parent),
            notebook=notebook_path,
            linked_at=str(data.get("linked_at") or ""),
            linked_by=str(data.get("linked_by") or "notebook"),
            named=named,
        )

    @property
    def shown(self) -> str:
        """The session as the link names it, on one line (for a message about the link)."""
        return one_line(visible(self.named if self.named is not None else str(self.session)), 200)

    def describe(self) -> str:
        """One line: which session, and who linked it."""
        if self.notebook is not None:
            who = f"the notebook {self.notebook.name}"
        else:
            who = "a notebook" if self.linked_by == "notebook" else "the chat"
        return f"{self.chat.name} continues {self.session.name} (linked by {who})"


class ChatLinkError(SessionError):
    """A chat's link names no session file that can be opened (gone, a folder, a FIFO, ...).

    The message is the one line the chat answers: which session the link names (as it
    names it), why it cannot be continued, and how to link the chat again.

    Attributes
    ----------
    link:
        The link.
    reason:
        Why, in words that follow the file's name (``"no such file"``).
    """

    def __init__(self, link: ChatLink, reason: str) -> None:
        self.link = link
        self.reason = reason
        notebook = (
            f"`%pi chat` in {visible(link.notebook.name)}"
            if link.notebook is not None
            else "`%pi chat` in the notebook"
        )
        super().__init__(
            f"this chat's link names {link.shown}: {reason}; {notebook} links it again "
            "(or `/session open PATH` or `/session new` here)"
        )


def open_link(link: ChatLink) -> Session:
    """Open the session ``link`` names, with the checks of ``%pi open``.

    Raises
    ------
    ChatLinkError
        It names no session file that can be opened; nothing was opened.
    """
    try:
        return open_session_file(link.session)
    except SessionFileError as exc:
        raise ChatLinkError(link, exc.reason) from exc


def default_chat_path(
    folder: str | os.PathLike[str],
    session: str | os.PathLike[str],
    session_id: str,
    name: str | None = None,
) -> Path:
    """The chat ``%pi chat`` makes for ``session`` in ``folder`` (the notebook's).

    Named after the session, short and readable: its name (``/name`` in Pi) made safe for
    a file name, else ``session-<first 8 of its id>``, as ``%pi tree`` heads it. A chat of
    that name that continues another session (or none) is left alone: the next free
    ``-2``, ``-3`` … is taken, so no chat file is ever reused for another conversation.
    A chat already linked to ``session`` is returned as it is.
    """
    target = Path(os.path.abspath(session))
    stem = file_stem(name, 40) if name else ""
    if not stem:
        stem = "session-" + (file_stem(session_id[:8], 8) or "new")
    base = Path(os.path.abspath(folder))
    for n in range(1, 1000):
        chat = base / (f"{stem}.chat" if n == 1 else f"{stem}-{n}.chat")
        if not os.path.lexists(chat):
            return chat
        link = read_link(chat)
        if link is not None and os.path.abspath(link.session) == str(target):
            return chat
    raise FileExistsError(f"{base}: no free name for a chat of {target.name}")


def record_path(chat: str | os.PathLike[str]) -> Path:
    """Where the link record of ``chat`` lives: ``.pinb-chat/<chat name>.json`` beside it."""
    path = Path(chat)
    return path.parent / LINK_FOLDER / f"{path.name}.json"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_link(chat: str | os.PathLike[str], metadata: Any = None) -> ChatLink | None:
    """The chat's link: the newer of its record and its metadata (``None``: not linked).

    Parameters
    ----------
    chat:
        The ``.chat`` file.
    metadata:
        The chat's ``metadata["pinb"]`` as the live chat holds it (the persona passes the
        chat model's); default: read from the file.
    """
    path = Path(os.path.abspath(chat))
    if metadata is None:
        saved = _read_json(path)
        meta = saved.get("metadata") if isinstance(saved, dict) else None
        metadata = meta.get(METADATA_KEY) if isinstance(meta, dict) else None
    candidates = [
        ChatLink.from_metadata(path, metadata),
        ChatLink.from_metadata(path, _read_json(record_path(path))),
    ]
    links = [link for link in candidates if link is not None]
    if not links:
        return None
    return max(links, key=lambda link: link.linked_at)


def announced(messages: Any) -> set[str]:
    """The links (their ``linked_at``) the chat's messages announced already."""
    found = set()
    for message in messages if isinstance(messages, list) else []:
        metadata = getattr(message, "metadata", None)
        if metadata is None and isinstance(message, dict):
            metadata = message.get("metadata")
        value = metadata.get(ANNOUNCED_KEY) if isinstance(metadata, dict) else None
        if isinstance(value, str):
            found.add(value)
    return found


def _announcement(link: ChatLink) -> dict[str, Any]:
    """The chat's first message: which session it continues, said once, as Pi says it."""
    notebook = f" ({link.notebook.name})" if link.notebook is not None else ""
    body = (
        f"*{link.describe()}.* A message to Pi here and a `%%pi` cell in the notebook"
        f"{notebook} are turns of this one session; `/session` says which it is, `/tree` "
        "shows it. Pi says it again only when the link changes."
    )
    return {
        "type": "msg",
        "id": str(uuid.uuid4()),
        "body": body,
        "time": datetime.now(UTC).timestamp(),
        "sender": PERSONA_ID,
        "raw_time": False,
        "metadata": {ANNOUNCED_KEY: link.linked_at},
    }


def _chat_document(metadata: dict[str, Any], link: ChatLink | None = None) -> bytes:
    """A new chat in jupyterlab-chat's file format (its id as the server makes one); a linked
    one opens with Pi's message saying which session it continues."""
    users: dict[str, Any] = {}
    messages: list[dict[str, Any]] = []
    if link is not None:
        messages.append(_announcement(link))
        # The persona registers itself (with its avatar) when the chat opens.
        users[PERSONA_ID] = {
            "username": PERSONA_ID,
            "name": "Pi",
            "display_name": "Pi",
            "bot": True,
        }
    document = {
        "messages": messages,
        "users": users,
        "attachments": {},
        "metadata": {"id": uuid.uuid4().hex, **metadata},
    }
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def ensure_chat_file(chat: str | os.PathLike[str], link: ChatLink | None = None) -> bool:
    """Create the chat file when it does not exist (with the link in its metadata, and a first
    message that says it).

    An existing chat is never rewritten: the Jupyter server may hold it open, and saves all
    of it on every message. Returns whether the file was created.
    """
    metadata = {METADATA_KEY: link.to_metadata()} if link is not None else {}
    try:
        write_new_file(chat, _chat_document(metadata, link))
    except FileExistsError:
        return False
    return True


def link_chat(
    chat: str | os.PathLike[str],
    session: str | os.PathLike[str],
    *,
    notebook: str | os.PathLike[str] | None = None,
    linked_by: str = "notebook",
) -> ChatLink:
    """Link ``chat`` to the session file ``session``: both continue one session from now on.

    Writes the link record beside the chat (atomically) and creates the chat file, with the
    link in its metadata, when it does not exist yet. The persona copies the record into an
    existing chat's metadata at its next message.

    Returns
    -------
    ChatLink
        The link written.
    """
    path = Path(os.path.abspath(chat))
    link = ChatLink(
        chat=path,
        session=Path(os.path.abspath(session)),
        notebook=Path(os.path.abspath(notebook)) if notebook is not None else None,
        linked_at=_now(),
        linked_by=linked_by,
    )
    record = record_path(path)
    record.parent.mkdir(parents=True, exist_ok=True)
    replace_file(record, (json.dumps(link.to_metadata(), indent=2) + "\n").encode("utf-8"))
    ensure_chat_file(path, link)
    return link


def kernel_notebook(user_ns: dict[str, Any] | None = None) -> Path | None:
    """The notebook a Jupyter kernel runs for, when the server said (``__session__``).

    Jupyter Server starts a notebook's kernel with ``JPY_SESSION_NAME`` (the notebook's
    path), which ipykernel also puts in the namespace as ``__session__``; a kernel started
    otherwise (nbclient, a console) has none.
    """
    name = (user_ns or {}).get("__session__") or os.environ.get("JPY_SESSION_NAME")
    if not isinstance(name, str) or not name.endswith(".ipynb"):
        return None
    return Path(name)


def server_path(path: str | os.PathLike[str]) -> str | None:
    """``path`` as the Jupyter server that started this kernel names it (relative to its
    root, ``/``-separated), or ``None``: a kernel no server started, or a path outside it.

    Read from the server's own ``jpserver-<pid>.json`` in Jupyter's runtime folder (the
    kernel's ``JPY_PARENT_PID`` is the server's pid): a file on this machine, no request.
    """
    pid = os.environ.get("JPY_PARENT_PID", "")
    if not pid.isdigit():
        return None
    from jupyter_core.paths import jupyter_runtime_dir

    info = _read_json(Path(jupyter_runtime_dir()) / f"jpserver-{pid}.json")
    root = info.get("root_dir") if isinstance(info, dict) else None
    if not isinstance(root, str) or not root:
        return None
    full = Path(os.path.abspath(path))
    try:
        return full.relative_to(Path(os.path.abspath(os.path.expanduser(root)))).as_posix()
    except ValueError:
        return None


def notebook_link(notebook: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The last link a ``%pi chat`` output saved in ``notebook`` (the ``.ipynb`` file).

    Returns the link's fields (``chat``, ``session``: absolute paths) or ``None``.
    """
    document = _read_json(Path(notebook))
    cells = document.get("cells") if isinstance(document, dict) else None
    found: dict[str, Any] | None = None
    for cell in cells if isinstance(cells, list) else []:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in outputs if isinstance(outputs, list) else []:
            data = output.get("data") if isinstance(output, dict) else None
            value = data.get(LINK_MIMETYPE) if isinstance(data, dict) else None
            if isinstance(value, dict) and isinstance(value.get("chat"), str):
                found = value
    return found
