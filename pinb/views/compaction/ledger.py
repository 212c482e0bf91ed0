"""Text and sanitizer-safe HTML for the compaction ledger, the usage calibration and what-if.

Like :mod:`pinb.views.compare`: ``div``, ``span``, ``strong``, ``code`` and tables only,
every piece of session text escaped, so the views read the same after a sanitizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ...core.context.accounting import saved_share, thousands
from ...render.html import escape, shorten, table
from ...render.plain import text_table
from ...render.tree.graph import plural
from ..compare import container
from .retention import score_text

#: The what-if column of the settings in force.
CURRENT_LABEL: Final = "current settings"

if TYPE_CHECKING:
    from ...analysis.compaction.ledger import Calibration, CompactionLedger, CompactionRecord
    from ...analysis.compaction.strategies import StrategyComparison, StrategyRow
    from ...analysis.compaction.whatif import WhatIf
    from ...analysis.retention.report import RetentionReport

__all__ = [
    "calibration_html",
    "calibration_text",
    "ledger_html",
    "ledger_text",
    "what_if_html",
    "what_if_text",
]

#: Longest table a view shows (frames have every row).
MAX_ROWS: Final = 40

#: What each compaction did, the columns a reader needs (each measure named in its header).
_LEDGER_HEADERS: Final = (
    "session", "compaction", "on path", "Pi's tokensBefore", "before (chars/4)",
    "after (chars/4)", "saved", "facts kept", "score", "pinb kept / gave back",
)  # fmt: skip
_LEDGER_NUMERIC: Final = (3, 4, 5, 6)
_LEDGER_NOTE: Final = (
    "Pi's tokensBefore: the figure Pi recorded in the entry. before/after (chars/4): the "
    "estimate of the context at the compaction's parent and at the compaction itself (no "
    "usage exists right after it); saved is their difference, so both sides are one measure. "
    "facts kept: the span's facts its summary kept (verbatim or paraphrased), and score: their "
    "recall weighted by kind (to_frame() has recall per kind; %pi compactions --id ID lists "
    "each fact and why). pinb kept / gave back: the facts pinb added to the summary (its cited "
    "kept-facts section) and gave back after it (pinb uncompact), with their tokens."
)
#: Where each compaction's size went: the detail under the first table.
_DETAIL_HEADERS: Final = (
    "compaction", "next request", "summarized u/a/tool", "tool result chars",
    "thinking max (summarized)", "thinking max (kept)", "summary tok", "checkpoint tok",
    "files r/m", "split turn",
)  # fmt: skip
_DETAIL_NUMERIC: Final = (1, 3, 4, 5, 6, 7)
_DETAIL_NOTE: Final = (
    "next request: input+cacheRead+cacheWrite of the first reply after it, which also holds "
    "the system prompt, the tools and the new prompt. summary tok + checkpoint tok: what the "
    "compaction entry sends (its summary, pinb's kept facts included, and the system prompt it "
    "replays), the size the tree shows for it."
)
_CALIBRATION_NOTE: Final = (
    "Each reply with usage: its reported prompt (input+cacheRead+cacheWrite) against "
    "chars/4 of the context it was sent (its system prompt included when the session "
    "records one, as Pi 1.x does). The ratio mixes in what the requests held that the "
    "session does not; the fit reported = slope × estimate + intercept separates it "
    "(slope: real tokens per chars/4 token; intercept: what the session does not hold, "
    "such as the tools' definitions, or the whole system prompt of a session without one)."
)


def _ledger_row(r: CompactionRecord) -> tuple[object, ...]:
    return (
        r.session_id[:8],
        r.compaction_id,
        _yes(r.on_path),
        r.tokens_before,
        r.before_estimate,
        r.after_estimate,
        saved_share(r.saved_estimate, r.before_estimate),
        f"{r.facts_kept}/{r.facts}",
        f"{r.score:.0%}" if r.score is not None else "—",
        _pinb_cell(r),
    )


def _detail_row(r: CompactionRecord) -> tuple[object, ...]:
    roles = r.summarized_by_role
    return (
        r.compaction_id,
        r.next_request_tokens,
        f"{roles.get('user', 0)}/{roles.get('assistant', 0)}/{roles.get('toolResult', 0)}",
        r.tool_result_chars,
        r.summarized_thinking.largest,
        r.kept_thinking.largest,
        r.summary_tokens,
        r.checkpoint_tokens,
        f"{r.read_files}/{r.modified_files}",
        _yes(r.split_turn),
    )


def _pinb_cell(r: CompactionRecord) -> str:
    """``"12 (340 tok) / 5 (120 tok)"``: facts pinb kept in the summary and gave back after
    it, with what each costs (chars/4; ``"/ 0"`` alone when nothing was given back); ``"—"``
    when pinb added nothing."""
    if not r.kept_facts and not r.given_back:
        return "—"
    given = f" ({r.given_back_tokens:,} tok)" if r.given_back else ""
    return f"{r.kept_facts} ({r.kept_facts_tokens:,} tok) / {r.given_back}{given}"


def _more(total: int, shown: int) -> str:
    return f"… and {total - shown:,} more (to_frame() has every row)" if total > shown else ""


def _ledger_lines(ledger: CompactionLedger) -> tuple[str, list[str]]:
    """The title and the remarks under the table."""
    skipped = f", {len(ledger.skipped)} unreadable" if ledger.skipped else ""
    title = (
        f"Compaction ledger: {plural(len(ledger.records), 'compaction')} in "
        f"{plural(ledger.sessions, 'session')}{skipped}"
    )
    remarks: list[str] = []
    kept = max(ledger.records, key=lambda r: r.kept_thinking.largest, default=None)
    if kept is not None and kept.kept_thinking.largest:
        remarks.append(
            f"largest thinking block kept verbatim by a compaction: "
            f"{kept.kept_thinking.largest:,} chars in {kept.kept_thinking.largest_id} "
            f"(after {kept.compaction_id})"
        )
    lost = sum(r.lost_entries for r in ledger.records)
    if lost:
        remarks.append(f"{lost:,} entries left a context without being summarized (Pi v0.58.3)")
    remarks.extend(f"unreadable: {s.path}: {s.reason}" for s in ledger.skipped[:MAX_ROWS])
    return title, remarks


def _masking_line(ledger: CompactionLedger) -> str:
    """``"masking: 3 maskings, 41 tool results, 52,300 tokens off (chars/4): 3 summary
    calls avoided"`` (``""`` without any)."""
    maskings = ledger.maskings
    if not maskings:
        return ""
    results = sum(m.results for m in maskings)
    saved = sum(m.tokens_saved for m in maskings)
    return (
        f"masking: {len(maskings):,} masking{'s' if len(maskings) != 1 else ''}, "
        f"{results:,} tool results masked, {saved:,} tokens off (chars/4): "
        f"{ledger.summary_calls_avoided:,} summary call"
        f"{'s' if ledger.summary_calls_avoided != 1 else ''} avoided"
    )


