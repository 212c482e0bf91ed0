"""``RetentionView``: what a compaction kept of the span it replaced, lost facts first."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ...analysis.retention.report import KIND_LABELS, WEIGHTS, FactVerdict, RetentionReport
from ...core.compaction.facts import FACT_KINDS
from ...core.compaction.matching import RULES
from ...core.context.accounting import thousands
from ...core.describe import one_line, plural
from ...render.html import div, escape, fold, heading, mimebundle, muted, table, title, wrap
from .given_back import PinbAdditions, pinb_added

__all__ = [
    "RetentionView",
    "pinb_score_text",
    "recall_text",
    "retention_brief_html",
    "retention_html",
    "retention_text",
    "score_text",
]


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def weights_text() -> str:
    """``decisions 20% · instructions 20% · …``: the score's weights, in words."""
    return " · ".join(f"{KIND_LABELS[k]} {w:.0%}" for k, w in WEIGHTS.items())


def _figures(report: RetentionReport) -> str:
    r = report
    recorded = (
        f" · Pi recorded tokensBefore {thousands(r.tokens_before)}"
        if r.tokens_before is not None
        else ""
    )
    per_1k = f"{r.facts_per_1k:.1f}" if r.facts_per_1k is not None else "—"
    return (
        f"chars/4 estimate {thousands(r.estimated_before)} → {thousands(r.estimated_after)} "
        f"tokens{recorded} · {plural(r.summarized_entries, 'entry', 'entries')} summarized · "
        f"summary {thousands(r.summary_tokens)} tokens · {per_1k} facts kept per 1,000 "
        "summary tokens"
    )


def _name(report: RetentionReport) -> str:
    if report.compaction_id is not None:
        return f"Compaction {report.compaction_id}"
    return f"Compaction ({report.kind})"


def _counts(report: RetentionReport, kind: str) -> tuple[int, int, int, int, int]:
    found = report.of_kind(kind)
    verbatim = sum(v.verdict == "verbatim" for v in found)
    paraphrased = sum(v.verdict == "paraphrased" for v in found)
    carried = sum(v.kept_messages for v in found)
    return len(found), verbatim, paraphrased, len(found) - verbatim - paraphrased, carried


def recall_text(report: RetentionReport) -> str:
    """``files 100% (2/2) · commands 33% (1/3) · …``: each kind's share kept (kinds present)."""
    parts = []
    for kind, share in report.recall.items():
        facts, verbatim, paraphrased, _, _ = _counts(report, kind)
        parts.append(f"{KIND_LABELS[kind]} {_percent(share)} ({verbatim + paraphrased}/{facts})")
    return " · ".join(parts) or "no facts"


def _unsummarized(report: RetentionReport) -> bool:
    """A plan whose summary is not written yet: nothing to score but the kept messages."""
    return report.compaction_id is None and not report.summary


def score_text(report: RetentionReport) -> str:
    """The score line every view shows for a compaction.

    ``score 70%, 11 of 18 facts kept by the summary; 7 lost (2 still in the kept
    messages)``; for a plan with no summary yet, what the kept messages carry instead.
    """
    r = report
    lost = r.lost
    carried = sum(v.kept_messages for v in lost)
    if _unsummarized(r):
        return (
            f"{plural(len(r.verdicts), 'fact')} in the span: {carried:,} still in the kept "
            f"messages, {len(lost) - carried:,} lost unless the summary keeps them (no "
            "summary yet)"
        )
    return (
        f"score {_percent(r.score)}, {r.kept_count:,} of {plural(len(r.verdicts), 'fact')} "
        f"kept by the summary; {len(lost):,} lost ({carried:,} still in the kept messages)"
    )


def _mark(added: PinbAdditions | None, verdict: FactVerdict) -> str:
    return added.mark(verdict.fact, verdict.summary.section) if added is not None else ""


