"""What the model sees: ``build_session_context`` and ``convert_to_llm`` (spec §5).

Messages are Pi's wire dicts, passed through verbatim (unknown fields included), exactly
the objects Pi holds in memory; :func:`pinb.core.format.models.parse_message` gives a typed view.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import Any, Final

from ..format.content import content_text
from ..format.entries import MISSING, Entry, id_key
from ..format.target import DEFAULT_PI, Pi, PiLike
from ..format.tree import (
    KIND_ASSISTANT,
    KIND_COMPACTION,
    KIND_EDIT,
    KIND_MESSAGE,
    KIND_MODEL,
    KIND_THINKING,
    ParentLoopError,
    SessionIndex,
)
from ..js.wire import js_date_ms, js_string, js_truthy

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "UNSET",
    "ProjectedEntry",
    "SessionContext",
    "apply_edit",
    "bash_execution_to_text",
    "build_session_context",
    "context_entries",
    "convert_to_llm",
    "current_system_message",
    "entry_messages",
    "entry_to_message",
    "extend_context",
    "select_context_entries",
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
class ProjectedEntry:
    """One entry of the context selection and the messages it contributes to the model.

    ``messages`` is what the model sees after context edits; ``edit`` is the
    ``context_edit`` entry that changed (or omitted) this entry, if any.
    """

    entry: Entry
    messages: list[Any]
    edit: Entry | None = None

    @property
    def omitted(self) -> bool:
        """An edit removed everything this entry would have contributed."""
        return self.edit is not None and self.edit.raw.get("replacement", MISSING) is None


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
    sources:
        For each message, the entry it came from (the compaction entry for its summary and
        its system checkpoint).
    selected:
        The path entries the context is built from, in order (Pi's ``buildContextEntries``).
    entries:
        The same, each with the messages it contributes after edits (Pi's projection);
        entries that contribute nothing are included. Built on first use.
    edits:
        The ``context_edit`` entries in effect, by the id of the entry they edit.
    compaction:
        The compaction applied (the last one on the path), if any.
    path:
        The full root-to-leaf path the context was built from.
    pi:
        The Pi release whose rules built it.
    """

    messages: list[Any] = field(default_factory=list)
    thinking_level: Any = "off"
    model: dict[str, Any] | None = None
    sources: list[Entry] = field(default_factory=list)
    selected: list[Entry] = field(default_factory=list)
    edits: dict[object, Entry] = field(default_factory=dict)
    compaction: Entry | None = None
    path: list[Entry] = field(default_factory=list)
    pi: Pi = DEFAULT_PI
    #: How many ``context_edit`` entries the path holds (anywhere on it).
    branch_edits: int = 0
    #: ``convert_to_llm(messages)``, kept once computed and extended with the context.
    llm: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    #: The same without system messages (for requests that send the prompt up front).
    llm_plain: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    _system: Any = field(default=MISSING, repr=False, compare=False)
    _entries: list[ProjectedEntry] | None = field(default=None, repr=False, compare=False)

    @property
    def entries(self) -> list[ProjectedEntry]:
        """Each selected entry with the messages it contributes (see the class docstring)."""
        if self._entries is None:
            self._entries = self._project()
        return self._entries

    def _project(self) -> list[ProjectedEntry]:
        # Messages are in selection order, each tagged with its source entry.
        sources, messages, edits = self.sources, self.messages, self.edits
        projected = []
        at = 0
        for position, entry in enumerate(self.selected):
            produced = []
            while at < len(sources) and sources[at] is entry:
                produced.append(messages[at])
                at += 1
            edit = None
            if edits and not (position > 0 and entry.raw.get("type") == "compaction"):
                edit = edits.get(id_key(entry.raw.get("id", MISSING)))
            projected.append(ProjectedEntry(entry, produced, edit))
        return projected

    def to_wire(self) -> dict[str, Any]:
        """Pi's JSON for the context: ``{messages, thinkingLevel, model}``."""
        data: dict[str, Any] = {"messages": self.messages}
        if self.thinking_level is not MISSING:
            data["thinkingLevel"] = self.thinking_level
        data["model"] = self.model
        return data

    def to_llm(self, *, system: bool = True) -> list[dict[str, Any]]:
        """:func:`convert_to_llm` of these messages (computed once, then kept).

        With ``system=False`` system messages are left out: for a request that sends the
        replayed system prompt in front instead (see :func:`current_system_message`).
        """
        if self.llm is None:
            self.llm = convert_to_llm(self.messages, pi=self.pi)
        if system:
            return self.llm
        if self.llm_plain is None:
            self.llm_plain = [m for m in self.llm if m.get("role") != "system"]
        return self.llm_plain

    def system_message(self) -> dict[str, Any] | None:
        """:func:`current_system_message` of these messages (computed once, then kept)."""
        if self._system is MISSING:
            self._system = current_system_message(self.messages)
        return self._system  # type: ignore[no-any-return]

    def copy(self) -> SessionContext:
        """A context of its own: new lists, the same message objects."""
        return SessionContext(
            messages=list(self.messages),
            thinking_level=self.thinking_level,
            model=dict(self.model) if self.model is not None else None,
            sources=list(self.sources),
            selected=list(self.selected),
            edits=dict(self.edits),
            compaction=self.compaction,
            path=list(self.path),
            pi=self.pi,
            branch_edits=self.branch_edits,
            llm=list(self.llm) if self.llm is not None else None,
            llm_plain=list(self.llm_plain) if self.llm_plain is not None else None,
            _system=self._system,
            _entries=list(self._entries) if self._entries is not None else None,
        )

    def edit_of(self, entry_id: object) -> Entry | None:
        """The ``context_edit`` in effect for ``entry_id``, if any."""
        return self.edits.get(id_key(entry_id))