def ledger_text(ledger: CompactionLedger) -> str:
    """The ledger as plain text: one line per compaction, then what stands out."""
    title, remarks = _ledger_lines(ledger)
    masking = _masking_line(ledger)
    if masking:
        remarks = [masking, *remarks]
    shown = ledger.records[:MAX_ROWS]
    parts = [title]
    if shown:
        rows = [_ledger_row(r) for r in shown]
        details = [_detail_row(r) for r in shown]
        parts += [
            text_table(_LEDGER_HEADERS, rows, numeric=_LEDGER_NUMERIC),
            _LEDGER_NOTE,
            "Where each compaction's size went:",
            text_table(_DETAIL_HEADERS, details, numeric=_DETAIL_NUMERIC),
            _DETAIL_NOTE,
        ]
    else:
        parts.append("no compaction entries")
    more = _more(len(ledger.records), len(shown))
    return "\n".join([*parts, *([more] if more else []), *remarks])


def _div(text: str) -> str:
    return f"<div>{escape(text)}</div>" if text else ""


def ledger_html(ledger: CompactionLedger) -> str:
    """The ledger as HTML that survives a sanitizer."""
    title, remarks = _ledger_lines(ledger)
    masking = _masking_line(ledger)
    if masking:
        remarks = [masking, *remarks]
    shown = ledger.records[:MAX_ROWS]
    body = [f"<div><strong>{escape(title)}</strong></div>"]
    if shown:
        rows = [_ledger_row(r) for r in shown]
        details = [_detail_row(r) for r in shown]
        body += [
            table(_LEDGER_HEADERS, rows, numeric=_LEDGER_NUMERIC),
            _div(_LEDGER_NOTE),
            '<div style="margin-top:8px"><strong>Where each compaction\'s size went</strong></div>',
            table(_DETAIL_HEADERS, details, numeric=_DETAIL_NUMERIC),
            _div(_DETAIL_NOTE),
        ]
    else:
        body.append(_div("no compaction entries"))
    body.append(_div(_more(len(ledger.records), len(shown))))
    body.extend(_div(remark) for remark in remarks)
    return container("".join(body), "pinb-ledger")


