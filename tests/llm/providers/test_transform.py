"""Provider-layer filtering before a request (spec §5.6)."""

from __future__ import annotations

import copy

from pinb.llm import ModelInfo, transform_messages
from pinb.llm.providers.transform import NO_RESULT_TEXT, anthropic_tool_id
from pinb.testing import messages

TARGET = ModelInfo("anthropic", "claude-sonnet-4-5", "anthropic-messages")


def assistant(
    content,
    stop="toolUse",
    provider="anthropic",
    model="claude-sonnet-4-5",
    api="anthropic-messages",
    ts=2,
):
    # No usage: the transform must not need one.
    return messages.assistant(
        content, usage={}, stop=stop, ts=ts, model=model, provider=provider, api=api
    )


def call(call_id, name="read"):
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"path": "x"}}


def result(call_id, name="read", ts=3):
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
        "timestamp": ts,
    }


USER = {"role": "user", "content": "hi", "timestamp": 1}


def test_error_and_aborted_assistants_are_dropped():
    msgs = [
        USER,
        assistant([{"type": "text", "text": "bad"}], stop="error"),
        assistant([{"type": "text", "text": "half"}], stop="aborted"),
        USER,
    ]
    assert transform_messages(msgs, TARGET) == [USER, USER]


def test_unchanged_messages_are_the_same_objects_and_input_is_not_mutated():
    a = assistant([call("t1")])
    r = result("t1")
    msgs = [USER, a, r]
    before = copy.deepcopy(msgs)
    out = transform_messages(msgs, TARGET)
    assert out[0] is USER and out[1] is a and out[2] is r
    assert msgs == before


def test_missing_results_get_synthetic_errors_before_next_user_message():
    msgs = [USER, assistant([call("t1"), call("t2", "bash")]), result("t2", "bash"), USER]
    out = transform_messages(msgs, TARGET)
    assert [m["role"] for m in out] == ["user", "assistant", "toolResult", "toolResult", "user"]
    synthetic = out[3]
    assert synthetic == {
        "role": "toolResult",
        "toolCallId": "t1",
        "toolName": "read",
        "content": [{"type": "text", "text": NO_RESULT_TEXT}],
        "isError": True,
        "timestamp": 2,
    }


def test_missing_results_before_next_assistant_and_at_the_end():
    msgs = [USER, assistant([call("t1")]), assistant([call("t2")], ts=4)]
    out = transform_messages(msgs, TARGET)
    assert [(m["role"], m.get("toolCallId")) for m in out] == [
        ("user", None),
        ("assistant", None),
        ("toolResult", "t1"),
        ("assistant", None),
        ("toolResult", "t2"),
    ]


def test_aborted_call_without_result_needs_no_synthetic_result():
    msgs = [USER, assistant([call("t1")], stop="aborted"), USER]
    assert transform_messages(msgs, TARGET) == [USER, USER]


def test_foreign_thinking_becomes_text_and_signatures_go():
    foreign = assistant(
        [
            {"type": "thinking", "thinking": "pondering", "thinkingSignature": "sig"},
            {"type": "thinking", "thinking": "  ", "thinkingSignature": "sig2"},
            {
                "type": "thinking",
                "thinking": "[Reasoning redacted]",
                "thinkingSignature": "enc",
                "redacted": True,
            },
            {"type": "text", "text": "answer", "textSignature": "ts"},
            {
                "type": "toolCall",
                "id": "call|7",
                "name": "read",
                "arguments": {},
                "thoughtSignature": "g",
            },
        ],
        provider="openai",
        model="gpt-4o",
        api="openai-completions",
    )
    out = transform_messages(
        [USER, foreign, result("call|7")], TARGET, normalize_tool_id=anthropic_tool_id
    )
    assert out[1]["content"] == [
        {"type": "text", "text": "pondering"},
        {"type": "text", "text": "answer"},
        {"type": "toolCall", "id": "call_7", "name": "read", "arguments": {}},
    ]
    assert out[2]["toolCallId"] == "call_7"
    assert foreign["content"][0]["type"] == "thinking"  # input untouched


def test_same_model_keeps_thinking_and_signatures():
    own = assistant(
        [
            {"type": "thinking", "thinking": "t", "thinkingSignature": "s"},
            {"type": "text", "text": "a"},
        ],
        stop="stop",
    )
    assert transform_messages([USER, own], TARGET)[1] is own


def test_anthropic_tool_id():
    assert anthropic_tool_id("toolu_01-AZ") == "toolu_01-AZ"
    assert anthropic_tool_id("a.b:c d") == "a_b_c_d"
    assert len(anthropic_tool_id("x" * 100)) == 64
    assert anthropic_tool_id("") == "toolcall"


def test_results_of_a_dropped_reply_are_dropped_with_it():
    messages = [
        user_msg := {"role": "user", "content": "go", "timestamp": 1},
        assistant([call("c1")], stop="error"),
        result("c1"),  # the "not run" result pinb saves for a failed reply
        assistant([call("c2")]),
        result("c2"),
    ]
    out = transform_messages(messages, TARGET)
    assert out[0] is user_msg
    assert [m["role"] for m in out] == ["user", "assistant", "toolResult"]
    assert out[2]["toolCallId"] == "c2"
