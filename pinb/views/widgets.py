"""``SessionExplorer``: an ipywidgets browser for a session — tree, details, actions, live panels."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Literal

import ipywidgets as widgets
import traitlets

from ..core import CompactionSettings, Session
from ..errors import PinbError
from ..render.graph import SessionGraph, build_graph
from ..render.html import escape, shorten, wrap
from ..render.layout import AUTO_COLLAPSE, Item, collapse_chains
from .breakdown import ContextBreakdown
from .context_path import ContextPathView
from .entry import entry_html
from .tree import TreeView

__all__ = ["Fork", "Navigate", "SessionExplorer"]

#: ``navigate(session, target_id, summarize)``: move the leaf, optionally with a summary.
Navigate = Callable[[Session, str, bool], Any]
#: ``fork(session, entry_id)``: copy the path to ``entry_id`` into a new session file.
Fork = Callable[[Session, str], Any]

_STYLE = (
    "<style>.pinb-tree select{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;"
    "font-size:12px}.pinb-explorer .pinb-details{border-left:1px solid #d0d7de;"
    "padding-left:8px}</style>"
)
_TABS = ("Context path", "Tokens", "Tree picture")


def _marker(graph: SessionGraph, item: Item) -> str:
    node = graph.nodes[item.nodes[0]]
    if item.is_chain:
        return "⋯"
    if node.type == "compaction":
        return "◆"
    if node.type == "branch_summary":
        return "◇"
    return "●" if node.on_path else "○"


def _line(graph: SessionGraph, item: Item) -> str:
    nodes = graph.nodes
    node = nodes[item.nodes[0]]
    if item.is_chain:
        last = nodes[item.nodes[-1]]
        return (
            f"⋯ {len(item.nodes):,} entries {node.key[:8]}…{last.key[:8]} "
            f"({node.kind} … {last.kind}), select to expand"
        )
    parts = [_marker(graph, item), node.kind, node.key[:8]]
    if node.label:
        parts.append(f"[{shorten(node.label, 30)}]")
    if node.region == "summarized":
        parts.append("(summarized)")
    parts.append(shorten(node.preview, 70))
    if node.is_leaf:
        parts.append("← leaf")
    return " ".join(p for p in parts if p)


def tree_options(
    graph: SessionGraph, items: list[Item], roots: list[int]
) -> list[tuple[str, tuple[str, str]]]:
    """``(text line, (kind, key))`` per item in pre-order; lines indent only at branch points."""
    options: list[tuple[str, tuple[str, str]]] = []
    column = [0] * len(items)
    for i, item in enumerate(items):
        siblings = items[item.parent].children if item.parent >= 0 else roots
        base = column[item.parent] if item.parent >= 0 else 0
        if len(siblings) > 1:
            connector = "└ " if siblings[-1] == i else "├ "
            prefix = "  " * base + connector
            column[i] = base + 1
        else:
            prefix = "  " * base
            column[i] = base
        key = graph.nodes[item.nodes[0]].key
        value = ("chain", key) if item.is_chain else ("entry", key)
        options.append((prefix + _line(graph, item), value))
    return options


class SessionExplorer(widgets.VBox):  # type: ignore[misc]
    """Browse a session: pick an entry in the tree, read it, move the leaf, label, fork.

    The tree is a text list (as Pi's ``/tree``): ``●`` active path, ``○`` other branches,
    ``◆`` compaction, ``◇`` branch summary, ``⋯`` a collapsed chain (select it to open).
    Below are the context path, the token breakdown and the tree picture of the current
    leaf. Everything is re-read on :meth:`refresh` (the Refresh button), after each action,
    and every ``poll_interval`` seconds when polling.

    Parameters
    ----------
    session:
        The session to explore (its file is re-read for entries others appended).
    navigate:
        ``navigate(session, target_id, summarize)``, used by both "continue" actions; without
        it "continue from here" is a plain :meth:`Session.branch`, and "continue with branch
        summary" uses :meth:`Session.navigate` with ``summarizer`` (or, without one, says
        that a summarizer is needed and leaves the leaf alone).
    summarizer:
        A :class:`~pinb.core.Summarizer` (e.g. ``ExtractiveSummarizer()`` or a model's) for
        branch summaries when no ``navigate`` is given.
    fork:
        ``fork(session, entry_id)`` for "fork to new file"; by default the path up to the
        selected entry is copied into a new session file (:meth:`Session.clone`).
    context_window / settings:
        For the context panel's window and threshold.
    poll_interval:
        Seconds between automatic refreshes (needs a running event loop, as in a kernel).
    collapse:
        Collapse chains in the tree list: ``True``, ``False`` or ``"auto"``.
    """

    selected_id = traitlets.Unicode(None, allow_none=True, help="Key of the selected entry.")

    def __init__(
        self,
        session: Session,
        *,
        navigate: Navigate | None = None,
        summarizer: Any = None,
        fork: Fork | None = None,
        context_window: int | None = None,
        settings: CompactionSettings | None = None,
        poll_interval: float | None = None,
        collapse: bool | Literal["auto"] = "auto",
        show_leaf_entries: bool = False,
        **kwargs: Any,
    ) -> None:
        self.session = session
        self.navigate = navigate
        self.summarizer = summarizer
        self.fork_callable = fork
        self.context_window = context_window
        self.settings = settings
        self.collapse = collapse
        self.show_leaf_entries = show_leaf_entries
        self.graph: SessionGraph | None = None
        self._expanded: set[str] = set()
        self._signature: tuple[Any, ...] | None = None
        self._updating = False
        self._dirty: set[int] = set()
        self._poll_task: asyncio.Task[None] | None = None

        self.header = widgets.HTML()
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.tree = widgets.Select(options=[], rows=18, layout=widgets.Layout(width="55%"))
        self.details = widgets.HTML(
            layout=widgets.Layout(width="45%", max_height="420px", overflow="auto")
        )
        auto = widgets.Layout(width="auto")
        self.continue_button = widgets.Button(description="Continue from here", layout=auto)
        self.summary_button = widgets.Button(
            description="Continue with branch summary", layout=auto
        )
        self.label_text = widgets.Text(placeholder="label (empty clears)")
        self.label_button = widgets.Button(description="Set label", layout=auto)
        self.fork_button = widgets.Button(description="Fork to new file", layout=auto)
        self.status = widgets.HTML()
        self.context_panel = widgets.HTML()
        self.tokens_panel = widgets.HTML()
        self.picture = widgets.HTML(layout=widgets.Layout(max_height="520px", overflow="auto"))
        self.tabs = widgets.Tab(children=[self.context_panel, self.tokens_panel, self.picture])
        for i, title in enumerate(_TABS):
            self.tabs.set_title(i, title)
        for widget, css in (
            (self.tree, "pinb-tree"),
            (self.details, "pinb-details"),
            (self.continue_button, "pinb-continue"),
            (self.summary_button, "pinb-summarize"),
            (self.label_text, "pinb-label-text"),
            (self.label_button, "pinb-label"),
            (self.fork_button, "pinb-fork"),
            (self.refresh_button, "pinb-refresh"),
            (self.status, "pinb-status"),
            (self.context_panel, "pinb-context"),
            (self.tokens_panel, "pinb-tokens"),
            (self.picture, "pinb-picture"),
            (self.header, "pinb-header"),
        ):
            widget.add_class(css)
        actions = widgets.HBox(
            [
                self.continue_button,
                self.summary_button,
                self.label_text,
                self.label_button,
                self.fork_button,
            ]
        )
        super().__init__(
            children=[
                widgets.HBox([self.header, self.refresh_button]),
                widgets.HBox([self.tree, self.details]),
                actions,
                self.status,
                self.tabs,
            ],
            **kwargs,
        )
        self.add_class("pinb-explorer")
        self.tree.observe(self._on_tree_value, names="value")
        self.tabs.observe(self._on_tab, names="selected_index")
        self.refresh_button.on_click(lambda _: self.refresh(force=True))
        self.continue_button.on_click(lambda _: self.continue_here())
        self.summary_button.on_click(lambda _: self.continue_with_summary())
        self.label_button.on_click(lambda _: self.set_label(self.label_text.value))
        self.fork_button.on_click(lambda _: self.fork())
        self.refresh(force=True)
        if session.leaf_id is not None:
            self.select(str(session.leaf_id))
        if poll_interval:
            self.start_polling(poll_interval)

    # -- state ----------------------------------------------------------------------------

    @property
    def leaf_id(self) -> Any:
        """The session's current leaf."""
        return self.session.leaf_id

    def _snapshot(self) -> tuple[Any, ...]:
        return (len(self.session.entries), self.session.leaf_id)

    def refresh(self, force: bool = False) -> list[Any]:
        """Read what others appended to the file, and redraw if anything changed.

        Returns the entries read from the file (changes made through this process's
        ``Session`` object are picked up too, but are not returned).
        """
        new: list[Any] = []
        try:
            new = self.session.refresh()
        except PinbError as exc:
            self._error(str(exc))
        if force or new or self._snapshot() != self._signature:
            self._render()
        return new

    def _render(self) -> None:
        session = self.session
        self._signature = self._snapshot()
        self.graph = build_graph(session, show_leaf_entries=self.show_leaf_entries)
        self._render_tree()
        name = session.name or "Pi session"
        where = str(session.path) if session.path else "in memory"
        self.header.value = _STYLE + (
            f"<b>{escape(name)}</b> · {len(session.entries):,} entries · "
            f"{self.graph.branch_count:,} branches · leaf <code>{escape(session.leaf_id)}</code>"
            f' · <span style="color:#6e7781">{escape(where)}</span>'
        )
        self._dirty = {0, 1, 2}
        self._render_panel(self.tabs.selected_index or 0)
        self._show_details()

    def _render_tree(self) -> None:
        graph = self.graph
        assert graph is not None
        enabled = len(graph) > AUTO_COLLAPSE if self.collapse == "auto" else bool(self.collapse)
        pinned = (self.selected_id,) if self.selected_id else ()
        items, roots, _ = collapse_chains(
            graph, pinned=pinned, expanded=self._expanded, enabled=enabled
        )
        options = tree_options(graph, items, roots)
        self._updating = True
        try:
            self.tree.options = options
            wanted = ("entry", self.selected_id) if self.selected_id else None
            values = {value for _, value in options}
            self.tree.value = wanted if wanted in values else None
        finally:
            self._updating = False

    def _render_panel(self, index: int) -> None:
        if index not in self._dirty:
            return
        self._dirty.discard(index)
        session = self.session
        if index == 0:
            view = ContextPathView(
                session, context_window=self.context_window, settings=self.settings
            )
            self.context_panel.value = view.to_html()
        elif index == 1:
            self.tokens_panel.value = ContextBreakdown(session).to_html()
        elif index == 2:
            self.picture.value = TreeView(session, selected=self.selected_id).to_html()

    def _on_tab(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self._render_panel(change["new"])

    def _on_tree_value(self, change: dict[str, Any]) -> None:
        if self._updating or change["new"] is None:
            return
        kind, key = change["new"]
        if kind == "chain":
            self._expanded.add(key)
            self.selected_id = key
            self._render_tree()
        else:
            self.selected_id = key
        self._show_details()
        self._dirty.add(2)

    def _show_details(self) -> None:
        key = self.selected_id
        entry = self.session.get(key) if key else None
        if entry is None:
            self.details.value = wrap(
                '<span class="pinb-muted">Select an entry in the tree.</span>'
            )
            return
        self.details.value = wrap(entry_html(entry, label=self.session.label(entry.id)))

    def select(self, entry_id: str) -> None:
        """Select an entry (as a click in the tree would), opening its chain if collapsed."""
        if entry_id not in self.session:
            raise KeyError(f"no entry {entry_id!r} in this session")
        self.selected_id = entry_id
        values = {value for _, value in self.tree.options}
        if ("entry", entry_id) not in values:
            self._render_tree()  # the selection is pinned, so its chain opens
        self.tree.value = ("entry", entry_id)
        self._show_details()

    # -- messages -------------------------------------------------------------------------

    def _info(self, text: str) -> None:
        self.status.value = f'<span style="color:#1a7f37">{escape(text)}</span>'

    def _error(self, text: str) -> None:
        self.status.value = f'<span style="color:#cf222e">{escape(text)}</span>'

    def _target(self) -> str | None:
        if not self.selected_id or self.selected_id not in self.session:
            self._error("Select an entry in the tree first.")
            return None
        return self.selected_id

    # -- actions --------------------------------------------------------------------------

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
        except Exception as exc:  # shown in the panel: a widget callback has no caller
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
        if self.navigate is None and self.summarizer is None:
            self._error(
                "Continuing with a branch summary needs a summarizer: create the explorer "
                "with summarizer=... (e.g. pinb.core.ExtractiveSummarizer()) or "
                "navigate=callable(session, target_id, summarize). The leaf was not moved."
            )
            return None
        try:
            if self.navigate is not None:
                result = self.navigate(self.session, target, True)
            else:
                result = self.session.navigate(
                    target,
                    summarize=True,
                    summarizer=self.summarizer,
                    context_window=self.context_window,
                )
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return None
        self.refresh(force=True)
        text = getattr(result, "editor_text", None)
        extra = f" Text to edit and resend: {shorten(text, 200)}" if text else ""
        self._info(f"Leaf moved to {self.session.leaf_id} with a branch summary.{extra}")
        return result

    def set_label(self, text: str | None) -> None:
        """Label the selected entry (an empty text clears its label)."""
        target = self._target()
        if target is None:
            return
        try:
            self.session.set_label(target, text)
        except Exception as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            return
        self.refresh(force=True)
        self._info(
            f"Label of {target} set." if (text or "").strip() else f"Label of {target} cleared."
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

    # -- polling --------------------------------------------------------------------------

    def start_polling(self, interval: float = 2.0) -> None:
        """Refresh every ``interval`` seconds on the running event loop (a kernel's)."""
        self.stop_polling()
        loop = asyncio.get_running_loop() if _loop_running() else None
        if loop is None:
            raise RuntimeError(
                "polling needs a running asyncio event loop (as in a Jupyter kernel)"
            )

        async def poll() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    self.refresh()
                except Exception as exc:  # keep polling; say what went wrong
                    self._error(f"refresh failed: {type(exc).__name__}: {exc}")

        self._poll_task = loop.create_task(poll())

    def stop_polling(self) -> None:
        """Stop automatic refreshes."""
        if self._poll_task is not None:
            self._poll_task.cancel()
            self._poll_task = None

    @property
    def polling(self) -> bool:
        return self._poll_task is not None and not self._poll_task.done()

    def close(self) -> None:
        self.stop_polling()
        super().close()


def _loop_running() -> bool:
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return True
    return False