def _calibration_rows(calibration: Calibration) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for row in calibration.rows[:MAX_ROWS]:
        fit = row.fit()
        ratio, offset = row.median_ratio, row.mean_offset
        rows.append(
            (
                row.session_id[:8],
                row.n,
                row.replies_without_usage,
                round(ratio, 3) if ratio is not None else None,
                round(offset) if offset is not None else None,
                round(fit[0], 3) if fit else None,
                round(fit[1]) if fit else None,
            )
        )
    return rows


_CALIBRATION_HEADERS: Final = (
    "session", "replies", "no usage", "median ratio", "mean offset", "slope", "intercept",
)  # fmt: skip


def calibration_text(calibration: Calibration) -> str:
    """chars/4 against reported usage, one line per session."""
    rows = _calibration_rows(calibration)
    title = f"Usage calibration: {plural(len(calibration.rows), 'session')}"
    if not rows:
        return f"{title}\nno sessions"
    more = _more(len(calibration.rows), len(rows))
    table_text = text_table(_CALIBRATION_HEADERS, rows, numeric=range(1, 7))
    return "\n".join([title, table_text, _CALIBRATION_NOTE, *([more] if more else [])])


def calibration_html(calibration: Calibration) -> str:
    rows = _calibration_rows(calibration)
    title = f"Usage calibration: {plural(len(calibration.rows), 'session')}"
    body = [f"<div><strong>{escape(title)}</strong></div>"]
    if rows:
        body += [table(_CALIBRATION_HEADERS, rows, numeric=range(1, 7)), _div(_CALIBRATION_NOTE)]
        body.append(_div(_more(len(calibration.rows), len(rows))))
    return container("".join(body), "pinb-calibration")


def _yes(value: bool | None) -> str | None:
    return None if value is None else "yes" if value else "no"


def _what_if_table(w: WhatIf) -> tuple[list[str], list[Sequence[object]]]:
    """One column per setting; a column with nothing to compact shows why, and no figures."""
    # The "settings" row says both; a header names what differs between the columns.
    one_reserve = len({r.settings.reserve_tokens for r in w.rows}) == 1
    headers = [
        "",
        *(
            r.label or (f"keep {r.settings.keep_recent_tokens:,}" if one_reserve else r.name)
            for r in w.rows
        ),
    ]
    fields: list[tuple[str, list[object]]] = [
        ("settings", [r.settings_text for r in w.rows]),
        ("keepRecentTokens used", [r.keep_used for r in w.rows]),
    ]
    if any(r.keep_note for r in w.rows):
        fields.append(("why that keep", [r.keep_note or None for r in w.rows]))
    fields += [
        ("first kept entry", [r.first_kept_entry_id or r.nothing for r in w.rows]),
        ("it starts with", [shorten(r.first_kept_preview, 90) or None for r in w.rows]),
        ("splits a turn", [_yes(r.split_turn) for r in w.rows]),
        ("entries kept", [r.entries_kept for r in w.rows]),
        ("entries summarized", [r.entries_summarized for r in w.rows]),
        ("messages kept", [r.messages_kept for r in w.rows]),
        ("messages summarized", [r.messages_summarized for r in w.rows]),
        ("tokens kept (chars/4)", [r.kept_tokens for r in w.rows]),
        ("tokens leaving (chars/4)", [r.summarized_tokens for r in w.rows]),
    ]
    if w.summarizer:
        fields.append(("summary tokens", [r.summary_tokens for r in w.rows]))
        fields.append(("size after (chars/4)", [r.after_tokens for r in w.rows]))
    if any(r.retention is not None for r in w.rows):
        fields.append(("facts kept by the summary", [_kept(r.retention) for r in w.rows]))
        fields.append(("score", [_score(r.retention) for r in w.rows]))
        fields.append(("kept per 1k summary tokens", [_per_1k(r.retention) for r in w.rows]))
    if any(r.threshold is not None for r in w.rows):
        fields.append(("threshold", [r.threshold for r in w.rows]))
        fields.append(("would compact now", [_yes(r.would_trigger) for r in w.rows]))
    return headers, [(name, *values) for name, values in fields]


