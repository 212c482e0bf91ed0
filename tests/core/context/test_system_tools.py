"""The tools a ``system`` message adds and removes when a tool name is not text (issue 23,
reproduction 3): merged as Pi merges them, planned as Pi plans, and every command works.
"""

from __future__ import annotations

import json
from pathlib import Path

from pinb.core import Session
from pinb.core.context.build import current_system_message
from pinb.core.js.wire import dumps, loads
from pinb.testing.conformance import answer
from tests.odd_lines import HEADER, message_line, run_cli
from tests.pi.reference import PiReference


def test_a_tool_name_that_is_not_text_builds_a_context(pi16: PiReference, tmp_path: Path) -> None:
    system = {"role": "system", "content": "Base.", "timestamp": 1,
              "toolsAdded": [{"name": {}}, {"name": {}}, {"name": [1]}, {"name": True},
                             {"name": 1}, {"name": "read", "description": "r"}],
              "toolsRemoved": [{"name": {}}, {"name": 1}]}  # fmt: skip
    later = {"role": "system", "content": "", "timestamp": 3, "toolsRemoved": [{"name": 1}]}
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([json.dumps(HEADER), message_line("s1", None, system, 1),
                   message_line("u1", "s1", {"role": "user", "content": "hi", "timestamp": 2}, 2),
                   message_line("s2", "u1", later, 3)])
        + "\n"
    )  # fmt: skip
    head = current_system_message(Session.open(path).build_context().messages)
    assert head is not None
    # As Pi's Map keeps them: objects by identity (both {} stay, no {} removes one), true
    # is not 1, removals before additions within a message; the later message removes 1.
    assert head["toolsAdded"] == [{"name": {}}, {"name": {}}, {"name": [1]}, {"name": True},
                                  {"name": "read", "description": "r"}]  # fmt: skip
    # Pi counts the merged system message in its compaction plan: the same numbers.
    query = {"target": "pi-1.6.0", "leaves": [{"key": "@default"}], "plans": ["tiny"],
             "planPresets": {"tiny": {"reserve": 100, "keep": 150, "window": 1000}}}  # fmt: skip
    pi = loads(pi16.answer_text(query, path))["@default"]
    ours = loads(dumps(answer(query, path)))["@default"]
    assert ours == pi
    for command in (["context"], ["tokens"], ["tree"], ["compact", "--plan"]):
        code, _, err = run_cli(command[0], str(path), *command[1:])
        assert code == 0, err
