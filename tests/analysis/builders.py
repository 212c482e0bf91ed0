"""Hand-built Pi sessions for the analysis tests, and the project's sample files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinb.core import Session
from pinb.testing import messages
from tests.samples import LEGACY, TREES

#: Long legacy sessions standing in for Pi's own (named after Pi's two real fixtures).
PI_FIXTURES = sorted(LEGACY.values())


#: Random trees, a version 1 and a version 2 file among them.
CASES = TREES


SCRIPT = "<script>alert('x')</script>"


def user(text: str, ts: int = 1_700_000_000_000) -> dict[str, Any]:
    return messages.user(text, ts=ts)


def assistant(
    text: str = "",
    *,
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = (),
    total: int = 0,
    cost: float = 0.0,
    stop: str | None = None,
    ts: int = 1_700_000_001_000,
    thinking: str | None = None,
) -> dict[str, Any]:
    spent = messages.usage(total, output_tokens=10 if total else 0, cost=cost)
    spent["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}
    return messages.assistant(
        text,
        thinking=thinking,
        signature=None,
        calls=calls,
        usage=spent,
        stop=stop,
        ts=ts,
        model="claude-test",
    )


def tool_result(
    call_id: str, name: str, text: str, *, error: bool = False, ts: int = 0
) -> dict[str, Any]:
    return messages.tool_result(call_id, name, text, error=error, ts=ts or 1_700_000_002_000)


def build_demo(folder: Path) -> tuple[Path, dict[str, str]]:
    """A small session with a tool call, a label, a compaction, a second branch and a name.

    Returns the file and the ids by role in the story.
    """
    s = Session.create("/home/dev/demo", folder)
    ids: dict[str, str] = {}
    ids["u1"] = s.append_message(user(f"hello {SCRIPT}", 1_700_000_000_000)).id
    ids["a1"] = s.append_message(
        assistant(
            "reading",
            calls=(("call-1", "read", {"path": "a.py"}), ("call-2", "bash", {"command": "ls"})),
            total=1000,
            cost=0.01,
            ts=1_700_000_001_000,
            thinking="let me think",
        )
    ).id
    ids["r1"] = s.append_message(
        tool_result("call-1", "read", "print('<b>hi</b>')", ts=1_700_000_003_000)
    ).id
    ids["r2"] = s.append_message(
        tool_result("call-2", "bash", "boom", error=True, ts=1_700_000_004_000)
    ).id
    ids["a2"] = s.append_message(assistant("done", total=1500, cost=0.02, ts=1_700_000_005_000)).id
    s.set_label(ids["a2"], "checkpoint")
    ids["c1"] = s.append_compaction(
        f"Summary {SCRIPT} <img src=x onerror=alert(1)>", ids["a2"], 1500
    ).id
    ids["u2"] = s.append_message(user("continue", 1_700_000_006_000)).id
    ids["a3"] = s.append_message(assistant("ok", total=300, cost=0.005, ts=1_700_000_007_000)).id
    s.branch(ids["a1"])
    ids["u3"] = s.append_message(user("other way", 1_700_000_008_000)).id
    ids["a4"] = s.append_message(assistant("alt", total=1200, cost=0.03, ts=1_700_000_009_000)).id
    s.set_name("demo session")
    assert s.path is not None
    return s.path, ids
