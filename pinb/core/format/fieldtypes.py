"""The types of the fields the core reads, checked where it reads them.

Pi reads any JSON value where a field should be text, a list or a number, and gives a
result anyway (a name that is an object still keys a tool); pinb gives that same result
(where Pi's figure stops being a number, a usage total that is text, pinb keeps a
number: :mod:`pinb.core.context.tokens`). An odd type is still something a user should hear
about, so :func:`odd_fields` names each such field of one entry, and the index
(:meth:`pinb.core.format.tree.SessionIndex.check_fields`) records them as ``odd-field``
problems, with file and line, once per entry: a context's entries when the context is
first built, labels and the name as they are replayed. A listing row carries the ones
it read in ``SessionInfo.problems``. Nothing here changes a result, and no message line
is checked at open (a lazy open leaves them undecoded).

Only the fields the core uses are checked (context building, token counting, labels,
the name, the listing); a field pinb does not read may hold anything.
"""

from __future__ import annotations

from typing import Any

from ..js.jsontext import short_repr
from ..js.wire import MISSING

__all__ = ["content_flaws", "odd_fields", "text_flaw", "value_kind"]

#: Roles whose ``content`` is text or a list of blocks.
_CONTENT_ROLES = frozenset({"user", "assistant", "toolResult", "system", "custom"})
#: The text field the core reads of each kind of content block.
_BLOCK_TEXT = {"text": "text", "thinking": "thinking", "toolCall": "name", "image": "data"}
_NUMBERS = (int, float)
_USAGE_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def value_kind(value: Any) -> str:
    """A JSON value's kind, for a message: ``an object``, ``a list``, ``text``, ...."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - JSON has no other kinds


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(found: list[str], where: str, value: Any, *, null: bool = True) -> None:
    """Note ``where`` unless ``value`` is text (absent, or ``null`` when allowed, is fine)."""
    if value is MISSING or isinstance(value, str) or (null and value is None):
        return
    found.append(f"{where} is {value_kind(value)}, not text")


def _content(found: list[str], where: str, content: Any) -> None:
    if content is MISSING or content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        found.append(f"{where} is {value_kind(content)}, neither text nor a list of blocks")
        return
    for block in content:  # the common case, every block sound, kept lean
        if block.__class__ is not dict:
            break
        kind = block.get("type")
        key = _BLOCK_TEXT.get(kind) if kind.__class__ is str else None
        if key is not None and block.get(key, MISSING).__class__ is not str:
            break
    else:
        return
    for i, block in enumerate(content):  # one level: blocks hold no blocks the core reads
        if block.__class__ is not dict:
            found.append(f"{where}[{i}] is {value_kind(block)}, not a block object")
            continue
        kind = block.get("type")
        key = _BLOCK_TEXT.get(kind) if kind.__class__ is str else None
        if key is None:
            continue
        value = block.get(key, MISSING)
        if value.__class__ is not str:  # the phrase is built only for an odd field
            _text(found, f"{where}[{i}].{key}", value)


def _tools(found: list[str], where: str, tools: Any) -> None:
    if tools is MISSING or tools is None:
        return
    if not isinstance(tools, list):
        found.append(f"{where} is {value_kind(tools)}, not a list of tools")
        return
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            found.append(f"{where}[{i}] is {value_kind(tool)}, not a tool object")
        else:
            name = tool.get("name", MISSING)
            if not isinstance(name, str):
                kind = "absent" if name is MISSING else value_kind(name)
                found.append(f"{where}[{i}].name is {kind}, not text")


def _message(found: list[str], message: dict[str, Any], where: str = "message") -> None:
    role = message.get("role")
    if not isinstance(role, str):  # reported as a malformed entry, and unhashable maybe
        return
    if role in _CONTENT_ROLES:
        content = message.get("content", MISSING)
        if content.__class__ is not str:  # the phrase is built only for a list or an odd one
            _content(found, f"{where}.content", content)
    if role == "assistant":
        usage = message.get("usage", MISSING)
        if usage is not MISSING and usage is not None:
            if not isinstance(usage, dict):
                found.append(f"{where}.usage is {value_kind(usage)}, not an object")
            else:
                for key in _USAGE_FIELDS:
                    value = usage.get(key, MISSING)
                    if value.__class__ in _NUMBERS:
                        continue
                    if value is not MISSING and not _is_number(value):
                        found.append(f"{where}.usage.{key} is {value_kind(value)}, not a number")
    elif role == "toolResult":
        for key in ("toolName", "toolCallId"):
            value = message.get(key, MISSING)
            if value.__class__ is not str:
                _text(found, f"{where}.{key}", value)
    elif role == "system":
        sections = message.get("sections", MISSING)
        if isinstance(sections, dict):
            for name, value in sections.items():
                _text(found, f"{where}.sections[{short_repr(name)}]", value)
        elif sections is not MISSING and sections is not None:
            found.append(f"{where}.sections is {value_kind(sections)}, not an object")
        _tools(found, f"{where}.toolsAdded", message.get("toolsAdded", MISSING))
        _tools(found, f"{where}.toolsRemoved", message.get("toolsRemoved", MISSING))
    elif role == "bashExecution":
        _text(found, f"{where}.command", message.get("command", MISSING))
        _text(found, f"{where}.output", message.get("output", MISSING))


def text_flaw(where: str, value: Any) -> str | None:
    """The phrase naming ``where`` when ``value`` is neither text, ``null`` nor absent."""
    found: list[str] = []
    _text(found, where, value)
    return found[0] if found else None


def content_flaws(where: str, content: Any) -> list[str]:
    """The phrases naming what is odd in a message ``content`` (text or a list of blocks)."""
    found: list[str] = []
    _content(found, where, content)
    return found


def odd_fields(raw: dict[str, Any]) -> list[str]:
    """The fields of one entry the core reads whose type is not the one Pi writes.

    Parameters
    ----------
    raw:
        The entry's JSON object.

    Returns
    -------
    list of str
        One phrase per odd field, naming it (``message.usage.input is text, not a
        number``); empty for an entry whose fields are as Pi writes them.
    """
    found: list[str] = []
    kind = raw.get("type")
    if kind == "message":
        message = raw.get("message")
        if isinstance(message, dict):
            _message(found, message)
    elif kind == "custom_message":
        _content(found, "content", raw.get("content", MISSING))
    elif kind in ("branch_summary", "compaction"):
        _text(found, "summary", raw.get("summary", MISSING))
        checkpoint = raw.get("systemMessage", MISSING)
        if kind == "compaction" and isinstance(checkpoint, dict):
            _message(found, checkpoint, "systemMessage")
    elif kind == "label":
        _text(found, "label", raw.get("label", MISSING))
    elif kind == "session_info":
        _text(found, "name", raw.get("name", MISSING))
    elif kind == "model_change":
        _text(found, "provider", raw.get("provider", MISSING))
        _text(found, "modelId", raw.get("modelId", MISSING))
    elif kind == "thinking_level_change":
        _text(found, "thinkingLevel", raw.get("thinkingLevel", MISSING))
    return found