def share(part: int, whole: int, what: str) -> str:
    """``"3 of the 7 lost"``; all of them as ``"the one lost fact"``, ``"both lost facts"``,
    ``"all 7 lost facts"`` (never "1 of the 1 lost")."""
    if part == whole:
        return {1: f"the one {what} fact", 2: f"both {what} facts"}.get(
            whole, f"all {whole:,} {what} facts"
        )
    return f"{part:,} of the {whole:,} {what}"


def pinb_score_text(report: RetentionReport, added: PinbAdditions | None) -> str:
    """``4 of the 11 kept matched in pinb's kept-facts section; 3 of the 7 lost given back since``: what
    of the score is pinb's doing (``""`` when pinb did nothing for this compaction)."""
    if added is None:
        return ""
    kept = [v for v in report.verdicts if v.kept]
    by_section = sum(_mark(added, v) == "kept by pinb's section" for v in kept)
    lost = report.lost
    marks = [_mark(added, v) for v in lost]
    given = sum(m.startswith("given back") for m in marks)
    in_section = sum(m == "kept by pinb's section" for m in marks)
    parts = []
    if by_section:
        parts.append(f"{share(by_section, len(kept), 'kept')} matched in pinb's kept-facts section")
    if in_section:
        parts.append(
            f"{share(in_section, len(lost), 'lost')}: in pinb's section all the same (its "
            "lines cut long text)"
        )
    if given:
        parts.append(f"{share(given, len(lost), 'lost')} given back since (`%pi uncompact`)")
    return "; ".join(parts)


def _see_all(report: RetentionReport) -> str:
    if report.compaction_id is not None:
        return f"%pi compactions --id {report.compaction_id}"
    return "%pi whatif (a summary written for each cut, scored)"


def retention_brief_html(
    report: RetentionReport, max_lost: int = 5, added: PinbAdditions | None = None
) -> str:
    """The same as HTML: the score line, recall by kind, the first lost facts (linked to
    their entries, ``data-pinb-entry`` naming each for the explorer), how to see all.

    ``added``: what pinb kept and gave back for this compaction (:func:`pinb_added`); each
    lost fact then says whether it was given back since.
    """
    r = report
    planned = _unsummarized(r)
    parts = [
        heading("What a summary of this cut must keep" if planned else "What the summary kept"),
        div(f"<b>{escape(score_text(r))}</b>"),
    ]
    pinb_line = pinb_score_text(r, added)
    if pinb_line:
        parts.append(div(escape(pinb_line)))
    if not planned:
        parts.append(div(escape(f"recall: {recall_text(r)}")))
        parts.append(
            div(escape(f"score weights (over the kinds present): {weights_text()}"), "muted")
        )
    if r.note:
        parts.append(div(escape(r.note), "muted"))
    lost = r.lost[:max_lost]
    if lost:
        rows = [
            (
                v.fact.kind,
                one_line(v.fact.text, 160),
                v.fact.detail,
                "yes" if v.kept_messages else "no",
                *((_mark(added, v),) if added is not None else ()),
                _source(r, v),
            )
            for v in lost
        ]
        how = "lost unless the summary keeps them" if planned else "lost"
        count = len(r.lost)
        shown = (
            f"The first {len(lost):,} of the {count:,} facts {how}:"
            if count > len(lost)
            else f"{'The fact' if count == 1 else f'The {count:,} facts'} {how}:"
        )
        parts.append(div(escape(shown), "muted"))
        headers = ["kind", "fact", "detail", "in kept messages", "source"]
        if added is not None:
            headers.insert(4, "pinb")
        parts.append(table(headers, rows, raw_columns=(len(headers) - 1,), wrap_columns=(1,)))
    more = len(r.lost) - len(lost)
    also = f"… and {more:,} more. " if more > 0 else ""
    parts.append(
        div(escape(f"{also}Every fact, with the text that matched: {_see_all(r)}"), "muted")
    )
    return "".join(parts)


