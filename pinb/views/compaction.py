"""``CompactionView``: what one compaction did — tokens before/after by role, summary, files."""

from __future__ import annotations

from typing import Any

from ..core import Entry, Session, SessionContext
from ..core.accounting import estimated_by_role
from ..core.reports import CompactionReport
from ..render.graph import entry_kind, entry_preview, entry_tokens, node_key
from ..render.html import escape, markdown_to_html, mimebundle, table, wrap
from ..render.svg import stacked_bars_svg

__all__ = ["CompactionView", "report_from_entry"]


def _file_list(details: Any, key: str) -> list[str]:
    values = details.get(key) if isinstance(details, dict) else None
    return [str(v) for v in values] if isinstance(values, list) else []


def report_from_entry(session: Session, entry: Entry | str) -> CompactionReport:
    """Rebuild a :class:`CompactionReport` for a ``compaction`` entry already in a session.

    Before/after are the contexts at the compaction's parent and at the compaction itself;
    "summarized" are the entries that left the context, "kept" those that stayed, and
    "after" the entries that follow it on the session's current path (if it is on it).
    """
    if not isinstance(entry, Entry):
        entry = session[entry]
    if entry.type != "compaction":
        raise ValueError(f"entry {entry.id!r} is a {entry.type!r} entry, not a compaction")
    raw = entry.raw
    parent = raw.get("parentId")
    before = session.build_context(parent) if parent else SessionContext()
    after = session.build_context(entry.id)
    after_sources = {id(e) for e in after.sources}
    summarized = [node_key(e.id) for e in before.sources if id(e) not in after_sources]
    kept = [node_key(e.id) for e in after.sources if e is not entry]
    current_path = session.path_to()
    after_ids: list[str] = []
    if any(e is entry for e in current_path):
        position = max(i for i, e in enumerate(current_path) if e is entry)
        after_ids = [node_key(e.id) for e in current_path[position + 1 :] if entry_tokens(e)]
    first_kept = raw.get("firstKeptEntryId")
    first = session.get(first_kept) if isinstance(first_kept, str) else None
    tokens_before = raw.get("tokensBefore")
    previous = next((e for e in reversed(before.path) if e.type == "compaction"), None)
    return CompactionReport(
        entry=entry,
        summary=str(raw.get("summary", "")),
        first_kept_entry_id=str(first_kept) if first_kept is not None else "",
        tokens_before=tokens_before if isinstance(tokens_before, int) else 0,
        before_by_role=estimated_by_role(before),
        after_by_role=estimated_by_role(after),
        summarized_ids=summarized,
        kept_ids=kept,
        after_ids=after_ids,
        read_files=_file_list(raw.get("details"), "readFiles"),
        modified_files=_file_list(raw.get("details"), "modifiedFiles"),
        is_split_turn=first is not None and first.role not in ("user", None),
        summarizer="extension" if raw.get("fromHook") else "",
        reason="recorded",
        previous_compaction_id=node_key(previous.id) if previous is not None else None,
    )


