"""``CompactionView``: what one compaction did — tokens before/after by role, what its summary
kept of the span it replaced (score, recall by kind, the lost facts first), summary, files."""

from __future__ import annotations

from typing import Any

from ...analysis.retention.report import RetentionReport, plan_retention, retention_report
from ...core import Entry, Session, SessionContext
from ...core.compaction.facts import FactCache
from ...core.compaction.masking import MaskedResult, masked_results
from ...core.compaction.reports import CompactionReport
from ...core.compaction.span import CompactionCost, compaction_cost, split_at_cut
from ...core.context.accounting import estimated_by_role, saved_share, thousands
from ...core.context.build import UNSET
from ...core.js.jsontext import value_text
from ...errors import PinbError
from ...render.html import (
    escape,
    fold,
    gauge,
    heading,
    mimebundle,
    style,
    table,
    title,
    wrap,
)
from ...render.markdown import markdown_to_html
from ...render.tree.graph import (
    entry_kind,
    entry_preview,
    entry_tokens,
    kind_name,
    node_key,
    plural,
)
from .given_back import PinbAdditions, pinb_added
from .retention import retention_brief_html, score_text

__all__ = ["CompactionView", "report_from_entry"]


def _file_list(details: Any, key: str) -> list[str]:
    values = details.get(key) if isinstance(details, dict) else None
    return [value_text(v) for v in values] if isinstance(values, list) else []


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
    span = split_at_cut(before, raw.get("firstKeptEntryId"))  # the core's one count
    summarized = [node_key(e.id) for e in span.summarized]
    kept = [node_key(e.id) for e in span.kept]
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
        summary=value_text(raw.get("summary", "")),
        first_kept_entry_id=value_text(first_kept) if first_kept is not None else "",
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
    """One compaction: the context before and after with one measure, what went, the summary.

    Before and after are compared with the same chars/4 estimate on both sides (the
    report's ``estimated_before`` / ``estimated_after``); Pi's recorded ``tokensBefore`` is
    shown as recorded, with how Pi makes it. With a window, both sides are also shown as a
    share of it.

    Parameters
    ----------
    source:
        A :class:`~pinb.core.compaction.reports.CompactionReport`, or a ``compaction`` entry (or its
        id) of ``session``.
    session:
        Needed for an entry or id, and to show previews of the summarized/kept entries.
    context_window / window_source:
        The window (and where it came from); without one, the window ``session`` last ran
        with, else the registry's entry for its recorded model, else unknown
        (:func:`pinb.llm.window.resolve_window`).
    max_rows:
        Longest entry list shown per section.
    leaf_id:
        Where a dry run was planned (default: the session's leaf), for what it would keep.
    retention:
        What the summary kept (:class:`~pinb.analysis.retention.report.RetentionReport`); by
        default read from the session: :func:`~pinb.analysis.retention.report.retention_report`
        of the compaction entry, or :func:`~pinb.analysis.retention.report.plan_retention` of a
        dry run. Without a session there is none.
    max_lost:
        Lost facts listed (the rest are counted; ``%pi compactions --id ID`` has them all).
    fact_cache:
        What each message says, kept for the next view of the same session (the explorer
        keeps one: the spans of nearby entries share most of their messages).
    score:
        ``False``: a dry run's retention is not read (the explorer's preview, where every
        click would pay for judging each fact of the span against the kept messages: up to
        a second deep in a 10,000-entry session); a recorded compaction's always is.
    """

    def __init__(
        self,
        source: CompactionReport | Entry | str,
        session: Session | None = None,
        *,
        context_window: int | None = None,
        window_source: str | None = None,
        max_rows: int = 300,
        leaf_id: Any = UNSET,
        retention: RetentionReport | None = None,
        max_lost: int = 5,
        fact_cache: FactCache | None = None,
        score: bool = True,
    ) -> None:
        if isinstance(source, CompactionReport):
            self.report = source
        else:
            if session is None:
                raise TypeError("CompactionView needs the session to read a compaction entry")
            self.report = report_from_entry(session, source)
        self.max_rows = max_rows
        context = None
        if not context_window and session is not None:
            entry = self.report.entry
            context = session.build_context(entry.id if entry is not None else session.leaf_id)
        from ...llm.window import resolve_window

        found = resolve_window(
            setting=context_window, setting_source=window_source, session=session, context=context
        )
        self.context_window: int | None = found.tokens or None
        self.window_source: str = found.source
        #: What contradicts the window (the session's own compactions ran far below it).
        self.window_note: str = found.note
        #: What the compaction entry sends right after it (the tree's figure for its row).
        self.cost: CompactionCost | None = None
        if session is not None and self.report.entry is not None:
            self.cost = compaction_cost(session, self.report.entry)
        self.max_lost = max_lost
        #: What the summary kept of the span (``None`` without a session, or when it
        #: cannot be read: :attr:`retention_error` says why).
        self.retention: RetentionReport | None = retention
        self.retention_error: str = ""
        planned_only = self.report.entry is None and not score
        if retention is None and session is not None and not planned_only:
            try:
                self.retention = (
                    retention_report(session, self.report.entry, cache=fact_cache)
                    if self.report.entry is not None
                    else plan_retention(session, self.report, leaf_id=leaf_id, cache=fact_cache)
                )
            except (PinbError, ValueError, KeyError) as exc:  # an odd file: say why
                self.retention_error = str(exc) or type(exc).__name__
        #: Tool results masked in the context right after the compaction (its kept part).
        self.masked = self._read_masked(session)
        #: What pinb added to this compaction: its kept facts and give-backs, and which
        #: facts of the span each holds (``None`` without a session or for a dry run).
        self.pinb: PinbAdditions | None = None
        if session is not None and self.report.entry is not None:
            self.pinb = pinb_added(session, self.report.entry)
        #: The same, one line each.
        self.pinb_lines: list[str] = list(self.pinb.lines) if self.pinb is not None else []
        self._session = session
        self._options: dict[str, Any] = {
            "context_window": context_window,
            "window_source": window_source,
            "max_rows": max_rows,
            "max_lost": max_lost,
        }
        self._entries: dict[str, Entry] = {}
        if session is not None:
            wanted = {*self.report.summarized_ids, *self.report.kept_ids, *self.report.after_ids}
            for entry in session.entries:
                key = node_key(entry.id)
                if key in wanted:
                    self._entries[key] = entry

    def _read_masked(self, session: Session | None) -> list[MaskedResult]:
        if session is None or self.report.entry is None:
            return []
        try:
            return masked_results(session.build_context(self.report.entry.id))
        except (PinbError, ValueError, KeyError):
            return []

    @property
    def entry_id(self) -> str | None:
        entry = self.report.entry
        return node_key(entry.id) if entry is not None else None

    def to_text(self) -> str:
        r = self.report
        where = self.entry_id or "dry run"
        return (
            f"<CompactionView {where}: chars/4 estimate {thousands(r.estimated_before)} → "
            f"{thousands(r.estimated_after)} tokens (saved {saved_share(r.tokens_saved, r.estimated_before)}); "
            f"Pi recorded tokensBefore {thousands(r.tokens_before)}; {self._keep_text()}"
            f"{self._retention_text()}{self._pinb_text()}"
            f"{plural(len(r.summarized_ids), 'entry')} summarized, {len(r.kept_ids):,} kept>"
        )

    def _retention_text(self) -> str:
        """``"what the summary kept: score 70%, …; "`` (the score line every view shows)."""
        if self.retention is not None:
            planned = self.retention.compaction_id is None and not self.retention.summary
            what = "what a summary must keep" if planned else "what the summary kept"
            return f"{what}: {score_text(self.retention)}; "
        if self.retention_error:
            return "what the summary kept: not read; "
        return ""

    def _retention_html(self) -> str:
        if self.retention is not None:
            return retention_brief_html(self.retention, self.max_lost, self.pinb)
        if self.retention_error:
            return heading("What the summary kept") + (
                f"<div{style('error')}>not read: {escape(self.retention_error)}</div>"
            )
        return ""

    def _pinb_text(self) -> str:
        """``"pinb kept 12 facts …; given back in …; "``: what pinb added, when it did."""
        return "".join(f"{line}; " for line in self.pinb_lines)

    def _pinb_html(self, hint: bool = True) -> str:
        """What pinb kept in the summary and gave back after it, with their cost; ``hint``:
        the command that gives back (a widget has its button instead)."""
        if self.report.entry is None:
            return ""
        lines = self.pinb_lines or [
            "pinb added nothing: the summary is as its summarizer wrote it, and nothing was "
            "given back"
        ]
        items = "".join(f"<li>{escape(line)}</li>" for line in lines)
        said = (
            f"<div{style('muted')}>{escape('%pi uncompact')} (or {escape('pinb uncompact FILE')}) "
            "gives back what the summary lost, as one cited message the next turn reads.</div>"
            if hint
            else ""
        )
        return heading("What pinb kept and gave back") + f"<ul>{items}</ul>" + said

    def _keep_text(self) -> str:
        """``"keepRecentTokens 700 (why); "``: the keep budget the plan used, when known."""
        r = self.report
        if r.keep_recent_tokens is None:
            return ""
        why = f" ({r.keep_note})" if r.keep_note else ""
        return f"keepRecentTokens {r.keep_recent_tokens:,}{why}; "

    __repr__ = to_text

    def _masking_facts(self) -> list[tuple[str, str]]:
        """Rows on masking: why mask-first needed this summary, and the masks the kept part
        carries (tool results pinb masked before, still masked after the compaction)."""
        rows: list[tuple[str, str]] = []
        if self.report.masking_note:
            rows.append(("mask first", f"not enough, so a summary: {self.report.masking_note}"))
        masked = self.masked
        if masked:
            saved = sum(m.saved for m in masked)
            rows.append(
                (
                    "masked in the kept part",
                    f"{plural(len(masked), 'tool result')} masked ({thousands(saved)} tokens "
                    "off, chars/4): the file keeps them",
                )
            )
        return rows

    def _entry_table(self, ids: list[str]) -> str:
        shown = ids[: self.max_rows]
        rows: list[tuple[Any, ...]] = []
        for key in shown:
            entry = self._entries.get(key)
            if entry is None:
                rows.append((key, "", "", None))
            else:
                rows.append(
                    (
                        key,
                        kind_name(entry_kind(entry)),
                        entry_preview(entry, 120),
                        entry_tokens(entry),
                    )
                )
        more = ""
        if len(ids) > len(shown):
            more = f"<div{style('muted')}>… and {len(ids) - len(shown):,} more</div>"
        table_html = table(
            ["id", "kind", "content", "tokens (chars/4)"], rows, numeric=(3,), wrap_columns=(2,)
        )
        return table_html + more

    def _side(self, name: str, tokens: int) -> tuple[Any, ...]:
        window = self.context_window
        share = tokens / window if window else None
        return (
            name,
            tokens,
            f"{share:.1%}" if share is not None else "window unknown",
            f"<span{style('gauge')}>{gauge(share, 24)}</span>" if share is not None else "",
        )

    def to_html(self) -> str:
        """The view as sanitizer-safe HTML, with the command that gives back what it lost."""
        return self.html(hint=True)

    def html(self, *, hint: bool = True) -> str:
        """:meth:`to_html`; ``hint=False`` leaves out the give-back command (the widget's
        button stands there instead)."""
        r = self.report
        saved = saved_share(r.tokens_saved, r.estimated_before)  # chars/4 on both sides
        facts = [
            ("reason", r.reason),
            ("summarizer", r.summarizer or "—"),
            ("first kept entry", r.first_kept_entry_id or "— (nothing kept)"),
            (
                "keepRecentTokens used",
                f"{r.keep_recent_tokens:,}" + (f" ({r.keep_note})" if r.keep_note else "")
                if r.keep_recent_tokens is not None
                else "not recorded (a compaction entry does not say which keep made it)",
            ),
            ("split turn", "yes" if r.is_split_turn else "no"),
            ("previous compaction", r.previous_compaction_id or "—"),
        ]
        if self.cost is not None:
            facts.append(("the compaction entry sends", self.cost.describe()))
        facts.extend(self._masking_facts())
        window_note = (
            f"share of a {thousands(self.context_window)}-token window ({self.window_source})"
            if self.context_window
            else "share of the window (window unknown)"
        )
        contradicted = (
            f"<div{style('error')}>window {escape(self.window_note)}</div>"
            if self.context_window and self.window_note
            else ""
        )
        roles = list(dict.fromkeys([*r.before_by_role, *r.after_by_role]))
        role_rows = [
            (
                kind_name(role),
                r.before_by_role.get(role, 0),
                r.after_by_role.get(role, 0),
                r.after_by_role.get(role, 0) - r.before_by_role.get(role, 0),
            )
            for role in roles
        ]
        files = ""
        for heading_text, names in (
            ("Read files", r.read_files),
            ("Modified files", r.modified_files),
        ):
            items = "".join(f"<li><code>{escape(name)}</code></li>" for name in names)
            files += (
                heading(f"{heading_text} ({len(names)})") + f"<ul>{items}</ul>" if names else ""
            )
        parts = [
            title(f"Compaction {self.entry_id or '(dry run)'}"),
            f"<div>chars/4 estimate of the context: <b>{thousands(r.estimated_before)}</b> "
            f"tokens before → <b>{thousands(r.estimated_after)}</b> after · saved "
            f"<b>{saved}</b> <span{style('muted')}>(the same measure on both "
            "sides)</span></div>",
            f"<div{style('muted')}>Pi recorded tokensBefore = {thousands(r.tokens_before)} "
            "(its own figure: the last reported usage plus an estimate of later messages, as "
            "recorded in the entry)</div>",
            table(
                ["context", "tokens (chars/4)", window_note, ""],
                [self._side("before", r.estimated_before), self._side("after", r.estimated_after)],
                numeric=(1,),
                raw_columns=(3,),
            )
            + contradicted,
            heading("By role (chars/4 estimate)"),
            table(["role", "before", "after", "change"], role_rows, numeric=(1, 2, 3)),
            table(["", ""], facts, wrap_columns=(1,)),
            self._retention_html(),
            self._pinb_html(hint),
            heading(f"Summarized: {plural(len(r.summarized_ids), 'entry')}"),
            fold(self._entry_table(r.summarized_ids)),
            heading(f"Kept verbatim: {plural(len(r.kept_ids), 'entry')}"),
            fold(self._entry_table(r.kept_ids)),
        ]
        if r.after_ids:
            parts.append(heading(f"After it: {plural(len(r.after_ids), 'entry')}"))
            parts.append(fold(self._entry_table(r.after_ids)))
        if r.entry is None and not r.summary:
            parts.append(
                heading("Summary")
                + f"<div{style('muted')}>Written when the compaction runs (this is a dry run: "
                "nothing is summarized or written yet).</div>"
            )
        else:
            parts.append(heading("Summary") + fold(markdown_to_html(r.summary)))
        parts.append(files)
        return wrap("".join(parts), "pinb-compaction")

    def figure(self, ax: Any = None) -> Any:
        """Before/after stacked bars by role (chars/4) as a matplotlib ``Figure``."""
        from ...render.figure import draw_stacked_bars

        r = self.report
        marks = [("window", self.context_window)] if self.context_window else []
        return draw_stacked_bars(
            [("before", dict(r.before_by_role)), ("after", dict(r.after_by_role))], ax, marks=marks
        )

    def widget(self) -> Any:
        """This compaction as a live widget with a real "Give back what it lost" button
        (:class:`~pinb.views.compaction_widget.CompactionWidget`; needs anywidget).

        Raises
        ------
        UsageError
            A dry run (nothing to give back yet) or a view without its session.
        """
        from ...errors import UsageError

        if self._session is None or self.report.entry is None:
            raise UsageError(
                "only a recorded compaction with its session can give back: "
                "CompactionView(entry_id, session)"
            )
        # By the facade, which loads the widget (anywidget) on first use: the widget draws
        # this view, so this module never imports it.
        from ... import views

        return views.CompactionWidget(self.report.entry, self._session, **self._options)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        # In a live kernel a recorded compaction shows as the widget, whose button gives
        # back what it lost; its bundle keeps this HTML (with the command) for a saved or
        # untrusted notebook and nbconvert, where no kernel answers a click.
        if self._session is not None and self.report.entry is not None and _live_kernel():
            try:
                widget = self.widget()
            except ImportError:  # no anywidget: the static view says which command to run
                pass
            else:
                return widget._repr_mimebundle_(include=include, exclude=exclude)
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)


def _live_kernel() -> bool:
    """Whether this process is a Jupyter kernel, where a widget's clicks reach Python."""
    from ...core.file.writers import describe_process

    return describe_process() == "a Jupyter kernel"
