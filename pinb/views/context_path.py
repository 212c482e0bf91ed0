"""``ContextPathView``: the leaf's path as the model sees it, with running token totals."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..core import CompactionSettings, Entry, Session, estimate_context_tokens, estimate_tokens
from ..core.context import UNSET
from ..render.graph import (
    entry_kind,
    entry_preview,
    entry_tokens,
    node_key,
    path_regions,
    paused_gc,
)
from ..render.html import escape, mimebundle, table, wrap
from ..render.svg import stacked_bars_svg

__all__ = ["DEFAULT_CONTEXT_WINDOW", "ContextPathView", "PathRow"]

#: Window assumed when none is given (the views say so when they use it).
DEFAULT_CONTEXT_WINDOW = 128_000


@dataclass(frozen=True)
class PathRow:
    """One entry of the path: where it stands and what it costs in the context.

    ``region`` is ``"summarized"``, ``"kept"``, ``"compaction"``, ``"after"`` or
    ``"active"`` (no compaction); ``in_context`` tells whether the model sees a message for
    it; ``running`` is the context total up to and including it (model order).
    """

    entry: Entry
    key: str
    kind: str
    region: str
    in_context: bool
    tokens: int
    running: int | None
    label: str | None

    @property
    def role(self) -> str | None:
        return self.entry.role

    @property
    def preview(self) -> str:
        """A one-line preview (made on demand: long paths show only some rows)."""
        return entry_preview(self.entry, 120)


class ContextPathView:
    """The active path from root to leaf, as the model will see it.

    Entries summarized by the last compaction are listed apart (they are not sent); the
    context part starts with the compaction summary, then the entries kept from
    ``firstKeptEntryId`` and those after the compaction, each with its token estimate and
    the running total against the context window and the compaction threshold.

    Parameters
    ----------
    session:
        The session.
    leaf_id:
        The leaf to look from (default: the session's).
    context_window:
        The model's window; :data:`DEFAULT_CONTEXT_WINDOW` (marked as assumed) if ``None``.
    settings:
        Compaction settings (the threshold is ``window - reserve_tokens``).
    max_rows:
        Rows shown per section; the middle of a longer section is elided.
    """

    def __init__(
        self,
        session: Session,
        leaf_id: Any = UNSET,
        *,
        context_window: int | None = None,
        settings: CompactionSettings | None = None,
        max_rows: int = 400,
    ) -> None:
        self.window_assumed = context_window is None
        self.context_window = context_window or DEFAULT_CONTEXT_WINDOW
        self.settings = settings or CompactionSettings()
        self.max_rows = max_rows
        with paused_gc():
            self._read(session, session.leaf_id if leaf_id is UNSET else leaf_id)

    def _read(self, session: Session, leaf: Any) -> None:
        context = session.build_context(leaf)
        self.leaf_key = node_key(leaf) if leaf is not None else None
        self.compaction_key = node_key(context.compaction.id) if context.compaction else None
        tokens_of: dict[int, int] = {}
        for entry, message in zip(context.sources, context.messages, strict=True):
            tokens_of[id(entry)] = tokens_of.get(id(entry), 0) + estimate_tokens(message)
        summary_rows: list[PathRow] = []
        context_rows: list[PathRow] = []
        running = 0
        by_role: Counter[str] = Counter()
        compaction = context.compaction
        if compaction is not None:
            tokens = tokens_of.get(id(compaction), 0)
            running += tokens
            by_role["compactionSummary"] += tokens
            context_rows.append(self._row(session, compaction, "compaction", True, tokens, running))
        for entry, region in path_regions(context):
            if entry is compaction:
                continue
            in_context = id(entry) in tokens_of
            tokens = tokens_of.get(id(entry), 0)
            if region == "summarized":
                message_tokens = entry_tokens(entry)
                summary_rows.append(self._row(session, entry, region, False, message_tokens, None))
                continue
            if in_context:
                running += tokens
                by_role[entry_kind(entry)] += tokens
            context_rows.append(
                self._row(
                    session, entry, region, in_context, tokens, running if in_context else None
                )
            )
        self.summarized_rows = summary_rows
        self.context_rows = context_rows
        self.by_role = dict(by_role)
        self.total = running
        self.estimate = estimate_context_tokens(context.messages)
        self.message_count = len(context.messages)

    @staticmethod
    def _row(
        session: Session,
        entry: Entry,
        region: str,
        in_context: bool,
        tokens: int,
        running: int | None,
    ) -> PathRow:
        return PathRow(
            entry=entry,
            key=node_key(entry.id),
            kind=entry_kind(entry),
            region=region,
            in_context=in_context,
            tokens=tokens,
            running=running,
            label=session.label(entry.id),
        )

    @property
    def threshold(self) -> int:
        """Tokens above which Pi compacts automatically (``window - reserve_tokens``)."""
        return self.context_window - self.settings.reserve_tokens

    @property
    def rows(self) -> list[PathRow]:
        """Every row: summarized entries first, then the context in model order."""
        return [*self.summarized_rows, *self.context_rows]

    def to_text(self) -> str:
        assumed = " (assumed)" if self.window_assumed else ""
        text = (
            f"<ContextPathView leaf {self.leaf_key}: {self.message_count} messages, "
            f"~{self.total:,} tokens (usage-based {self.estimate.tokens:,}) of "
            f"{self.context_window:,}{assumed}, threshold {self.threshold:,}"
        )
        if self.compaction_key:
            text += (
                f"; compaction {self.compaction_key} summarized {len(self.summarized_rows)} entries"
            )
        return text + ">"

    __repr__ = to_text

    def _table(self, rows: list[PathRow]) -> str:
        shown: list[PathRow | None] = list(rows)
        if len(rows) > self.max_rows:
            head = max(1, self.max_rows // 5)
            shown = [*rows[:head], None, *rows[len(rows) - (self.max_rows - head) :]]
        cells: list[tuple[Any, ...]] = []
        classes: list[str] = []
        for row in shown:
            if row is None:
                hidden = len(rows) - self.max_rows
                cells.append(("", "", "", f"… {hidden:,} rows not shown …", None, None))
                classes.append("pinb-muted")
                continue
            label = f" [{row.label}]" if row.label else ""
            cells.append(
                (
                    row.key,
                    row.kind,
                    row.region if row.in_context or row.region == "summarized" else "not sent",
                    f"{row.preview}{label}",
                    row.tokens if row.tokens or row.in_context else None,
                    row.running,
                )
            )
            classes.append(
                _ROW_CLASS.get(row.region, "")
                if row.in_context or row.region == "summarized"
                else "pinb-muted"
            )
        return table(
            ["id", "kind", "status", "preview", "tokens", "running total"],
            cells,
            numeric=(4, 5),
            row_classes=classes,
            wrap_columns=(3,),
        )

    def to_html(self) -> str:
        assumed = " (assumed)" if self.window_assumed else ""
        over = self.estimate.tokens > self.threshold
        state = (
            '<span class="pinb-error">over the compaction threshold</span>'
            if over
            else '<span class="pinb-muted">below the compaction threshold</span>'
        )
        bars = stacked_bars_svg(
            [("context", self.by_role)],
            marks=[("threshold", self.threshold), ("window", self.context_window)],
            scale=max(self.context_window, self.total, self.estimate.tokens),
        )
        parts = [
            f"<h3>Context at leaf {escape(self.leaf_key)}</h3>",
            f"<div>{self.message_count:,} messages · ~{self.total:,} tokens (chars/4) · "
            f"{self.estimate.tokens:,} with the last reported usage · window "
            f"{self.context_window:,}{escape(assumed)} · threshold {self.threshold:,} · "
            f"{state}</div>",
            bars,
        ]
        if self.summarized_rows:
            total = sum(row.tokens for row in self.summarized_rows)
            parts.append(
                f"<details><summary>{len(self.summarized_rows):,} entries summarized by "
                f"compaction {escape(self.compaction_key)} (~{total:,} tokens, not sent)"
                f"</summary>{self._table(self.summarized_rows)}</details>"
            )
        parts.append("<h4>What the model sees, in order</h4>")
        parts.append(self._table(self.context_rows))
        return wrap("".join(parts), "pinb-context-path")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)


_ROW_CLASS = {
    "summarized": "pinb-summarized",
    "kept": "pinb-kept",
    "compaction": "pinb-summary-row",
    "after": "pinb-after",
}
