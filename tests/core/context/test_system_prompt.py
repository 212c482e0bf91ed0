"""The system prompt as sent, split over the system messages that make it: never negative."""

from __future__ import annotations

from typing import Any

import pytest

from pinb.core import Session
from pinb.core.context.build import current_system_message
from pinb.core.context.system_prompt import (
    entry_costs,
    message_costs,
    system_prompt_tokens,
    system_shares,
    system_summary,
)
from pinb.core.context.tokens import estimate_tokens
from tests.samples import CASE_FILES

TOOLS = [
    {"name": name, "description": f"The {name} tool. " * 20, "parameters": {"type": "object"}}
    for name in ("read", "write", "bash")
]


def _system(**fields: Any) -> dict[str, Any]:
    return {"role": "system", "content": "", "timestamp": 1, **fields}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 2}


def test_a_patch_that_removes_every_tool_costs_its_own_text_and_notes_the_removal() -> None:
    first = _system(sections={"preamble": "You are a coding assistant. " * 10}, toolsAdded=TOOLS)
    patch = _system(toolsRemoved=[{"name": t["name"]} for t in TOOLS])
    messages = [first, _user("Read a file."), patch, _user("No tools now.")]
    shares = system_shares(messages)
    assert [s.index for s in shares] == [0, 2]
    prompt = system_prompt_tokens(messages)
    assert prompt == estimate_tokens(current_system_message(messages))
    assert prompt < estimate_tokens(first)  # the tool schemas are no longer sent
    assert sum(s.tokens for s in shares) == prompt
    assert shares[1].tokens == shares[1].own_tokens == 0  # toolsRemoved costs nothing
    assert shares[1].removed_tools == ("read", "write", "bash")
    # What it removes is what the first message's tools cost in the prompt.
    assert shares[1].removed_tokens == pytest.approx(estimate_tokens(first) - prompt, abs=2)
    assert shares[0].own_tokens == estimate_tokens(first) > shares[0].tokens
    costs = message_costs(messages)
    assert all(cost >= 0 for cost in costs)
    assert sum(costs) == prompt + sum(estimate_tokens(m) for m in messages if m["role"] == "user")


def test_replaced_sections_move_to_the_message_that_replaced_them() -> None:
    first = _system(content="Base.", sections={"a": "x" * 400, "b": "y" * 400})
    second = _system(sections={"a": "z" * 40, "b": None})
    third = _system(content="Extra rule.", toolsAdded=TOOLS[:1])
    messages = [first, second, third]
    shares = system_shares(messages)
    assert sum(s.tokens for s in shares) == system_prompt_tokens(messages)
    assert all(s.tokens >= 0 for s in shares)
    assert shares[1].removed_sections == ("a", "b") and shares[1].removed_tokens == 200
    assert shares[0].tokens < 10 and shares[1].tokens == 10  # "Base." vs the new section a
    assert shares[2].tokens > shares[1].tokens  # the tool schema it adds
    assert system_summary(second) == "sections a · drops sections b"
    assert system_summary(third) == "Extra rule. · tools + read"
    assert system_summary(_user("hi")) == ""


def test_no_system_message_and_odd_values() -> None:
    assert system_shares([_user("a")]) == []
    assert system_prompt_tokens([_user("a")]) == 0
    odd = [_system(sections=["not", "a", "dict"], toolsAdded="nope", toolsRemoved=[3])]
    shares = system_shares(odd)
    assert len(shares) == 1 and shares[0].tokens == system_prompt_tokens(odd) >= 0


def test_entry_costs_add_up_to_the_estimate_of_the_context() -> None:
    # Compaction checkpoint, a later system message that drops a section, usage on the path.
    session = Session.open(CASE_FILES["system-messages"])
    context = session.build_context()
    costs = entry_costs(context)
    total = system_prompt_tokens(context.messages, context.pi) + sum(
        estimate_tokens(m, pi=context.pi) for m in context.messages if m.get("role") != "system"
    )
    assert sum(costs.values()) == total
    assert all(cost >= 0 for cost in costs.values())
    assert id(context.compaction) in costs  # its checkpoint and summary
