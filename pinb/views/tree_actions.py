"""The explorer's actions: what the ES module's buttons ask the kernel to do to the session.

Continue here, continue with a branch summary, label, fork, archive, unarchive and give
back what a compaction lost (``pinb uncompact``), each on the selected entry; each says in
the widget's status line what it did or why it did not. Continuing or forking at a user
message follows Pi (``/tree``, ``/fork``): the new path ends before it, and its text comes
back in :attr:`editor_text`, which the ES module shows in a box to edit and copy as a
``%%pi`` cell.
:class:`~pinb.views.tree_widget.TreeWidget` (the anywidget model: traitlets, layout,
panels) mixes these in; they act on the session, then ask the model to redraw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.forks import ForkKind, fork_at, fork_kind
from ..render.tree.graph import plural
from .accounting import resolve_window

if TYPE_CHECKING:
    from ..core import Session
    from ..render.tree.graph import SessionGraph

__all__ = ["TreeActions", "fork_button"]

#: The fork button's label and tooltip for each kind of fork (said before it is clicked).
_FORK_BUTTON: dict[ForkKind, tuple[str, str]] = {
    "fork": (
        "Fork before this message",
        "A new session file that ends just before this user message, as Pi's /fork: the "
        "message itself is not copied; its text comes back below, to edit and send again.",
    ),
    "clone": (
        "Copy the path to here into a new file",
        "A new session file holding the path from the first entry up to and including this "
        "one, as Pi's /clone (fork before a user message: select that message).",
    ),
}


def fork_button(kind: ForkKind | None) -> tuple[str, str]:
    """The fork button's ``(label, tooltip)`` for what forking at the selection does."""
    if kind is None:
        return "Fork to new file", "Select an entry first."
    return _FORK_BUTTON[kind]


