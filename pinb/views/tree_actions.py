"""The explorer's actions: what the ES module's buttons ask the kernel to do to the session.

Continue here, continue with a branch summary, label, fork, archive, unarchive and give
back what a compaction lost (``pinb uncompact``), each on the selected entry; each says in the widget's status line what it did or why it did not.
:class:`~pinb.views.tree_widget.TreeWidget` (the anywidget model: traitlets, layout,
panels) mixes these in; they act on the session, then ask the model to redraw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..render.html import shorten
from ..render.tree.graph import plural
from .accounting import resolve_window

if TYPE_CHECKING:
    from ..core import Session
    from ..render.tree.graph import SessionGraph

__all__ = ["TreeActions"]


class TreeActions:
    """Mixin of :class:`~pinb.views.tree_widget.TreeWidget`: the actions on the session."""

    if TYPE_CHECKING:  # provided by the widget model
        session: Session
        selected_id: str | None
        status: str
        status_tone: str
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
        if handler is not None:
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

    def _target(self) -> str | None:
        if not self.selected_id or self.selected_id not in self.session:
            self._error("Select an entry in the tree first.")
            return None
        return self.selected_id

    def continue_here(self) -> Any:
        """Move the leaf to the selected entry (with ``navigate`` if given)."""
        target = self._target()
        if target is None:
            return None
        try:
            if self.navigate is not None:
                result = self.navigate(self.session, target, False)
            else:
                self.session.branch(target)
                result = None
        except Exception as exc:  # shown in the widget: a callback has no caller
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        self.refresh(force=True)
        text = getattr(result, "editor_text", None)
        extra = f" Text to edit and resend: {shorten(text, 200)}" if text else ""
        self._info(f"Leaf moved to {self.session.leaf_id}.{extra}")
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
        extra = f" Text to edit and resend: {shorten(text, 200)}" if text else ""
        summary = getattr(result, "summary_entry", None)
        made = (
            f"with branch summary {summary.id}, written by {by}"
            if summary is not None
            else "(nothing on the branch left to summarize)"
        )
        self._info(f"Leaf moved to {self.session.leaf_id} {made}.{extra}")
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
        """Copy the path to the selected entry into a new session file (or call ``fork``)."""
        target = self._target()
        if target is None:
            return None
        try:
            if self.fork_callable is not None:
                result = self.fork_callable(self.session, target)
            else:
                result = self.session.clone(target)
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        where = getattr(result, "path", result)
        self._info(f"Forked the path to {target}: {where}")
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
