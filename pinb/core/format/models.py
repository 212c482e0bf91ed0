"""Typed values for Pi's session format: header, the eleven entry types, messages, content.

The eleven types are Pi 1.x's (v0.58.3's nine plus ``usage`` and ``context_edit``); other
types, such as the ``leaf`` and ``active_tools_change`` entries of Pi's agent harness, are
read as :class:`UnknownEntry` and written back unchanged, as Pi does.

The Python API is snake_case; the wire stays Pi's camelCase. Every model keeps unknown
fields (``extra="allow"``) and writes them back. ``to_wire()`` produces the dict Pi would
write: keys in Pi's order, optional fields omitted rather than written as ``null``, with
the two exceptions Pi makes (a root's ``parentId`` and a ``leaf`` entry's ``targetId``).

Reading does not go through these models: the store keeps each line's dict verbatim and
validates lazily (``Entry.model``), because validating every field of every entry up front
costs more than it gives on large sessions (see docs/performance.md).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CompactionEntry",
    "CompactionSummaryMessage",
    "ContentBlock",
    "ContextEditEntry",
    "ContextReplacement",
    "Cost",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "EntryModel",
    "ImageContent",
    "LabelEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "OtherMessage",
    "SessionHeader",
    "SessionInfoEntry",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevelChangeEntry",
    "ToolCall",
    "ToolResultMessage",
    "UnknownEntry",
    "Usage",
    "UsageEntry",
    "UserMessage",
    "WireModel",
    "parse_entry",
    "parse_message",
]

CURRENT_VERSION = 3


class WireModel(BaseModel):
    """Base of every format model: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_assignment=False,
    )

    #: Keys that are written as ``null`` instead of being omitted when ``None``.
    _nullable_keys: ClassVar[tuple[str, ...]] = ()
    #: Pi's key order for this object (wire names); keys not listed keep their place after.
    _wire_order: ClassVar[tuple[str, ...]] = ()

    def to_wire(self) -> dict[str, Any]:
        """The dict Pi would write for this value (key order and omission rules of §2.6)."""
        data = self.model_dump(by_alias=True, exclude_none=True)
        for key in self._nullable_keys:
            data.setdefault(key, None)
        if self._wire_order:
            ordered = {k: data[k] for k in self._wire_order if k in data}
            ordered.update((k, v) for k, v in data.items() if k not in ordered)
            data = ordered
        return data


# --- content blocks -----------------------------------------------------------------------


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ThinkingContent(WireModel):
    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None


class ToolCall(WireModel):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None


ContentBlock = Annotated[
    TextContent | ImageContent | ThinkingContent | ToolCall, Field(discriminator="type")
]
UserContent = Annotated[TextContent | ImageContent, Field(discriminator="type")]


# --- usage --------------------------------------------------------------------------------


class Cost(WireModel):
    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    total: float = 0


class Usage(WireModel):
    """Token counts and cost of one model call; missing numbers default to 0 (§3.5)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)

    def context_tokens(self) -> int:
        """``calculateContextTokens``: ``totalTokens`` if non-zero, else the sum of parts."""
        return self.total_tokens or (self.input + self.output + self.cache_read + self.cache_write)


# --- messages -----------------------------------------------------------------------------


class UserMessage(WireModel):
    role: Literal["user"] = "user"
    content: str | list[UserContent]
    timestamp: int


class AssistantMessage(WireModel):
    role: Literal["assistant"] = "assistant"
    content: list[ContentBlock] = Field(default_factory=list)
    api: str
    provider: str
    model: str
    usage: Usage = Field(default_factory=Usage)
    stop_reason: str
    timestamp: int
    error_message: str | None = None

    def text(self) -> str:
        """All text blocks joined with newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]


class ToolResultMessage(WireModel):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[UserContent] = Field(default_factory=list)
    details: Any = None
    is_error: bool = False
    timestamp: int


class BashExecutionMessage(WireModel):
    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int


class CustomMessage(WireModel):
    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    timestamp: int | None


class BranchSummaryMessage(WireModel):
    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: int | None


class CompactionSummaryMessage(WireModel):
    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int | None


class SystemMessage(WireModel):
    """Pi 1.x's prompt state: base prompt text, named sections and tool changes (§3.3).

    The first request of a session stores the whole prompt and tool set; later system
    messages patch it (a ``None`` section removes that section).
    """

    role: Literal["system"] = "system"
    content: str | list[UserContent] = ""
    sections: dict[str, str | None] | None = None
    tools_added: list[dict[str, Any]] | None = None
    tools_removed: list[dict[str, Any]] | None = None
    timestamp: int = 0


class OtherMessage(WireModel):
    """A role pinb does not model (future roles): passed through."""

    role: str


_KNOWN_ROLES = frozenset(
    {
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
        "system",
    }
)


def _role_tag(value: Any) -> str:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    return role if isinstance(role, str) and role in _KNOWN_ROLES else "other"


