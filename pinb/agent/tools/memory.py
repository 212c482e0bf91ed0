"""The agent's memory tools: ``memory_save``, ``memory_recall`` and ``memory_forget``.

The agent imports the memory store, never the reverse.
"""

from __future__ import annotations

import copy
import os
from typing import Any, ClassVar

from ...memory.records import KINDS, SAVE_KINDS, MemoryNotFoundError, MemoryRecord, MemoryStoreError
from ...memory.store import MemoryStore
from ..tool import Tool, ToolContext, ToolResult

__all__ = [
    "MemoryForgetTool",
    "MemoryRecallTool",
    "MemorySaveTool",
    "format_record",
    "memory_tools",
]

#: Most records one ``memory_recall`` call returns.
MAX_RECALL = 50


def format_record(record: MemoryRecord) -> str:
    """One line for the model: ``#12 [decision] text (tags: a, b; 2025-03-01)``."""
    extra = [f"tags: {', '.join(record.tags)}"] if record.tags else []
    extra.append(record.updated_at[:10])
    if record.kind == "observation":
        extra.append("unreviewed")
    text = " ".join(record.text.split())
    return f"#{record.id} [{record.kind}] {text} ({'; '.join(extra)})"


def _record_details(record: MemoryRecord) -> dict[str, Any]:
    """A record as tool ``details`` (Pi's camelCase on the wire)."""
    details: dict[str, Any] = {
        "id": record.id,
        "kind": record.kind,
        "text": record.text,
        "tags": list(record.tags),
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
    }
    if record.source_session:
        details["sourceSession"] = record.source_session
        details["sourceEntryId"] = record.source_entry
        details["sourceDeleted"] = record.source_deleted
    if record.score is not None:
        details["score"] = record.score
    return details


def _string_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError(f"{name} must be a list of strings")


class _MemoryTool:
    """Shared plumbing: a store opened on first use and the project of the run's cwd."""

    name = ""
    description = ""
    schema: ClassVar[dict[str, Any]] = {}

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(self.schema)
        self._store = store
        self._projects: dict[str, str] = {}

    @property
    def store(self) -> MemoryStore:
        """The memory store (the default database, opened on first use)."""
        if self._store is None:
            self._store = MemoryStore()
        return self._store

    def _project(self, context: ToolContext) -> str:
        key = os.fspath(context.cwd)
        if key not in self._projects:
            self._projects[key] = self.store.ensure_project(context.cwd)
        return self._projects[key]

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run the tool; bad arguments and memory errors come back as error results."""
        if not isinstance(arguments, dict):
            return ToolResult.error(f"{self.name}: arguments must be an object")
        try:
            return self._run(arguments, context)
        except MemoryNotFoundError as exc:
            return ToolResult.error(f"{self.name}: no memory #{exc.record_id} in this project")
        except (MemoryStoreError, ValueError, TypeError) as exc:
            return ToolResult.error(f"{self.name}: {exc}")

    def _run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        raise NotImplementedError


class MemorySaveTool(_MemoryTool):
    """``memory_save``: keep a durable note for later sessions of this project."""

    name = "memory_save"
    description = (
        "Save a durable note to long-term memory for this project, so later sessions can "
        "recall it. Use it for facts about the project, the user's preferences, decisions "
        "and their reasons, and architecture. Keep each note short and self-contained. "
        "Never save secrets, credentials or personal data."
    )
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "description": "The note, one or two self-contained sentences.",
            },
            "kind": {
                "type": "string",
                "enum": list(SAVE_KINDS),
                "description": "What sort of note this is (default: note).",
            },
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "description": 'Optional short keywords, e.g. ["ci", "deploy"].',
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    }

    def _run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        text = arguments.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text must be a non-empty string")
        kind = arguments.get("kind") or "note"
        if kind not in SAVE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(SAVE_KINDS)}")
        session = context.session
        path = getattr(session, "path", None)
        entry_id = context.extra.get("entry_id", getattr(session, "leaf_id", None))
        record, created = self.store.save_once(
            text,
            project=self._project(context),
            kind=kind,
            tags=_string_list(arguments.get("tags"), "tags"),
            source_session=path,
            source_entry=entry_id if isinstance(entry_id, str) and path else None,
        )
        said = "Saved" if created else "Already saved as"
        return ToolResult.text(
            f"{said} memory #{record.id} ({record.kind}).", details=_record_details(record)
        )


class MemoryRecallTool(_MemoryTool):
    """``memory_recall``: search this project's long-term memory."""

    name = "memory_recall"
    description = (
        "Search this project's long-term memory (notes saved in earlier sessions) by "
        "keywords. Results are ranked by relevance; ids can be passed to memory_forget. "
        "Recall before asking the user something they may have told you before."
    )
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords to search for."},
            "kinds": {
                "type": "array",
                "items": {"type": "string", "enum": list(KINDS)},
                "description": "Only notes of these kinds.",
            },
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Only notes carrying all of these tags.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RECALL,
                "description": "At most this many notes (default 5).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def _run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        query = arguments.get("query")
        if not isinstance(query, str):
            raise ValueError("query must be a string")
        limit = arguments.get("limit", 5)
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit < 1:
            raise ValueError("limit must be a positive integer")
        kinds = _string_list(arguments.get("kinds"), "kinds")
        tags = _string_list(arguments.get("tags"), "tags")
        records = self.store.recall(
            query,
            project=self._project(context),
            kinds=kinds or None,
            tags=tags or None,
            limit=min(int(limit), MAX_RECALL),
        )
        if records:
            noun = "memory" if len(records) == 1 else "memories"
            text = f"{len(records)} {noun} for {query!r}:\n" + "\n".join(
                format_record(r) for r in records
            )
        else:
            text = f"No memories match {query!r}."
        details = {"query": query, "results": [_record_details(r) for r in records]}
        return ToolResult.text(text, details=details)


class MemoryForgetTool(_MemoryTool):
    """``memory_forget``: retire a note that is wrong or outdated (audited, with a reason)."""

    name = "memory_forget"
    description = (
        "Forget a note in this project's long-term memory because it is wrong, outdated or "
        "unwanted. Give the note's id (from memory_recall) and a short reason; the note "
        "stops being recalled and the reason is kept."
    )
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 1, "description": "The note's id."},
            "reason": {"type": "string", "minLength": 1, "description": "Why it is forgotten."},
        },
        "required": ["id", "reason"],
        "additionalProperties": False,
    }

    def _run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        record_id = arguments.get("id")
        if isinstance(record_id, str) and record_id.lstrip("#").isdigit():
            record_id = int(record_id.lstrip("#"))
        if isinstance(record_id, bool) or not isinstance(record_id, int):
            raise ValueError("id must be an integer")
        reason = arguments.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("reason must be a non-empty string")
        record = self.store.forget(record_id, reason, project=self._project(context))
        details = _record_details(record)
        details.update(deletedAt=record.deleted_at, reason=record.deleted_reason)
        return ToolResult.text(f"Forgot memory #{record.id}: {reason.strip()}", details=details)


def memory_tools(store: MemoryStore | None = None) -> list[Tool]:
    """The three memory tools sharing one store (default: the standard database).

    Examples
    --------
    >>> [t.name for t in memory_tools()]
    ['memory_save', 'memory_recall', 'memory_forget']
    """
    shared = store if store is not None else MemoryStore()
    return [MemorySaveTool(shared), MemoryRecallTool(shared), MemoryForgetTool(shared)]