def _fact_line(report: RetentionReport, verdict: FactVerdict, limit: int = 100) -> str:
    fact = verdict.fact
    detail = f" ({fact.detail})" if fact.detail else ""
    return f"{fact.kind:<11} {one_line(fact.text, limit)}{detail}  {report.cite(fact)}"


def retention_text(
    report: RetentionReport, max_rows: int = 40, added: PinbAdditions | None = None
) -> str:
    """The report as plain text: figures, recall by kind, lost facts then kept ones.

    ``added`` (:func:`pinb_added`): what pinb kept and gave back, said after the figures,
    and each fact pinb kept or gave back marked so.
    """
    r = report
    lines = [
        f"{_name(r)} ({r.kind}): score {_percent(r.score)}, "
        f"{r.kept_count:,} of {plural(len(r.verdicts), 'fact')} kept by the summary",
        "  " + _figures(r),
        "  recall: "
        + (
            " · ".join(
                f"{KIND_LABELS[k]} {_percent(v)} ({_counts(r, k)[1] + _counts(r, k)[2]}/"
                f"{_counts(r, k)[0]})"
                for k, v in r.recall.items()
            )
            or "no facts"
        ),
        f"  score weights (scaled over the kinds present): {weights_text()}",
    ]
    if r.note:
        lines.append(f"  note: {r.note}")
    if added is not None:
        lines += [f"  {line}" for line in added.lines]
        pinb_line = pinb_score_text(r, added)
        if pinb_line:
            lines.append(f"  {pinb_line}")
    lost = r.lost
    carried = sum(v.kept_messages for v in lost)
    lines.append(f"  lost ({len(lost):,}; {carried:,} still in the kept messages):")
    for verdict in lost[:max_rows]:
        marks = [_mark(added, verdict)] + (["in kept messages"] if verdict.kept_messages else [])
        mark = "".join(f"{m} · " for m in marks if m)
        lines.append(f"    {mark}{_fact_line(r, verdict)}")
    if len(lost) > max_rows:
        lines.append(f"    … and {len(lost) - max_rows:,} more")
    kept = [v for v in r.verdicts if v.kept]
    lines.append(f"  kept ({len(kept):,}):")
    for verdict in kept[:max_rows]:
        evidence = one_line(verdict.summary.evidence, 80)
        by = _mark(added, verdict)
        by = f"  ({by})" if by else ""
        lines.append(f"    {verdict.verdict:<11} {_fact_line(r, verdict, 60)}  ← {evidence!r}{by}")
    if len(kept) > max_rows:
        lines.append(f"    … and {len(kept) - max_rows:,} more")
    return "\n".join(lines)


def _file_uri(path: str) -> str:
    """A ``file://`` URI for a session path: pinb builds the scheme, the path is %-quoted."""
    with_slashes = Path(os.path.abspath(path)).as_posix()
    if not with_slashes.startswith("/"):
        with_slashes = "/" + with_slashes
    return "file://" + quote(with_slashes, safe="/:")


def _source(report: RetentionReport, verdict: FactVerdict) -> str:
    """The fact's entry as a link to its session file, titled ``path:line#entry-id``.

    ``data-pinb-entry`` names the entry: the explorer selects it on a click (a sanitizer
    drops the attribute; the link and its title stay).
    """
    fact = verdict.fact
    label = f"<code>{escape(fact.entry_id)}</code>"
    where = f" line {fact.line:,}" if fact.line is not None else ""
    if report.session_path is None:
        return label + escape(where)
    cite = report.cite(fact)
    return (
        f'<a href="{escape(_file_uri(report.session_path))}" title="{escape(cite)}" '
        f'data-pinb-entry="{escape(fact.entry_id)}">{label}</a>{escape(where)}'
    )


