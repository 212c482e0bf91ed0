"""Realistic sessions for view tests: branches, a compaction, a branch summary, labels, XSS text."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinb.core import Session
from pinb.testing import messages

_clock = itertools.count(1_765_000_000_000, 1000)


def user(text: str) -> dict[str, Any]:
    return messages.user(text, ts=next(_clock))


def assistant(
    text: str = "",
    *,
    tool: tuple[str, str, dict[str, Any]] | None = None,
    total: int = 0,
    thinking: str | None = None,
    stop: str | None = None,
) -> dict[str, Any]:
    spent = messages.usage(total, input_tokens=total, cost=0)
    spent["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return messages.assistant(
        text,
        thinking=thinking,
        signature=None,
        calls=[tool] if tool is not None else (),
        usage=spent,
        stop=stop,
        ts=next(_clock),
        model="claude-test",
    )


def tool_result(call_id: str, name: str, text: str, *, error: bool = False) -> dict[str, Any]:
    return messages.tool_result(call_id, name, text, error=error, ts=next(_clock))


def bash(command: str, output: str) -> dict[str, Any]:
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": next(_clock),
    }


@dataclass
class Demo:
    """A session and the ids of its landmarks."""

    session: Session
    ids: dict[str, str] = field(default_factory=dict)


def demo_session(folder: Path, *, text: str = "", cwd: str = "/work/demo") -> Demo:
    """A persisted session with two branches, a compaction, a branch summary and labels.

    ``text`` is mixed into every string field (the XSS test passes its payloads here).

    Tree (``*`` = current leaf path)::

        model_change - thinking - u1 - a1(read) - r1 - a2 *
          ├ u2 - a3(bash) - r3 - a4                         (first branch)
          └ u3 [label] - a5 - u4 - a6 - compaction - u5 - a7  *
                          └ (branch_summary from a4's side, placed at a2) ...
    """
    t = text
    s = Session.create(cwd, folder)
    ids: dict[str, str] = {}
    s.append_model_change("anthropic", "claude-test")
    s.append_thinking_level_change("medium")
    ids["u1"] = s.append_message(user(f"Read the config and fix the bug {t}")).id
    ids["a1"] = s.append_message(
        assistant(
            f"Reading {t}",
            tool=("c1", f"read{t}", {"path": f"src/config.py{t}"}),
            total=1200,
            thinking=f"plan {t}",
        )
    ).id
    ids["r1"] = s.append_message(tool_result("c1", f"read{t}", f"def load():\n    return {t}")).id
    ids["a2"] = s.append_message(assistant(f"Found it. {t}", total=1500)).id
    ids["u2"] = s.append_message(user(f"Also run the tests {t}")).id
    ids["a3"] = s.append_message(
        assistant("", tool=("c2", "bash", {"command": f"pytest -q {t}"}), total=1700)
    ).id
    ids["r3"] = s.append_message(tool_result("c2", "bash", f"3 passed {t}", error=bool(t))).id
    ids["a4"] = s.append_message(assistant(f"All tests pass. {t}", total=1800)).id
    # Second branch from a2, with a compaction on it.
    s.branch(ids["a2"])
    ids["u3"] = s.append_message(user(f"Try a different approach {t}")).id
    s.set_label(ids["u3"], f"alternative {t}".strip())
    ids["a5"] = s.append_message(assistant(f"Alternative approach {t} " + "x" * 400, total=2500)).id
    ids["bash"] = s.append_message(bash(f"ls {t}", f"config.py {t}")).id
    ids["u4"] = s.append_message(user(f"Keep going {t}")).id
    ids["a6"] = s.append_message(
        assistant(f"Edited {t}", tool=("c3", "edit", {"path": "src/config.py"}), total=3000)
    ).id
    ids["r6"] = s.append_message(tool_result("c3", "edit", f"ok {t}")).id
    ids["compaction"] = s.append_compaction(
        f"## Goal\nFix the config bug {t}\n\n- [x] read config {t}\n- [ ] run tests\n\n"
        f"[link {t}](javascript:alert(1)) **bold {t}**",
        ids["u4"],
        3100,
        {"readFiles": [f"src/config.py{t}"], "modifiedFiles": [f"src/new{t}.py"]},
    ).id
    ids["u5"] = s.append_message(user(f"Now document it {t}")).id
    ids["a7"] = s.append_message(assistant(f"Documented {t}", total=900)).id
    s.append_custom_message("note", f"extension note {t}")
    # Come back to a2 with a summary of the second branch, then continue there.
    ids["branch_summary"] = s.branch_with_summary(
        ids["a2"], f"The user explored a different approach {t}"
    ).id
    ids["u6"] = s.append_message(user(f"Back on the main line {t}")).id
    ids["a8"] = s.append_message(assistant(f"Continuing {t}", total=1600)).id
    s.set_name(f"Demo session {t}")
    # A plain leaf move (writes a `leaf` entry): the current leaf is a7 on the compacted branch.
    s.branch(ids["a7"])
    return Demo(s, ids)


def long_chain_session(n: int, *, branch_every: int = 0) -> Session:
    """An in-memory session of ``n`` messages, optionally branching every ``branch_every``."""
    s = Session.in_memory("/work/big")
    previous: str | None = None
    for i in range(n):
        message = user(f"question {i}") if i % 2 == 0 else assistant(f"answer {i}", total=10 + i)
        entry = s.append_message(message, validate=False)
        if branch_every and i and i % branch_every == 0 and previous is not None:
            s.branch(previous, persist=False)
        previous = entry.id
    return s


def frontend_update(widget: Any, **state: Any) -> None:
    """Deliver a state update to a widget as the browser would (a comm message)."""
    widget._handle_msg({"content": {"data": {"method": "update", "state": state}}, "buffers": []})
