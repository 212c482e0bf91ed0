"""Random session trees with every entry kind and odd values, for differential tests.

Unlike :mod:`pinb.testing.generate`, which writes realistic conversations, these files are
small and dense: each entry hangs off a random earlier one, and they mix every entry type
and message role of Pi 1.x (context edits, usage entries, system messages, compaction
checkpoints, retain-none compactions) with the odd values real files hold (empty and
missing contents, images, unparseable timestamps, duplicate ids, orphans, unknown types,
broken lines). Comparing pinb's answers on them with Pi's own is how the test suite
proves the core exact.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

__all__ = ["odd_session_bytes", "random_session_bytes"]

_TEXTS = [
    "Fix the failing test",
    "Read app.py",
    "Why does it crash?",
    "😀 emoji text 𝄞",
    "line one\nline two",
    "",
    "a" * 900,
    "Run the linter and tell me what it says about src/",
]
_PATHS = ["app.py", "src/a.py", "README.md", "tests/test_app.py", "ümlaut.txt"]
_TOOLS = ["read", "write", "edit", "bash", "ls", "grep"]


class _Tree:
    def __init__(self, rng: random.Random, *, newer: bool, odd: bool) -> None:
        self.rng = rng
        self.newer = newer
        self.odd = odd
        self.lines: list[str] = []
        self.ids: list[str] = []
        self.messages: list[tuple[str, str]] = []  # (id, role) of message entries
        self.calls: list[tuple[str, str]] = []  # (call id, tool) not yet answered
        self.second = 0

    def stamp(self) -> str:
        self.second += self.rng.choice((1, 1, 1, 2, 0))
        if self.odd and self.rng.random() < 0.04:
            return self.rng.choice(["not a date", "", "2025-03-01", "2025-03-01T10:00:00+02:00"])
        minutes, seconds = divmod(self.second, 60)
        return f"2025-03-01T{10 + minutes // 60:02d}:{minutes % 60:02d}:{seconds:02d}.000Z"

    def ms(self) -> int:
        return 1_740_823_200_000 + self.second * 1000

    def new_id(self) -> str:
        if self.odd and self.ids and self.rng.random() < 0.03:
            return self.rng.choice(self.ids)  # a duplicate id: the later line wins
        return f"{self.rng.getrandbits(32):08x}"

    def parent(self) -> Any:
        if not self.ids or self.rng.random() < 0.02:
            return None
        if self.odd and self.rng.random() < 0.02:
            return "ffffffff"  # an orphan
        if self.rng.random() < 0.75:
            return self.ids[-1]
        return self.rng.choice(self.ids[-12:])

    def emit(self, entry: dict[str, Any]) -> None:
        self.lines.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
        if isinstance(entry.get("id"), str):
            self.ids.append(entry["id"])

    def content(self, *, images: bool) -> Any:
        rng = self.rng
        if rng.random() < 0.3:
            return rng.choice(_TEXTS)
        blocks: list[dict[str, Any]] = [
            {"type": "text", "text": rng.choice(_TEXTS)} for _ in range(rng.randint(0, 2))
        ]
        if images and rng.random() < 0.2:
            blocks.append({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
        return blocks

    def usage(self) -> dict[str, Any]:
        total = self.rng.choice((0, 0, 120, 900, 4_000, 40_000))
        return {
            "input": total,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": total,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        }

    def message(self) -> dict[str, Any]:
        rng = self.rng
        roles = ["user", "assistant", "assistant", "toolResult", "bashExecution", "custom"]
        if self.newer:
            roles += ["system"]
        role = rng.choice(roles)
        stamp = self.ms()
        if role == "user":
            message: dict[str, Any] = {"role": role, "content": self.content(images=True)}
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if rng.random() < 0.3:
                blocks.append({"type": "thinking", "thinking": rng.choice(_TEXTS)})
            if rng.random() < 0.8:
                blocks.append({"type": "text", "text": rng.choice(_TEXTS)})
            for _ in range(rng.choice((0, 0, 1, 2))):
                name = rng.choice(_TOOLS)
                arguments = {"path": rng.choice(_PATHS)} if name != "bash" else {"command": "ls"}
                call_id = f"call_{rng.getrandbits(24):06x}"
                self.calls.append((call_id, name))
                blocks.append(
                    {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
                )
            message = {
                "role": role,
                "content": blocks,
                "api": "anthropic-messages",
                "provider": rng.choice(("anthropic", "openai")),
                "model": rng.choice(("claude-sonnet-4-5", "gpt-5")),
                "usage": self.usage(),
                "stopReason": rng.choice(("stop", "stop", "toolUse", "length", "error", "aborted")),
            }
        elif role == "toolResult":
            text = rng.choice(_TEXTS) if rng.random() < 0.8 else "x" * 1999 + "🎉" + "y" * 9
            call_id, tool = self.calls.pop(0) if self.calls else ("call", rng.choice(_TOOLS))
            message = {
                "role": role,
                "toolCallId": call_id,
                "toolName": tool,
                "content": [{"type": "text", "text": text}],
                "isError": rng.random() < 0.1,
            }
            if self.newer and rng.random() < 0.1:
                message["nestedCalls"] = {
                    "calls": [{"name": "edit", "arguments": {"path": rng.choice(_PATHS)}}]
                }
        elif role == "bashExecution":
            message = {
                "role": role,
                "command": "ls -la",
                "output": rng.choice(_TEXTS),
                "exitCode": rng.choice((0, 1, None)),
                "cancelled": rng.random() < 0.1,
                "truncated": False,
                "excludeFromContext": rng.random() < 0.2,
            }
        elif role == "custom":
            message = {
                "role": role,
                "customType": "ext",
                "content": self.content(images=True),
                "display": True,
            }
        else:
            message = {
                "role": "system",
                "content": rng.choice(("", "Base prompt.", [{"type": "text", "text": "Rule."}])),
            }
            if rng.random() < 0.6:
                message["sections"] = {
                    rng.choice(("cwd", "skills", "tools")): rng.choice(("/p", None, "text"))
                }
            if rng.random() < 0.4:
                message["toolsAdded"] = [
                    {"name": rng.choice(_TOOLS), "description": "d", "parameters": {}}
                ]
            if rng.random() < 0.2:
                message["toolsRemoved"] = [{"name": rng.choice(_TOOLS)}]
        if (
            self.newer
            and self.odd
            and role in ("user", "assistant", "toolResult")
            and rng.random() < 0.05
        ):
            message.pop("content")
        message["timestamp"] = stamp
        return message

    def entry(self) -> None:
        rng = self.rng
        kinds = ["message"] * 10 + [
            "compaction",
            "branch_summary",
            "custom_message",
            "custom",
            "label",
            "session_info",
            "thinking_level_change",
            "model_change",
        ]
        if self.newer:
            kinds += ["context_edit"] * 3 + ["usage"]
        if self.odd:
            kinds += ["leaf", "active_tools_change", "bookmark"]
        kind = rng.choice(kinds)
        entry_id = self.new_id()
        # A repeated id under a parent would often close a loop Pi walks forever; as a root
        # it only re-points the id (the later line wins), which is the case worth testing.
        parent = None if entry_id in self.ids else self.parent()
        base: dict[str, Any] = {
            "type": kind,
            "id": entry_id,
            "parentId": parent,
            "timestamp": self.stamp(),
        }
        if kind == "message":
            message = self.message()
            base["message"] = message
            self.messages.append((entry_id, message["role"]))
        elif kind == "compaction":
            kept = rng.choice(self.ids) if self.ids and rng.random() < 0.85 else entry_id
            base.update(
                summary=rng.choice(_TEXTS) or "S",
                firstKeptEntryId=kept,
                tokensBefore=rng.randint(0, 9000),
            )
            if rng.random() < 0.5:
                base["details"] = {
                    "readFiles": [rng.choice(_PATHS)],
                    "modifiedFiles": [rng.choice(_PATHS)],
                }
            if rng.random() < 0.2:
                base["fromHook"] = True
            if self.newer and rng.random() < 0.4:
                base["systemMessage"] = {
                    "role": "system",
                    "content": "Checkpoint prompt.",
                    "timestamp": self.ms(),
                }
        elif kind == "branch_summary":
            base.update(
                fromId=rng.choice(self.ids) if self.ids else "root", summary=rng.choice(_TEXTS)
            )
            if rng.random() < 0.4:
                base["details"] = {"readFiles": [rng.choice(_PATHS)], "modifiedFiles": []}
        elif kind == "custom_message":
            base = {
                "type": kind,
                "customType": "note",
                "content": self.content(images=True),
                "display": rng.random() < 0.7,
                **{k: v for k, v in base.items() if k != "type"},
            }
            if self.newer and self.odd and rng.random() < 0.1:
                base.pop("content")
        elif kind == "custom":
            base = {
                "type": kind,
                "customType": "state",
                "data": {"n": rng.randint(0, 9)},
                **{k: v for k, v in base.items() if k != "type"},
            }
        elif kind == "label":
            base.update(targetId=rng.choice(self.ids) if self.ids else "none")
            if rng.random() < 0.7:
                base["label"] = rng.choice(("todo", "good", "", " spaced "))
        elif kind == "session_info":
            base["name"] = rng.choice(("Session A", "  padded\nname ", "", "   "))
        elif kind == "thinking_level_change":
            base["thinkingLevel"] = rng.choice(("off", "low", "high"))
        elif kind == "model_change":
            base.update(provider="openai", modelId="gpt-5")
        elif kind == "context_edit":
            targets = [i for i, _ in self.messages] or self.ids or ["none"]
            target = rng.choice(targets if rng.random() < 0.85 else self.ids or targets)
            replacement: Any = None
            if rng.random() < 0.6:
                replacement = {
                    "content": rng.choice(("[edited]", [{"type": "text", "text": "edited block"}]))
                }
            base.update(targetId=target, replacement=replacement)
        elif kind == "usage":
            base.update(
                kind="cache_warm",
                provider="anthropic",
                model="claude-sonnet-4-5",
                usage=self.usage(),
            )
        elif kind == "leaf":
            base["targetId"] = rng.choice(self.ids) if self.ids else None
        elif kind == "active_tools_change":
            base["activeToolNames"] = ["read"]
        else:
            base["note"] = "from another tool"
        self.emit(base)
        if self.odd and rng.random() < 0.02:
            self.lines.append(rng.choice(("{broken", "[1,2]", "42", "", "   ")))


def random_session_bytes(
    seed: int, size: int = 40, *, newer: bool = True, odd: bool = False, version: int = 3
) -> bytes:
    """A random session file: ``size`` entries under one header.

    Parameters
    ----------
    seed:
        Makes the file reproducible.
    newer:
        Use Pi 1.x's entry kinds and roles too (context edits, usage, system messages).
    odd:
        Add duplicate ids, orphans, unknown types, unparseable timestamps, missing
        contents and broken lines.
    version:
        The header's version. Version 1 files have no ids or parents (a linear legacy file
        whose compactions name their first kept entry by index); version 2 files may use the
        old ``hookMessage`` role.
    """
    rng = random.Random(seed)
    tree = _Tree(rng, newer=newer, odd=odd)
    header: dict[str, Any] = {
        "type": "session",
        "version": version,
        "id": f"fuzz-{seed}",
        "timestamp": "2025-03-01T10:00:00.000Z",
        "cwd": "/home/dev/proj",
    }
    if version == 1:
        del header["version"]
    for _ in range(size):
        tree.entry()
    lines = tree.lines
    if version == 1:
        lines = [_legacy(line, position, rng) for position, line in enumerate(lines)]
    elif version == 2:
        lines = [line.replace('"role":"custom"', '"role":"hookMessage"', 1) for line in lines]
    return ("\n".join([json.dumps(header), *lines]) + "\n").encode("utf-8")


def _legacy(line: str, position: int, rng: random.Random) -> str:
    try:
        entry = json.loads(line)
    except ValueError:
        return line
    if not isinstance(entry, dict):
        return line
    entry.pop("id", None)
    entry.pop("parentId", None)
    if entry.get("type") == "compaction":
        entry.pop("firstKeptEntryId", None)
        entry["firstKeptEntryIndex"] = rng.randint(0, max(position, 0))
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------
# Odd but valid JSON: what JSON.parse reads and Python's parsers did not
# ---------------------------------------------------------------------------------------


class _Literal:
    """A number written exactly as given (``1E+2``, ``-0``, a 5,000-digit integer)."""

    def __init__(self, text: str) -> None:
        self.text = text


#: Number literals JSON allows that Python and JavaScript may read differently.
_ODD_NUMBERS = [
    "1E+2", "-0", "-0.0", "1e400", "-1e400", "0.1e-400", "1.0", "1.50", "2e-7",
    "123456789012345678901234567890", "9007199254740993", "0.30000000000000004", "1" * 5000,
    "-" + "9" * 4400,
]  # fmt: skip
#: Strings with escapes and characters that break naive text handling.
_ODD_STRINGS = [
    "line\r\nbreak", "next\u0085line", "sep\u2028par\u2029", "nul\u0000byte", "tab\tand\x1b[31m",
    "slash/\\back", "lone \ud83d high", "low \ude00 alone", "\ufeffbom", "emoji 😀 𝄞",
    "<script>alert(1)</script>", "",
]  # fmt: skip
#: Values of the wrong type for any field.
_ODD_VALUES: list[Any] = [None, True, 0, -1, 2.5, "", "text", [], [1, "a"], {}, {"name": {}}]


def _odd_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.3:
        return _Literal(rng.choice(_ODD_NUMBERS))
    if roll < 0.6:
        return rng.choice(_ODD_STRINGS)
    return json.loads(json.dumps(rng.choice(_ODD_VALUES)))


def _deep(rng: random.Random, depth: int) -> Any:
    value: Any = rng.choice(["x", 1, None, {}])
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {rng.choice("abk"): value}
    return value


def _write(value: Any) -> str:
    """JSON text of ``value`` with escapes JSON.stringify would not choose, without recursion."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and item.startswith("\0raw:"):
            out.append(item[5:])
        elif isinstance(item, _Literal):
            out.append(item.text)
        elif isinstance(item, dict):
            parts: list[Any] = ["\0raw:{"]
            for i, (key, child) in enumerate(item.items()):
                parts += ["\0raw:" + ("," if i else "") + json.dumps(key) + ":", child]
            stack.extend(reversed([*parts, "\0raw:}"]))
        elif isinstance(item, list):
            parts = ["\0raw:["]
            for i, child in enumerate(item):
                parts += (["\0raw:,"] if i else []) + [child]
            stack.extend(reversed([*parts, "\0raw:]"]))
        else:
            # ASCII escapes (\u00e9, \ud83d, \u2028) where JSON.stringify writes raw text.
            out.append(
                json.dumps(item).replace("/", "\\/") if isinstance(item, str) else json.dumps(item)
            )
    return "".join(out)


