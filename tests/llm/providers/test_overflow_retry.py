"""Overflow detection (§6.6), retry policy (§10.5) and partial JSON."""

from __future__ import annotations

import pytest

from pinb.llm import (
    RetryPolicy,
    is_context_overflow,
    is_retryable_error,
    parse_partial_json,
    parse_retry_after,
)


def err(text):
    return {
        "role": "assistant",
        "stopReason": "error",
        "errorMessage": text,
        "usage": {"input": 0, "cacheRead": 0},
    }


@pytest.mark.parametrize(
    "text",
    [
        "400 prompt is too long: 213462 tokens > 200000 maximum",
        "Your input exceeds the context window of this model",
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
        "Please reduce the length of the messages or completion",
        "This endpoint's maximum context length is 128000 tokens. However, you requested about 130000",
        "prompt token count of 140000 exceeds the limit of 128000",
        "the request exceeds the available context size, try increasing it",
        "tokens to keep from the initial prompt is greater than the context length",
        "invalid params, context window exceeds limit",
        "Your request exceeded model token limit: 262144 (requested: 300000)",
        "Prompt contains 140000 tokens ... too large for model with 131072 maximum context length",
        "model_context_window_exceeded",
        "context_length_exceeded",
        "CONTEXT LENGTH EXCEEDED",
        "too many tokens",
        "token limit exceeded",
        "400 status code (no body)",
        "413 (no body)",
        # llama-cpp-python, as an HTTP body or an SSE error event
        "Requested tokens (8521) exceed context window of 4096",
        "prompt too long; exceeded max context length by 300 tokens",
        "Prompt has 9,000 tokens, but the configured context size is 8,192 tokens",
        "413 Request exceeds the maximum size",
    ],
)
def test_overflow_phrasings(text):
    assert is_context_overflow(err(text))


@pytest.mark.parametrize(
    "text",
    [
        "429 rate limited",
        "500 internal",
        "401 invalid key",
        "Request was aborted",
        "",
        "ThrottlingException: Too many tokens, rate limit reached",
    ],
)
def test_not_overflow(text):
    assert not is_context_overflow(err(text))


def test_overflow_needs_error_stop_reason():
    assert not is_context_overflow({"stopReason": "aborted", "errorMessage": "prompt is too long"})


def test_silent_overflow_by_usage():
    ok = {"stopReason": "stop", "usage": {"input": 90_000, "cacheRead": 38_001}}
    assert is_context_overflow(ok, 128_000)
    assert not is_context_overflow(ok, 200_000)
    assert not is_context_overflow(ok, None)
    # Pi 1.6: a length stop is an overflow only when the filled window left no output.
    assert not is_context_overflow(
        {**ok, "stopReason": "length", "usage": {**ok["usage"], "output": 5}}, 128_000
    )
    assert is_context_overflow({**ok, "stopReason": "length"}, 128_000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("529 Overloaded", True),
        ("overloaded_error: Overloaded", True),
        ("429 Rate limit reached", True),
        ("503 service unavailable", True),
        ("Connection error (ReadError): x", True),
        ("Request timed out (ReadTimeout) after 300 s without data", True),
        ("terminated", True),
        ("401 invalid x-api-key", False),
        ("400 prompt is too long: 5 tokens > 4 maximum", False),
        ("Connection lost: the stream ended before the response was complete", True),
        ("Malformed stream chunk from provider: '{\"choices\"'", True),
        ("429 insufficient_quota: You exceeded your current quota", False),
        ("500 1 validation error for ChatCompletionRequestAssistantMessage", False),
        ("The request could not be sent (LocalProtocolError): Illegal header value", False),
        ("request id 5003abc failed", False),  # a status code inside an id is not one
    ],
)
def test_retryable_error(text, expected):
    assert is_retryable_error(err(text)) is expected


def test_retryable_only_for_errors():
    assert not is_retryable_error({"stopReason": "stop", "errorMessage": "500"})


def test_policy_delays_and_settings():
    policy = RetryPolicy()
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5, 6, 7)] == [2, 4, 8, 16, 32, 60, 60]
    assert policy.delay(1, retry_after=3.5) == 3.5
    assert policy.should_retry(3) and not policy.should_retry(4)
    custom = RetryPolicy.from_settings({"maxRetries": 5, "baseDelayMs": 100, "maxDelayMs": 1000})
    assert (custom.max_retries, custom.base_delay, custom.max_delay) == (5, 0.1, 1.0)
    assert RetryPolicy.from_settings({"enabled": False}).max_retries == 0


def test_parse_retry_after():
    assert parse_retry_after({"Retry-After": "12"}) == 12.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert (
        parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
        == 10.0
    )
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"path": "a.py"}', {"path": "a.py"}),
        ('{"path": "a.p', {"path": "a.p"}),
        ('{"path": "a.py", "lim', {"path": "a.py"}),
        ('{"path": "a.py", "limit": 1', {"path": "a.py", "limit": 1}),
        ('{"a": {"b": [1, 2', {"a": {"b": [1, 2]}}),
        ('{"s": "x\\', {"s": "x"}),
        ('{"p', {}),
        ("", None),
        ("[1, 2]", None),
    ],
)
def test_parse_partial_json(text, expected):
    assert parse_partial_json(text) == expected
