"""The system prompt as sent, and what each ``system`` message of a context adds to it.

Pi 1.x stores the prompt and tool set as ``system`` messages: the first holds everything,
later ones patch it (sections by name, tools added or removed). The model is sent their
replay, once (`pinb.core.context.build.current_system_message`). So the prompt's size is one
figure, the estimate of that replay, and :func:`system_shares` splits it over the messages
that produce it: each message's share is what of its own text is still in force, never
negative; what a patch takes away (a removed tool's schema, a replaced section) is reported
beside it as a removal, not subtracted from its size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..format.content import content_text
from ..format.target import PiLike
from ..js.wire import dumps, utf16_len
from .build import current_system_message
from .tokens import estimate_tokens

__all__ = [
    "SystemShare",
    "entry_costs",
    "message_costs",
    "system_prompt_tokens",
    "system_shares",
    "system_summary",
]


@dataclass(frozen=True)
class SystemShare:
    """What one ``system`` message contributes to the prompt the model is sent.

    Attributes
    ----------
    index:
        Position of the message in the list given to :func:`system_shares`.
    tokens:
        Its share of the prompt as sent (the shares add up to :func:`system_prompt_tokens`);
        never negative.
    own_tokens:
        Pi's estimate of the message on its own (what it cost when it was first sent).
    removed_tools / removed_sections:
        Tools and sections of earlier messages that it removes or replaces.
    removed_tokens:
        chars/4 of what it removes or replaces (shown as a removal, never as a size).
    """

    index: int
    tokens: int
    own_tokens: int
    removed_tools: tuple[str, ...] = ()
    removed_sections: tuple[str, ...] = ()
    removed_tokens: int = 0


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(tool: Any) -> str:
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) else "?"


def _json_chars(value: Any) -> int:
    # JSON.stringify's length in UTF-16 units, as Pi's estimate measures (deep values too).
    return utf16_len(dumps(value))


def system_prompt_tokens(messages: Sequence[Any], pi: PiLike | None = None) -> int:
    """chars/4 of the system prompt the model is sent: every system message replayed."""
    prompt = current_system_message(messages)
    return estimate_tokens(prompt, pi=pi) if prompt is not None else 0


def system_shares(messages: Sequence[Any], pi: PiLike | None = None) -> list[SystemShare]:
    """Split the prompt as sent over the ``system`` messages of ``messages`` (one each).

    A message's share is its content plus the sections and tool declarations it set that
    no later message replaced or removed, converted to tokens so that the shares add up
    exactly to :func:`system_prompt_tokens`.
    """
    indexes = [i for i, m in enumerate(messages) if _is_system(m)]
    weight: dict[int, int] = dict.fromkeys(indexes, 0)
    removed_chars: dict[int, int] = dict.fromkeys(indexes, 0)
    removed_tools: dict[int, list[str]] = {i: [] for i in indexes}
    removed_sections: dict[int, list[str]] = {i: [] for i in indexes}
    sections: dict[Any, tuple[int, int]] = {}
    tools: dict[str, tuple[int, int]] = {}
    texts = 0
    for i in indexes:
        message = messages[i]
        text = content_text(message.get("content"))
        if text:
            weight[i] += utf16_len(text) + (2 if texts else 0)  # the replay joins with "\n\n"
            texts += 1
        patch = message.get("sections")
        for name, value in patch.items() if isinstance(patch, dict) else ():
            if name in sections:
                removed_chars[i] += sections[name][1]
                removed_sections[i].append(str(name))
                del sections[name]
            if value is not None:
                sections[name] = (
                    i,
                    utf16_len(value) if isinstance(value, str) else _json_chars(value),
                )
        for tool in _items(message.get("toolsRemoved")):
            if _name(tool) in tools:
                removed_chars[i] += tools.pop(_name(tool))[1]
                removed_tools[i].append(_name(tool))
        for tool in _items(message.get("toolsAdded")):
            if _name(tool) in tools:  # declared again: the new declaration replaces the old
                removed_chars[i] += tools.pop(_name(tool))[1]
                removed_tools[i].append(_name(tool))
            tools[_name(tool)] = (i, _json_chars(tool) + 1)  # and its comma or bracket
    for owner, chars in (*sections.values(), *tools.values()):
        weight[owner] += chars
    total = system_prompt_tokens(messages, pi)
    whole = sum(weight.values())
    shares: list[SystemShare] = []
    running = 0
    for n, i in enumerate(indexes):
        running += weight[i]
        if whole:
            upto = total * running // whole
            before = total * (running - weight[i]) // whole
            tokens = upto - before
        else:  # nothing measurable: the first message carries the whole prompt
            tokens = total if n == 0 else 0
        shares.append(
            SystemShare(
                i,
                tokens,
                estimate_tokens(messages[i], pi=pi),
                tuple(removed_tools[i]),
                tuple(removed_sections[i]),
                -(-removed_chars[i] // 4),
            )
        )
    return shares


def system_summary(message: Any) -> str:
    """One line saying what a ``system`` message sets: its sections and tool changes."""
    if not _is_system(message):
        return ""
    parts: list[str] = []
    text = content_text(message.get("content"))
    if text.strip():
        parts.append(text.strip())
    patch = message.get("sections")
    if isinstance(patch, dict) and patch:
        set_ = [str(n) for n, v in patch.items() if v is not None]
        dropped = [str(n) for n, v in patch.items() if v is None]
        if set_:
            parts.append("sections " + ", ".join(set_))
        if dropped:
            parts.append("drops sections " + ", ".join(dropped))
    added = [_name(t) for t in _items(message.get("toolsAdded"))]
    removed = [_name(t) for t in _items(message.get("toolsRemoved"))]
    if added:
        parts.append("tools + " + ", ".join(added))
    if removed:
        parts.append("tools − " + ", ".join(removed))
    return " · ".join(parts)


def message_costs(messages: Sequence[Any], pi: PiLike | None = None) -> list[int]:
    """chars/4 of each message as the model is sent it: a system message costs its share
    of the prompt (:func:`system_shares`), every other message its own estimate. The costs
    add up to the estimate of the whole context (the prompt counted once) and none is
    negative."""
    shares = {s.index: s.tokens for s in system_shares(messages, pi)}
    return [shares[i] if i in shares else estimate_tokens(m, pi=pi) for i, m in enumerate(messages)]


def entry_costs(context: Any) -> dict[int, int]:
    """What each entry of a built context costs in it, by ``id(entry)`` (see
    :func:`message_costs`): the tree and the context views show the same figure."""
    costs = message_costs(context.messages, context.pi)
    out: dict[int, int] = {}
    for source, cost in zip(context.sources, costs, strict=True):
        out[id(source)] = out.get(id(source), 0) + cost
    return out
