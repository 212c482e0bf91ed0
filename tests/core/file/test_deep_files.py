"""Files nested 991–1,024 deep and deeper (issue 23, reproduction 2): read as Pi reads
them, the nesting said once, and every operation and command works on them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinb.core import Session
from tests.fuzz_ops import OPERATIONS, run_all
from tests.odd_lines import HEADER, message_line, run_cli


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
@pytest.mark.parametrize("depth", [995, 1024, 1500, 20_000])
def test_deeply_nested_values_break_nothing(depth: int, tmp_path: Path) -> None:
    deep = "[" * depth + '"x"' + "]" * depth
    obj = '{"a":' * depth + "1" + "}" * depth
    lines = [
        json.dumps(HEADER),
        message_line("u1", None, {"role": "user", "content": "hi", "timestamp": 1}, 1),
        # Tool arguments, content, details, a label and a name, all nested `depth` deep.
        '{"type":"message","id":"a1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z",'
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read",'
        f'"arguments":{{"path":{deep}}}}}],"usage":{{"input":1,"output":1,"totalTokens":2}},'
        '"stopReason":"toolUse","timestamp":2}}',
        '{"type":"message","id":"r1","parentId":"a1","timestamp":"2025-01-01T00:00:03.000Z",'
        '"message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":'
        f'[{{"type":"text","text":"out"}}],"details":{obj},"isError":false,"timestamp":3}}}}',
        f'{{"type":"label","id":"l1","parentId":"r1","timestamp":"2025-01-01T00:00:04.000Z","targetId":"r1","label":{deep}}}',
        f'{{"type":"session_info","id":"n1","parentId":"l1","timestamp":"2025-01-01T00:00:05.000Z","name":{deep}}}',
        message_line("u2", "n1", {"role": "user", "content": "x", "timestamp": 6}, 6)[:-2]
        + f',"extra":{obj}}}}}',
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session = Session.open(path)
    assert len(session.build_context().messages) == 4
    # The label and the name are lists, not text: read as Pi reads them, and said once.
    assert [(p.kind, p.line, p.message.split(";")[0]) for p in session.problems] == [
        ("odd-field", 5, "label is a list, not text"),
        ("odd-field", 6, "name is a list, not text"),
    ]
    operations = OPERATIONS if depth <= 1500 else {k: OPERATIONS[k] for k in ("core", "views")}
    failures = run_all([path], operations)
    assert not failures, "\n".join(map(str, failures))
    code, out, _ = run_cli("tree", str(path))
    assert code == 0 and "[[[[" in out and "…" in out  # shown cut, with a visible ellipsis
