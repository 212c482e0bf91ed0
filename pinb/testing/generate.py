"""Realistic synthetic Pi sessions — branchy, with tool use, compactions and branch summaries.

Used by the benchmarks, the notebooks (when the user has no sessions of their own) and
tests. Deterministic for a given seed; the files are ordinary Pi v3 sessions.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.file.write import serialize_line

__all__ = [
    "SessionShape",
    "generate_session",
    "iter_session_lines",
    "legacy_lines",
    "tool_heavy_session",
]

_WORDS = [
    "parser",
    "session",
    "tree",
    "leaf",
    "branch",
    "compaction",
    "summary",
    "token",
    "context",
    "model",
    "tool",
    "read",
    "edit",
    "write",
    "bash",
    "grep",
    "test",
    "fix",
    "refactor",
    "module",
    "function",
    "class",
    "import",
    "error",
    "stream",
    "cache",
    "config",
    "path",
    "file",
    "line",
    "value",
    "array",
    "object",
    "string",
    "number",
    "async",
    "await",
    "return",
    "index",
]
_FILES = [f"src/{name}.py" for name in ("app", "cli", "store", "tree", "context", "tokens")] + [
    "README.md",
    "tests/test_app.py",
]


@dataclass(frozen=True)
class SessionShape:
    """How a generated session looks.

    Attributes
    ----------
    entries:
        Total number of entries (header excluded).
    main_depth:
        Length of the main line of conversation (the deepest path).
    tool_result_chars:
        Typical size of a tool result's text.
    compaction_every:
        A compaction entry roughly every this many entries on the main line (0: none).
    branch_every:
        Start a side branch roughly every this many main-line entries (0: linear).
    start:
        When the session starts (default 2025-03-01 09:00 UTC).
    """

    entries: int = 2_000
    main_depth: int = 1_200
    tool_result_chars: int = 2_000
    compaction_every: int = 400
    branch_every: int = 60
    cwd: str = "/home/dev/project"
    model: tuple[str, str] = ("anthropic", "claude-sonnet-4-5")
    start: datetime | None = None


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Builder:
    def __init__(self, shape: SessionShape, rng: random.Random) -> None:
        self.shape = shape
        self.rng = rng
        self.clock = shape.start or datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
        self.used: set[str] = set()
        self.main_tokens = 0

    def words(self, low: int, high: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(low, high)))

    def new_id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate

    def tick(self) -> tuple[str, int]:
        self.clock += timedelta(milliseconds=self.rng.randint(400, 20_000))
        return _iso(self.clock), int(self.clock.timestamp() * 1000)

    def entry(self, kind: str, parent: str | None, **fields: Any) -> dict[str, Any]:
        stamp, _ = self.tick()
        return {"type": kind, "id": self.new_id(), "parentId": parent, "timestamp": stamp, **fields}

    def message(self, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
        entry = self.entry("message", parent, message=message)
        message["timestamp"] = int(self.clock.timestamp() * 1000)
        return entry

    def user(self, parent: str | None) -> dict[str, Any]:
        text = self.words(6, 40)
        return self.message(parent, {"role": "user", "content": [{"type": "text", "text": text}]})

    def assistant(
        self, parent: str | None, calls: int
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        content: list[dict[str, Any]] = []
        if self.rng.random() < 0.3:
            content.append(
                {"type": "thinking", "thinking": self.words(10, 60), "thinkingSignature": "sig"}
            )
        content.append({"type": "text", "text": self.words(5, 50)})
        made = []
        for _ in range(calls):
            name = self.rng.choice(["read", "read", "edit", "bash", "write", "grep"])
            call_id = "toolu_" + uuid.UUID(int=self.rng.getrandbits(128)).hex[:20]
            path = self.rng.choice(_FILES)
            args: dict[str, Any] = {"path": path}
            if name == "bash":
                args = {"command": f"pytest -q {path}"}
            elif name == "edit":
                args = {"path": path, "oldText": self.words(2, 6), "newText": self.words(2, 6)}
            elif name == "write":
                args = {"path": path, "content": self.words(20, 80)}
            elif name == "grep":
                args = {"pattern": self.rng.choice(_WORDS), "path": "src"}
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
            made.append((call_id, name))
        self.main_tokens += self.rng.randint(200, 1500)
        provider, model = self.shape.model
        message = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": provider,
            "model": model,
            "usage": {
                "input": self.main_tokens,
                "output": self.rng.randint(20, 800),
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": self.main_tokens + 400,
                "cost": {
                    "input": 0.003,
                    "output": 0.0015,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "total": 0.0045,
                },
            },
            "stopReason": "toolUse" if made else "stop",
        }
        return self.message(parent, message), made

    def tool_result(self, parent: str | None, call: tuple[str, str]) -> dict[str, Any]:
        size = max(
            10, int(self.rng.gauss(self.shape.tool_result_chars, self.shape.tool_result_chars / 4))
        )
        text = (self.words(20, 40) + "\n") * (size // 200 + 1)
        return self.message(
            parent,
            {
                "role": "toolResult",
                "toolCallId": call[0],
                "toolName": call[1],
                "content": [{"type": "text", "text": text[:size]}],
                "isError": self.rng.random() < 0.05,
            },
        )


def iter_session_lines(
    shape: SessionShape = SessionShape(), seed: int = 0
) -> Iterator[dict[str, Any]]:
    """Yield the header and then every entry dict of a generated session, in file order."""
    rng = random.Random(seed)
    b = _Builder(shape, rng)
    stamp, _ = b.tick()
    yield {
        "type": "session",
        "version": 3,
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "timestamp": stamp,
        "cwd": shape.cwd,
    }
    emitted = 0
    provider, model = shape.model
    first = b.entry("model_change", None, provider=provider, modelId=model)
    second = b.entry("thinking_level_change", first["id"], thinkingLevel="medium")
    yield first
    yield second
    emitted += 2
    main: list[str] = [first["id"], second["id"]]
    side_budget = shape.entries - shape.main_depth

    def turn(parent: str, limit: int) -> list[dict[str, Any]]:
        """One user turn: user, then assistant/tool rounds, within ``limit`` entries."""
        made = [b.user(parent)]
        while len(made) < limit:
            calls = rng.choices((0, 1, 2), (12, 7, 1))[0] if len(made) + 3 < limit else 0
            reply, pending = b.assistant(made[-1]["id"], calls)
            made.append(reply)
            for call in pending:
                made.append(b.tool_result(made[-1]["id"], call))
            if not pending:
                break
        return made

    since_compaction = 0
    while len(main) < shape.main_depth and emitted < shape.entries:
        room = min(shape.main_depth - len(main), shape.entries - emitted - max(side_budget, 0))
        if room <= 0:
            break
        for entry in turn(main[-1], min(room, 12)):
            yield entry
            main.append(entry["id"])
            emitted += 1
            since_compaction += 1
        if shape.compaction_every and since_compaction >= shape.compaction_every and len(main) > 20:
            kept = main[-rng.randint(4, 12)]
            compaction = b.entry(
                "compaction",
                main[-1],
                summary="## Goal\n"
                + b.words(10, 30)
                + "\n\n## Progress\n### Done\n- [x] "
                + b.words(5, 15),
                firstKeptEntryId=kept,
                tokensBefore=b.main_tokens,
                details={"readFiles": _FILES[:2], "modifiedFiles": _FILES[2:3]},
            )
            b.main_tokens //= 5
            yield compaction
            main.append(compaction["id"])
            emitted += 1
            since_compaction = 0
        if shape.branch_every and side_budget > 0 and rng.random() < 12 / shape.branch_every:
            anchor = rng.choice(main[max(2, len(main) - 200) :])
            length = min(side_budget, rng.randint(4, 60))
            side: list[dict[str, Any]] = []
            while len(side) < length:
                side.extend(turn(side[-1]["id"] if side else anchor, length - len(side)))
            for entry in side:
                yield entry
            emitted += len(side)
            side_budget -= len(side)
            if rng.random() < 0.5:
                summary = b.entry(
                    "branch_summary",
                    main[-1],
                    fromId=main[-1],
                    summary="The user explored a different conversation branch before returning here.\n"
                    "Summary of that exploration:\n\n" + b.words(10, 40),
                )
                yield summary
                main.append(summary["id"])
                emitted += 1
            if rng.random() < 0.2:
                label = b.entry(
                    "label", main[-1], targetId=rng.choice(main[2:]), label=rng.choice(_WORDS)
                )
                yield label
                main.append(label["id"])
                emitted += 1
    while emitted < shape.entries:
        extra = turn(main[-1], shape.entries - emitted)
        for entry in extra:
            yield entry
            main.append(entry["id"])
        emitted += len(extra)


def legacy_lines(values: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The same entries as a version 1 file: no ids or parents, kept entries named by index.

    Pi's oldest files (and its two real fixtures) look like this; their entries must form
    a single line, so pass a linear session (``branch_every=0``).
    """
    positions: dict[str, int] = {}
    for position, value in enumerate(values):
        value = dict(value)
        if value.get("type") == "session":
            value.pop("version", None)
            yield value
            continue
        positions[value.pop("id")] = position
        value.pop("parentId", None)
        if value.get("type") == "compaction":
            value["firstKeptEntryIndex"] = positions.get(value.pop("firstKeptEntryId"), 0)
        yield value