def _what_if_title(w: WhatIf) -> str:
    c = w.context
    window = (
        f"{thousands(c.window)}-token window ({c.window_source})" if c.window else "window unknown"
    )
    return (
        f"What if leaf {w.leaf_id} were compacted now: context {thousands(c.tokens)} tokens "
        f"({c.measure}), {thousands(c.estimated_tokens)} by chars/4 · {window}"
    )


def _what_if_notes(w: WhatIf) -> list[str]:
    """What the columns are: the current settings, the summarizer, a compaction leaf."""
    notes: list[str] = [f"Note: {note}." for note in w.context.notes()]
    if w.current is not None:
        notes.append(
            f"{CURRENT_LABEL}: what %pi compact will do at this leaf"
            + (f" ({w.current_note})" if w.current_note else "")
            + "; every column is planned the same way and says the keepRecentTokens it used."
        )
    if w.summarizer:
        also = (
            f"; %pi compact would summarize with {w.compact_summarizer}"
            if w.compact_summarizer and w.compact_summarizer != w.summarizer
            else ""
        )
        notes.append(
            f"Summaries written by {w.summarizer} on an in-memory copy{also}, and scored: "
            "what each kept of the span it replaces."
        )
    else:
        by = (
            f" (%pi compact summarizes with {w.compact_summarizer})" if w.compact_summarizer else ""
        )
        notes.append(
            f"No summary written{by}: tokens only (without --no-score, an offline summary is "
            "written for each column and scored)."
        )
    for row in w.rows:
        if row.replays and row.retention is not None:
            notes.append(
                f"{row.name} writes compaction {row.replays} again, the same cut and summary: "
                f"{score_text(row.retention)} (as %pi compactions --id {row.replays} shows)."
            )
    if w.folded:
        notes.append(
            f"Left out: {', '.join(w.folded)}, which plan the same cut as a column shown "
            "(--keep N asks for any setting)."
        )
    if w.leaf_is_compaction:
        parent = w.parent_id or "its parent"
        notes.append(
            f"The leaf is a compaction: nothing to compact until the next message. To replay "
            f"that compaction under these settings, ask at its parent {parent} "
            f"(%pi whatif --leaf {parent})."
        )
    return notes


_SIDE_TITLE = "Pi's plan and mask-first side by side"


def _side_by_side(w: WhatIf) -> tuple[list[str], list[Sequence[object]]]:
    """The strategies as columns: what each writes, what it calls, what the context ends at.

    One column per strategy, in this order: Pi's plan (the current settings' column), then
    pinb's own. A strategy pinb adds (the kept facts of issue 41) is one more entry of
    ``columns``, with its figures under the same row names."""
    current = w.current
    columns: list[tuple[str, dict[str, object]]] = []
    if current is not None:
        after = current.after_tokens if current.after_tokens is not None else None
        columns.append(
            (
                # The current column is written as pinb writes it: with the kept-facts
                # section unless the settings turn it off; the name says which.
                "Pi's plan + pinb kept facts" if current.settings.keep_facts else "Pi's plan",
                {
                    "writes": "nothing (nothing to compact)"
                    if current.nothing
                    else "a compaction entry (its summary)",
                    "summary calls": None if current.nothing else 1,
                    "context after": after,
                    "the model loses": None
                    if current.nothing
                    else f"{current.entries_summarized or 0:,} entries, to a summary",
                    "under the threshold": _yes(after <= current.threshold)
                    if after is not None and current.threshold is not None
                    else None,
                },
            )
        )
    m = w.masking
    if m is not None:
        columns.append(
            (
                "mask first",
                {
                    "writes": f"{len(m.masked):,} context edits"
                    if m.reaches
                    else "a compaction entry (masking falls short)",
                    "summary calls": 0 if m.reaches else 1,
                    "context after": m.tokens_after if m.reaches else None,
                    "the model loses": f"{len(m.masked):,} old tool results, to one line each"
                    if m.reaches
                    else "as Pi's plan",
                    "under the threshold": _yes(m.reaches) if m.threshold is not None else None,
                },
            )
        )
    elif w.masking_nothing:
        columns.append(("mask first", {"writes": w.masking_nothing}))
    names = ["writes", "summary calls", "context after", "the model loses", "under the threshold"]
    headers = ["", *(name for name, _ in columns)]
    rows: list[Sequence[object]] = [
        (name, *(values.get(name) for _, values in columns)) for name in names
    ]
    return headers, rows