def _str(value: Any) -> str | None:
    """``value`` if it is a string: roles and types in odd files can be lists or objects."""
    return value if isinstance(value, str) else None


def _present(raw: dict[str, Any], out: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if key in raw:
            out[key] = raw[key]


def custom_message_from_entry(
    raw: dict[str, Any], *, empty_content: bool = False
) -> dict[str, Any]:
    """The ``custom`` agent message of a ``custom_message`` entry (undefined keys stay absent).

    With ``empty_content`` (Pi 1.x's context) a missing or ``null`` content reads as ``[]``.
    """
    message: dict[str, Any] = {"role": "custom"}
    _present(raw, message, "customType")
    content = raw.get("content", MISSING)
    if empty_content and (content is None or content is MISSING):
        message["content"] = []
    elif content is not MISSING:
        message["content"] = content
    _present(raw, message, "display", "details")
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


_EMPTY_LIST_ROLES = frozenset({"user", "assistant", "toolResult"})


#: Entry types that can contribute messages (everything else never does).
_PRODUCING = frozenset({"message", "custom_message", "branch_summary", "compaction"})


def _stored_message(message: Any, pi: Pi) -> Any:
    """A ``message`` entry's message; Pi 1.x reads a missing/null content as empty."""
    if pi >= Pi.V1_6 and isinstance(message, dict) and message.get("content") is None:
        role = _str(message.get("role"))
        if role == "system":
            return {**message, "content": ""}
        if role in _EMPTY_LIST_ROLES:
            return {**message, "content": []}
    return message


def entry_messages(entry: Entry, pi: Pi = DEFAULT_PI) -> list[Any]:
    """Pi's ``sessionEntryToContextMessages``: the messages one entry contributes, unedited.

    ``message`` → its message; ``custom_message`` → ``custom``; a non-empty
    ``branch_summary`` → ``branchSummary``; ``compaction`` → its system checkpoint (Pi 1.x,
    when stored) then ``compactionSummary``; anything else → nothing.
    """
    raw = entry.raw
    kind = raw.get("type")
    if kind == "message":
        return [_stored_message(raw.get("message"), pi)]
    if kind == "custom_message":
        return [custom_message_from_entry(raw, empty_content=pi >= Pi.V1_6)]
    if kind == "branch_summary":
        return [branch_summary_message(raw)] if js_truthy(raw.get("summary")) else []
    if kind == "compaction":
        summary = compaction_summary_message(raw)
        checkpoint = raw.get("systemMessage")
        return [checkpoint, summary] if pi >= Pi.V1_6 and js_truthy(checkpoint) else [summary]
    return []


def entry_to_message(entry: Entry, *, empty_branch_summaries: bool = True) -> Any:
    """The one agent message that stands for an entry in lists and views (Pi's ``toMsg``).

    Like :func:`entry_messages` but one message per entry: a compaction is its summary, and
    a ``branch_summary`` is shown even when empty unless ``empty_branch_summaries`` is false.
    Entries that stand for no message give ``MISSING``.
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


_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})


def apply_edit(messages: list[Any], edit: Entry | None) -> list[Any]:
    """Pi 1.x's ``projectContextEntry``: an entry's messages after its latest context edit.

    ``replacement: null`` removes them all; ``{content}`` replaces the content of user,
    assistant, tool-result and custom messages (a string becomes one text block for
    assistant and tool results) and leaves every other role as it is.
    """
    if edit is None:
        return messages
    replacement = edit.raw.get("replacement", MISSING)
    if replacement is None:
        return []
    if replacement is MISSING:
        return messages  # Pi throws here; pinb reports it (see SessionIndex) and ignores it
    content = replacement.get("content", MISSING) if isinstance(replacement, dict) else MISSING
    result = []
    for message in messages:
        role = _str(message.get("role")) if isinstance(message, dict) else None
        if role not in _EDITABLE_ROLES:
            result.append(message)
            continue
        value = content
        if role in ("assistant", "toolResult") and isinstance(content, str):
            value = [{"type": "text", "text": content}]
        edited = dict(message)
        if value is MISSING:
            edited.pop("content", None)  # JSON has no undefined: the key disappears
        else:
            edited["content"] = value
        result.append(edited)
    return result


def current_system_message(messages: Sequence[Any]) -> dict[str, Any] | None:
    """Pi 1.x's ``getCurrentSystemMessage``: every system message replayed into one (§3.3).

    Texts are joined with a blank line, sections merged by name (``null`` removes one),
    tools kept by name (removals before additions), the first timestamp kept. ``None``
    when no system message has a timestamp and no tool is declared.
    """
    texts: list[str] = []
    sections: dict[Any, Any] = {}
    tools: dict[Any, Any] = {}
    timestamp: Any = None
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "system":
            continue
        if timestamp is None:
            timestamp = message.get("timestamp")
        text = content_text(message.get("content"))
        if text:
            texts.append(text)
        patch = message.get("sections")
        for name, value in patch.items() if isinstance(patch, dict) else ():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for tool in _list(message.get("toolsRemoved")):
            tools.pop(_tool_name(tool), None)
        for tool in _list(message.get("toolsAdded")):
            tools[_tool_name(tool)] = tool
    if timestamp is None and not tools:
        return None
    result: dict[str, Any] = {"role": "system", "content": "\n\n".join(texts)}
    if sections:
        result["sections"] = sections
    if tools:
        result["toolsAdded"] = list(tools.values())
    result["timestamp"] = timestamp if timestamp is not None else 0
    return result


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _tool_name(tool: Any) -> Any:
    """The key of ``tool`` in Pi's ``Map`` of tools (keyed by ``tool.name``, SameValueZero).

    Any JSON value can stand there: an object or array is its own key (JavaScript compares
    them by identity), and ``true`` is not ``1``, as Python's dict would have it.
    """
    name = tool.get("name", MISSING) if isinstance(tool, dict) else MISSING
    if isinstance(name, dict | list):
        return ("object", id(name))
    if isinstance(name, bool):
        return ("boolean", name)
    return name


def _resolve_leaf(index: SessionIndex, leaf_id: object) -> Entry | None:
    if leaf_id is None:
        return None
    leaf = index.get(leaf_id) if leaf_id is not UNSET and js_truthy(leaf_id) else None
    if leaf is None and index.entries:
        leaf = index.entries[-1]
    return leaf


def _settings(path: Sequence[Entry]) -> tuple[Any, dict[str, Any] | None, Entry | None, int]:
    """Thinking level, model and the last compaction over the whole path (§5.3), and the
    number of context edits on it.

    Each setting is the last one on the path, so the walk goes from the leaf up and stops
    looking for a setting once it has found it.
    """
    thinking_level: Any = _NOT_FOUND
    model: Any = _NOT_FOUND
    compaction: Entry | None = None
    edits = 0
    for i in range(len(path) - 1, -1, -1):
        raw = path[i].raw
        kind = raw.get("type")
        if kind == "context_edit":
            edits += 1
        elif kind == "message":
            if model is _NOT_FOUND:
                message = raw.get("message")
                if message.__class__ is dict and message.get("role") == "assistant":
                    model = {}
                    if "provider" in message:
                        model["provider"] = message["provider"]
                    if "model" in message:
                        model["modelId"] = message["model"]
        elif kind == "thinking_level_change":
            if thinking_level is _NOT_FOUND:
                thinking_level = raw.get("thinkingLevel", MISSING)
        elif kind == "model_change":
            if model is _NOT_FOUND:
                model = {}
                _present(raw, model, "provider")
                if "modelId" in raw:
                    model["modelId"] = raw["modelId"]
        elif kind == "compaction" and compaction is None:
            compaction = path[i]
    return (
        "off" if thinking_level is _NOT_FOUND else thinking_level,
        None if model is _NOT_FOUND else model,
        compaction,
        edits,
    )


_NOT_FOUND: Final = object()


def _settings_at(
    index: SessionIndex, positions: list[int]
) -> tuple[Any, dict[str, Any] | None, Entry | None, int, bytes]:
    """:func:`_settings` from the index's kind bytes: only the entries that matter are read.

    Also returns the path's kind bytes (one per position), which the context reads."""
    kinds = bytes(map(index.kinds.__getitem__, positions))  # one C pass, searched below
    entries = index.entries
    thinking_level: Any = _NOT_FOUND
    model: Any = _NOT_FOUND
    compaction: Entry | None = None
    # The last of each kind that sets something, found from the end of the path.
    found_model = max(kinds.rfind(KIND_ASSISTANT), kinds.rfind(KIND_MODEL))
    if found_model >= 0:
        raw = entries[positions[found_model]].raw
        model = {}
        if kinds[found_model] == KIND_ASSISTANT:
            message = raw["message"]
            if "provider" in message:
                model["provider"] = message["provider"]
            if "model" in message:
                model["modelId"] = message["model"]
        else:
            _present(raw, model, "provider")
            if "modelId" in raw:
                model["modelId"] = raw["modelId"]
    found_thinking = kinds.rfind(KIND_THINKING)
    if found_thinking >= 0:
        thinking_level = entries[positions[found_thinking]].raw.get("thinkingLevel", MISSING)
    found_compaction = kinds.rfind(KIND_COMPACTION)
    if found_compaction >= 0:
        compaction = entries[positions[found_compaction]]
    return (
        "off" if thinking_level is _NOT_FOUND else thinking_level,
        None if model is _NOT_FOUND else model,
        compaction,
        kinds.count(KIND_EDIT),
        kinds,
    )


def _is_system(entry: Entry) -> bool:
    message = entry.raw.get("message") if entry.raw.get("type") == "message" else None
    return isinstance(message, dict) and message.get("role") == "system"


def select_context_entries(
    path: Sequence[Entry], compaction: Entry | None, pi: Pi = DEFAULT_PI
) -> list[Entry]:
    """Pi's ``buildContextEntries``: the path entries the context is built from (§5.4).

    Without a compaction, the whole path. Otherwise the last compaction first, then the
    entries it kept (from ``firstKeptEntryId`` up to it; Pi 1.x leaves out system messages
    there, their content lives on in the compaction's checkpoint), then everything after it.
    """
    if compaction is None:
        return list(path)
    compaction_key = id_key(compaction.id)
    position = next(
        i
        for i in range(len(path) - 1, -1, -1)
        if path[i].raw.get("type") == "compaction" and id_key(path[i].id) == compaction_key
    )
    first_kept = compaction.raw.get("firstKeptEntryId", MISSING)
    start = position  # nothing before the compaction is kept unless first_kept is found
    # Ids along a path are distinct, so the first match (Pi's) is also the last; the kept
    # range is short, so look from the compaction back.
    for i in range(position - 1, -1, -1):
        entry_id = path[i].raw.get("id", MISSING)
        if entry_id == first_kept and _strict_equal(entry_id, first_kept):
            start = i
            break
    kept = path[start:position]
    if pi >= Pi.V1_6:
        kept = [e for e in kept if not _is_system(e)]
    return [compaction, *kept, *path[position + 1 :]]


def _path_settings(
    index: SessionIndex, leaf: Entry
) -> tuple[list[Entry], tuple[Any, dict[str, Any] | None, Entry | None, int], bytes | None]:
    """The root-to-leaf path, its settings (:func:`_settings`) and the kind byte of each
    of its entries (``None`` when the path was walked as objects)."""
    positions = index.path_positions(leaf)
    if positions is None:  # a parent loop, or an earlier line of a repeated id
        path = index.path_from(leaf)
        return path, _settings(path), None
    *settings, kinds = _settings_at(index, positions)
    path = list(map(index.entries.__getitem__, positions))
    return path, (settings[0], settings[1], settings[2], settings[3]), kinds


def context_entries(
    index: SessionIndex, leaf_id: object = UNSET, *, pi: PiLike | None = None
) -> list[Entry]:
    """The entries the context at ``leaf_id`` is built from, decoded, without building it.

    What :func:`build_session_context` reads (``leaf_id`` as there): a lazy open calls
    this, so the first context after open parses nothing. Found from the leaf up to its
    last compaction and the entries that compaction kept, so a long path is not walked to
    its root (the walk of the whole path was a tenth of an open). When the whole path is
    the context (no compaction on it), each message entry's message is also picked while
    its line is decoded, and kept on the index for the first context: a long path's
    entries are spread over memory, and reading them again cost that context most of its
    time.
    """
    target = Pi.resolve(pi)
    leaf = _resolve_leaf(index, leaf_id)
    if leaf is None:
        return []
    up = index.positions_up(leaf)
    if up is not None:
        try:
            chosen, whole = _context_from_leaf(index, up, target)
        except ParentLoopError:
            pass  # the walk over objects below stops at the loop and reports it
        else:
            if whole is None:
                _decode_all(chosen)
            else:
                said = _messages_of(index, chosen, whole, target)
                index.remember(("messages", whole[-1], target), said)
            return chosen
    path, (_, _, compaction, _), _ = _path_settings(index, leaf)
    chosen = select_context_entries(path, compaction, target)
    _decode_all(chosen)
    return chosen


def _decode_all(entries: list[Entry]) -> None:
    for entry in entries:
        if entry._raw is None:
            entry.raw  # noqa: B018 - reading it decodes the line


def _messages_of(
    index: SessionIndex, chosen: list[Entry], positions: list[int], target: Pi
) -> list[Any]:
    """Each entry's line decoded, and the message of each message entry (``None`` for
    the others; Pi 1.x reads one without content as one with empty content)."""
    kinds = index.kinds
    newer = target >= Pi.V1_6
    said: list[Any] = []
    add = said.append
    for entry, at in zip(chosen, positions, strict=True):
        raw = entry._raw
        if raw is None:
            raw = entry.raw
        if kinds[at] not in _MESSAGE_KINDS:
            add(None)
            continue
        message = raw.get("message")
        if newer and message.__class__ is dict and message.get("content") is None:
            message = _stored_message(message, target)
        add(message)
    return said


def _context_from_leaf(
    index: SessionIndex, up: Iterator[int], target: Pi
) -> tuple[list[Entry], list[int] | None]:
    """:func:`select_context_entries` over positions from the leaf up (``up``), and the
    positions of the whole path when it is the context (no compaction on it)."""
    entries = index.entries
    kinds = index.kinds
    after: list[int] = []  # the leaf up to the last compaction, leaf first
    for at in up:
        if kinds[at] != KIND_COMPACTION:
            after.append(at)
            continue
        compaction = entries[at]
        first_kept = compaction.raw.get("firstKeptEntryId", MISSING)
        kept: list[Entry] = []
        for before in up:
            entry = entries[before]
            kept.append(entry)
            entry_id = entry.id
            if entry_id == first_kept and _strict_equal(entry_id, first_kept):
                break
        else:
            kept = []  # the kept entry is not on the path: nothing before it is kept
        kept.reverse()
        if target >= Pi.V1_6:
            kept = [e for e in kept if not (e.type == "message" and e.role == "system")]
        return [compaction, *kept, *(entries[i] for i in reversed(after))], None
    after.reverse()
    index.remember_path(after)  # the whole path was walked: the first context reuses it
    return [entries[i] for i in after], after


def build_session_context(
    entries: SessionIndex | Sequence[Entry],
    leaf_id: object = UNSET,
    *,
    pi: PiLike | None = None,
) -> SessionContext:
    """``buildSessionContext``: the agent messages, thinking level and model at a leaf.

    Parameters
    ----------
    entries:
        A :class:`SessionIndex`, or non-header entries in file order.
    leaf_id:
        ``UNSET`` (default) or an unknown/empty id: the last entry in file order.
        ``None``: before the first entry (empty context). Otherwise the leaf's id.
    pi:
        The Pi release whose rules apply (default: today's Pi). Pi 1.x applies context
        edits, emits a compaction's system checkpoint and reads missing contents as empty.

    Returns
    -------
    SessionContext
    """
    target = Pi.resolve(pi)
    index = entries if isinstance(entries, SessionIndex) else SessionIndex(entries)
    leaf = _resolve_leaf(index, leaf_id)
    if leaf is None:
        return SessionContext(pi=target)
    path, (thinking_level, model, compaction, branch_edits), kinds = _path_settings(index, leaf)
    selected = select_context_entries(path, compaction, target)
    if entries is index:  # odd field types become problems of the session, found once
        index.check_fields(selected)

    edits: dict[object, Entry] = {}
    if target >= Pi.V1_6 and (branch_edits or kinds is None):  # none on the path: none here
        for entry in selected:
            if entry.raw.get("type") == "context_edit":
                edits[id_key(entry.raw.get("targetId", MISSING))] = entry

    messages: list[Any] = []
    sources: list[Entry] = []
    append_message = messages.append
    append_source = sources.append
    newer = target >= Pi.V1_6
    if compaction is None and kinds is not None and not edits:
        # The whole path, no edit: the message entries (known by their kind byte) read in
        # a few passes at C speed, the others (few) each the general way, in their places.
        prepared = index.recall(("messages", index.position_of(leaf), target))
        _add_path(selected, kinds, newer, target, messages, sources, prepared)
    else:
        for position, entry in enumerate(selected):
            raw = entry.raw
            if not edits and raw.get("type") == "message":  # the common case, kept lean
                message = raw.get("message")
                if newer and message.__class__ is dict and message.get("content") is None:
                    message = _stored_message(message, target)
                append_message(message)
                append_source(entry)
                continue
            _produce(entry, position, target, edits, messages, sources)
    return SessionContext(
        messages=messages,
        thinking_level=thinking_level,
        model=model,
        sources=sources,
        selected=selected,
        edits=edits,
        compaction=compaction,
        path=path,
        pi=target,
        branch_edits=branch_edits,
    )


#: A byte of an entry that is not a message (:mod:`.tree`'s kinds).
_NOT_MESSAGE = re.compile(b"[^" + bytes((KIND_MESSAGE, KIND_ASSISTANT)) + b"]")
_raw_of = attrgetter("_raw")
#: Stands for an entry that is not a message while the messages' contents are checked.
_HAS_CONTENT: Final = {"content": True}


def _add_path(
    selected: list[Entry],
    kinds: bytes,
    newer: bool,
    target: Pi,
    messages: list[Any],
    sources: list[Entry],
    prepared: list[Any] | None,
) -> None:
    """The messages of a whole path without edits (``kinds``: each entry's kind byte):
    a message entry's is its line's ``message`` (Pi 1.x reads one without content as
    one with empty content), any other entry's what :func:`_produce` makes of it.

    A long path's entries are spread over memory, so each pass reads one field of every
    entry in C (``map``) rather than every field of one entry in Python; and the first
    context after open has them ready (``prepared``: see :func:`context_entries`).
    """
    others = [found.start() for found in _NOT_MESSAGE.finditer(kinds)]
    if prepared is not None:
        said = prepared
    else:
        raws = list(map(_raw_of, selected))
        if None in raws:  # a line not decoded yet
            raws = [entry.raw for entry in selected]
        said = list(map(dict.get, raws, repeat("message")))
    if newer and prepared is None:
        checked = list(said)
        for at in others:
            checked[at] = _HAS_CONTENT
        if set(map(type, checked)) != {dict} or None in map(dict.get, checked, repeat("content")):
            for at, kind in enumerate(kinds):
                message = said[at]
                if kind in _MESSAGE_KINDS and message.__class__ is dict:
                    if message.get("content") is None:
                        said[at] = _stored_message(message, target)
    start = 0
    for at in others:
        messages.extend(said[start:at])
        sources.extend(selected[start:at])
        _produce(selected[at], at, target, {}, messages, sources)
        start = at + 1
    messages.extend(said[start:])
    sources.extend(selected[start:])


_MESSAGE_KINDS = frozenset({KIND_MESSAGE, KIND_ASSISTANT})


def _produce(
    entry: Entry,
    position: int,
    target: Pi,
    edits: dict[object, Entry],
    messages: list[Any],
    sources: list[Entry],
) -> None:
    """Add the messages an entry of the selection contributes (after its edit)."""
    raw = entry.raw
    kind = raw.get("type")
    if kind == "compaction" and position > 0:
        return  # an older compaction inside the kept range contributes nothing (§5.5)
    if kind.__class__ is not str or kind not in _PRODUCING:
        return
    produced = entry_messages(entry, target)
    if edits:
        edit = edits.get(id_key(raw.get("id", MISSING)))
        if edit is not None:
            produced = apply_edit(produced, edit)
    messages.extend(produced)
    sources.extend([entry] * len(produced))


def extend_context(context: SessionContext, entry: Entry) -> bool:
    """Extend, in place, a context built at ``entry``'s parent by ``entry`` as the new leaf.

    This is what an append does to the context of the leaf, without walking the path
    again (a long session's agent turn stays cheap). Returns ``False`` when ``entry``
    changes more than the end of the context (a compaction, a context edit, or an entry an
    earlier edit names): rebuild then.
    """
    raw = entry.raw
    kind = raw.get("type")
    if kind == "compaction" or kind == "context_edit":
        return False
    if context.edits and id_key(raw.get("id", MISSING)) in context.edits:
        return False
    pi = context.pi
    produced: list[Any]
    if kind == "message":
        message = raw.get("message")
        if message.__class__ is dict and message.get("role") == "assistant":
            model: dict[str, Any] = {}
            if "provider" in message:
                model["provider"] = message["provider"]
            if "model" in message:
                model["modelId"] = message["model"]
            context.model = model
        produced = [_stored_message(message, pi)]
    elif kind == "thinking_level_change":
        context.thinking_level = raw.get("thinkingLevel", MISSING)
        produced = []
    elif kind == "model_change":
        model = {}
        _present(raw, model, "provider")
        if "modelId" in raw:
            model["modelId"] = raw["modelId"]
        context.model = model
        produced = []
    elif kind.__class__ is str and kind in _PRODUCING:
        produced = entry_messages(entry, pi)
    else:
        produced = []
    context.path.append(entry)
    context.selected.append(entry)
    if context._entries is not None:
        context._entries.append(ProjectedEntry(entry, produced, None))
    if produced:
        context.messages.extend(produced)
        context.sources.extend([entry] * len(produced))
        if context._system is not MISSING and any(
            m.__class__ is dict and m.get("role") == "system" for m in produced
        ):
            # The prompt changed (rare: its first request, a new tool): replay it again.
            context._system = current_system_message(context.messages)
        if context.llm is not None:
            converted = convert_to_llm(produced, pi=pi)
            context.llm.extend(converted)
            if context.llm_plain is not None:
                context.llm_plain.extend(m for m in converted if m.get("role") != "system")
    return True


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


_PASSED_058 = frozenset({"user", "assistant", "toolResult"})
_PASSED_1X = _PASSED_058 | {"system"}


def convert_to_llm(messages: Sequence[Any], *, pi: PiLike | None = None) -> list[dict[str, Any]]:
    """``convertToLlm``: agent messages to the roles a model takes.

    User, assistant and tool-result messages (and, in Pi 1.x, system messages) pass through
    as the same objects; bash executions, custom messages and summaries become user
    messages with Pi's wrappers; ``!!`` bash executions and unknown roles are dropped.
    """
    passed = _PASSED_1X if Pi.resolve(pi) >= Pi.V1_6 else _PASSED_058
    result: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = _str(message.get("role"))
        timestamp = message.get("timestamp", MISSING)
        converted: dict[str, Any] | None
        if role in passed:
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
