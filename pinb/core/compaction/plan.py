"""Compaction planning: where to cut the active path and what to summarize (spec §7.1–§7.4, §7.7).

Everything here is pure: it takes the root-to-leaf path and returns a plan. Producing the
summary (with a model or the offline summarizer) and appending the entry happen in
:mod:`pinb.compaction`, which passes the model in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..context.build import (
    UNSET,
    ProjectedEntry,
    build_session_context,
    entry_messages,
    entry_to_message,
)
from ..context.tokens import (
    CompactionSettings,
    estimate_context_tokens,
    estimate_projected_tokens,
    estimate_tokens,
)
from ..format.entries import Entry, id_key
from ..format.target import DEFAULT_PI, Pi, PiLike
from ..js.wire import MISSING, dumps, js_key_order, js_string, js_truthy, utf16_len, utf16_truncate
from .fileops import FileOperations

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
_TURN_START_ROLES = frozenset(
    {"user", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)


def _role(entry: Entry) -> Any:
    return _message_role(entry.raw.get("message"))


def _message_role(message: Any) -> Any:
    """A message's role when it is a string (files can hold anything there), else MISSING."""
    role = message.get("role") if isinstance(message, dict) else MISSING
    return role if isinstance(role, str) else MISSING


def _is_cut_point_058(entry: Entry) -> bool:
    kind = entry.raw.get("type")
    if kind == "message":
        return _role(entry) in _CUT_ROLES
    return kind in ("branch_summary", "custom_message")


def _roles_in(messages: list[Any], roles: frozenset[str]) -> bool:
    return any(_message_role(m) in roles for m in messages)


def valid_cut_points(
    path: Sequence[Entry], start: int, end: int, *, pi: PiLike | None = None
) -> list[int]:
    """Indices in ``[start, end)`` where a kept region may begin: never a tool result (§7.1).

    Pi 1.x decides by the messages an entry produces (a user, assistant, bash, custom or
    summary message); v0.58.3 by the entry's type and role.
    """
    if Pi.resolve(pi) >= Pi.V1_6:
        return [
            i
            for i in range(start, end)
            if path[i].raw.get("type") != "compaction"
            and _roles_in(entry_messages(path[i]), _CUT_ROLES)
        ]
    return [i for i in range(start, end) if _is_cut_point_058(path[i])]


def _is_turn_start(entry: Entry, messages: list[Any]) -> bool:
    return entry.raw.get("type") != "compaction" and _roles_in(messages, _TURN_START_ROLES)


def find_turn_start(
    path: Sequence[Entry], index: int, start: int, *, pi: PiLike | None = None
) -> int:
    """The index of the turn start containing ``index`` (scanning down to ``start``), or -1.

    A turn starts at a user message, a bash execution, a custom message or a summary
    (v0.58.3: a user message, a bash execution, a custom or branch-summary entry).
    """
    newer = Pi.resolve(pi) >= Pi.V1_6
    for i in range(index, start - 1, -1):
        entry = path[i]
        if newer:
            if _is_turn_start(entry, entry_messages(entry)):
                return i
            continue
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
    path: Sequence[Entry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    *,
    pi: PiLike | None = None,
) -> CutPoint:
    """Walk back from ``end`` until ``keep_recent_tokens`` are kept; cut at a valid point.

    Pi's exported ``findCutPoint`` over raw path entries (§7.1). Pi 1.x counts every
    message an entry produces, falls back to the last cut point, and widens the cut only
    over entries that produce nothing; v0.58.3 counts ``message`` entries only, falls back
    to the first cut point and widens over every non-message entry.
    """
    target = Pi.resolve(pi)
    if target >= Pi.V1_6:
        produced = [
            entry_messages(e, target) if start <= i < end else [] for i, e in enumerate(path)
        ]
        is_compaction = [e.raw.get("type") == "compaction" for e in path]
        found = _cut(produced, is_compaction, start, end, keep_recent_tokens, target)
        if found is None:
            return CutPoint(start, -1, False)
        return _widen_and_split(produced, is_compaction, found[0], start)
    return _find_cut_point_058(path, start, end, keep_recent_tokens)


