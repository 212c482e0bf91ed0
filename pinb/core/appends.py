"""Everything that can be appended to a session, as typed methods over one writer."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import EntryNotFoundError, InvalidEntryError, UsageError
from .context.build import UNSET, SessionContext, current_system_message
from .file.paths import iso_now
from .format.entries import ARCHIVE_TYPE, Entry
from .format.migrate import new_entry_id
from .format.target import Pi
from .format.tree import SessionIndex
from .js.wire import js_date_ms, js_trim

if TYPE_CHECKING:
    from .format.models import WireModel

__all__ = ["AppendMixin"]


class AppendMixin:
    """The append methods of :class:`~pinb.core.session.Session`.

    Each builds the entry's own fields in Pi's key order; ``_write`` adds id, parent and
    timestamp, validates, and persists (see ``Session._write``).
    """

    _index: SessionIndex
    _leaf_id: Any
    _pi: Pi
    _id_generator: Any

    def _write(
        self,
        fields: dict[str, Any],
        *,
        parent: Any = UNSET,
        move_leaf: bool = True,
        entry_id: str | None = None,
        timestamp: str | None = None,
    ) -> Entry:
        raise NotImplementedError

    def build_context(self, leaf_id: object = UNSET, **options: Any) -> SessionContext:
        raise NotImplementedError

    def path_to(self, entry_id: object = UNSET) -> list[Entry]:
        raise NotImplementedError

    def append_message(
        self, message: dict[str, Any] | WireModel, *, validate: bool = True
    ) -> Entry:
        """Append a ``message`` entry holding a Pi agent message (dict or model).

        A dict is written with its own key order (Pi keeps the producer's order); it is
        validated first unless ``validate=False``.
        """
        if not isinstance(message, dict):
            return self._write({"type": "message", "message": message.to_wire()})
        if validate:
            from .format.models import parse_message  # pydantic loads on the first typed check

            try:
                parse_message(message)
            except ValueError as exc:
                raise InvalidEntryError(f"invalid {message.get('role')!r} message: {exc}") from exc
        return self._write({"type": "message", "message": message})

    def append_thinking_level_change(self, thinking_level: str) -> Entry:
        return self._write({"type": "thinking_level_change", "thinkingLevel": thinking_level})

    def append_model_change(self, provider: str, model_id: str) -> Entry:
        return self._write({"type": "model_change", "provider": provider, "modelId": model_id})

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: float,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Entry:
        """Append a ``compaction`` entry at the leaf (planning lives in ``compaction``).

        ``first_kept_entry_id=None`` keeps nothing (Pi 1.x's retain-none boundary: the
        entry names itself). In Pi 1.x the entry also carries the current system prompt
        (``systemMessage``), replayed from the context it replaces, so the model keeps its
        instructions after the older system messages are summarised away.
        """
        entry_id = new_entry_id(self._index.by_id, self._id_generator)
        timestamp = iso_now()
        fields: dict[str, Any] = {
            "type": "compaction",
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id
            if first_kept_entry_id is not None
            else entry_id,
            "tokensBefore": tokens_before,
        }
        if details is not None:
            fields["details"] = details
        if usage is not None:
            fields["usage"] = usage
        if from_hook is not None:
            fields["fromHook"] = from_hook
        if self._pi >= Pi.V1_6:
            checkpoint = current_system_message(self.build_context().messages)
            if checkpoint is not None:
                fields["systemMessage"] = {**checkpoint, "timestamp": js_date_ms(timestamp)}
        return self._write(fields, entry_id=entry_id, timestamp=timestamp)

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Entry:
        """Move to ``branch_from_id`` and attach a ``branch_summary`` there (§4.4).

        ``fromId`` records the leaf that was left (Pi 1.x; v0.58.3 wrote the branch point),
        or ``"root"`` when there was none.
        """
        if branch_from_id is not None and branch_from_id not in self._index:
            raise EntryNotFoundError(branch_from_id)
        if self._pi >= Pi.V1_6:
            from_id = self._leaf_id if self._leaf_id is not None else "root"
        else:
            from_id = branch_from_id if branch_from_id is not None else "root"
        fields: dict[str, Any] = {"type": "branch_summary", "fromId": from_id, "summary": summary}
        if details is not None:
            fields["details"] = details
        if usage is not None:
            fields["usage"] = usage
        if from_hook is not None:
            fields["fromHook"] = from_hook
        return self._write(fields, parent=branch_from_id)

    def append_usage(
        self,
        kind: str,
        provider: str,
        model: str,
        usage: dict[str, Any],
        note: str | None = None,
    ) -> Entry:
        """Record model usage that is not part of the conversation (Pi 1.x ``usage`` entry).

        It counts towards cost and usage totals, never towards the context; Pi itself
        writes ``kind="cache_warm"`` for prompt-cache warming.
        """
        self._require_1x("usage entries")
        fields: dict[str, Any] = {
            "type": "usage",
            "kind": kind,
            "provider": provider,
            "model": model,
            "usage": usage,
        }
        if note:
            fields["note"] = note
        return self._write(fields)

    def append_context_edit(
        self, target_id: str, replacement: str | list[Any] | dict[str, Any] | None
    ) -> Entry:
        """Change what an earlier entry contributes to the model, without touching it (Pi 1.x).

        Parameters
        ----------
        target_id:
            A user, assistant or tool-result message, or a custom message, on the active
            branch.
        replacement:
            ``None`` to omit the entry from the context; new content (a string or content
            blocks, or Pi's ``{"content": ...}``) to replace its content. The latest edit of
            an entry on the path wins, and only on this branch.

        Raises
        ------
        InvalidEntryError
            With Pi's own messages: a replacement that is not content, an unknown target, a
            target off the active branch, or one that contributes no editable content.
        """
        self._require_1x("context edits")
        if isinstance(replacement, str | list):
            replacement = {"content": replacement}
        if replacement is not None and not (
            isinstance(replacement, dict) and isinstance(replacement.get("content"), str | list)
        ):
            raise InvalidEntryError(
                "Context edit replacement must be null or contain string/array content"
            )
        target = self._index.get(target_id)
        if target is None:
            raise EntryNotFoundError(target_id)
        if not any(e is target for e in self.path_to()):
            raise InvalidEntryError(f"Entry {target_id} is not on the active branch")
        role = "custom" if target.type == "custom_message" else target.role
        if target.type not in ("message", "custom_message") or role not in _EDITABLE:
            raise InvalidEntryError(f"Entry {target_id} does not contribute editable model content")
        if replacement is not None and role in ("assistant", "toolResult"):
            content = replacement["content"]
            if isinstance(content, str):
                replacement = {"content": [{"type": "text", "text": content}]}
        return self._write(
            {"type": "context_edit", "targetId": target_id, "replacement": replacement}
        )

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

    def _bookkeeping_parent(self) -> Any:
        """Where a label or archive marker goes: at the leaf, as Pi appends them, but after
        the navigation marker a move left there (its last line), so bookkeeping after
        "continue here" starts no branch beside the marker; the conversation is unmoved."""
        entries = self._index.entries
        last = entries[-1] if entries else None
        if (
            last is not None
            and last.is_navigation
            and self._leaf_id is not None
            and last.raw.get("parentId") == self._leaf_id
        ):
            return last.id
        return UNSET

    def set_label(self, target_id: str, label: str | None) -> Entry:
        """Label an entry, stored as given (``None`` or ``""`` clears); a ``label`` entry."""
        if target_id not in self._index:
            raise EntryNotFoundError(target_id)
        fields: dict[str, Any] = {"type": "label", "targetId": target_id}
        if label is not None:
            fields["label"] = label
        return self._write(fields, parent=self._bookkeeping_parent())

    def archive(self, entry_id: str, note: str | None = None) -> Entry:
        """Archive the branch that starts at ``entry_id``: pinb's views hide it.

        Nothing is deleted or changed: an inert ``custom`` entry (``pinb.archive``) records
        it, appended at the leaf as Pi appends labels, so Pi ignores it and resumes where it
        was. :meth:`unarchive` reverses it; :attr:`archived` lists what is archived.
        """
        if entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        data: dict[str, Any] = {"targetId": entry_id, "archived": True}
        if note:
            data["note"] = note
        return self._write(
            {"type": "custom", "customType": ARCHIVE_TYPE, "data": data},
            parent=self._bookkeeping_parent(),
        )

    def unarchive(self, entry_id: str) -> Entry:
        """Show an archived branch again (another marker; the first one stays in the file)."""
        if entry_id not in self._index.archived:
            raise InvalidEntryError(f"entry {entry_id} is not archived")
        data = {"targetId": entry_id, "archived": False}
        return self._write(
            {"type": "custom", "customType": ARCHIVE_TYPE, "data": data},
            parent=self._bookkeeping_parent(),
        )

    def set_name(self, name: str) -> Entry:
        """Name the session with a ``session_info`` entry, as Pi writes it.

        Pi 1.x turns each run of line breaks into one space and trims; v0.58.3 trims.
        """
        if self._pi >= Pi.V1_6:
            name = _LINE_BREAKS.sub(" ", name)
        return self._write({"type": "session_info", "name": js_trim(name)})

    def append_entry(self, fields: dict[str, Any]) -> Entry:
        """Append any entry (``type`` plus its own fields); id, parent and time are added."""
        if not isinstance(fields.get("type"), str):
            raise InvalidEntryError("an entry needs a string 'type'")
        return self._write(dict(fields))

    def _require_1x(self, what: str) -> None:
        if self._pi < Pi.V1_6:
            raise UsageError(
                f"{what} need Pi 1.x; this session follows {self._pi}, which would ignore "
                "them (open it with pi='1.6')"
            )


_EDITABLE = frozenset({"user", "assistant", "toolResult", "custom"})
_LINE_BREAKS = re.compile(r"[\r\n]+")
