"""Compaction strategies: observation masking's placeholder for a tool result."""

from __future__ import annotations

from pinb.analysis.compaction.strategies import MASK, mask_message


def test_mask_message() -> None:
    result = {"role": "toolResult", "toolName": "read", "toolCallId": "c",
              "content": [{"type": "text", "text": "x" * 1234}], "isError": False}  # fmt: skip
    masked = mask_message(result)
    assert masked["content"] == [{"type": "text", "text": MASK.format(tool="read", chars=1234)}]
    assert masked["toolCallId"] == "c" and result["content"][0]["text"] == "x" * 1234
    user = {"role": "user", "content": "hi"}
    assert mask_message(user) is user
