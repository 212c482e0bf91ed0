"""``CompactionWidget``: a compaction's view in a live kernel, with a real give-back button.

Two files make the widget: this model (the view's HTML, the button's state and the status
line, synced with the browser) and one ES module (``compaction_widget.js``) that draws them. The
button calls the explorer's own give-back (:meth:`pinb.views.tree_actions.TreeActions.
give_back`, which calls :func:`pinb.core.compaction.uncompact.uncompact`), so the two
buttons are one implementation; then the view is drawn again from the file, and the status
line says what was appended. :class:`~pinb.views.compaction.view.CompactionView` becomes this
widget when shown in a kernel; its static HTML (saved, untrusted, nbconvert) names the
command instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..core import Entry, Session
from ..core.describe import node_key
from ..render.html import mimebundle
from .compaction.view import CompactionView
from .tree_actions import TreeActions

__all__ = ["CompactionWidget"]

_HERE = Path(__file__).parent


class CompactionWidget(TreeActions, anywidget.AnyWidget):
    """One recorded compaction, drawn as :class:`CompactionView`, with a button that gives
    back what its summary lost (one cited ``custom_message`` at the leaf).

    A second click gives only what is still lost, or says nothing is left (the core's
    rule). The button is greyed out, and says why, while the compaction is off the current
    path (its loss would not reach the model).

    Parameters
    ----------
    entry:
        The ``compaction`` entry (or its id).
    session:
        Its session (re-read for what others appended before each drawing).
    **options:
        :class:`CompactionView`'s (``context_window``, ``window_source``, ``max_rows``,
        ``max_lost``).
    """

    _esm = _HERE / "compaction_widget.js"

    html = traitlets.Unicode("", help="The view's HTML, without the give-back command.").tag(
        sync=True
    )
    status = traitlets.Unicode("").tag(sync=True)
    status_tone = traitlets.Unicode("info").tag(sync=True)
    can_give_back = traitlets.Bool(False).tag(sync=True)
    reason = traitlets.Unicode("", help="Why the button is greyed out, or what it does.").tag(
        sync=True
    )
    revision = traitlets.Int(0, help="Counts the drawings and the answers to clicks.").tag(
        sync=True
    )

    def __init__(self, entry: Entry | str, session: Session, **options: Any) -> None:
        self.session = session
        found = entry if isinstance(entry, Entry) else session[entry]
        if found.type != "compaction":
            raise ValueError(f"entry {found.id!r} is a {found.type!r} entry, not a compaction")
        #: The compaction, as the explorer's give-back reads its target.
        self.selected_id: str | None = node_key(found.id)
        self._options = options
        self.compaction_view: CompactionView | None = None
        super().__init__()
        self.on_msg(self._on_click)
        self.refresh(force=True)

    def _on_click(self, widget: Any, content: Any, buffers: Any) -> None:
        if isinstance(content, dict) and content.get("action") == "uncompact":
            self.give_back()
            self.revision += 1  # answered, even when the view did not change

    def refresh(self, force: bool = False) -> list[Any]:
        """Read what others appended, then draw the view again (the explorer's hook: its
        give-back calls it after appending)."""
        new = self.session.refresh()
        key = self.selected_id
        assert key is not None
        self.compaction_view = CompactionView(key, self.session, **self._options)
        on_path = any(node_key(e.id) == key for e in self.session.path_to())
        with self.hold_sync():
            self.html = self.compaction_view.html(hint=False)
            self.can_give_back = on_path
            self.reason = (
                "Append one cited message at the leaf with the facts this compaction's "
                "summary lost (pinb uncompact)"
                if on_path
                else f"This compaction is not on the active path (leaf {self.session.leaf_id}): "
                "its loss would not reach the model; move the leaf after it first"
            )
            self.revision += 1
        return new

    def to_text(self) -> str:
        assert self.compaction_view is not None
        return self.compaction_view.to_text()

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        view = self.compaction_view
        if bundle is None or view is None:
            return bundle
        data, metadata = bundle
        # Where no kernel draws the widget (saved, untrusted, nbconvert), the static view
        # names the command that gives back.
        static = mimebundle(view.to_text(), html=view.to_html())
        return {**static, **data, "text/plain": static["text/plain"]}, dict(metadata or {})
