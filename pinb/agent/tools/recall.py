"""The ``recall`` tool: the agent reads back what compactions summarized and masks hid, cited from the file.

A compaction's summary loses facts, and a mask (``pinb.core.compaction.masking``) keeps
only one line of a tool result; the session file keeps every original. ``recall``
searches those originals on the current path (``pinb.core.compaction.hidden``) and answers
with their text, each hit cited ``path:line#entry-id``, within Pi's output limits (2000
lines or 50 KB). It only reads. The agent offers it once the path holds a compaction or
a mask (``recall_offered``), and its description is the line the system prompt lists, so
the model is told where to look; Pi's compaction summary text stays Pi's, byte for byte.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...core.compaction.hidden import HiddenEntry, entry_text, hidden_originals, holds_hidden
from ..tool import ToolContext, ToolResult
from .paths import ToolInputError, optional_int
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, truncate_head

__all__ = ["RecallTool", "recall_offered"]

_DEFAULT_LIMIT = 5
#: Lines of an excerpt around each line that matches.
_AROUND = 2
#: Most lines one search hit shows (the entry id reads the whole original).
_HIT_LINES = 24
_WORD = re.compile(r"[\w./-]{2,}", re.UNICODE)

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Words to look for, or the entry id a masked result or a citation names",
        },
        "limit": {
            "type": "number",
            "description": f"Most entries to show (default: {_DEFAULT_LIMIT})",
        },
    },
    "required": ["query"],
}


def recall_offered(session: Any) -> bool:
    """Whether ``recall`` has anything to read: the current path holds a compaction or a mask."""
    return session is not None and holds_hidden(session.current_context())  # edits only


def _words(text: str) -> list[re.Pattern[str]]:
    """One pattern per distinct word of the query, matching it as a whole word, any case."""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text))
    return [re.compile(rf"(?<!\w){re.escape(w)}(?!\w)", re.IGNORECASE) for w in words]


def _cite(session: Any, hidden: HiddenEntry) -> str:
    where = str(session.path) if session.path is not None else str(session.id)
    line = hidden.entry.line if hidden.entry.line is not None else ""
    return f"{where}:{line}#{hidden.entry.id}"


def _what(hidden: HiddenEntry) -> str:
    entry = hidden.entry
    message = entry.message or {}
    role = message.get("role") if entry.type == "message" else entry.type
    if role == "toolResult":
        role = f"{message.get('toolName') or 'tool'} result"
    return f"{role}, {hidden.describe()}"


def _excerpt(text: str, words: list[re.Pattern[str]]) -> str:
    lines = text.splitlines() or [""]
    hits = [i for i, line in enumerate(lines) if any(w.search(line) for w in words)]
    if not hits:
        return "\n".join(lines[:_HIT_LINES])
    shown: list[int] = []
    for i in hits:
        for j in range(max(0, i - _AROUND), min(len(lines), i + _AROUND + 1)):
            if j not in shown:
                shown.append(j)
    out: list[str] = []
    previous = -1
    for j in shown[:_HIT_LINES]:
        if previous >= 0 and j != previous + 1:
            out.append("…")
        out.append(lines[j])
        previous = j
    if len(shown) > _HIT_LINES:
        out.append(f"… ({len(shown) - _HIT_LINES} more matching lines: recall the entry id)")
    return "\n".join(out)


class RecallTool:
    """Search what the current path's compactions summarized and masks hid (read-only).

    With an entry id (as a placeholder or a citation names it) the whole original is
    given back; with words, the entries holding most of them, most recent first among
    equals, each as an excerpt around the lines that match.
    """

    name = "recall"
    description = (
        "Read back what this session's compactions summarized away and the tool results "
        "pinb masked to save context: the session file keeps the originals. Give words to "
        "search for, or the entry id a masked result names; answers with the original text, "
        f"cited path:line#entry-id, up to {DEFAULT_MAX_LINES} lines or "
        f"{DEFAULT_MAX_BYTES // 1024}KB."
    )

    def __init__(self, cwd: str | Path | None = None) -> None:
        # The same signature as the built-in tools; recall reads the session, not files.
        self.parameters: dict[str, Any] = _PARAMETERS

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        session = context.session
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult.error("recall needs a query: words to search for, or an entry id")
        try:
            limit = optional_int(arguments, "limit", minimum=1) or _DEFAULT_LIMIT
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        if session is None:
            return ToolResult.error("recall reads a session, and this run has none")
        # A context of its own: the session's shared one is never projected here.
        hidden = list(hidden_originals(session.build_context()))
        if not hidden:
            return ToolResult.error(
                "Nothing to recall: no compaction or mask on this path hides anything"
            )
        wanted = query.strip()
        by_id = [h for h in hidden if str(h.entry.id) == wanted]
        if not by_id and len(wanted) >= 4 and " " not in wanted:
            starting = [h for h in hidden if str(h.entry.id).startswith(wanted)]
            by_id = starting if len(starting) == 1 else []
        if by_id:
            found = by_id[0]
            body = f"{_cite(session, found)} ({_what(found)})\n{entry_text(found.entry)}"
            return self._bounded(body, {"entryIds": [str(found.entry.id)], "matches": 1})
        words = _words(wanted)
        if not words:
            return ToolResult.error(f"recall found no word to search for in {wanted!r}")
        scored: list[tuple[int, int, int, HiddenEntry, str]] = []
        for order, item in enumerate(hidden):
            text = entry_text(item.entry)
            counts = [len(w.findall(text)) for w in words]
            present = sum(1 for c in counts if c)
            if present:
                scored.append((present, sum(counts), order, item, text))
        if not scored:
            return ToolResult.text(
                f"No match for {wanted!r} in what compactions summarized or masks hid "
                f"({len(hidden):,} entries on this path)",
                details={"entryIds": [], "matches": 0},
            )
        scored.sort(key=lambda s: (-s[0], -s[1], -s[2]))
        parts = [
            f"{_cite(session, item)} ({_what(item)})\n{_excerpt(text, words)}"
            for _, _, _, item, text in scored[:limit]
        ]
        more = len(scored) - limit
        if more > 0:
            parts.append(f"({more:,} more entries match: raise limit, or narrow the words)")
        ids = [str(s[3].entry.id) for s in scored[:limit]]
        return self._bounded("\n\n".join(parts), {"entryIds": ids, "matches": len(scored)})

    @staticmethod
    def _bounded(text: str, details: dict[str, Any]) -> ToolResult:
        cut = truncate_head(text)
        if not cut.truncated:
            return ToolResult.text(text, details=details)
        note = (
            f"\n\n[Showing {cut.output_lines:,} of {cut.total_lines:,} lines "
            f"({DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB at most)]"
        )
        return ToolResult.text(cut.content + note, details={**details, "truncated": True})