def _shows_side_by_side(w: WhatIf) -> bool:
    """The two-column table, only when the strategies table (which has Pi's exact plan,
    pinb's kept facts and mask-first as rows, scored) is not shown: one table, not two
    saying the same."""
    if w.masking is None and not w.masking_nothing:
        return False
    return w.strategies is None or not w.strategies.rows


def _side_by_side_text(w: WhatIf) -> list[str]:
    if not _shows_side_by_side(w):
        return []
    headers, rows = _side_by_side(w)
    return [_SIDE_TITLE, text_table(headers, rows, numeric=(), limit=60)]


def _side_by_side_html(w: WhatIf) -> list[str]:
    if not _shows_side_by_side(w):
        return []
    headers, rows = _side_by_side(w)
    return [
        f"<div><strong>{escape(_SIDE_TITLE)}</strong></div>",
        table(headers, rows, wrap_columns=range(1, len(headers))),
    ]


def _kept(r: RetentionReport | None) -> str | None:
    return f"{r.kept_count:,}/{len(r.verdicts):,}" if r is not None else None


def _score(r: RetentionReport | None) -> str | None:
    if r is None:
        return None
    return f"{r.score:.0%}" if r.score is not None else "—"


def _per_1k(r: RetentionReport | None) -> str | None:
    if r is None:
        return None
    return f"{r.facts_per_1k:.1f}" if r.facts_per_1k is not None else "—"


#: The strategies table: what each keeps of the span, what it costs, what the context ends
#: at. Four columns, so it reads whole at a notebook's width; the detail is in the notes
#: under it (and every figure in ``to_frame()`` / ``to_dict()``).
_STRATEGY_HEADERS: Final = (
    "strategy", "facts kept · score", "tokens it costs", "context after (chars/4)",
)  # fmt: skip
_STRATEGIES_TITLE: Final = "Strategies at this cut: tokens and what each kept of the span"


def _cost(row: StrategyRow) -> str | None:
    """``"445 summary (84 pinb's) · 1 call"``; ``"no summary · 0 calls (1 avoided)"``."""
    calls = row.summary_calls
    said = "" if calls is None else f" · {plural(calls, 'summary call')}"
    if row.method == "mask-first" and not row.summary_needed:
        return f"no summary{said} (1 avoided)"
    r = row.retention
    if r is None:
        return said[3:] or None
    if row.method == "masking":
        return f"no summary (masked span {r.summary_tokens:,}){said}"
    added = f" ({row.added_tokens:,} pinb's)" if row.added_tokens else ""
    return f"{r.summary_tokens:,} summary{added}{said}"


def _after(row: StrategyRow) -> str | None:
    after = row.tokens_after
    if after is None:
        return None
    if row.method == "mask-first" and row.threshold is not None:
        return f"{after:,} (threshold {row.threshold:,})"
    return f"{after:,}"


def _strategy_rows(c: StrategyComparison) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for row in c.rows:
        r = row.retention
        kept = f"{_kept(r)} · {_score(r)}" if r is not None else row.nothing
        if r is None and row.method == "mask-first" and row.nothing is None:
            kept = "not scored"
        rows.append((row.name, kept, _cost(row), _after(row)))
    return rows


def _recall_line(r: RetentionReport) -> str:
    from ...analysis.retention.report import KIND_LABELS

    return ", ".join(f"{KIND_LABELS[k]} {share:.0%}" for k, share in r.recall.items())


def _first_facts(summary: str, shown: int = 2) -> str:
    """``", among them: “…”, “…”"``: the first facts of a summary's kept-facts section."""
    from ...core.compaction.lost import earlier_kept_facts

    facts = earlier_kept_facts(summary)
    if not facts:
        return ""
    quoted = ", ".join(f"“{shorten(f.text, 80)}”" for f in facts[:shown])
    return f" ({plural(len(facts), 'fact')}, among them {quoted})"


