"""Everything that can be appended to a session, as typed methods over one writer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import EntryNotFoundError, InvalidEntryError
from .context import UNSET
from .entries import Entry
from .models import WireModel, parse_message
from .tree import SessionIndex

__all__ = ["AppendMixin"]


class AppendMixin:
    """The append methods of :class:`~pinb.core.session.Session`.

    Each builds the entry's own fields in Pi's key order; ``_write`` adds id, parent and
    timestamp, validates, and persists (see ``Session._write``).
    """

    _index: SessionIndex

    def _write(
        self, fields: dict[str, Any], *, parent: Any = UNSET, move_leaf: bool = True
    ) -> Entry:
        raise NotImplementedError

    def append_message(
        self, message: dict[str, Any] | WireModel, *, validate: bool = True
    ) -> Entry:
        """Append a ``message`` entry holding a Pi agent message (dict or model).

        A dict is written with its own key order (Pi keeps the producer's order); it is
        validated first unless ``validate=False``.
        """
        wire = message.to_wire() if isinstance(message, WireModel) else message
        if validate and not isinstance(message, WireModel):
            try:
                parse_message(wire)
            except ValueError as exc:
                raise InvalidEntryError(f"invalid {wire.get('role')!r} message: {exc}") from exc
        return self._write({"type": "message", "message": wire})

    def append_thinking_level_change(self, thinking_level: str) -> Entry:
        return self._write({"type": "thinking_level_change", "thinkingLevel": thinking_level})

    def append_model_change(self, provider: str, model_id: str) -> Entry:
        return self._write({"type": "model_change", "provider": provider, "modelId": model_id})

    def append_active_tools_change(self, tool_names: Sequence[str]) -> Entry:
        """[newer] Record the set of enabled tools from here on."""
        return self._write({"type": "active_tools_change", "activeToolNames": list(tool_names)})

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> Entry:
        """Append a ``compaction`` entry at the leaf (planning lives in ``compaction``)."""
        fields: dict[str, Any] = {
            "type": "compaction",
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
        }
        if details is not None:
            fields["details"] = details
        if from_hook is not None:
            fields["fromHook"] = from_hook
        return self._write(fields)

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> Entry:
        """Move to ``branch_from_id`` and attach a ``branch_summary`` there (§4.4)."""
        if branch_from_id is not None and branch_from_id not in self._index:
            raise EntryNotFoundError(branch_from_id)
        fields: dict[str, Any] = {
            "type": "branch_summary",
            "fromId": branch_from_id if branch_from_id is not None else "root",
            "summary": summary,
        }
        if details is not None:
            fields["details"] = details
        if from_hook is not None:
            fields["fromHook"] = from_hook
        return self._write(fields, parent=branch_from_id)

    def append_custom(self, custom_type: str, data: Any = None) -> Entry:
        """Extension state: never part of the context."""
        fields: dict[str, Any] = {"type": "custom", "customType": custom_type}
        if data is not None:
            fields["data"] = data
        return self._write(fields)

    def append_custom_message(
        self,
        custom_type: str,
        content: str | list[dict[str, Any]],
        display: bool = True,
        details: Any = None,
    ) -> Entry:
        """An extension message the model sees as a user message."""
        fields: dict[str, Any] = {
            "type": "custom_message",
            "customType": custom_type,
            "content": content,
            "display": display,
        }
        if details is not None:
            fields["details"] = details
        return self._write(fields)

    def set_label(self, target_id: str, label: str | None) -> Entry:
        """Label an entry (``None`` or ``""`` clears); appended as a ``label`` entry."""
        if target_id not in self._index:
            raise EntryNotFoundError(target_id)
        fields: dict[str, Any] = {"type": "label", "targetId": target_id}
        text = (label or "").strip()
        if text:
            fields["label"] = text
        return self._write(fields)

    def set_name(self, name: str) -> Entry:
        """Name the session (a ``session_info`` entry; newlines become spaces, trimmed)."""
        return self._write({"type": "session_info", "name": name.replace("\n", " ").strip()})

    def append_entry(self, fields: dict[str, Any]) -> Entry:
        """Append any entry (``type`` plus its own fields); id, parent and time are added."""
        if not isinstance(fields.get("type"), str):
            raise InvalidEntryError("an entry needs a string 'type'")
        return self._write(dict(fields))