def _find_cut_point_058(
    path: Sequence[Entry], start: int, end: int, keep_recent_tokens: int
) -> CutPoint:
    cuts = valid_cut_points(path, start, end, pi=Pi.V0_58)
    if not cuts:
        return CutPoint(start, -1, False)
    cut_index = cuts[0]
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        entry = path[i]
        if entry.raw.get("type") != "message":
            continue
        accumulated += estimate_tokens(entry.raw.get("message"), pi=Pi.V0_58)
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
    turn_start = -1 if is_user else find_turn_start(path, cut_index, start, pi=Pi.V0_58)
    return CutPoint(cut_index, turn_start, not is_user and turn_start != -1)


def _cut(
    produced: Sequence[list[Any]],
    is_compaction: Sequence[bool],
    start: int,
    end: int,
    keep_recent_tokens: int,
    pi: Pi,
) -> tuple[int, bool] | None:
    """Pi 1.x's cut over entries given by the messages each produces.

    Returns the cut index (before widening) and whether the kept budget was reached, or
    ``None`` when there is no valid cut point.
    """
    cuts = [
        i for i in range(start, end) if not is_compaction[i] and _roles_in(produced[i], _CUT_ROLES)
    ]
    if not cuts:
        return None
    cut_index = cuts[0]
    accumulated = 0
    exceeded = False
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimate_tokens(m, pi=pi) for m in produced[i])
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            cut_index = next((c for c in cuts if c >= i), cuts[-1])
            break
    return cut_index, exceeded


def _widen_and_split(
    produced: Sequence[list[Any]],
    is_compaction: Sequence[bool],
    cut_index: int,
    start: int,
) -> CutPoint:
    """Step back over entries that produce nothing, then decide whether a turn is split."""
    while cut_index > start:
        if is_compaction[cut_index - 1] or produced[cut_index - 1]:
            break
        cut_index -= 1

    def starts_turn(i: int) -> bool:
        return not is_compaction[i] and _roles_in(produced[i], _TURN_START_ROLES)

    if starts_turn(cut_index):
        return CutPoint(cut_index, -1, False)
    turn_start = next((i for i in range(cut_index, start - 1, -1) if starts_turn(i)), -1)
    return CutPoint(cut_index, turn_start, turn_start != -1)


@dataclass(frozen=True)
class PlannedMessage:
    """A message to be summarized, with the path entry (and its path index) it comes from."""

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
    Indices are positions in ``path``.
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
    previous_compaction_index: int
    kept_entries: list[Entry]
    pi: Pi = DEFAULT_PI

    @property
    def is_empty(self) -> bool:
        """Nothing to summarize (a short session)."""
        return not self.messages_to_summarize and not self.turn_prefix_messages


def _last_compaction_index(path: Sequence[Entry]) -> int:
    for i in range(len(path) - 1, -1, -1):
        if path[i].raw.get("type") == "compaction":
            return i
    return -1


def prepare_compaction(
    path: Sequence[Entry],
    settings: CompactionSettings | None = None,
    *,
    pi: PiLike | None = None,
) -> CompactionPreparation | None:
    """Plan a compaction of ``path`` (root → leaf), or ``None`` when there is nothing to do.

    ``None`` when the path is empty or already ends with a compaction. Pi 1.x plans over
    the context as the model sees it (edits applied, system messages left out), starts
    with the previous compaction's kept entries so nothing is lost, and returns ``None``
    when nothing would be summarized (§7.2). v0.58.3 starts right after the previous
    compaction and may return an empty plan (spec §12.8–12.9).
    """
    settings = settings or CompactionSettings()
    target = Pi.resolve(pi)
    path = list(path)
    if not path or path[-1].raw.get("type") == "compaction":
        return None
    if target >= Pi.V1_6:
        return _prepare_1x(path, settings, target)
    return _prepare_058(path, settings)


def _position_map(path: Sequence[Entry]) -> dict[int, int]:
    return {id(e): i for i, e in enumerate(path)}