class TreeActions:
    """Mixin of :class:`~pinb.views.tree_widget.TreeWidget`: the actions on the session."""

    if TYPE_CHECKING:  # provided by the widget model
        session: Session
        selected_id: str | None
        status: str
        status_tone: str
        editor_text: str
        editor_note: str
        leaf: str | None
        graph: SessionGraph | None
        navigate: Callable[[Session, str, bool], Any] | None
        summarizer: Any
        fork_callable: Callable[[Session, str], Any] | None
        context_window: int | None

        def refresh(self, force: bool = False) -> list[Any]: ...

    def _on_message(self, widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        action = content.get("action")
        key = content.get("id")
        if isinstance(key, str) and key and key in self.session and key != self.selected_id:
            self.selected_id = key
        handlers: dict[str, Callable[[], Any]] = {
            "continue": self.continue_here,
            "summarize": self.continue_with_summary,
            "label": lambda: self.set_label(str(content.get("text") or "")),
            "fork": self.fork,
            "archive": self.archive,
            "unarchive": lambda: self.unarchive(content.get("target")),
            "uncompact": self.give_back,
            "refresh": lambda: self.refresh(force=True),
            "select": lambda: self._selected_from_panel(key),
        }
        handler = handlers.get(str(action))
        if handler is None:
            return
        if action not in ("select", "refresh"):
            self._editor("")  # the text to resend belongs to the action that gave it
        handler()

    def _selected_from_panel(self, key: Any) -> None:
        """A link in a panel (a fact's entry) asked to select ``key`` (selected above)."""
        if not isinstance(key, str) or key not in self.session:
            self._error(f"No entry {key!r} in this session.")

    def _info(self, text: str) -> None:
        self.status_tone = "info"
        self.status = text

    def _error(self, text: str) -> None:
        self.status_tone = "error"
        self.status = text

    def _editor(self, text: str | None, note: str = "") -> None:
        """Offer ``text`` to edit and send again (``""``/``None``: nothing to offer)."""
        self.editor_text = text or ""
        self.editor_note = (note or "Paste it into a new cell to send it again.") if text else ""

    def _moved(self, target: str, text: str | None) -> str:
        """What the status line says of the leaf's move (the leaf named as the header names it)."""
        leaf = self.leaf or "(none)"
        if text is None:
            return f"Leaf moved to {leaf}"
        if leaf == target:  # a navigate callback's own rule
            return f"Leaf moved to {leaf}; the text it gave back is below to edit"
        return (
            f"Leaf moved to {leaf}, before the message {target} (as Pi's /tree: continuing "
            "at a user message sends it again); its text is below to edit"
        )

    def _target(self) -> str | None:
        if not self.selected_id or self.selected_id not in self.session:
            self._error("Select an entry in the tree first.")
            return None
        return self.selected_id

    def continue_here(self) -> Any:
        """Move the leaf to the selected entry (with ``navigate`` if given).

        As Pi's ``/tree`` (:meth:`Session.navigate`): at a user message the leaf goes to
        its parent and the message's text is offered to edit and send again.
        """
        target = self._target()
        if target is None:
            return None
        try:
            if self.navigate is not None:
                result = self.navigate(self.session, target, False)
            else:
                result = self.session.navigate(target)
        except Exception as exc:  # shown in the widget: a callback has no caller
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        self.refresh(force=True)
        text = getattr(result, "editor_text", None)
        self._editor(text)
        self._info(f"{self._moved(target, text)}.")
        return result

    def continue_with_summary(self) -> Any:
        """Move the leaf to the selected entry, summarizing the branch left behind."""
        target = self._target()
        if target is None:
            return None
        # The widget's summarizer (a model's, when the notebook configured one), else
        # pinb's offline extractive one, whose summaries say so in their first line.
        summarizer = self.summarizer
        by = getattr(summarizer, "name", None) or type(summarizer).__name__
        if summarizer is None:
            from ..core import ExtractiveSummarizer

            summarizer = ExtractiveSummarizer()
            by = "pinb's offline extractive summarizer (no model: it quotes, it does not write)"
        try:
            if self.navigate is not None:
                result = self.navigate(self.session, target, True)
                by = "the notebook's navigate callback"
            else:
                window, _ = resolve_window(
                    self.session.build_context(), self.context_window, session=self.session
                )
                result = self.session.navigate(
                    target, summarize=True, summarizer=summarizer, context_window=window
                )
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        self.refresh(force=True)
        text = getattr(result, "editor_text", None)
        summary = getattr(result, "summary_entry", None)
        made = (
            f"with branch summary {summary.id}, written by {by}"
            if summary is not None
            else "(nothing on the branch left to summarize)"
        )
        self._editor(text)
        self._info(f"{self._moved(target, text)} {made}.")
        return result

    def set_label(self, text: str | None) -> None:
        """Label the selected entry (an empty text clears its label)."""
        target = self._target()
        if target is None:
            return
        try:
            self.session.set_label(target, text or None)
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return
        self.refresh(force=True)
        label = (text or "").strip()
        self._info(
            f"Label of {target} set to “{label}”." if label else f"Label of {target} cleared."
        )

    def fork(self) -> Any:
        """Fork at the selected entry into a new session file, as ``%pi fork ID`` does.

        One rule (:func:`pinb.core.forks.fork_kind`): a user message forks before it (Pi's
        ``/fork``; its text is offered to send again), any other entry copies the path up
        to and including it (Pi's ``/clone``). A ``fork`` callable, if given, is called
        instead. Returns ``(new session, text or None)``, or the callable's result.
        """
        target = self._target()
        if target is None:
            return None
        try:
            kind = fork_kind(self.session[target])
            if self.fork_callable is not None:
                result: Any = self.fork_callable(self.session, target)
                new, text = (result[0], result[1]) if isinstance(result, tuple) else (result, None)
            else:
                new, text = result = fork_at(self.session, target)
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        where = getattr(new, "path", new)
        if kind == "fork":
            self._editor(text, f"Paste it into a new cell after %pi open {where} to send it there.")
            self._info(
                f"Forked before the user message {target} into {where} (its text is below to "
                f"edit; %pi open {where} continues there)."
            )
        else:
            self._info(
                f"Copied the path up to {target} into {where} (%pi open {where} continues there)."
            )
        return result

    def archive(self, note: str | None = None) -> Any:
        """Archive the branch that starts at the selected entry: hidden, nothing deleted.

        The active path cannot be archived away: select an entry off it.
        """
        target = self._target()
        if target is None:
            return None
        node = self.graph.get(target) if self.graph is not None else None
        if node is not None and node.on_path:
            self._error(
                "This entry is on the active path; archive a branch off it (move the leaf "
                "first to archive this one)."
            )
            return None
        try:
            marker = self.session.archive(target, note)
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        self.refresh(force=True)
        count = self.graph.archived.get(target, 0) if self.graph is not None else 0
        self._info(
            f"Archived the branch at {target} ({plural(count, 'entry')} hidden; nothing was "
            "deleted: unarchive it from the list below the tree)."
        )
        return marker

    def unarchive(self, target: Any = None) -> Any:
        """Show an archived branch again (default: the selected entry's)."""
        target = target or self.selected_id
        if not target or target not in self.session.archived:
            self._error(f"{target!r} is not archived.")
            return None
        try:
            marker = self.session.unarchive(target)
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        self.refresh(force=True)
        self._info(f"The branch at {target} is shown again.")
        return marker

    def give_back(self) -> Any:
        """Give back what the selected compaction lost: one cited message at the leaf
        (:func:`pinb.core.compaction.uncompact.uncompact`)."""
        from ..core.compaction.uncompact import uncompact
        from .compaction.given_back import given_back_headline

        target = self._target()
        if target is None:
            return None
        if self.session[target].type != "compaction":
            self._error("Select a compaction entry: giving back is about what its summary lost.")
            return None
        try:
            given = uncompact(self.session, target, writer="the explorer's give-back")
        except Exception as exc:  # shown in the widget: a callback has no caller
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        self.refresh(force=True)
        self._info(given_back_headline(given))
        return given