def generate_session(
    path: str | os.PathLike[str],
    shape: SessionShape = SessionShape(),
    seed: int = 0,
    *,
    legacy: bool = False,
) -> Path:
    """Write a generated session to ``path`` (overwriting nothing: the file must not exist).

    With ``legacy`` the file is written in Pi's version 1 format (see :func:`legacy_lines`).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    values = iter_session_lines(shape, seed)
    if legacy:
        values = legacy_lines(values)
    with open(target, "xb") as handle:
        for value in values:
            handle.write(serialize_line(value))
    return target


def tool_heavy_session(
    folder: str | os.PathLike[str],
    *,
    turns: int = 40,
    result_chars: int = 6_000,
    cwd: str | os.PathLike[str] | None = None,
    seed: int = 0,
) -> Path:
    """Write a linear, tool-heavy Pi 1.6 session through pinb's own writer, and return its path.

    Each turn: a user request, an assistant ``read`` or ``bash`` call, its result of about
    ``result_chars`` characters, and a short answer whose usage reports what chars/4 of
    the context was then (so the reported figure and the estimate agree, as with a
    tokenizer close to chars/4). Deterministic for a seed; written in ``folder``.
    """
    from ..core import Session
    from ..core.context.tokens import estimate_tokens

    rng = random.Random(seed)
    session = Session.create(cwd or folder, folder)
    clock = 1_760_000_000_000
    total = 0

    def add(message: dict[str, Any]) -> None:
        nonlocal clock, total
        clock += 1_000
        message["timestamp"] = clock
        if message["role"] == "assistant":
            cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
            usage: dict[str, Any] = {"input": total, "output": 20, "cacheRead": 0,
                                     "cacheWrite": 0, "totalTokens": total + 20, "cost": cost}  # fmt: skip
            message.update(
                api="openai-completions", provider="loop", model="loop-model", usage=usage
            )
        session.append_message(message)
        total += estimate_tokens(message)

    for turn in range(turns):
        path = f"src/{rng.choice(_WORDS)}_{turn}.py"
        bash = turn % 3 == 2
        name, arguments = (
            ("bash", {"command": f"pytest -q tests/test_{turn}.py"})
            if bash
            else (
                "read",
                {"path": path},
            )
        )
        add({"role": "user", "content": [{"type": "text", "text": f"Step {turn}: look at {path}"}]})
        call_id = f"call_{turn}"
        add(
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
                ],
                "stopReason": "toolUse",
            }
        )
        words = " ".join(rng.choice(_WORDS) for _ in range(result_chars // 6))
        body = f"marker-{turn} " + words
        add(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": [{"type": "text", "text": body[:result_chars]}],
                "isError": False,
            }
        )
        add(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Done with step {turn}: {path} is fine."}],
                "stopReason": "stop",
            }
        )
    assert session.path is not None
    return session.path