def _kept_facts_notes(c: StrategyComparison) -> list[str]:
    """What pinb's section adds to Pi's summary at this cut, and kind by kind."""
    pi = next((r for r in c.rows if r.method == "summary" and r.added_tokens is None), None)
    ours = next((r for r in c.rows if r.added_tokens is not None), None)
    if ours is None or ours.retention is None:
        return []
    notes = [
        f"{ours.name}: the summary of Pi's plan with the cited \"Kept facts (added by pinb, not "
        "Pi's summarizer)\" section pinb's compactions add by default (keepFacts; "
        "--no-keep-facts writes Pi's text alone): "
        + (
            f"{ours.added_tokens:,} tokens for the must-keep facts the summary lost"
            if ours.added_tokens
            else "the summary lost no must-keep fact, so nothing is added"
        )
        + _first_facts(ours.retention.summary)
        + "."
    ]
    if pi is not None and pi.retention is not None:
        notes.append(
            f"Recall by kind, Pi's plan: {_recall_line(pi.retention)}; with pinb's kept facts: "
            f"{_recall_line(ours.retention)}."
        )
    return notes


def _strategy_notes(c: StrategyComparison) -> list[str]:
    """Which strategy keeps most per token, highest, and leaves least; what the figures are."""
    notes: list[str] = _kept_facts_notes(c)
    notes.extend(f"{row.name}: {row.note}." for row in c.rows if row.method == "mask-first")
    most = c.best("facts_per_1k")
    high = c.best("score")
    least = c.best("estimated_after")
    if most is not None and most.retention is not None and most.retention.facts_per_1k:
        notes.append(
            f"Most facts kept per 1,000 summary tokens: {most.name} "
            f"({most.retention.facts_per_1k:.1f})."
        )
    if high is not None and high.retention is not None and high.retention.score is not None:
        notes.append(f"Highest score: {high.name} ({high.retention.score:.0%}).")
    if least is not None and least.retention is not None:
        notes.append(
            f"Smallest context after: {least.name} "
            f"({least.retention.estimated_after:,} tokens by chars/4)."
        )
    if any(r.method == "masking" for r in c.rows):
        notes.append(
            "Observation masking writes no summary: the span Pi's summary replaces stays, "
            "each tool result in it replaced by a one-line placeholder (its facts are judged "
            "against the masked span). Mask-first masks old results only until the context "
            "is under the threshold, and never the kept budget or the current turn."
        )
    notes.append(
        "facts kept: the span's facts (files, commands, errors, instructions, decisions, "
        "code names, numbers) the summary holds verbatim or paraphrased — a match of words, "
        "not of meaning; score: their recall weighted by kind (%pi compactions --id ID lists "
        "each fact of a recorded compaction and why; to_frame() has recall per kind and "
        "facts kept per 1,000 summary tokens). summary calls: summaries a model would write."
    )
    return notes


def what_if_text(w: WhatIf) -> str:
    """The settings side by side, one column each; then the strategies scored."""
    headers, rows = _what_if_table(w)
    numeric = range(1, len(headers))
    parts = [
        _what_if_title(w),
        text_table(headers, rows, numeric=numeric, limit=48),
        *_what_if_notes(w),
        *_side_by_side_text(w),
    ]
    c = w.strategies
    if c is not None and c.rows:
        parts += [
            _STRATEGIES_TITLE,
            text_table(_STRATEGY_HEADERS, _strategy_rows(c), numeric=(3,), limit=60),
            *_strategy_notes(c),
        ]
    return "\n".join(parts)


def what_if_html(w: WhatIf) -> str:
    headers, rows = _what_if_table(w)
    body = [
        f"<div><strong>{escape(_what_if_title(w))}</strong></div>",
        table(headers, rows, numeric=range(1, len(headers)), wrap_columns=range(1, len(headers))),
        *(_div(note) for note in _what_if_notes(w)),
        *_side_by_side_html(w),
    ]
    c = w.strategies
    if c is not None and c.rows:
        body += [
            f"<div><strong>{escape(_STRATEGIES_TITLE)}</strong></div>",
            table(_STRATEGY_HEADERS, _strategy_rows(c), numeric=(3,), wrap_columns=range(3)),
            *(_div(note) for note in _strategy_notes(c)),
        ]
    return container("".join(body), "pinb-what-if")
