"""Compaction planning: where to cut the active path and what to summarize (spec §7.1–§7.4, §7.7).

Everything here is pure: it takes the root-to-leaf path and returns a plan. Producing the
summary (with a model or the offline summarizer) and appending the entry happen in
:mod:`pinb.compaction`, which passes the model in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .context import build_session_context, entry_to_message
from .entries import Entry, id_key
from .fileops import FileOperations
from .tokens import CompactionSettings, estimate_context_tokens, estimate_tokens
from .wire import MISSING, dumps, js_key_order, js_string, js_truthy, utf16_len, utf16_truncate

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "CompactionPreparation",
    "CutPoint",
    "PlannedMessage",
    "find_cut_point",
    "find_turn_start",
    "prepare_compaction",
    "serialize_conversation",
    "valid_cut_points",
]

#: Tool results are cut to this many UTF-16 units when serialized for a summarizer.
TOOL_RESULT_MAX_CHARS: Final = 2000

_CUT_ROLES = frozenset(
    {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)


def _role(entry: Entry) -> Any:
    message = entry.raw.get("message")
    return message.get("role") if isinstance(message, dict) else MISSING


def _is_cut_point(entry: Entry) -> bool:
    kind = entry.raw.get("type")
    if kind == "message":
        return _role(entry) in _CUT_ROLES
    return kind in ("branch_summary", "custom_message")


def valid_cut_points(path: Sequence[Entry], start: int, end: int) -> list[int]:
    """Indices in ``[start, end)`` where a kept region may begin: never a tool result (§7.1)."""
    return [i for i in range(start, end) if _is_cut_point(path[i])]


def find_turn_start(path: Sequence[Entry], index: int, start: int) -> int:
    """The index of the user turn containing ``index`` (scanning down to ``start``), or -1."""
    for i in range(index, start - 1, -1):
        entry = path[i]
        kind = entry.raw.get("type")
        if kind in ("branch_summary", "custom_message"):
            return i
        if kind == "message" and _role(entry) in ("user", "bashExecution"):
            return i
    return -1


@dataclass(frozen=True)
class CutPoint:
    """``findCutPoint`` result: the first kept index, and the turn it splits (if any)."""

    first_kept_index: int
    turn_start_index: int
    is_split_turn: bool


def find_cut_point(
    path: Sequence[Entry], start: int, end: int, keep_recent_tokens: int
) -> CutPoint:
    """Walk back from ``end`` until ``keep_recent_tokens`` are kept; cut at a valid point.

    Exactly v0.58.3's ``findCutPoint`` (§7.3): only ``message`` entries count towards the
    budget; the cut widens backwards over metadata entries; a cut that is not a user
    message splits its turn.
    """
    cuts = valid_cut_points(path, start, end)
    if not cuts:
        return CutPoint(start, -1, False)
    cut_index = cuts[0]
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        entry = path[i]
        if entry.raw.get("type") != "message":
            continue
        accumulated += estimate_tokens(entry.raw.get("message"))
        if accumulated >= keep_recent_tokens:
            for cut in cuts:
                if cut >= i:
                    cut_index = cut
                    break
            break
    while cut_index > start:
        previous = path[cut_index - 1].raw.get("type")
        if previous in ("compaction", "message"):
            break
        cut_index -= 1
    cut_entry = path[cut_index]
    is_user = cut_entry.raw.get("type") == "message" and _role(cut_entry) == "user"
    turn_start = -1 if is_user else find_turn_start(path, cut_index, start)
    return CutPoint(cut_index, turn_start, not is_user and turn_start != -1)


@dataclass(frozen=True)
class PlannedMessage:
    """A message to be summarized, with the path entry (and its index) it comes from."""

    index: int
    entry: Entry
    message: Any

    @property
    def role(self) -> Any:
        return self.message.get("role") if isinstance(self.message, dict) else None


@dataclass
class CompactionPreparation:
    """What a compaction of a path would summarize and keep (``prepareCompaction``).

    ``previous_summary`` is ``None`` when there is no previous compaction on the path.
    """

    path: list[Entry]
    first_kept_index: int
    first_kept_entry_id: Any
    messages_to_summarize: list[PlannedMessage]
    turn_prefix_messages: list[PlannedMessage]
    is_split_turn: bool
    tokens_before: int
    previous_summary: Any
    has_previous_summary: bool
    file_ops: FileOperations
    settings: CompactionSettings
    boundary_start: int
    previous_compaction_index: int
    cut_point: CutPoint = field(repr=False, default=CutPoint(0, -1, False))

    @property
    def is_empty(self) -> bool:
        """Nothing to summarize (a short session)."""
        return not self.messages_to_summarize and not self.turn_prefix_messages

    @property
    def kept_entries(self) -> list[Entry]:
        """Path entries from the first kept one to the leaf."""
        return self.path[self.first_kept_index :]


def _last_compaction_index(path: Sequence[Entry]) -> int:
    for i in range(len(path) - 1, -1, -1):
        if path[i].raw.get("type") == "compaction":
            return i
    return -1


def _planned(
    path: Sequence[Entry], start: int, stop: int, *, skip_compactions: bool
) -> list[PlannedMessage]:
    result = []
    for i in range(start, stop):
        entry = path[i]
        if skip_compactions and entry.raw.get("type") == "compaction":
            continue
        message = entry_to_message(entry)
        if js_truthy(message):
            result.append(PlannedMessage(i, entry, message))
    return result


def prepare_compaction(
    path: Sequence[Entry], settings: CompactionSettings | None = None
) -> CompactionPreparation | None:
    """Plan a compaction of ``path`` (root → leaf), or ``None`` when there is nothing to do.

    ``None`` when the path is empty or already ends with a compaction; by default also
    when nothing would be summarized (newer Pi, §12.9). With
    ``settings.legacy_range`` the range starts right after the previous compaction, as in
    v0.58.3; by default it starts at that compaction's first kept entry so nothing it kept
    is lost (§12.8).
    """
    settings = settings or CompactionSettings()
    path = list(path)
    if path and path[-1].raw.get("type") == "compaction":
        return None
    previous = _last_compaction_index(path)
    boundary_start = previous + 1
    boundary_end = len(path)
    legacy = settings.legacy_range
    if not legacy and previous >= 0:
        first_kept = path[previous].raw.get("firstKeptEntryId", MISSING)
        for i in range(previous):
            if id_key(path[i].id) == id_key(first_kept) and js_truthy(first_kept):
                boundary_start = i
                break

    if legacy:
        usage_messages = [
            p.message
            for p in _planned(path, max(previous, 0), boundary_end, skip_compactions=False)
        ]
        tokens_before = estimate_context_tokens(usage_messages).tokens
    else:
        context = build_session_context(path, path[-1].id if path else None)
        tokens_before = estimate_context_tokens(context.messages).tokens

    cut = find_cut_point(path, boundary_start, boundary_end, settings.keep_recent_tokens)
    if cut.first_kept_index >= len(path):
        return None
    first_kept_entry = path[cut.first_kept_index]
    if not js_truthy(first_kept_entry.id):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _planned(path, boundary_start, history_end, skip_compactions=not legacy)
    prefix = (
        _planned(path, cut.turn_start_index, cut.first_kept_index, skip_compactions=not legacy)
        if cut.is_split_turn
        else []
    )
    has_previous = previous >= 0
    previous_summary = path[previous].raw.get("summary", MISSING) if has_previous else None

    file_ops = FileOperations()
    if has_previous:
        raw = path[previous].raw
        if not js_truthy(raw.get("fromHook")) and js_truthy(raw.get("details")):
            file_ops.add_details(raw.get("details"))
    for planned in to_summarize:
        file_ops.add_message(planned.message)
    for planned in prefix:
        file_ops.add_message(planned.message)

    preparation = CompactionPreparation(
        path=path,
        first_kept_index=cut.first_kept_index,
        first_kept_entry_id=first_kept_entry.id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        has_previous_summary=has_previous,
        file_ops=file_ops,
        settings=settings,
        boundary_start=boundary_start,
        previous_compaction_index=previous,
        cut_point=cut,
    )
    if not legacy and preparation.is_empty:
        return None
    return preparation


# ---------------------------------------------------------------------------------------
# serializeConversation
# ---------------------------------------------------------------------------------------


def _join_text(blocks: Any, kind: str, key: str, sep: str) -> list[str] | None:
    if not isinstance(blocks, list):
        return None
    return [
        _text_or_empty(b.get(key)) for b in blocks if isinstance(b, dict) and b.get("type") == kind
    ]


def _text_or_empty(value: Any) -> str:
    """An element of ``Array.prototype.join``: ``null``/``undefined`` become ""."""
    return "" if value is None or value is MISSING else js_string(value)


def _truncate_for_summary(text: str, limit: int = TOOL_RESULT_MAX_CHARS) -> str:
    length = utf16_len(text)
    if length <= limit:
        return text
    return utf16_truncate(text, limit) + f"\n\n[... {length - limit} more characters truncated]"


def _format_call(block: dict[str, Any]) -> str:
    """``name(k1=<json>, k2=<json>)`` with keys in JavaScript enumeration order."""
    arguments = block.get("arguments")
    if isinstance(arguments, dict):
        decoded = {str(k): v for k, v in arguments.items()}
        pairs = [(k, decoded[k]) for k in js_key_order(decoded)]
    elif isinstance(arguments, list):
        pairs = [(str(i), v) for i, v in enumerate(arguments)]
    else:
        pairs = []
    rendered = ", ".join(f"{k}={dumps(v)}" for k, v in pairs)
    return f"{js_string(block.get('name', MISSING))}({rendered})"


def serialize_conversation(messages: Sequence[Any]) -> str:
    """``serializeConversation``: model messages as the text a summarizer reads (§7.7)."""
    parts: list[str] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            if isinstance(content, str):
                text = content
            else:
                text = "".join(_join_text(content, "text", "text", "") or [])
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            thinking: list[str] = []
            texts: list[str] = []
            calls: list[str] = []
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    texts.append(_text_or_empty(block.get("text")))
                elif kind == "thinking":
                    thinking.append(_text_or_empty(block.get("thinking")))
                elif kind == "toolCall":
                    calls.append(_format_call(block))
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            text = "".join(_join_text(content, "text", "text", "") or [])
            if text:
                parts.append(f"[Tool result]: {_truncate_for_summary(text)}")
    return "\n\n".join(parts)
