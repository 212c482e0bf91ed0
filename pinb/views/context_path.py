"""``ContextPathView``: the leaf's path as the model sees it, with one token account."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import CompactionSettings, Entry, Session, SessionContext, estimate_tokens
from ..core.compaction.masking import is_mask_text
from ..core.compaction.span import CompactionSpan, compaction_span
from ..core.context.accounting import ContextUsage, thousands
from ..core.context.build import UNSET
from ..core.context.system_prompt import SystemShare, message_costs, system_shares
from ..core.format.content import content_text
from ..core.format.target import Pi
from ..core.gc import gc_paused
from ..render.html import (
    escape,
    fold,
    gauge,
    heading,
    mimebundle,
    muted,
    shorten,
    style,
    table,
    title,
    wrap,
)
from ..render.tree.graph import (
    entry_kind,
    entry_preview,
    entry_tokens,
    is_hidden_marker,
    kind_name,
    node_key,
    path_regions,
    plural,
)
from .accounting import account, usage_html

__all__ = ["ContextPathView", "PathRow"]


@dataclass(frozen=True)
class PathRow:
    """One entry of the path: where it stands and what it costs in the context.

    ``region`` is ``"summarized"``, ``"kept"``, ``"compaction"``, ``"after"`` or
    ``"active"`` (no compaction); ``in_context`` tells whether the model is sent anything
    for it; ``tokens`` is the chars/4 estimate of what it contributes (for a summarized
    entry, of its own message); ``running`` the context total up to it (model order, the
    same chars/4 measure). ``status`` says in words what happens to the entry; ``edit`` is
    ``"replaced"`` or ``"omitted"`` when a context edit (``edit_key``) changed it.
    """

    entry: Entry
    key: str
    kind: str
    region: str
    in_context: bool
    tokens: int
    running: int | None
    label: str | None
    status: str = ""
    edit: str | None = None
    edit_key: str | None = None
    replacement: str | None = None
    messages: int = 0

    @property
    def role(self) -> str | None:
        return self.entry.role

    @property
    def preview(self) -> str:
        """A one-line preview (made on demand: long paths show only some rows)."""
        return entry_preview(self.entry, 120)


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str | list):
        return content_text(content, " ")
    return "" if content is None else str(content)


class ContextPathView:
    """The active path from root to leaf, as the model will see it.

    One token account (:func:`pinb.core.context.accounting.context_usage`): the context's size as
    Pi judges it, the chars/4 estimate of every message, the share of the window in use
    and the compaction threshold, each labelled with how it was made. The window is the
    one given, else the model registry's for the session's model, else unknown (never
    assumed).

    Entries summarized by the last compaction are listed apart (they are not sent); the
    context starts with the compaction (its summary and, in Pi 1.x, the system checkpoint),
    then the kept entries and those after it. Context edits are shown on the entry they
    change (what was replaced, with what, or that it was omitted, and by which edit);
    bookkeeping entries (settings, labels, usage, edits) are listed as "not sent".

    Parameters
    ----------
    session:
        The session.
    leaf_id:
        The leaf to look from (default: the session's).
    context_window / window_source:
        The model's window and where it came from (``"setting"`` by default); without
        one, the window the session last ran with, else the registry's entry for its
        recorded model (:func:`pinb.llm.window.resolve_window`).
    settings:
        Compaction settings (the threshold is the window minus ``reserve_tokens``).
    fit:
        Fit the settings to the window as pinb's agent does (``False``: as they are, as
        the user's own Pi compacts; the Pi engine's figures).
    max_rows:
        Rows shown per section (``None``: all); a longer section shows its first rows and
        those nearest the leaf, with a row saying how many more there are.
    """

    def __init__(
        self,
        session: Session,
        leaf_id: Any = UNSET,
        *,
        context_window: int | None = None,
        window_source: str | None = None,
        settings: CompactionSettings | None = None,
        max_rows: int | None = 24,
        fit: bool = True,
    ) -> None:
        self.max_rows = max_rows
        with gc_paused():
            leaf = session.leaf_id if leaf_id is UNSET else leaf_id
            #: Seen from the session's leaf (else from an entry elsewhere in the tree).
            self.at_leaf = leaf == session.leaf_id or leaf == _leaf_as_drawn(session)
            self.context: SessionContext = session.build_context(leaf)
            self.usage: ContextUsage = account(
                self.context,
                context_window=context_window,
                window_source=window_source,
                settings=settings,
                session=session,
                fit=fit,
            )
            self._read(session)

    # -- reading --------------------------------------------------------------------------

    def _read(self, session: Session) -> None:
        context = self.context
        pi = context.pi
        shown_path = [e for e in context.path if not is_hidden_marker(e)]
        self.leaf_key = node_key(shown_path[-1].id) if shown_path else None
        compaction = context.compaction
        self.compaction_key = node_key(compaction.id) if compaction is not None else None
        regions = {id(entry): region for entry, region in path_regions(context)}
        selected = {id(p.entry) for p in context.entries}
        #: What the last compaction summarized and kept (the core's one count).
        self.span: CompactionSpan | None = (
            compaction_span(session, compaction) if compaction is not None else None
        )
        counted = {id(e) for e in self.span.summarized} if self.span is not None else set()

        summary_rows: list[PathRow] = []
        for entry in context.path:
            if id(entry) in selected or is_hidden_marker(entry):
                continue
            region = regions.get(id(entry), "active")
            if id(entry) in counted:
                status = "summarized: sent only as part of the compaction's summary"
            elif entry.role == "system":
                status = "not sent itself: replayed in the compaction's system checkpoint"
            elif entry_tokens(entry, pi) == 0:
                status = "not sent: bookkeeping"
            elif region == "summarized":
                status = "not sent: an earlier compaction's summary covers it"
            else:
                status = "not sent"
            summary_rows.append(
                PathRow(
                    entry,
                    node_key(entry.id),
                    entry_kind(entry),
                    region,
                    False,
                    entry_tokens(entry, pi),
                    None,
                    session.label(entry.id),
                    status,
                )
            )

        context_rows: list[PathRow] = []
        running = 0
        # Pi sends the system prompt once, replayed from every system message: each system
        # message costs its share of that prompt (never negative), and what it removes is
        # a removal noted on its row.
        shares = {s.index: s for s in system_shares(context.messages, pi)} if pi >= Pi.V1_6 else {}
        costs = (
            message_costs(context.messages, pi)
            if pi >= Pi.V1_6
            else [estimate_tokens(m, pi=pi) for m in context.messages]
        )
        position = 0
        for projected in context.entries:
            entry = projected.entry
            tokens = 0
            notes: list[str] = []
            parts: list[int] = []
            for _ in projected.messages:
                tokens += costs[position]
                parts.append(costs[position])
                if position in shares:
                    notes.extend(_share_notes(shares[position]))
                position += 1
            if entry is compaction and len(parts) > 1:
                # The core's one split (compaction_cost): the checkpoint's share, the summary.
                notes.append(
                    f"system checkpoint {sum(parts[:-1]):,} + summary {parts[-1]:,} = {tokens:,}"
                )
            if is_hidden_marker(entry):
                continue
            in_context = bool(projected.messages)
            if in_context:
                running += tokens
            region = regions.get(id(entry), "active")
            edit, edit_key, replacement = None, None, None
            if projected.edit is not None:
                edit = "omitted" if projected.omitted else "replaced"
                if edit == "replaced" and projected.messages:
                    first = projected.messages[0]
                    if isinstance(first, dict) and is_mask_text(first.get("content")):
                        edit = "masked"
                edit_key = node_key(projected.edit.id)
                if not projected.omitted:
                    replacement = " ".join(_message_text(m) for m in projected.messages).strip()
            context_rows.append(
                PathRow(
                    entry,
                    node_key(entry.id),
                    entry_kind(entry),
                    "compaction" if entry is compaction else region,
                    in_context,
                    tokens,
                    running if in_context else None,
                    session.label(entry.id),
                    " · ".join(
                        [
                            self._status(
                                entry, projected.messages, edit, edit_key, entry is compaction
                            ),
                            *notes,
                        ]
                    ),
                    edit,
                    edit_key,
                    replacement,
                    len(projected.messages),
                )
            )
        self.summarized_rows = summary_rows
        self.context_rows = context_rows
        self.total = running
        self.message_count = len(context.messages)
        self.by_role = dict(self.usage.by_role)

    @staticmethod
    def _status(
        entry: Entry,
        messages: list[Any],
        edit: str | None,
        edit_key: str | None,
        is_compaction: bool,
    ) -> str:
        if edit == "omitted":
            return f"omitted by context edit {edit_key}"
        if edit == "masked":
            return f"masked by pinb (context edit {edit_key}): the file keeps the original"
        if edit == "replaced":
            if entry.type == "custom_message" or entry.role in _EDITABLE:
                return f"content replaced by context edit {edit_key}"
            return f"named by context edit {edit_key}, which changes nothing here"
        if is_compaction:
            if len(messages) > 1:
                return "sent: system checkpoint + summary"
            return "sent: summary"
        if entry.type == "context_edit":
            return "not sent: edits another entry"
        if entry.type == "usage":
            return "not sent: usage bookkeeping"
        if not messages:
            if entry.type == "compaction":
                return "not sent: an older compaction inside the kept range"
            return "not sent: bookkeeping"
        if entry.role == "system":
            return "sent: system prompt"
        return "sent"

    # -- figures --------------------------------------------------------------------------

    @property
    def context_window(self) -> int | None:
        """The window used (``None`` when unknown)."""
        return self.usage.window

    @property
    def window_source(self) -> str:
        return self.usage.window_source

    @property
    def threshold(self) -> int | None:
        """Tokens above which Pi compacts automatically (``None`` without a window)."""
        return self.usage.threshold

    @property
    def rows(self) -> list[PathRow]:
        """Every row: entries not sent (summarized) first, then the context in model order."""
        return [*self.summarized_rows, *self.context_rows]

    @property
    def edits(self) -> list[PathRow]:
        """Rows changed by a context edit."""
        return [row for row in self.context_rows if row.edit]

    def to_text(self) -> str:
        usage = self.usage
        text = (
            f"<ContextPathView leaf {self.leaf_key}: {plural(self.message_count, 'message')}; "
            f"{thousands(usage.tokens)} tokens ({usage.measure_label})"
        )
        if usage.window and usage.share is not None:
            text += (
                f" · {usage.share:.1%} of a {thousands(usage.window)} window "
                f"({usage.window_source}) · threshold {thousands(usage.threshold)}"
            )
        else:
            text += " · window unknown"
        if self.compaction_key and self.span is not None:
            text += (
                f"; compaction {self.compaction_key} summarized "
                f"{plural(len(self.span.summarized), 'entry')}, kept {len(self.span.kept):,}"
            )
        if self.edits:
            text += f"; {plural(len(self.edits), 'context edit')} in effect"
        for note in usage.notes():
            text += f"; {note}"
        return text + ">"

    __repr__ = to_text

    # -- HTML -----------------------------------------------------------------------------

    def _table(self, rows: list[PathRow], *, running: bool) -> str:
        limit = self.max_rows
        shown: list[PathRow | None] = list(rows)
        if limit is not None and len(rows) > limit:
            head = max(1, limit // 3)  # the rows nearest the leaf matter most
            shown = [*rows[:head], None, *rows[len(rows) - (limit - head) :]]
        # A note every row shares is said once, above the table; otherwise a row repeating
        # the one above it says "as above" (in words: a ditto mark is missing from many fonts).
        one_status = len({row.status for row in rows}) == 1
        cells: list[tuple[Any, ...]] = []
        classes: list[str] = []
        above: str | None = None
        for row in shown:
            if row is None:
                assert limit is not None
                more = (
                    f"… {len(rows) - limit:,} more rows "
                    "(ContextPathView(…, max_rows=None) shows them all) …"
                )
                cells.append(("", "", "", more, None, None))
                classes.append("pinb-muted")
                above = None
                continue
            label = f"[{shorten(row.label, 40)}] " if row.label else ""
            text = f"{label}{row.preview}"
            if (row.edit == "replaced" and row.status.startswith("content replaced")) or (
                row.edit == "masked"
            ):
                text = f"{label}was: {row.preview} → model sees: {row.replacement or '(empty)'}"
            elif row.edit == "omitted":
                text = f"{label}was: {row.preview} → omitted from the context"
            cells.append(
                (
                    row.key,
                    kind_name(row.kind),
                    "as above" if row.status == above else row.status,
                    text,
                    row.tokens if row.tokens or row.in_context else None,
                    row.running,
                )
            )
            above = row.status
            if row.edit:
                classes.append("pinb-edited")
            elif row.in_context:
                classes.append(_ROW_CLASS.get(row.region, ""))
            else:
                classes.append("pinb-muted")
        headers = ["id", "kind", "status", "content", "tokens (chars/4)", "running total"]
        columns = [i for i in range(6) if (running or i != 5) and not (one_status and i == 2)]
        headers = [headers[i] for i in columns]
        cells = [tuple(c[i] for i in columns) for c in cells]
        numeric = [n for n, i in enumerate(columns) if i >= 4]
        wrapped = [n for n, i in enumerate(columns) if i in (2, 3)]
        note = ""
        if one_status and rows:
            every = "the row" if len(rows) == 1 else f"all {len(rows):,} rows"
            note = f"<div{style('muted')}>{escape(f'Status of {every}: {rows[0].status}')}</div>"
        return note + table(
            headers, cells, numeric=numeric, row_classes=classes, wrap_columns=wrapped
        )

    def _roles_table(self) -> str:
        usage = self.usage
        total = usage.estimated_tokens
        rows = []
        for role, tokens in sorted(usage.by_role.items(), key=lambda kv: -kv[1]):
            share = tokens / total if total else 0.0
            rows.append(
                (
                    kind_name(role),
                    tokens,
                    f"{share:.1%}",
                    f"<span{style('gauge')}>{gauge(share, 20)}</span>",
                )
            )
        return table(
            ["role", "tokens (chars/4)", "share", ""], rows, numeric=(1, 2), raw_columns=(3,)
        )

    def _masked_html(self) -> str:
        """The tool results pinb masked on this path, and the tokens the masks take off."""
        from ..core.compaction.masking import masked_results
        from .compaction.masking import masked_rows_html

        masked = masked_results(self.context)
        if not masked:
            return ""
        saved = sum(m.saved for m in masked)
        return heading(
            f"Masked by pinb: {plural(len(masked), 'tool result')}, {thousands(saved)} tokens "
            "off (chars/4)"
        ) + masked_rows_html(masked, 50)

    def to_html(self) -> str:
        parts = [
            # "leaf" names the session's leaf only: from any other entry the context is
            # what the model would see if the conversation went on from there.
            title(
                f"Context at leaf {self.leaf_key or '(none)'}"
                if self.at_leaf
                else f"Context from {self.leaf_key or '(none)'} (not the leaf: as if the "
                "conversation went on from here)"
            ),
            usage_html(self.usage),
        ]
        if self.usage.by_role:
            parts.append(heading("By role (chars/4 estimate)"))
            parts.append(self._roles_table())
        if self.edits:
            masked = sum(1 for r in self.edits if r.edit == "masked")
            replaced = sum(1 for r in self.edits if r.edit == "replaced")
            omitted = len(self.edits) - replaced - masked
            how = f"{replaced:,} replaced, {omitted:,} omitted"
            if masked:
                how += f", {masked:,} masked by pinb"
            parts.append(
                f"<div{style('muted')}>{escape(plural(len(self.edits), 'context edit'))} in "
                f"effect on this path ({how}): the model sees "
                "the edited content, the file keeps the original.</div>"
            )
            parts.append(self._masked_html())
        if self.summarized_rows:
            counted = {id(e) for e in self.span.summarized} if self.span is not None else set()
            summarized = [r for r in self.summarized_rows if id(r.entry) in counted]
            tokens = sum(r.tokens for r in summarized)
            kept = len(self.span.kept) if self.span is not None else 0
            note = (
                f"{plural(len(summarized), 'entry')} summarized by compaction "
                f"{self.compaction_key} (their messages ~{thousands(tokens)} tokens chars/4), "
                f"{kept:,} kept: the model gets the summary instead"
                if summarized
                else "Entries on the path that are not sent"
            )
            parts.append(heading("Not sent"))
            parts.append(f"<div{style('muted')}>{escape(note)}</div>")
            parts.append(fold(self._table(self.summarized_rows, running=False)))
        parts.append(heading("What the model sees, in order"))
        if self.context_rows:
            parts.append(fold(self._table(self.context_rows, running=True)))
        else:
            parts.append(muted("Nothing: the context is empty."))
        parts.append(
            f"<div{style('muted')}>running total: chars/4 of each message, summed in model "
            f"order; it ends at the estimate of every message "
            f"({thousands(self.usage.estimated_tokens)}).</div>"
        )
        return wrap("".join(parts), "pinb-context-path")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)


def _share_notes(share: SystemShare) -> list[str]:
    """What a system message's row says beside its share: what it removes from the prompt,
    and how much of its own text later messages replaced."""
    notes: list[str] = []
    removed = []
    if share.removed_tools:
        names = ", ".join(share.removed_tools[:8])
        more = len(share.removed_tools) - 8
        names += f" and {more:,} more" if more > 0 else ""
        removed.append(f"{plural(len(share.removed_tools), 'tool')} ({names})")
    if share.removed_sections:
        removed.append(
            f"{plural(len(share.removed_sections), 'section')} "
            f"({', '.join(share.removed_sections[:8])})"
        )
    if removed:
        notes.append(
            f"removes {' and '.join(removed)} from the prompt: "
            f"{thousands(share.removed_tokens)} tokens no longer sent"
        )
    if share.own_tokens > share.tokens:
        notes.append(
            f"{thousands(share.tokens)} of its own {thousands(share.own_tokens)} tokens still "
            "in the prompt (later system messages replace or remove the rest)"
        )
    return notes


_EDITABLE = frozenset({"user", "assistant", "toolResult"})

_ROW_CLASS = {
    "summarized": "pinb-summarized",
    "kept": "pinb-kept",
    "compaction": "pinb-summary-row",
    "after": "pinb-after",
}


def _leaf_as_drawn(session: Session) -> Any:
    """The session's leaf with pinb's hidden markers after it seen through, as the tree
    draws it (an archive marker appended at the leaf is not the conversation's end)."""
    entry = session.get(session.leaf_id)
    seen: set[int] = set()
    while entry is not None and is_hidden_marker(entry) and id(entry) not in seen:
        seen.add(id(entry))
        entry = session.get(entry.parent_id)
    return entry.id if entry is not None else None