def _pinb_block(report: RetentionReport, added: PinbAdditions | None) -> str:
    """What pinb kept in the summary and gave back after it, one line each, and what of the
    score is its doing (``""`` without a session to read the give-backs from)."""
    if added is None:
        return ""
    lines = list(added.lines) or [
        "pinb added nothing: the summary is as its summarizer wrote it, and nothing was given back"
    ]
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    pinb_line = pinb_score_text(report, added)
    return (
        heading("What pinb kept and gave back")
        + f"<ul>{items}</ul>"
        + (div(escape(pinb_line)) if pinb_line else "")
    )


def retention_html(
    report: RetentionReport, max_rows: int = 200, added: PinbAdditions | None = None
) -> str:
    """The report as sanitizer-safe HTML: every fact and every piece of evidence escaped.

    ``added`` (:func:`pinb_added`): what pinb kept and gave back, right below the score,
    and a ``pinb`` column on each fact (kept by pinb's section, given back in an entry).
    """
    r = report
    rows = []
    for kind in FACT_KINDS:
        facts, verbatim, paraphrased, missing, carried = _counts(r, kind)
        if facts:
            rows.append(
                (
                    KIND_LABELS[kind],
                    facts,
                    verbatim,
                    paraphrased,
                    missing,
                    _percent(r.recall.get(kind)),
                    carried,
                    f"{WEIGHTS[kind]:.0%}",
                )
            )
    summary_table = table(
        [
            "kind",
            "facts",
            "verbatim",
            "paraphrased",
            "lost",
            "recall",
            "in kept messages",
            "weight",
        ],
        rows,
        numeric=(1, 2, 3, 4, 5, 6, 7),
    )
    lost = r.lost
    lost_rows = [
        (
            v.fact.kind,
            one_line(v.fact.text, 200),
            v.fact.detail,
            "yes" if v.kept_messages else "no",
            v.summary.rule,
            *((_mark(added, v),) if added is not None else ()),
            _source(r, v),
        )
        for v in lost[:max_rows]
    ]
    kept = [v for v in r.verdicts if v.kept]
    kept_rows = [
        (
            v.fact.kind,
            one_line(v.fact.text, 160),
            v.verdict,
            v.summary.rule,
            (f"[{v.summary.section}] " if v.summary.section else "")
            + one_line(v.summary.evidence, 200),
            *((_mark(added, v),) if added is not None else ()),
            _source(r, v),
        )
        for v in kept[:max_rows]
    ]
    pinb_column = ["pinb"] if added is not None else []

    def more(count: int) -> str:
        return div(muted(f"… and {count - max_rows:,} more"), "muted") if count > max_rows else ""

    carried = sum(v.kept_messages for v in lost)
    parts = [
        title(f"{_name(r)}: what the summary kept"),
        div(
            f"score <b>{escape(_percent(r.score))}</b> · {r.kept_count:,} of "
            f"{escape(plural(len(r.verdicts), 'fact'))} kept by the summary ({escape(r.kind)}"
            + (f", {escape(r.summarizer)}" if r.summarizer else "")
            + ")"
        ),
        _pinb_block(r, added),
        div(escape(_figures(r)), "muted"),
        summary_table,
        div(
            escape(
                "score: the recalls weighted "
                f"{weights_text()}, the weights of the kinds present scaled to 1. "
                "Verbatim and paraphrased both count as kept; a paraphrase is a match of words, "
                "not of meaning."
            ),
            "muted",
        ),
    ]
    if r.note:
        parts.append(div(escape(r.note), "warn"))
    lost_headers = ["kind", "fact", "detail", "in kept messages", "closest", *pinb_column, "source"]
    kept_headers = [
        "kind", "fact", "verdict", "rule", "evidence (the summary's text)", *pinb_column, "source"
    ]  # fmt: skip
    parts += [
        heading(f"Lost: {len(lost):,} ({carried:,} still in the kept messages)"),
        table(
            lost_headers,
            lost_rows,
            raw_columns=(len(lost_headers) - 1,),
            wrap_columns=(1, 4),
        ),
        more(len(lost)),
        heading(f"Kept by the summary: {len(kept):,}"),
        fold(
            table(
                kept_headers,
                kept_rows,
                raw_columns=(len(kept_headers) - 1,),
                wrap_columns=(1, 4),
            )
        ),
        more(len(kept)),
        heading("How each kind is matched"),
        "<ul>"
        + "".join(
            f"<li><b>{escape(KIND_LABELS[k])}</b>: {escape(rule)}</li>" for k, rule in RULES.items()
        )
        + "</ul>",
    ]
    return "".join(parts)


