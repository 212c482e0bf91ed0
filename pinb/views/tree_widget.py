"""``TreeWidget``: the session tree as an interactive anywidget (also ``SessionExplorer``).

Two files make the widget: this model (traitlets synced with the browser) and one ES module
(``tree_widget.js``, with ``tree_widget.css``). The browser draws the rows of the render
layer's :class:`~pinb.render.tree.rows.RowLayout` — the same layout the static picture draws —
keeping only the visible rows in the page, so 10,000 entries scroll, zoom and pan smoothly.
Clicking a row selects the entry: the panels show the entry, the context path as the model
would see it from there, and what a compaction there would summarize (for a compaction
entry: what it summarized, and what its summary kept of the span, lost facts first, each a
link that selects the entry it came from). The actions (continue
here, continue with a branch summary, label, fork, archive/unarchive) are messages the ES
module sends; the kernel carries them out on the session (:mod:`.tree_actions`) and redraws.

Without a kernel (a saved notebook, nbconvert, GitHub) the output falls back to the static
picture (``image/svg+xml`` and ``image/png``) of the same layout.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anywidget
import traitlets

from ..core import CompactionSettings, Session
from ..core.compaction.facts import FactCache
from ..core.context.accounting import thousands
from ..core.forks import fork_kind
from ..errors import PinbError
from ..render.html import escape, muted, style, wrap
from ..render.tree.cells import legend_items, row_cells, title_lines
from ..render.tree.digraph import to_networkx
from ..render.tree.graph import SessionGraph, build_graph, node_key, plural
from ..render.tree.picture import tree_picture_svg, tree_text
from ..render.tree.rows import RowLayout, row_layout
from .compaction.view import CompactionView
from .context_path import ContextPathView
from .entry import entry_html
from .tree_actions import TreeActions, fork_button

__all__ = ["WIDGET_MAX_ROWS", "Fork", "Navigate", "SessionExplorer", "TreeWidget"]

#: ``navigate(session, target_id, summarize)``: move the leaf, optionally with a summary.
Navigate = Callable[[Session, str, bool], Any]
#: ``fork(session, entry_id)``: fork at ``entry_id`` into a new session file; may return
#: ``(new session, text to send again or None)`` as :func:`pinb.core.forks.fork_at` does.
Fork = Callable[[Session, str], Any]

#: Rows the widget sends to the browser at most (side branches fold beyond it).
WIDGET_MAX_ROWS = 4000
#: Search hits pinned open at most (the rest are counted).
MAX_MATCHES = 200

_HERE = Path(__file__).parent


class TreeWidget(TreeActions, anywidget.AnyWidget):
    """Explore a session's tree: select, read, search, zoom, and act on any entry.

    Parameters
    ----------
    session:
        The session to explore (its file is re-read for entries others appended).
    navigate:
        ``navigate(session, target_id, summarize)``, used by both "continue" actions;
        without it "continue here" is :meth:`Session.branch` and "continue with branch
        summary" is :meth:`Session.navigate` with ``summarizer`` (without one the widget
        uses ``summarizer``).
    summarizer:
        A :class:`~pinb.core.Summarizer` for branch summaries when no ``navigate`` is given
        (``%pi explore`` passes the configured model's); without one, pinb's offline
        extractive summarizer writes them, and the status line says so.
    fork:
        ``fork(session, entry_id)`` for "fork"; by default the rule ``%pi fork`` follows
        (:func:`pinb.core.forks.fork_at`): before a user message (its text offered to send
        again), else the path up to and including the entry.
    context_window / window_source:
        The window the context and compaction panels measure against; by default the model
        registry's for the session's model, else unknown.
    settings:
        Compaction settings for the threshold and the compaction preview.
    poll_interval:
        Seconds between automatic refreshes (needs a running event loop, as in a kernel).
    collapse:
        Collapse chains of plain entries: ``True``, ``False`` or ``"auto"``.
    show_leaf_entries:
        Also show pinb's navigation and archive markers.
    max_rows:
        Rows sent to the browser at most (side branches fold beyond it).
    """

    _esm = _HERE / "tree_widget.js"
    _css = _HERE / "tree_widget.css"

    # Drawn by the browser (kernel → browser).
    rows: traitlets.List[Any] = traitlets.List(
        help="Cells of every row (render layer), with lane and parent."
    ).tag(sync=True)
    edges: traitlets.List[Any] = traitlets.List(
        help="[parent, child, lane, child lane, on path, dotted]"
    ).tag(sync=True)
    lanes = traitlets.Int(1).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    summary = traitlets.Unicode("").tag(sync=True)
    legend: traitlets.List[Any] = traitlets.List().tag(sync=True)
    details = traitlets.Unicode("").tag(sync=True)
    context_html = traitlets.Unicode("").tag(sync=True)
    compaction_html = traitlets.Unicode("").tag(sync=True)
    compaction_label = traitlets.Unicode(
        "Compaction here", help="The compaction tab's name: a dry run, or the compaction selected."
    ).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    editor_text = traitlets.Unicode(
        "", help="A user message's text given back by continue or fork, to edit and send again."
    ).tag(sync=True)
    editor_note = traitlets.Unicode("", help="Where to paste editor_text.").tag(sync=True)
    fork_hint: traitlets.List[Any] = traitlets.List(
        help="[label, tooltip] of the fork button for the selected entry."
    ).tag(sync=True)
    status_tone = traitlets.Unicode("info").tag(sync=True)
    matches = traitlets.List(traitlets.Unicode()).tag(sync=True)
    match_note = traitlets.Unicode("").tag(sync=True)
    leaf = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    archived_list: traitlets.List[Any] = traitlets.List().tag(sync=True)
    revision = traitlets.Int(0).tag(sync=True)
    # Set by the browser (browser → kernel), and by the methods below.
    selected_id = traitlets.Unicode(None, allow_none=True, help="Key of the selected entry.").tag(
        sync=True
    )
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    show_archived = traitlets.Bool(False).tag(sync=True)
    zoom = traitlets.Float(1.0).tag(sync=True)
    tab = traitlets.Unicode("details", help="The panel shown: details, context_html, ...").tag(
        sync=True
    )

    def __init__(
        self,
        session: Session,
        *,
        navigate: Navigate | None = None,
        summarizer: Any = None,
        fork: Fork | None = None,
        context_window: int | None = None,
        window_source: str | None = None,
        settings: CompactionSettings | None = None,
        poll_interval: float | None = None,
        collapse: bool | Literal["auto"] = "auto",
        show_leaf_entries: bool = False,
        max_rows: int | None = WIDGET_MAX_ROWS,
        **kwargs: Any,
    ) -> None:
        self._poll_task: asyncio.Task[None] | None = None
        self.session = session
        self.navigate = navigate
        self.summarizer = summarizer
        self.fork_callable = fork
        self.context_window = context_window
        self.window_source = window_source
        self.settings = settings
        self.collapse = collapse
        self.show_leaf_entries = show_leaf_entries
        self.max_rows = max_rows
        self.graph: SessionGraph | None = None
        #: The rows drawn now (``layout`` is the widget's CSS layout, as in ipywidgets).
        self.tree_layout: RowLayout | None = None
        self._signature: tuple[Any, ...] | None = None
        self._quiet = False
        self._panel_entry: Any = None
        self._stale: set[str] = set()
        #: What each message says, for the compaction panel: nearby entries' spans share
        #: most of their messages, so each is read once (the messages are held with it).
        self._facts = FactCache()
        self.timings: dict[str, float] = {}
        super().__init__(**kwargs)
        self.observe(self._on_selected, names="selected_id")
        self.observe(self._on_relayout, names=["expanded", "show_archived"])
        self.observe(self._on_query, names="query")
        self.observe(self._on_tab, names="tab")
        self.on_msg(self._on_message)
        self.refresh(force=True)
        leaf = self.graph.leaf_key if self.graph is not None else None
        if leaf is not None:
            self.selected_id = leaf
        if poll_interval:
            self.start_polling(poll_interval)

    # -- drawing --------------------------------------------------------------------------

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

    def _pinned(self) -> list[str]:
        pinned = list(self.matches[:MAX_MATCHES])
        if self.selected_id:
            pinned.append(self.selected_id)
        return pinned

    def _render(self) -> None:
        started = time.perf_counter()
        self._signature = self._snapshot()
        self.graph = build_graph(
            self.session,
            show_leaf_entries=self.show_leaf_entries,
            show_archived=self.show_archived,
        )
        self._layout()
        self._panels()
        self.timings["render"] = time.perf_counter() - started

    def _layout(self) -> None:
        graph = self.graph
        assert graph is not None
        layout = row_layout(
            graph,
            collapse=self.collapse,
            pinned=self._pinned(),
            expanded=self.expanded,
            max_rows=self.max_rows,
        )
        self.tree_layout = layout
        cells = row_cells(layout)
        rows = []
        for row, cell in zip(layout.rows, cells, strict=True):
            data = cell.to_dict()
            data.update(lane=row.lane, parent=row.parent, row=row.kind, count=row.count)
            rows.append(data)
        heading, summary = title_lines(layout)
        archived = self.session.archived
        with self.hold_sync():
            self.rows = rows
            self.edges = [
                [e.parent, e.child, e.lane, e.child_lane, e.on_path, e.dotted] for e in layout.edges
            ]
            self.lanes = max(1, layout.lanes)
            self.title = heading
            self.summary = summary
            self.legend = [list(item) for item in legend_items(layout, cells)]
            self.leaf = graph.leaf_key
            # Counted the same whether the archived branches are hidden or shown.
            self.archived_list = [
                [node_key(target), _branch_size(graph, node_key(target)), _note(marker)]
                for target, marker in archived.items()
            ]
            self.revision += 1

    # -- panels ---------------------------------------------------------------------------

    def _panels(self) -> None:
        """The entry panel now; the context and compaction panels when they are shown."""
        key = self.selected_id
        session = self.session
        node = self.graph.get(key) if key and self.graph is not None else None
        entry = node.entry if node is not None else (session.get(key) if key else None)
        self._panel_entry = entry
        self._stale = {"context_html", "compaction_html"}
        # The rule %pi fork follows, said on the button before it is pressed.
        self.fork_hint = list(fork_button(fork_kind(entry) if entry is not None else None))
        if entry is None:
            self.details = wrap(muted("Select an entry in the tree."))
            self.context_html = ""
            self.compaction_html = ""
            self._stale.clear()
            return
        self.details = wrap(entry_html(entry, label=session.label(entry.id)))
        self.compaction_label = (
            "This compaction" if entry.type == "compaction" else "Compaction here"
        )
        self._fill(self.tab)

    def _fill(self, tab: str) -> None:
        """Compute a lazy panel if it is stale (the context path of a long session costs)."""
        entry = self._panel_entry
        if tab not in self._stale or entry is None:
            return
        self._stale.discard(tab)
        try:
            view = ContextPathView(
                self.session,
                entry.id,
                context_window=self.context_window,
                window_source=self.window_source,
                settings=self.settings,
                max_rows=200,
            )
            html = (
                view.to_html()
                if tab == "context_html"
                else self._compaction_preview(entry.id, view)
            )
        except Exception as exc:  # shown in the panel: an observer has no caller
            html = wrap(f"<div{style('error')}>{escape(f'{type(exc).__name__}: {exc}')}</div>")
        if tab == "context_html":
            self.context_html = html
        else:
            self.compaction_html = html

    def _on_tab(self, change: dict[str, Any]) -> None:
        started = time.perf_counter()
        self._fill(change["new"])
        self.timings["tab"] = time.perf_counter() - started

    def _compaction_preview(self, entry_id: Any, context: ContextPathView) -> str:
        window = context.usage.window
        entry = self.session.get(entry_id)
        if entry is not None and entry.type == "compaction":
            recorded = CompactionView(
                entry,
                self.session,
                context_window=window,
                window_source=context.usage.window_source,
                max_rows=100,
                fact_cache=self._facts,
            )
            return (
                wrap(
                    f"<div{style('muted')}>This compaction as recorded: what it summarized "
                    "and kept, and what its summary kept of the span (click a fact's entry to "
                    "select it).</div>"
                )
                + recorded.to_html()
            )
        from ..core.compaction.operations import plan_to_fit
        from ..llm.limits import limit_margin

        settings = (self.settings or CompactionSettings()).fit_window(window)
        try:  # the plan %pi compact carries out (and %pi whatif shows as current)
            plan = plan_to_fit(
                self.session,
                settings,
                context_window=window,
                margin=limit_margin(window) if window else 0,
                leaf_id=entry_id,
            )
            reason = plan.nothing
        except Exception as exc:  # odd files: say why
            plan, reason = None, str(exc) or type(exc).__name__
        report = plan.report if plan is not None else None
        if report is None:
            return wrap(
                f"<div{style('heading')}>A compaction from here would summarize nothing</div>"
                f"<div>{escape(reason or '')}</div><div{style('muted')}>Pi keeps the most recent "
                f"{thousands(settings.keep_recent_tokens)} tokens verbatim; this context "
                f"measures {thousands(context.usage.tokens)} ({escape(context.usage.measure_label)})."
                "</div>"
            )
        view = CompactionView(
            report,
            self.session,
            context_window=window,
            window_source=context.usage.window_source,
            max_rows=100,
            leaf_id=entry_id,
            score=False,
        )
        return (
            wrap(
                f"<div{style('muted')}>A dry run: what a compaction with the leaf here would "
                "summarize and keep (nothing is written). What its summary would keep of the "
                f"span: <code>%pi whatif --leaf {escape(node_key(entry_id))}</code> scores it; "
                "select a compaction entry for what its summary kept.</div>"
            )
            + view.to_html()
        )

    # -- selection, search, layout changes ------------------------------------------------

    def select(self, entry_id: str) -> None:
        """Select an entry (as a click in the tree would), opening its chain if collapsed."""
        if entry_id not in self.session:
            raise KeyError(f"no entry {entry_id!r} in this session")
        key = node_key(entry_id)
        if self.selected_id == key:
            self._on_selected({"new": key})
        else:
            self.selected_id = key

    def _on_selected(self, change: dict[str, Any]) -> None:
        key = change["new"]
        layout = self.tree_layout
        if key and layout is not None:
            row = layout.row_for(key)
            if row is None or layout.rows[row].kind != "entry":
                self._layout()  # pinned now: its chain or folded branch opens
        started = time.perf_counter()
        self._panels()
        self.timings["select"] = time.perf_counter() - started

    def _on_relayout(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        if change["name"] == "show_archived":
            self._render()
        else:
            self._layout()

    def _on_query(self, change: dict[str, Any]) -> None:
        self.search(change["new"])

    def search(self, text: str) -> list[str]:
        """Entries whose id starts with ``text`` or whose label or content contains it.

        The hits are pinned open in the tree (at most :data:`MAX_MATCHES`) and listed in
        :attr:`matches`; the browser jumps between them.
        """
        graph = self.graph
        needle = text.strip().lower()
        hits: list[str] = []
        total = 0
        if graph is not None and needle:
            for node in graph.nodes:
                key = node.key.lower()
                label = (node.label_text or "").lower()
                if key.startswith(needle) or needle in label or needle in node.preview.lower():
                    total += 1
                    if len(hits) < MAX_MATCHES:
                        hits.append(node.key)
        with self.hold_sync():
            self.matches = hits
            if not needle:
                self.match_note = ""
            elif total:
                extra = f" (the first {len(hits)} shown)" if total > len(hits) else ""
                self.match_note = f"{plural(total, 'match', 'matches')}{extra}"
            else:
                self.match_note = "no match"
            self._layout()
        return hits

    # -- exports and the static fallback --------------------------------------------------

    def to_networkx(self) -> Any:
        """The drawn tree as a ``networkx.DiGraph`` (rows and lanes included)."""
        return to_networkx(self.graph or build_graph(self.session), layout=self.tree_layout)

    def to_svg(self) -> str:
        """The static picture of what the widget shows (same layout, no kernel needed)."""
        assert self.tree_layout is not None
        return tree_picture_svg(self.tree_layout, selected=self.selected_id)

    def to_text(self) -> str:
        assert self.tree_layout is not None
        return tree_text(self.tree_layout)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None or self.tree_layout is None:
            return bundle
        data, metadata = bundle
        data = dict(data)
        metadata = dict(metadata or {})
        # Where no kernel draws the widget, the same layout shows as a picture.
        static = row_layout(self.tree_layout.graph, collapse=self.collapse, pinned=self._pinned())
        data["text/plain"] = tree_text(static)
        data["image/svg+xml"] = tree_picture_svg(static, selected=self.selected_id)
        try:
            from ..render.figure import tree_png

            png, width, height = tree_png(static, selected=self.selected_id)
        except ImportError:
            pass
        else:
            data["image/png"] = base64.b64encode(png).decode("ascii")
            metadata["image/png"] = {"width": width, "height": height}
        return data, metadata

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

    @property
    def leaf_id(self) -> Any:
        """The session's current leaf."""
        return self.session.leaf_id

    def close(self) -> None:
        self.stop_polling()
        super().close()


class SessionExplorer(TreeWidget):
    """The session explorer: the tree widget with its panels and actions (same API)."""


def _branch_size(graph: SessionGraph, key: str) -> int:
    """Entries of the branch starting at ``key`` (hidden by archiving, or drawn)."""
    if key in graph.archived:
        return graph.archived[key]
    start = graph.index.get(key)
    if start is None:
        return 0
    count, stack = 0, [start]
    while stack:
        count += 1
        stack.extend(graph.nodes[stack.pop()].children)
    return count


def _note(marker: Any) -> str:
    data = marker.raw.get("data") if marker is not None else None
    note = data.get("note") if isinstance(data, dict) else None
    return note if isinstance(note, str) else ""


def _loop_running() -> bool:
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return True
    return False