def _prepare_1x(
    path: list[Entry], settings: CompactionSettings, pi: Pi
) -> CompactionPreparation | None:
    context = build_session_context(path, UNSET, pi=pi)
    projected = context.entries
    produced = [p.messages for p in projected]
    is_compaction = [p.entry.raw.get("type") == "compaction" for p in projected]
    previous = next((i for i, p in enumerate(projected) if is_compaction[i] and p.messages), -1)
    boundary_start = previous + 1 if previous >= 0 else 0
    end = len(projected)
    tokens_before = estimate_projected_tokens(context).tokens

    found = _cut(produced, is_compaction, boundary_start, end, settings.keep_recent_tokens, pi)
    if found is None:
        cut = CutPoint(boundary_start, -1, False)
    else:
        cut_index, exceeded = found
        if exceeded and _is_recovery_suffix(projected[cut_index + 1 : end]):
            cut_index += 1
        cut = _widen_and_split(produced, is_compaction, cut_index, boundary_start)
    if cut.first_kept_index >= end or not js_truthy(projected[cut.first_kept_index].entry.id):
        return None
    positions = _position_map(path)

    def planned(lo: int, hi: int) -> list[PlannedMessage]:
        result: list[PlannedMessage] = []
        for p in projected[lo:hi]:
            if p.entry.raw.get("type") == "compaction":
                continue
            index = positions[id(p.entry)]
            result.extend(
                PlannedMessage(index, p.entry, m)
                for m in p.messages
                if _message_role(m) != "system"
            )
        return result

    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = planned(boundary_start, history_end)
    prefix = planned(cut.turn_start_index, cut.first_kept_index) if cut.is_split_turn else []
    if not to_summarize and not prefix:
        return None

    file_ops = FileOperations()
    previous_index = -1
    previous_summary: Any = None
    if previous >= 0:
        raw = projected[previous].entry.raw
        previous_index = positions[id(projected[previous].entry)]
        previous_summary = raw.get("summary", MISSING)
        if not js_truthy(raw.get("fromHook")) and js_truthy(raw.get("details")):
            file_ops.add_details(raw.get("details"))
    for item in to_summarize + prefix:
        file_ops.add_message(item.message)

    first_kept = projected[cut.first_kept_index].entry
    return CompactionPreparation(
        path=path,
        first_kept_index=positions[id(first_kept)],
        first_kept_entry_id=first_kept.id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        has_previous_summary=previous >= 0,
        file_ops=file_ops,
        settings=settings,
        previous_compaction_index=previous_index,
        kept_entries=[p.entry for p in projected[cut.first_kept_index :]],
        pi=pi,
    )


def _is_recovery_suffix(suffix: Sequence[ProjectedEntry]) -> bool:
    """After the cut, only a hidden failed attempt (Pi 1.x's overflow recovery, §7.2 rule 5).

    Everything after the cut is either invisible by nature or a message an edit omitted,
    at least one of them an omitted assistant reply, with no compaction and no replacement
    edit of anything outside that omitted set. The prompt before the hidden reply is then
    summarised as the turn prefix instead of being kept.
    """

    def visible(p: ProjectedEntry) -> bool:
        return p.entry.raw.get("type") != "context_edit" and bool(entry_messages(p.entry))

    def omitted(p: ProjectedEntry) -> bool:
        return visible(p) and not p.messages

    omitted_ids = {id_key(p.entry.raw.get("id", MISSING)) for p in suffix if omitted(p)}
    for p in suffix:
        raw = p.entry.raw
        if (
            raw.get("type") == "context_edit"
            and raw.get("replacement", MISSING) is not None
            and id_key(raw.get("targetId", MISSING)) not in omitted_ids
        ):
            return False
    has_omitted_reply = any(
        p.entry.raw.get("type") == "message" and _role(p.entry) == "assistant" and omitted(p)
        for p in suffix
    )
    return has_omitted_reply and all(
        p.entry.raw.get("type") != "compaction" and (not visible(p) or omitted(p)) for p in suffix
    )


def _planned_058(path: Sequence[Entry], start: int, stop: int) -> list[PlannedMessage]:
    result = []
    for i in range(start, stop):
        entry = path[i]
        message = entry_to_message(entry)
        if js_truthy(message):
            result.append(PlannedMessage(i, entry, message))
    return result


