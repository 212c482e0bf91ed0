"""A long coding session shaped like real Pi work, for what a compaction keeps.

Real sessions hold many distinct facts a summary must keep: each turn the user asks for
something new (often with a rule), the agent reads and edits other files, runs other
commands, and some of them fail with their own error line. :func:`write_work_session`
writes such a file deterministically (the same file for the same seed), so tests and
benchmarks can measure what a summary keeps without a real user's file.
"""

from __future__ import annotations

import random
from pathlib import Path

from ..core import Session

__all__ = ["write_work_session"]

_AREAS = (
    "parser", "tokenizer", "cache", "scheduler", "exporter", "importer", "renderer",
    "router", "session", "storage", "metrics", "config", "auth", "billing", "search",
    "queue", "logger", "plugin", "theme", "shell",
)  # fmt: skip
_VERBS = (
    "Refactor", "Speed up", "Fix the crash in", "Add retries to", "Document", "Port",
    "Split", "Test", "Type-check", "Simplify",
)  # fmt: skip
_RULES = (
    "Never change the public API of {area}.",
    "Don't add a dependency for {area}.",
    "Always keep the {area} tests green.",
    "Only touch files under src/{area}/.",
    "Make sure {area} still runs on Python 3.10.",
)
_ERRORS = (
    "ModuleNotFoundError: No module named '{area}_compat'",
    "AssertionError: expected 3 {area} rows, got 2",
    "TypeError: {area}_open() missing 1 required positional argument: 'mode'",
    "FileNotFoundError: [Errno 2] No such file or directory: 'fixtures/{area}.json'",
    "error: unused variable `{area}_state` in src/{area}/core.rs",
)


def _usage(total: int) -> dict[str, object]:
    return {
        "input": total - 50,
        "output": 50,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def write_work_session(
    folder: str | Path, *, turns: int = 40, seed: int = 0, cwd: str | Path = "/home/dev/project"
) -> Session:
    """Write ``turns`` turns of coding work as a Pi session file in ``folder``.

    Each turn: a request about one area of the project (every third with a rule), a read
    and an edit of that area's files, a test command (every other one fails with an error
    line of its own, and a fixed re-run passes), and a final text saying what was done.
    Tool outputs are a few hundred characters, as a real read is longer. ``cwd`` is the
    project folder the header records (``pi --session`` wants one that exists).
    """
    rng = random.Random(seed)
    session = Session.create(
        str(cwd),
        folder,
        id_generator=lambda: f"{rng.getrandbits(32):08x}",
    )
    total = 2000
    with session.turn("the work session"):
        for turn in range(turns):
            area = _AREAS[turn % len(_AREAS)] + ("" if turn < len(_AREAS) else f"{turn}")
            verb = _VERBS[rng.randrange(len(_VERBS))]
            text = f"{verb} the {area} module so the nightly job can use it"
            if turn % 3 == 0:
                text += ". " + _RULES[rng.randrange(len(_RULES))].format(area=area)
            session.append_message(
                {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
            )
            calls = [
                ("read", {"path": f"src/{area}/core.py"}),
                ("edit", {"path": f"src/{area}/api.py", "oldText": "old", "newText": "new"}),
                (
                    "bash",
                    {"command": f"pytest -q tests/test_{area}.py -k {verb.split()[0].lower()}"},
                ),
            ]
            failed = turn % 2 == 0
            for number, (name, arguments) in enumerate(calls):
                total += 400
                call_id = f"call_{turn}_{number}"
                session.append_message(
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "toolCall",
                                "id": call_id,
                                "name": name,
                                "arguments": arguments,
                            }
                        ],
                        "api": "anthropic-messages",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "usage": _usage(total),
                        "stopReason": "toolUse",
                        "timestamp": 2,
                    }
                )
                output = f"{name} output for {area}: " + "lorem ipsum " * 160
                error = name == "bash" and failed
                if error:
                    line = _ERRORS[rng.randrange(len(_ERRORS))].format(area=area)
                    output = f'Traceback (most recent call last):\n  File "x.py", line 3\n{line}\n\nCommand exited with code 1'
                session.append_message(
                    {
                        "role": "toolResult",
                        "toolCallId": call_id,
                        "toolName": name,
                        "content": [{"type": "text", "text": output}],
                        "isError": error,
                        "timestamp": 3,
                    }
                )
            total += 200
            done = (
                f"The {area} change is in, but the tests still fail; next I will fix the fixture."
                if failed
                else f"The {area} module is done and its tests pass."
            )
            session.append_message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": done}],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": _usage(total),
                    "stopReason": "stop",
                    "timestamp": 4,
                }
            )
    return session
