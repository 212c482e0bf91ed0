"""The chat's slash commands: pinb's views of the shared session, as Markdown the chat can show.

``/tree``, ``/context``, ``/tokens``, ``/compact``, ``/kept``, ``/uncompact`` answer with the same views
``%pi tree``, ``%pi context``, ``%pi tokens``, ``%pi compact`` show in a notebook: the
tree as its text form (``to_text``) in a fenced block with its picture as a PNG (a
``data:`` URI); the tables as the view's own HTML (what an untrusted notebook shows), with
the text form as the message's text. Figures come from the views and the one account
(:meth:`ChatSession.usage <pinb.chat.turns.ChatSession.usage>`), never computed here. ``/session`` shows or changes
which session the chat continues; ``/goto ID`` moves its leaf, as ``%pi goto`` does (back to
turns a note says another writer left off the path); ``/help`` lists the commands.

Every function here blocks (it reads the session file, may run a compaction): the persona
calls :func:`run_command` on a worker thread.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.describe import plural
from ..errors import PinbError, UsageError
from .markdown import code, fence, literal, png_image
from .turns import ChatSession, chat_turns

__all__ = ["COMMANDS", "Answer", "parse_command", "run_command"]

#: The commands, as the chat's command menu lists them.
COMMANDS: dict[str, str] = {
    "/tree": "the session tree (chat turns are the pinb.chat rows), as text and a picture",
    "/context": "the context path the model sees, and how full it is",
    "/tokens": "where the context's tokens go, by role and by tool",
    "/compact": "compact the context now (optional instructions for the summary)",
    "/kept": "what the last compaction kept verbatim, what it summarized, what pinb masked, and "
    "what pinb kept and gave back",
    "/uncompact": "give back what the last compaction lost, as one cited message the model reads next "
    "(/uncompact ID for another on the path; --dry-run only says what)",
    "/goto": "move the session to entry ID (the turns a note says were left off the path)",
    "/session": "the linked session; /session open PATH or /session new changes it",
    "/help": "what this persona does and its commands",
}


@dataclass(frozen=True)
class Answer:
    """A command's answer: Markdown, and a view's HTML the chat shows in its place.

    ``html`` is the view's own rendering (``to_html``: escaped session text, sanitizer-safe
    tags and inline styles, as an untrusted notebook shows it); the chat renders it as an
    untrusted output, through JupyterLab's sanitizer. ``body`` stays the text form.
    """

    body: str
    html: str | None = None


def parse_command(body: str) -> tuple[str, str] | None:
    """``("/tree", "rest")`` for a message that is one of :data:`COMMANDS`, else ``None``."""
    text = body.strip()
    if not text.startswith("/"):
        return None
    name, _, rest = text.partition(" ")
    name = name.lower()
    return (name, rest.strip()) if name in COMMANDS else None


def run_command(chat: ChatSession, name: str, args: str) -> Answer:
    """Carry out a command; its answer.

    Raises
    ------
    PinbError
        The command failed (one line for the chat); ``SessionBusyError`` when another
        writer holds the session (``/compact``).
    """
    answer = _HANDLERS[name](chat, args)
    return answer if isinstance(answer, Answer) else Answer(answer)


def _help(chat: ChatSession, args: str) -> str:
    engine = chat.settings.engine
    if engine == "pi":
        runs = "your own Pi (`pi --mode rpc`)"
    else:
        spec, why = chat.model_spec()
        runs = f"pinb's built-in agent with {code(spec)} ({literal(why)})"
    lines = [
        f"I answer with {runs}, on the session this chat is linked to; a notebook's "
        "`%%pi` cells can continue the same session (`%pi chat` in the notebook links it).",
        "",
        *(f"- {code(name)} — {literal(text)}" for name, text in COMMANDS.items()),
    ]
    return "\n".join(lines)


def _session_line(chat: ChatSession) -> str:
    session = chat.session
    if session is None:
        return "No session yet: the first message starts one (or `/session open PATH`)."
    path = session.require_path()
    written = (
        f"{plural(len(session.entries), 'entry')}, leaf {session.leaf_id}"
        if session.is_persisted
        else "written at its first message"
    )
    turns = len(chat_turns(session))
    lines = [f"Session {code(path.name)} ({literal(written)}); {plural(turns, 'chat turn')}."]
    lines.append(f"File: {code(str(path))}")
    link = chat.link
    if link is not None and link.notebook is not None:
        lines.append(f"Linked by the notebook {code(link.notebook.name)}.")
    elif link is not None:
        lines.append(f"Linked by the {literal(link.linked_by)}.")
    return "\\\n".join(lines)


def _session(chat: ChatSession, args: str) -> str:
    words = shlex.split(args)
    if not words:
        chat.follow_link()
        if chat.session is not None:
            chat.session.refresh()  # what the notebook's cells appended since
        return _session_line(chat)
    if words[0] == "new" and len(words) == 1:
        chat.new_session()
        return "Started a new session.\\\n" + _session_line(chat)
    if words[0] == "open" and len(words) == 2:
        chat.open_session(words[1])
        return "Now continuing it.\\\n" + _session_line(chat)
    raise UsageError("usage: /session, /session open PATH, /session new")


def _require(chat: ChatSession) -> Any:
    chat.follow_link()
    session = chat.session
    if session is None:
        raise UsageError(
            "this chat has no session yet: send a message, `/session open PATH`, or run "
            "`%pi chat` in a notebook"
        )
    session.refresh()
    return session


def _tree(chat: ChatSession, args: str) -> str:
    from ..views import TreeView

    session = _require(chat)
    view = TreeView(session)
    parts = [literal(view.summary()), fence(view.to_text(), "text")]
    with contextlib.suppress(ImportError):  # no Pillow: the text form says it all
        parts.append(png_image(view.to_png(), "the session tree"))
    return "\n\n".join(parts)


def _view(view: Any) -> Answer:
    return Answer(fence(view.to_text(), "text"), view.to_html())


def _context(chat: ChatSession, args: str) -> Answer:
    from ..views import ContextPathView

    session = _require(chat)
    window = chat.window()
    return _view(
        ContextPathView(
            session,
            context_window=window.tokens,
            window_source=window.source,
            settings=chat.account_settings(),
        )
    )


def _tokens(chat: ChatSession, args: str) -> Answer:
    from ..views import ContextBreakdown

    session = _require(chat)
    return _view(ContextBreakdown(session, usage=chat.usage()))


def _compaction(chat: ChatSession, source: Any) -> Answer:
    from ..views import CompactionView

    window = chat.window()
    return _view(
        CompactionView(
            source, chat.session, context_window=window.tokens, window_source=window.source
        )
    )


def _masked(chat: ChatSession) -> Answer | None:
    """The tool results pinb masked on this branch, and the tokens they take off."""
    from ..core.compaction.masking import masked_results
    from ..render.html import escape
    from ..views.compaction.masking import masked_rows_html

    masked = masked_results(_require(chat).current_context())
    if not masked:
        return None
    saved = sum(m.saved for m in masked)
    line = (
        f"{len(masked):,} old tool result{'s' if len(masked) != 1 else ''} masked on this "
        f"branch, {saved:,} tokens off (chars/4); the file keeps them (recall, /goto ID)"
    )
    text = (
        line + "\n" + "\n".join(f"{m.entry_id} {m.tool} {m.arguments} −{m.saved:,}" for m in masked)
    )
    return Answer(fence(text, "text"), f"<div>{escape(line)}</div>" + masked_rows_html(masked))


def _kept(chat: ChatSession, args: str) -> Answer | str:
    session = _require(chat)
    compaction = session.current_context().compaction
    masked = _masked(chat)
    if compaction is None:
        if masked is not None:
            return masked
        return literal(
            "Nothing is compacted on this branch yet: the whole path is sent. "
            "/compact compacts it now."
        )
    shown = _compaction(chat, compaction)
    if masked is None:
        return shown
    return Answer(shown.body + "\n\n" + masked.body, (shown.html or "") + (masked.html or ""))


def _compact(chat: ChatSession, args: str) -> Answer:
    from ..core.compaction.masking import MaskReport
    from ..views import MaskingView

    _require(chat)
    done = chat.compact(args or None)
    if done is None:
        raise PinbError("the compaction wrote nothing")
    if isinstance(done, MaskReport):
        return _view(MaskingView(done))
    return _compaction(chat, done)


def _uncompact(chat: ChatSession, args: str) -> Answer:
    from ..core.compaction.operations import entry_id
    from ..core.compaction.uncompact import uncompact
    from ..views.compaction.given_back import given_back_html, given_back_text

    words = shlex.split(args)
    dry_run = "--dry-run" in words
    ids = [w for w in words if w != "--dry-run"]
    if len(ids) > 1 or any(w.startswith("-") for w in ids):
        raise UsageError("usage: /uncompact [ID] [--dry-run] (ID: a compaction on the path)")
    session = _require(chat)
    compaction = entry_id(session, ids[0]) if ids else None  # a prefix, as /goto takes
    with session.turn("giving back what a compaction lost", role="chat", who=chat.who):
        given = uncompact(session, compaction, dry_run=dry_run, writer="the chat's /uncompact")
    return Answer(fence(given_back_text(given), "text"), given_back_html(given))


def _goto(chat: ChatSession, args: str) -> str:
    words = shlex.split(args)
    if len(words) != 1:
        raise UsageError("usage: /goto ID (an entry id, or its first characters, as /tree shows)")
    _require(chat)
    report = chat.goto(words[0])
    line = f"Moved the session: leaf {code(str(report.old_leaf_id))} → {code(str(report.new_leaf_id))}."
    if report.editor_text is not None:
        line += " That was a message of yours; its text, to send again:\n\n" + literal(
            report.editor_text
        )
    return line


_HANDLERS: dict[str, Callable[[ChatSession, str], Answer | str]] = {
    "/help": _help,
    "/session": _session,
    "/tree": _tree,
    "/context": _context,
    "/tokens": _tokens,
    "/kept": _kept,
    "/compact": _compact,
    "/goto": _goto,
    "/uncompact": _uncompact,
}