AgentMessage = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")]
    | Annotated[BashExecutionMessage, Tag("bashExecution")]
    | Annotated[CustomMessage, Tag("custom")]
    | Annotated[BranchSummaryMessage, Tag("branchSummary")]
    | Annotated[CompactionSummaryMessage, Tag("compactionSummary")]
    | Annotated[SystemMessage, Tag("system")]
    | Annotated[OtherMessage, Tag("other")],
    Discriminator(_role_tag),
]

_message_adapter: TypeAdapter[Any] = TypeAdapter(AgentMessage)


def parse_message(data: dict[str, Any]) -> WireModel:
    """Validate a Pi-shaped message dict into its typed model (raises pydantic's error)."""
    result: WireModel = _message_adapter.validate_python(data)
    return result


# --- header and entries -------------------------------------------------------------------


class SessionHeader(WireModel):
    """The first line of a session file."""

    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "version",
        "id",
        "timestamp",
        "cwd",
        "parentSession",
    )

    type: Literal["session"] = "session"
    version: int | None = None
    id: str
    timestamp: str | None = None
    cwd: str | None = None
    parent_session: str | None = None


class _EntryBase(WireModel):
    _nullable_keys: ClassVar[tuple[str, ...]] = ("parentId",)
    _wire_order: ClassVar[tuple[str, ...]] = ("type", "id", "parentId", "timestamp")

    id: str
    parent_id: str | None = None
    timestamp: str


class MessageEntry(_EntryBase):
    type: Literal["message"] = "message"
    message: AgentMessage


class ThinkingLevelChangeEntry(_EntryBase):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str


class ModelChangeEntry(_EntryBase):
    type: Literal["model_change"] = "model_change"
    provider: str
    model_id: str


class CompactionEntry(_EntryBase):
    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "usage",
        "fromHook",
        "systemMessage",
    )

    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int = 0
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None
    system_message: SystemMessage | None = None


class BranchSummaryEntry(_EntryBase):
    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "id",
        "parentId",
        "timestamp",
        "fromId",
        "summary",
        "details",
        "usage",
        "fromHook",
    )

    type: Literal["branch_summary"] = "branch_summary"
    from_id: str
    summary: str
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None


class CustomEntry(_EntryBase):
    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "customType",
        "data",
        "id",
        "parentId",
        "timestamp",
    )

    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


class CustomMessageEntry(_EntryBase):
    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "customType",
        "content",
        "display",
        "details",
        "id",
        "parentId",
        "timestamp",
    )

    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None


class LabelEntry(_EntryBase):
    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "id",
        "parentId",
        "timestamp",
        "targetId",
        "label",
    )

    type: Literal["label"] = "label"
    target_id: str
    label: str | None = None


class SessionInfoEntry(_EntryBase):
    type: Literal["session_info"] = "session_info"
    name: str | None = None


class UsageEntry(_EntryBase):
    """Pi 1.x: model usage outside the conversation (e.g. prompt-cache warming); inert."""

    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "id",
        "parentId",
        "timestamp",
        "kind",
        "provider",
        "model",
        "usage",
        "note",
    )

    type: Literal["usage"] = "usage"
    kind: str
    provider: str
    model: str
    usage: Usage
    note: str | None = None


class ContextReplacement(WireModel):
    """New content for an edited entry (string or content blocks)."""

    content: str | list[ContentBlock]


class ContextEditEntry(_EntryBase):
    """Pi 1.x: replace (``{content}``) or omit (``None``) an earlier entry in the context.

    The stored entries never change; the latest edit of a target on the active path
    decides what the model sees (§5.6).
    """

    _nullable_keys: ClassVar[tuple[str, ...]] = ("parentId", "replacement")
    _wire_order: ClassVar[tuple[str, ...]] = (
        "type",
        "id",
        "parentId",
        "timestamp",
        "targetId",
        "replacement",
    )

    type: Literal["context_edit"] = "context_edit"
    target_id: str
    replacement: ContextReplacement | None = None


class UnknownEntry(WireModel):
    """An entry type pinb does not know: kept and written back unchanged."""

    type: str
    id: str | None = None
    parent_id: str | None = None
    timestamp: Any = None


ENTRY_TYPES: dict[str, type[WireModel]] = {
    "message": MessageEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "model_change": ModelChangeEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
    "usage": UsageEntry,
    "context_edit": ContextEditEntry,
}

EntryModel = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | UsageEntry
    | ContextEditEntry
    | UnknownEntry
)


def parse_entry(data: dict[str, Any]) -> EntryModel:
    """Validate one entry dict into its typed model; unknown types become ``UnknownEntry``."""
    model = ENTRY_TYPES.get(data.get("type", ""), UnknownEntry)
    result: EntryModel = model.model_validate(data)  # type: ignore[assignment]
    return result