class CompactionView:
    """One compaction: tokens before and after (by role), what went, the summary, the files.

    Parameters
    ----------
    source:
        A :class:`~pinb.core.reports.CompactionReport`, or a ``compaction`` entry (or its
        id) of ``session``.
    session:
        Needed for an entry or id, and to show previews of the summarized/kept entries.
    context_window:
        Drawn as a marker on the bars when given.
    max_rows:
        Longest entry list shown per section.
    """

    def __init__(
        self,
        source: CompactionReport | Entry | str,
        session: Session | None = None,
        *,
        context_window: int | None = None,
        max_rows: int = 300,
    ) -> None:
        if isinstance(source, CompactionReport):
            self.report = source
        else:
            if session is None:
                raise TypeError("CompactionView needs the session to read a compaction entry")
            self.report = report_from_entry(session, source)
        self.context_window = context_window
        self.max_rows = max_rows
        self._entries: dict[str, Entry] = {}
        if session is not None:
            wanted = {*self.report.summarized_ids, *self.report.kept_ids, *self.report.after_ids}
            for entry in session.entries:
                key = node_key(entry.id)
                if key in wanted:
                    self._entries[key] = entry

    @property
    def entry_id(self) -> str | None:
        entry = self.report.entry
        return node_key(entry.id) if entry is not None else None

    def to_text(self) -> str:
        r = self.report
        where = self.entry_id or "dry run"
        return (
            f"<CompactionView {where}: {r.tokens_before:,} → {r.tokens_after:,} tokens, "
            f"{len(r.summarized_ids)} entries summarized, {len(r.kept_ids)} kept>"
        )

    __repr__ = to_text

    def _entry_table(self, ids: list[str]) -> str:
        shown = ids[: self.max_rows]
        rows: list[tuple[Any, ...]] = []
        for key in shown:
            entry = self._entries.get(key)
            if entry is None:
                rows.append((key, "", "", None))
            else:
                rows.append(
                    (key, entry_kind(entry), entry_preview(entry, 120), entry_tokens(entry))
                )
        more = ""
        if len(ids) > len(shown):
            more = f'<div class="pinb-muted">… and {len(ids) - len(shown):,} more</div>'
        table_html = table(
            ["id", "kind", "preview", "tokens"], rows, numeric=(3,), wrap_columns=(2,)
        )
        return table_html + more

    def to_html(self) -> str:
        r = self.report
        saved = r.tokens_saved  # the same measure (chars/4) on both sides
        share = f" ({saved / r.estimated_before:.0%})" if r.estimated_before else ""
        facts = [
            ("reason", r.reason),
            ("summarizer", r.summarizer or "—"),
            ("first kept entry", r.first_kept_entry_id),
            ("split turn", "yes" if r.is_split_turn else "no"),
            ("previous compaction", r.previous_compaction_id or "—"),
        ]
        marks: list[tuple[str, int]] = []
        if self.context_window:
            marks.append(("window", self.context_window))
        before = dict(r.before_by_role) or {"(total)": r.tokens_before}
        bars = stacked_bars_svg([("before", before), ("after", dict(r.after_by_role))], marks=marks)
        roles = list(dict.fromkeys([*r.before_by_role, *r.after_by_role]))
        role_rows = [
            (
                role,
                r.before_by_role.get(role, 0),
                r.after_by_role.get(role, 0),
                r.after_by_role.get(role, 0) - r.before_by_role.get(role, 0),
            )
            for role in roles
        ]
        files = ""
        for title, names in (("Read files", r.read_files), ("Modified files", r.modified_files)):
            items = "".join(f"<li><code>{escape(name)}</code></li>" for name in names)
            files += f"<h4>{escape(title)} ({len(names)})</h4><ul>{items}</ul>" if names else ""
        parts = [
            f"<h3>Compaction {escape(self.entry_id or '(dry run)')}</h3>",
            f"<div>estimated (chars/4): <b>{r.estimated_before:,}</b> tokens before → "
            f"<b>{r.estimated_after:,}</b> after · saved {saved:,}{share} · "
            f"Pi recorded tokensBefore {r.tokens_before:,}</div>",
            bars,
            table(["role", "before", "after", "change"], role_rows, numeric=(1, 2, 3)),
            table(["", ""], facts, wrap_columns=(1,)),
            f"<details><summary>{len(r.summarized_ids):,} entries summarized</summary>"
            f"{self._entry_table(r.summarized_ids)}</details>",
            f"<details><summary>{len(r.kept_ids):,} entries kept verbatim</summary>"
            f"{self._entry_table(r.kept_ids)}</details>",
        ]
        if r.after_ids:
            parts.append(
                f"<details><summary>{len(r.after_ids):,} entries after it</summary>"
                f"{self._entry_table(r.after_ids)}</details>"
            )
        parts.append("<h4>Summary</h4>" + markdown_to_html(r.summary))
        parts.append(files)
        return wrap("".join(parts), "pinb-compaction")

    def figure(self, ax: Any = None) -> Any:
        """Before/after stacked bars by role as a matplotlib ``Figure``."""
        from ..render.figure import draw_stacked_bars

        r = self.report
        marks = [("window", self.context_window)] if self.context_window else []
        return draw_stacked_bars(
            [("before", dict(r.before_by_role)), ("after", dict(r.after_by_role))], ax, marks=marks
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)