def _leaves(value: Any) -> list[tuple[Any, Any]]:
    """``(container, key)`` of every place in ``value`` holding a scalar or a container."""
    places: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        keys = (
            list(item)
            if isinstance(item, dict)
            else range(len(item))
            if isinstance(item, list)
            else []
        )
        for key in keys:
            places.append((item, key))
            stack.append(item[key])
    return places


def odd_session_bytes(seed: int, size: int = 24, *, max_depth: int = 1500) -> bytes:
    """A random session file (:func:`random_session_bytes`) made odd but still valid JSON.

    Some values are replaced with odd number literals (``1E+2``, ``-0``, ``1e400``, integers
    of 5,000 digits), strings with unusual escapes and characters (``\\r\\n``, U+0085,
    U+2028, lone surrogates, ``\\/``) or values of the wrong type; some fields hold values
    nested up to ``max_depth`` levels (beyond Python's recursion limit and orjson's 1,024);
    some entry ids hold control characters. Every line ``JSON.parse`` read before still
    reads.
    """
    rng = random.Random(seed)
    base = random_session_bytes(seed, size, newer=rng.random() < 0.8, odd=rng.random() < 0.5,
                                version=rng.choice((3, 3, 3, 2, 1)))  # fmt: skip
    text = base.decode("utf-8")
    # Odd ids: the same replacement everywhere, so parent links still hold.
    ids = sorted(set(re.findall(r'"id":"([0-9a-f]{8})"', text)))
    for entry_id in rng.sample(ids, k=min(len(ids), rng.randint(0, 3))):
        odd = (
            entry_id[:4]
            + rng.choice(["\r\n", "\u0085", "\u2028", "\t", " ", "\\", "<&>"])
            + entry_id[4:]
        )
        text = text.replace(f'"{entry_id}"', json.dumps(odd))
    lines: list[str] = []
    for line in text.split("\n"):
        try:
            value = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        if not isinstance(value, dict) or value.get("type") == "session" or rng.random() < 0.4:
            lines.append(line)
            continue
        places = [p for p in _leaves(value) if p[1] not in ("id", "parentId", "type")]
        for _ in range(rng.randint(1, 3)):
            if not places:
                break
            container, key = rng.choice(places)
            if rng.random() < 0.3:
                container[key] = _deep(rng, rng.randint(900, max_depth))
            else:
                container[key] = _odd_value(rng)
        lines.append(_write(value))
    return "\n".join(lines).encode("utf-8", "surrogatepass")