def _prepare_058(path: list[Entry], settings: CompactionSettings) -> CompactionPreparation | None:
    """v0.58.3's ``prepareCompaction``, data-losing defects included (§12.8, §12.9)."""
    previous = _last_compaction_index(path)
    boundary_start = previous + 1
    boundary_end = len(path)
    usage_messages = [p.message for p in _planned_058(path, max(previous, 0), boundary_end)]
    tokens_before = estimate_context_tokens(usage_messages, pi=Pi.V0_58).tokens

    cut = _find_cut_point_058(path, boundary_start, boundary_end, settings.keep_recent_tokens)
    if cut.first_kept_index >= len(path):
        return None
    first_kept_entry = path[cut.first_kept_index]
    if not js_truthy(first_kept_entry.id):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _planned_058(path, boundary_start, history_end)
    prefix = (
        _planned_058(path, cut.turn_start_index, cut.first_kept_index) if cut.is_split_turn else []
    )
    has_previous = previous >= 0
    previous_summary = path[previous].raw.get("summary", MISSING) if has_previous else None

    file_ops = FileOperations()
    if has_previous:
        raw = path[previous].raw
        if not js_truthy(raw.get("fromHook")) and js_truthy(raw.get("details")):
            file_ops.add_details(raw.get("details"))
    for planned in to_summarize + prefix:
        file_ops.add_message(planned.message, nested_calls=False)

    return CompactionPreparation(
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
        previous_compaction_index=previous,
        kept_entries=path[cut.first_kept_index :],
        pi=Pi.V0_58,
    )


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


def _truncate_for_summary(text: str, limit: int, *, keep_pairs: bool) -> str:
    """The first ``limit`` UTF-16 units and a marker saying how many more there were.

    With ``keep_pairs`` (Pi 1.x) a surrogate pair is never split: the kept text then ends
    one unit early, and the count is not adjusted (as in Pi).
    """
    length = utf16_len(text)
    if length <= limit:
        return text
    head = utf16_truncate(text, limit)
    if keep_pairs and head and "\ud800" <= head[-1] <= "\udbff":
        units = text.encode("utf-16-le", "surrogatepass")
        following = int.from_bytes(units[limit * 2 : limit * 2 + 2], "little")
        if 0xDC00 <= following <= 0xDFFF:
            head = head[:-1]
    return head + f"\n\n[... {length - limit} more characters truncated]"


def _format_call(block: dict[str, Any]) -> str:
    """``name(k1=<json>, k2=<json>)`` with keys in JavaScript enumeration order."""
    arguments = block.get("arguments")
    if isinstance(arguments, dict):
        decoded = {str(k): v for k, v in arguments.items()}
        pairs = [(k, decoded[k]) for k in js_key_order(decoded)]
    elif isinstance(arguments, list):
        pairs = [(str(i), v) for i, v in enumerate(arguments)]
    elif isinstance(arguments, str):  # Object.entries of a string: its UTF-16 code units
        units = arguments.encode("utf-16-le", "surrogatepass")
        pairs = [
            (str(i), units[i * 2 : i * 2 + 2].decode("utf-16-le", "surrogatepass"))
            for i in range(len(units) // 2)
        ]
    else:
        pairs = []
    rendered = ", ".join(f"{k}={dumps(v)}" for k, v in pairs)
    return f"{js_string(block.get('name', MISSING))}({rendered})"


def serialize_conversation(messages: Sequence[Any], *, pi: PiLike | None = None) -> str:
    """``serializeConversation``: model messages as the text a summarizer reads (§7.7).

    Pi 1.x leaves thinking out and never splits a surrogate pair when it cuts a long tool
    result; v0.58.3 writes thinking as ``[Assistant thinking]:`` lines.
    """
    newer = Pi.resolve(pi) >= Pi.V1_6
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
            if thinking and not newer:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            if isinstance(content, str) and newer:
                text = content
            else:
                text = "".join(_join_text(content, "text", "text", "") or [])
            if text:
                cut = _truncate_for_summary(text, TOOL_RESULT_MAX_CHARS, keep_pairs=newer)
                parts.append(f"[Tool result]: {cut}")
    return "\n\n".join(parts)
