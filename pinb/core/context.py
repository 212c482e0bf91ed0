"""What the model sees: ``build_session_context`` and ``convert_to_llm`` (spec §5).

Messages are Pi's wire dicts, passed through verbatim (unknown fields included), exactly
the objects Pi holds in memory; :func:`pinb.core.models.parse_message` gives a typed view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .entries import MISSING, Entry, id_key
from .tree import SessionIndex
from .wire import js_date_ms, js_string, js_truthy

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "UNSET",
    "SessionContext",
    "bash_execution_to_text",
    "build_session_context",
    "convert_to_llm",
    "entry_to_message",
]

COMPACTION_SUMMARY_PREFIX: Final = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX: Final = "\n</summary>"
BRANCH_SUMMARY_PREFIX: Final = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX: Final = "</summary>"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "No leaf given" (JavaScript ``undefined``), as opposed to an explicit ``None`` leaf.
UNSET: Final = _Unset()


@dataclass
class SessionContext:
    """The result of :func:`build_session_context`.

    Attributes
    ----------
    messages:
        Agent messages (Pi wire dicts) in the order the model sees them.
    thinking_level:
        The last ``thinking_level_change`` on the path, ``"off"`` when none.
    model:
        ``{"provider", "modelId"}`` of the last model change or assistant message, or ``None``.
    active_tool_names:
        [newer] the last ``active_tools_change`` list on the path, or ``None``.
    sources:
        For each message, the entry it came from (the compaction entry for the summary).
    compaction:
        The compaction applied (the last one on the path), if any.
    path:
        The full root-to-leaf path the context was built from.
    """

    messages: list[Any] = field(default_factory=list)
    thinking_level: Any = "off"
    model: dict[str, Any] | None = None
    active_tool_names: list[str] | None = None
    sources: list[Entry] = field(default_factory=list)
    compaction: Entry | None = None
    path: list[Entry] = field(default_factory=list)

    def to_wire(self, *, newer: bool = False) -> dict[str, Any]:
        """Pi's JSON for the context: ``{messages, thinkingLevel, model}``.

        With ``newer=True`` the [newer] ``activeToolNames`` field is included too.
        """
        data: dict[str, Any] = {"messages": self.messages}
        if self.thinking_level is not MISSING:
            data["thinkingLevel"] = self.thinking_level
        data["model"] = self.model
        if newer:
            data["activeToolNames"] = self.active_tool_names
        return data

    def to_llm(self) -> list[dict[str, Any]]:
        """:func:`convert_to_llm` of these messages."""
        return convert_to_llm(self.messages)


def _present(raw: dict[str, Any], out: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if key in raw:
            out[key] = raw[key]


def custom_message_from_entry(raw: dict[str, Any]) -> dict[str, Any]:
    """The ``custom`` agent message of a ``custom_message`` entry (undefined keys stay absent)."""
    message: dict[str, Any] = {"role": "custom"}
    _present(raw, message, "customType", "content", "display", "details")
    message["timestamp"] = js_date_ms(raw.get("timestamp", MISSING))
    return message


def branch_summary_message(raw: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "branchSummary"}
    _present(raw, message, "summary", "fromId")
    message["timestamp"] = js_date_ms(raw.get("timestamp", MISSING))
    return message


def compaction_summary_message(raw: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "compactionSummary"}
    _present(raw, message, "summary", "tokensBefore")
    message["timestamp"] = js_date_ms(raw.get("timestamp", MISSING))
    return message


def entry_to_message(entry: Entry, *, empty_branch_summaries: bool = True) -> Any:
    """Pi's ``toMsg``/``getMessageFromEntry``: the agent message an entry stands for.

    ``message`` → its message; ``custom_message`` → ``custom``; ``branch_summary`` →
    ``branchSummary`` (also when empty, unless ``empty_branch_summaries`` is false);
    ``compaction`` → ``compactionSummary``; anything else → ``MISSING``.
    """
    raw = entry.raw
    kind = raw.get("type")
    if kind == "message":
        return raw.get("message")
    if kind == "custom_message":
        return custom_message_from_entry(raw)
    if kind == "branch_summary":
        if not empty_branch_summaries and not js_truthy(raw.get("summary")):
            return MISSING
        return branch_summary_message(raw)
    if kind == "compaction":
        return compaction_summary_message(raw)
    return MISSING


def _resolve_leaf(index: SessionIndex, leaf_id: object) -> Entry | None:
    if leaf_id is None:
        return None
    leaf = index.get(leaf_id) if leaf_id is not UNSET and js_truthy(leaf_id) else None
    if leaf is None and index.entries:
        leaf = index.entries[-1]
    return leaf


def build_session_context(
    entries: SessionIndex | Sequence[Entry],
    leaf_id: object = UNSET,
    *,
    nested_compactions: bool = False,
) -> SessionContext:
    """``buildSessionContext``: the agent messages, thinking level and model at a leaf.

    Parameters
    ----------
    entries:
        A :class:`SessionIndex`, or non-header entries in file order.
    leaf_id:
        ``UNSET`` (default) or an unknown/empty id: the last entry in file order.
        ``None``: before the first entry (empty context). Otherwise the leaf's id.
    nested_compactions:
        [newer] also turn compactions inside the kept range into summary messages
        (v0.58.3 skips them; the default follows v0.58.3).

    Returns
    -------
    SessionContext
    """
    index = entries if isinstance(entries, SessionIndex) else SessionIndex(entries)
    leaf = _resolve_leaf(index, leaf_id)
    if leaf is None:
        return SessionContext()
    path = index.path_from(leaf)

    thinking_level: Any = "off"
    model: dict[str, Any] | None = None
    active_tools: list[str] | None = None
    compaction: Entry | None = None
    for entry in path:
        raw = entry.raw
        kind = raw.get("type")
        if kind == "thinking_level_change":
            thinking_level = raw.get("thinkingLevel", MISSING)
        elif kind == "model_change":
            model = {}
            _present(raw, model, "provider")
            if "modelId" in raw:
                model["modelId"] = raw["modelId"]
        elif kind == "message":
            message = raw.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                model = {}
                if "provider" in message:
                    model["provider"] = message["provider"]
                if "model" in message:
                    model["modelId"] = message["model"]
        elif kind == "compaction":
            compaction = entry
        elif kind == "active_tools_change":
            names = raw.get("activeToolNames")
            active_tools = list(names) if isinstance(names, list) else None

    messages: list[Any] = []
    sources: list[Entry] = []

    def emit(entry: Entry) -> None:
        raw = entry.raw
        kind = raw.get("type")
        if kind == "message":
            messages.append(raw.get("message"))
        elif kind == "custom_message":
            messages.append(custom_message_from_entry(raw))
        elif kind == "branch_summary":
            if not js_truthy(raw.get("summary")):
                return
            messages.append(branch_summary_message(raw))
        elif kind == "compaction" and nested_compactions:
            messages.append(compaction_summary_message(raw))
        else:
            return
        sources.append(entry)

    if compaction is None:
        for entry in path:
            emit(entry)
    else:
        messages.append(compaction_summary_message(compaction.raw))
        sources.append(compaction)
        compaction_key = id_key(compaction.id)
        position = next(
            i
            for i, e in enumerate(path)
            if e.raw.get("type") == "compaction" and id_key(e.id) == compaction_key
        )
        first_kept = compaction.raw.get("firstKeptEntryId", MISSING)
        start = position  # nothing before the compaction is kept unless first_kept is found
        for i in range(position):
            entry_id = path[i].raw.get("id", MISSING)
            if entry_id == first_kept and _strict_equal(entry_id, first_kept):
                start = i
                break
        for entry in path[start:position]:
            emit(entry)
        for entry in path[position + 1 :]:
            emit(entry)

    return SessionContext(
        messages=messages,
        thinking_level=thinking_level,
        model=model,
        active_tool_names=active_tools,
        sources=sources,
        compaction=compaction,
        path=path,
    )


def _strict_equal(a: object, b: object) -> bool:
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    return id_key(a) == id_key(b)


# ---------------------------------------------------------------------------------------
# convertToLlm
# ---------------------------------------------------------------------------------------


def bash_execution_to_text(message: dict[str, Any]) -> str:
    """The user text a ``bashExecution`` message becomes for the model (§5.5)."""
    text = f"Ran `{js_string(message.get('command', MISSING))}`\n"
    output = message.get("output", MISSING)
    if js_truthy(output):
        text += f"```\n{js_string(output)}\n```"
    else:
        text += "(no output)"
    exit_code = message.get("exitCode", MISSING)
    if js_truthy(message.get("cancelled")):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code is not MISSING and not _is_zero(exit_code):
        text += f"\n\nCommand exited with code {js_string(exit_code)}"
    full_output_path = message.get("fullOutputPath", MISSING)
    if js_truthy(message.get("truncated")) and js_truthy(full_output_path):
        text += f"\n\n[Output truncated. Full output: {js_string(full_output_path)}]"
    return text


def _is_zero(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _user_text(text: str, timestamp: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def convert_to_llm(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """``convertToLlm``: agent messages to the ``user``/``assistant``/``toolResult`` roles.

    User, assistant and tool-result messages pass through as the same objects; bash
    executions, custom messages and summaries become user messages with Pi's wrappers;
    ``!!`` bash executions and unknown roles are dropped.
    """
    result: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        timestamp = message.get("timestamp", MISSING)
        converted: dict[str, Any] | None
        if role in ("user", "assistant", "toolResult"):
            converted = message
        elif role == "bashExecution":
            if js_truthy(message.get("excludeFromContext")):
                continue
            converted = _user_text(bash_execution_to_text(message), timestamp)
        elif role == "custom":
            content = message.get("content", MISSING)
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            converted = {"role": "user", "content": content, "timestamp": timestamp}
        elif role == "branchSummary":
            text = (
                BRANCH_SUMMARY_PREFIX
                + js_string(message.get("summary", MISSING))
                + BRANCH_SUMMARY_SUFFIX
            )
            converted = _user_text(text, timestamp)
        elif role == "compactionSummary":
            text = (
                COMPACTION_SUMMARY_PREFIX
                + js_string(message.get("summary", MISSING))
                + COMPACTION_SUMMARY_SUFFIX
            )
            converted = _user_text(text, timestamp)
        else:
            continue
        if converted.get("timestamp", None) is MISSING:
            del converted["timestamp"]
        if converted.get("content", None) is MISSING:
            del converted["content"]
        result.append(converted)
    return result