class RetentionView:
    """One or more retention reports (:class:`~pinb.analysis.retention.report.RetentionReport`).

    Lost facts come first, each linking to its session file and naming its entry
    (``path:line#entry-id`` in the link's title); then the kept facts with the summary's
    text that matched. Plain text and sanitizer-safe HTML, every session text escaped.

    With the session, each compaction also says what pinb kept (its kept-facts section:
    facts, kinds, tokens) and gave back after it (each ``pinb.uncompact`` entry: facts,
    tokens, entry id), and each fact pinb kept or gave back is marked so, as ``pinb
    compactions`` prints it (:func:`~pinb.views.compaction.given_back.pinb_added`).

    Parameters
    ----------
    reports:
        A report, or several (every compaction of a session).
    max_rows:
        Longest fact list shown per section.
    session:
        The session the reports were read from, for what pinb kept and gave back.
    """

    def __init__(
        self,
        reports: RetentionReport | Iterable[RetentionReport],
        *,
        max_rows: int = 200,
        session: Any = None,
    ) -> None:
        self.reports: Sequence[RetentionReport] = (
            [reports] if isinstance(reports, RetentionReport) else list(reports)
        )
        self.max_rows = max_rows
        #: What pinb added to each recorded compaction, by its id (with a session only).
        self.added: Mapping[str, PinbAdditions] = {}
        if session is not None:
            self.added = {
                r.compaction_id: pinb_added(session, session[r.compaction_id])
                for r in self.reports
                if r.compaction_id is not None and r.compaction_id in session
            }

    def _added(self, report: RetentionReport) -> PinbAdditions | None:
        return self.added.get(report.compaction_id) if report.compaction_id else None

    def to_text(self) -> str:
        if not self.reports:
            return "<RetentionView: no compactions>"
        return "\n\n".join(
            retention_text(r, min(self.max_rows, 40), self._added(r)) for r in self.reports
        )

    __repr__ = to_text

    def _pinb_cell(self, report: RetentionReport) -> str:
        """``kept 12 · gave back 5``: the facts pinb kept and gave back for one compaction."""
        added = self._added(report)
        if added is None:
            return "—"
        given = len(added.given)
        return f"kept {len(added.section):,} · gave back {given:,}"

    def _overview(self) -> str:
        pinb = bool(self.added)
        rows = [
            (
                r.compaction_id or r.kind,
                r.estimated_before,
                r.estimated_after,
                r.summary_tokens,
                len(r.verdicts),
                _percent(r.score),
                *((self._pinb_cell(r),) if pinb else ()),
                *(_percent(r.recall.get(k)) for k in FACT_KINDS),
            )
            for r in self.reports
        ]
        headers = ["compaction", "before", "after", "summary", "facts", "score"]
        headers += ["pinb"] if pinb else []
        headers += [KIND_LABELS[k] for k in FACT_KINDS]
        kinds = range(6 + pinb, 6 + pinb + len(FACT_KINDS))
        return table(headers, rows, numeric=(*range(1, 6), *kinds))

    def to_html(self) -> str:
        if not self.reports:
            return wrap(title("No compactions"), "pinb-retention")
        body = ""
        if len(self.reports) > 1:
            body += title(f"{plural(len(self.reports), 'compaction')}: what each summary kept")
            body += div(
                escape("tokens: chars/4 estimate before and after each compaction"), "muted"
            )
            body += self._overview()
        body += "".join(retention_html(r, self.max_rows, self._added(r)) for r in self.reports)
        return wrap(body, "pinb-retention")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)
