"""Text and sanitizer-safe HTML for a :class:`~pinb.analysis.compare.BranchComparison`.

The HTML uses only ``div``, ``span``, ``strong``, ``code`` and tables, with no style sheet,
so it reads the same after a notebook sanitizer; every piece of session text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest
from typing import TYPE_CHECKING, Final

from ..core.context.accounting import thousands
from ..render.html import escape, shorten, table, wrap
from ..render.plain import plain_cell, text_table

if TYPE_CHECKING:
    from ..analysis.compare import Branch, BranchComparison, ToolCall

__all__ = ["DIFF_MARKS", "comparison_html", "comparison_text", "container"]

#: How each diff step is marked in text and HTML.
DIFF_MARKS: Final = {
    "equal": "=",
    "delete": "- a only",
    "insert": "+ b only",
    "replace": "~ differs",
}
_ROLE_ORDER: Final = ("user", "assistant", "toolResult")


def container(body: str, name: str) -> str:
    """A view's outer ``div`` (:func:`pinb.render.html.wrap`: no wider than the cell, a
    wider table scrolls inside it; MathJax leaves session text alone)."""
    return wrap(body, name)


def _roles(branch: Branch) -> str:
    parts = [f"{branch.roles.get(role, 0)} {role}" for role in _ROLE_ORDER]
    others = sum(n for role, n in branch.roles.items() if role not in _ROLE_ORDER)
    if others:
        parts.append(f"{others} other")
    return ", ".join(parts)


def _ending(branch: Branch) -> tuple[str, str]:
    ending = branch.ending
    if ending is None:
        return ("no reply on the branch", "")
    reason = ending.stop_reason or "?"
    if ending.failed:
        reason += " (failed" + (f": {ending.error_message}" if ending.error_message else "") + ")"
    return reason, ending.text


def _metrics(c: BranchComparison) -> list[tuple[str, object, object]]:
    a, b = c.a, c.b

    def pair(name: str, fa: object, fb: object) -> tuple[str, object, object]:
        return (name, fa, fb)

    return [
        pair("leaf", f"{a.leaf_id} ({a.leaf_kind or '—'})", f"{b.leaf_id} ({b.leaf_kind or '—'})"),
        pair("entries", len(a.entries), len(b.entries)),
        pair("messages", f"{a.messages}: {_roles(a)}", f"{b.messages}: {_roles(b)}"),
        pair("tool calls", len(a.tool_calls), len(b.tool_calls)),
        pair("tool errors", len(a.tool_errors), len(b.tool_errors)),
        pair("files read", len(a.read_files), len(b.read_files)),
        pair("files modified", len(a.modified_files), len(b.modified_files)),
        pair("input tokens", a.input, b.input),
        pair("output tokens", a.output, b.output),
        pair("cache read", a.cache_read, b.cache_read),
        pair("cache write", a.cache_write, b.cache_write),
        pair("cost $", round(a.cost, 6), round(b.cost, 6)),
        pair("chars/4 added", a.estimated_tokens, b.estimated_tokens),
        pair(
            "context at leaf",
            f"{thousands(a.context.tokens)} ({a.context.measure})",
            f"{thousands(b.context.tokens)} ({b.context.measure})",
        ),
        pair("stop reason", _ending(a)[0], _ending(b)[0]),
        pair("last reply", _ending(a)[1], _ending(b)[1]),
    ]


def _call(call: ToolCall | None, limit: int = 70) -> str:
    if call is None:
        return ""
    flag = " (error)" if call.is_error else ""
    return shorten(f"{call.name} {call.key}", limit) + flag


def _diff_rows(c: BranchComparison) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for op in c.tool_diff:
        mark = DIFF_MARKS.get(op.tag, op.tag)
        for left, right in zip_longest(op.a, op.b):
            rows.append((mark, _call(left), _call(right)))
    return rows


def _file_rows(c: BranchComparison) -> list[tuple[str, str, str]]:
    def lines(branch: Branch) -> list[tuple[str, str]]:
        found = [("read", p) for p in branch.read_files]
        found += [("modified", p) for p in branch.modified_files]
        found += [("read (summary)", p) for p in branch.summary_read_files]
        found += [("modified (summary)", p) for p in branch.summary_modified_files]
        return found

    a, b = lines(c.a), lines(c.b)
    rows: list[tuple[str, str, str]] = []
    for kind in ("read", "modified", "read (summary)", "modified (summary)"):
        paths = sorted({p for k, p in a + b if k == kind})
        for path in paths:
            rows.append(
                (
                    f"{kind}: {path}",
                    "yes" if (kind, path) in a else "",
                    "yes" if (kind, path) in b else "",
                )
            )
    return rows


def _title(c: BranchComparison) -> str:
    where = c.relation
    ancestor = c.ancestor_id or "none"
    return (
        f"Branches a={c.a.leaf_id} and b={c.b.leaf_id} ({where}); common ancestor {ancestor}, "
        f"{c.shared_entries:,} entries shared: {c.summary}"
    )


def comparison_text(c: BranchComparison) -> str:
    """The comparison as plain text: facts side by side, the tool diff, the files."""
    parts = [_title(c), "", text_table(["", "a", "b"], _metrics(c), limit=70)]
    diff = _diff_rows(c)
    if diff:
        parts += ["", "Tool calls (a vs b):", text_table(["", "a", "b"], diff, limit=70)]
    files = _file_rows(c)
    if files:
        parts += ["", "Files:", text_table(["file", "a", "b"], files, limit=90)]
    errors = [(b.label, e.tool, e.preview) for b in (c.a, c.b) for e in b.tool_errors]
    if errors:
        parts += ["", "Tool errors:", text_table(["branch", "tool", "said"], errors, limit=90)]
    return "\n".join(parts)


def _section(title: str, body: str) -> str:
    return f"<div><strong>{escape(title)}</strong></div>{body}"


def comparison_html(c: BranchComparison) -> str:
    """The comparison as HTML that survives a sanitizer (no style, script or SVG)."""
    metrics: Sequence[tuple[str, str, str]] = [
        (name, plain_cell(a, 500), plain_cell(b, 500)) for name, a, b in _metrics(c)
    ]
    parts = [
        f"<div><strong>Branch comparison</strong> <span>{escape(_title(c))}</span></div>",
        table(["", "a", "b"], metrics, wrap_columns=(1, 2)),
    ]
    diff = _diff_rows(c)
    if diff:
        parts.append(_section("Tool calls (a vs b)", table(["", "a", "b"], diff)))
    files = _file_rows(c)
    if files:
        parts.append(_section("Files", table(["file", "a", "b"], files)))
    errors = [(b.label, e.tool, e.preview) for b in (c.a, c.b) for e in b.tool_errors]
    if errors:
        parts.append(
            _section("Tool errors", table(["branch", "tool", "said"], errors, wrap_columns=(2,)))
        )
    return container("".join(parts), "pinb-compare")
