"""The entry helpers every layer uses: an entry's kind, its name for people, its one-line
preview, its readable text and its size in tokens (chars/4).

The render layer draws with these, analysis compares and exports with them, and the CLI
prints them; there is one copy of each rule, here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .context.build import entry_to_message
from .context.system_prompt import system_summary
from .context.tokens import estimate_tokens
from .format.entries import ARCHIVE_TYPE, MISSING, Entry
from .format.target import Pi
from .js.jsontext import short_repr, value_text, visible

__all__ = [
    "BOOKKEEPING",
    "KEY_ARGUMENTS",
    "KIND_NAMES",
    "NO_OUTPUT",
    "entry_kind",
    "entry_preview",
    "entry_tokens",
    "is_hidden_marker",
    "kind_name",
    "message_preview",
    "message_text",
    "node_key",
    "one_line",
    "output_lines",
    "plural",
    "tool_tokens",
]


def node_key(entry_id: Any) -> str:
    """A string key for an entry id (Pi's ids are strings; odd files may hold others)."""
    return entry_id if isinstance(entry_id, str) else f"<{short_repr(entry_id, None)}>"


#: The argument that says what a tool call does (the rest is detail), for every place that
#: names a call in a few words: a chat's tool line, a branch comparison.
KEY_ARGUMENTS: dict[str, str] = {
    "read": "path",
    "edit": "path",
    "write": "path",
    "ls": "path",
    "bash": "command",
    "grep": "pattern",
    "find": "pattern",
    "python": "code",
}


#: What Pi's bash tool (and pinb's python tool) return for a command that printed nothing.
NO_OUTPUT = "(no output)"


def output_lines(text: str) -> list[str]:
    """The non-blank lines a tool's output printed: none for :data:`NO_OUTPUT`, so every
    line that counts them (a chat's tool line, the demo model's reply) agrees with the file."""
    lines = [line for line in text.splitlines() if line.strip()]
    return [] if lines == [NO_OUTPUT] else lines


def entry_kind(entry: Entry) -> str:
    """The role for ``message`` entries, else the entry type (``"compaction"``, …)."""
    return entry.role or entry.type or "unknown"


#: How each kind (role or entry type) is named for people.
KIND_NAMES: dict[str, str] = {
    "user": "user",
    "assistant": "assistant",
    "toolResult": "tool result",
    "bashExecution": "bash",
    "system": "system",
    "custom": "custom",
    "custom_message": "custom message",
    "compactionSummary": "compaction summary",
    "branchSummary": "branch summary",
    "compaction": "compaction",
    "branch_summary": "branch summary",
    "model_change": "model change",
    "thinking_level_change": "thinking level",
    "label": "label",
    "session_info": "session name",
    "context_edit": "context edit",
    "usage": "usage",
    "leaf": "leaf marker",
    "active_tools_change": "tools change",
    "message": "message",
    "unknown": "unknown",
    "chain": "collapsed chain",
    "folded": "folded branch",
}

#: Kinds that are bookkeeping: never sent to the model as messages.
BOOKKEEPING = frozenset(
    {
        "model_change",
        "thinking_level_change",
        "label",
        "session_info",
        "context_edit",
        "usage",
        "custom",
        "leaf",
        "active_tools_change",
    }
)


def kind_name(kind: str) -> str:
    """A person's name for a kind (``"toolResult"`` → ``"tool result"``).

    An unknown kind (a role of an odd file) is shown with its control characters escaped.
    """
    name = KIND_NAMES.get(kind)
    if name is not None:
        return name
    shown = visible(kind)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def plural(count: int, word: str, words: str | None = None) -> str:
    """``"1 branch"``, ``"3 branches"``, ``"1,000 entries"``."""
    if count == 1:
        return f"1 {word}"
    if words is None:
        words = word + ("es" if word.endswith(("s", "sh", "ch", "x")) else "s")
        if word.endswith("y") and word[-2:-1] not in "aeiou":
            words = word[:-1] + "ies"
    return f"{count:,} {words}"


def is_hidden_marker(entry: Entry) -> bool:
    """pinb's and harnesses' bookkeeping markers (navigation, archive) that pictures hide."""
    return entry.is_navigation or (
        entry.raw.get("type") == "custom" and entry.raw.get("customType") == ARCHIVE_TYPE
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif kind == "image":
                parts.append(f"[image {_clip(block.get('mimeType', ''))}]")
            elif kind == "toolCall":
                name = _clip(block.get("name", "?"))
                parts.append(f"→ {name}({_short_args(block.get('arguments'))})")
    return " ".join(parts)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    return [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
            and isinstance(b.get("text"), str)]  # fmt: skip


def message_text(message: Any) -> str:
    """The readable text of an agent message (no thinking, no tool-call arguments).

    User, custom and tool-result messages give their text blocks, assistants their text
    blocks, bash executions ``command`` and ``output``, summaries their ``summary``.
    """
    if not isinstance(message, dict):
        return ""
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    if role == "bashExecution":
        parts = [message.get("command"), message.get("output")]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return "\n".join(_texts(message.get("content")))


def _cut(text: str, limit: int) -> str:
    """``text`` kept whole up to ``limit`` characters, else cut with a visible ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short_args(arguments: Any) -> str:
    """Tool arguments in one short line; anything cut ends in ``…`` so it never looks whole."""
    if isinstance(arguments, dict):
        pairs = list(arguments.items())
        items = [f"{k}={value_text(v, 40)}" for k, v in pairs[:3]]
        if len(pairs) > 3:
            items.append("…")
        return ", ".join(items)
    return "" if arguments is None else value_text(arguments, 60)


def _clip(value: Any, limit: int = 60) -> str:
    """Any value as short text (an object where text belongs is shown as JSON-ish text)."""
    return value_text(value, limit)


def message_preview(message: Any, limit: int = 160) -> str:
    """One plain-text line describing an agent message (not escaped: callers escape).

    The one preview of pinb: :func:`entry_preview` uses it for message entries, and the
    CLI's ``pinb context`` for the messages of a context. Tool arguments that are cut end
    in ``…``, so a cut path never looks whole.
    """
    if not isinstance(message, dict):
        return ""
    role = message.get("role")
    text: str
    if role == "assistant":
        text = _text_of(message.get("content"))
        if not text.strip():
            content = message.get("content")
            thinking = (
                [
                    b.get("thinking", "")
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "thinking"
                ]
                if isinstance(content, list)
                else []
            )
            text = "(thinking) " + " ".join(value_text(t) for t in thinking) if thinking else ""
        if message.get("stopReason") in ("error", "aborted"):
            text = f"[{value_text(message.get('stopReason'))}] {value_text(message.get('errorMessage', ''))} {text}"
    elif role == "toolResult":
        flag = " (error)" if message.get("isError") else ""
        text = f"{_clip(message.get('toolName', '?'))}{flag}: {_text_of(message.get('content'))}"
    elif role in ("branchSummary", "compactionSummary"):
        text = value_text(message.get("summary", ""))
    elif role == "bashExecution":
        text = f"$ {value_text(message.get('command', ''))} {value_text(message.get('output', ''))}"
    elif role == "system":
        text = system_summary(message)  # its sections and tool changes, not blank
    else:
        text = _text_of(message.get("content"))
        if not text and not isinstance(message.get("content"), str | list | None):
            text = _clip(message.get("content"))  # a number or object as content
    return one_line(text, limit)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``limit`` with ``…``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def entry_preview(entry: Entry, limit: int = 160) -> str:
    """One plain-text line describing the entry (not escaped: callers escape).

    Every field may hold any JSON value in an odd file; nothing here assumes a type.
    """
    raw = entry.raw
    kind = entry.type
    text: str
    if kind == "message":
        return message_preview(entry.message or {}, limit)
    if kind in ("compaction", "branch_summary"):
        text = value_text(raw.get("summary", ""))
    elif kind == "custom_message":
        text = f"{_clip(raw.get('customType', ''))}: {_text_of(raw.get('content'))}"
    elif kind == "model_change":
        text = f"{_clip(raw.get('provider', ''))}/{_clip(raw.get('modelId', ''))}"
    elif kind == "thinking_level_change":
        text = _clip(raw.get("thinkingLevel", ""))
    elif kind == "label":
        label = raw.get("label")
        shown = "(cleared)" if label is None or label == "" else _clip(label)
        text = f"{shown} → {_clip(raw.get('targetId', ''))}"
    elif kind == "session_info":
        text = _clip(raw.get("name", ""))
    elif kind == "leaf":
        text = f"leaf → {_clip(raw.get('targetId'))}"
    elif kind == "custom":
        text = _clip(raw.get("customType", ""))
        data = raw.get("data")
        if isinstance(data, dict) and "targetId" in data:
            text += f" → {_clip(data.get('targetId'))}"
    elif kind == "context_edit":
        target = _clip(raw.get("targetId", "?"))
        replacement = raw.get("replacement", MISSING)
        if replacement is None:
            text = f"omits {target} from the context"
        else:
            content = replacement.get("content") if isinstance(replacement, dict) else None
            text = f"replaces {target}: {_text_of(content) or _clip(content)}"
    elif kind == "usage":
        usage = raw.get("usage")
        total = usage.get("totalTokens") if isinstance(usage, dict) else None
        text = f"{_clip(raw.get('kind', ''))} · {_clip(raw.get('provider', ''))}/" + _clip(
            raw.get("model", "")
        )
        if total is not None:
            text += f" · {_clip(total)} tokens reported (not in the context)"
    elif kind == "active_tools_change":
        names = raw.get("activeToolNames")
        text = ", ".join(_clip(n) for n in names) if isinstance(names, list) else ""
    else:
        text = ""
    return one_line(text, limit)


def entry_tokens(entry: Entry, pi: Pi | None = None) -> int:
    """chars/4 estimate of the message an entry stands for (0 for bookkeeping entries)."""
    message = entry_to_message(entry)
    return 0 if message is MISSING else estimate_tokens(message, pi=pi)


def tool_tokens(message: Any) -> Iterator[tuple[str, str, int]]:
    """``(tool name, "call"|"result", tokens)`` for a message's tool calls or tool result."""
    if not isinstance(message, dict):
        return
    role = message.get("role")
    if role == "assistant" and isinstance(message.get("content"), list):
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                name = value_text(block.get("name", "?"), 60)
                yield name, "call", estimate_tokens({"role": "assistant", "content": [block]})
    elif role == "toolResult":
        yield value_text(message.get("toolName", "?"), 60), "result", estimate_tokens(message)
