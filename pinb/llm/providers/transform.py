"""Provider-layer filtering of model messages before a request (spec §5.6); never mutates its input."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pinb.llm.types import ModelInfo

__all__ = [
    "NO_RESULT_TEXT",
    "anthropic_tool_id",
    "same_model",
    "transform_messages",
]

#: Text of the synthetic result inserted for a tool call that never got one.
NO_RESULT_TEXT = "No result provided"

_SIGNATURE_KEYS = ("thinkingSignature", "textSignature", "thoughtSignature")
_ANTHROPIC_ID_BAD = re.compile(r"[^A-Za-z0-9_-]")


def anthropic_tool_id(tool_id: str) -> str:
    """Make a tool-call id acceptable to Anthropic (``^[A-Za-z0-9_-]{1,64}$``).

    Examples
    --------
    >>> anthropic_tool_id("call:1|a")
    'call_1_a'
    """
    cleaned = _ANTHROPIC_ID_BAD.sub("_", tool_id)[:64]
    return cleaned or "toolcall"


def same_model(message: Mapping[str, Any], target: ModelInfo) -> bool:
    """Whether an assistant message was produced by ``target`` (provider, id and api)."""
    return (
        message.get("provider") == target.provider
        and message.get("model") == target.id
        and message.get("api") == target.api
    )


def _foreign_content(
    blocks: Sequence[Mapping[str, Any]],
    id_map: dict[str, str],
    normalize: Callable[[str], str] | None,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "thinking":
            text = block.get("thinking") or ""
            if block.get("redacted") or not text.strip():
                continue
            out.append({"type": "text", "text": text})
            continue
        new = {k: v for k, v in block.items() if k not in _SIGNATURE_KEYS}
        if kind == "toolCall" and normalize is not None and isinstance(new.get("id"), str):
            new_id = normalize(new["id"])
            id_map[new["id"]] = new_id
            new["id"] = new_id
        out.append(new)
    return out


def transform_messages(
    messages: Sequence[Mapping[str, Any]],
    target: ModelInfo,
    *,
    normalize_tool_id: Callable[[str], str] | None = None,
) -> list[dict[str, Any]]:
    """Prepare ``convertToLlm`` output for a request to ``target``.

    - assistant messages with ``stopReason`` ``error`` or ``aborted`` are dropped;
    - a tool call with no ``toolResult`` before the next user/assistant message (or
      the end) gets a synthetic error result ``"No result provided"``;
    - a ``toolResult`` whose call is not in the assistant message before it (the calls of
      a dropped reply) is dropped;
    - assistant messages from another model lose their signatures, their thinking
      becomes plain text (empty and redacted thinking is dropped), and their tool-call
      ids pass through ``normalize_tool_id`` (results follow the new ids).

    Parameters
    ----------
    messages:
        Model messages (roles ``user``, ``assistant``, ``toolResult``).
    target:
        The model the request goes to.
    normalize_tool_id:
        Rewrites foreign tool-call ids the target would reject.

    Returns
    -------
    list of dict
        New list; unchanged messages are the same objects, changed ones are copies.
    """
    out: list[dict[str, Any]] = []
    pending: dict[str, tuple[str, Any]] = {}
    id_map: dict[str, str] = {}
    issued: set[str] = set()  # call ids of the last kept assistant message

    def flush() -> None:
        for call_id, (name, timestamp) in pending.items():
            out.append(
                {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": name,
                    "content": [{"type": "text", "text": NO_RESULT_TEXT}],
                    "isError": True,
                    "timestamp": timestamp,
                }
            )
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "assistant":
            if message.get("stopReason") in ("error", "aborted"):
                continue
            flush()
            issued.clear()
            msg: Mapping[str, Any] = message
            content = message.get("content")
            if not same_model(message, target) and isinstance(content, list):
                msg = {**message, "content": _foreign_content(content, id_map, normalize_tool_id)}
            for block in msg.get("content") or []:
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    pending[str(block.get("id"))] = (
                        str(block.get("name", "")),
                        message.get("timestamp"),
                    )
                    issued.add(str(block.get("id")))
            out.append(msg if isinstance(msg, dict) else dict(msg))
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            if isinstance(call_id, str) and call_id in id_map:
                call_id = id_map[call_id]
                message = {**message, "toolCallId": call_id}
            if str(call_id) not in issued:
                # The result of a call in a dropped (failed or aborted) reply: no provider
                # takes a result without its call.
                continue
            pending.pop(str(call_id), None)
            out.append(message if isinstance(message, dict) else dict(message))
        else:
            if role == "user":
                flush()
                issued.clear()
            out.append(message if isinstance(message, dict) else dict(message))
    flush()
    return out
