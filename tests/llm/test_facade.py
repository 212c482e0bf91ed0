"""The public surface and the sync facade."""

from __future__ import annotations

import time

import pytest

import pinb.llm
from pinb.errors import PinbError
from pinb.llm import ChatModel, Done, LLMError, TextDelta
from pinb.testing.scripted import ScriptedLLM, ScriptExhaustedError

from .helpers import user


def _ruff_order(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def test_all_is_sorted_and_complete():
    names = pinb.llm.__all__
    assert names == sorted(names, key=_ruff_order)
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(pinb.llm, name), name


def test_errors_are_pinb_errors():
    assert issubclass(LLMError, PinbError)
    for name in (
        "ContextOverflowError",
        "MissingCredentialsError",
        "ProviderHTTPError",
        "ProviderStreamError",
        "StreamProtocolError",
        "UnknownProviderError",
        "UnsupportedApiError",
    ):
        assert issubclass(getattr(pinb.llm, name), LLMError)


@pytest.mark.parametrize(
    ("retryable", "advice"),
    [(True, "pinb asks again after a pause"), (False, "the same request would fail again")],
)
def test_a_stream_error_event_reads_as_one_line_and_keeps_the_providers_words(retryable, advice):
    from pinb.llm.providers.client import ProviderStreamError as FromClient

    detail = "overloaded_error:  Overloaded,\n  try again"
    error = pinb.llm.ProviderStreamError(detail, retryable=retryable)
    assert FromClient is pinb.llm.ProviderStreamError  # where the wire formats import it
    assert isinstance(error, PinbError) and error.retryable is retryable
    assert error.detail == detail  # errorMessage gets the provider's text unchanged
    (line,) = error._render_traceback_()
    assert "\n" not in line and str(error) in line
    assert "(overloaded_error: Overloaded, try again)" in line and advice in line


def test_http_models_follow_the_protocol(make_model):
    assert isinstance(make_model("openai"), ChatModel)
    assert isinstance(make_model("anthropic"), ChatModel)


def test_leaving_a_sync_stream_early_cancels_it(server, make_model):
    server.reply("tick " * 50, chunk_size=5, chunk_delay=0.05)
    start = time.monotonic()
    with make_model("openai").stream([user("q")]) as events:
        for event in events:
            if isinstance(event, TextDelta):
                break
    assert time.monotonic() - start < 2
    assert events.final is None


def test_sync_stream_ends_with_done(server, make_model):
    server.reply("a b c")
    events = list(make_model("anthropic").stream([user("q")]))
    assert isinstance(events[-1], Done) and events[-1].message["stopReason"] == "stop"


def test_exceptions_cross_the_thread():
    with pytest.raises(ScriptExhaustedError):
        list(ScriptedLLM().stream([user("q")]))


def test_tools_given_as_objects_with_attributes():
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}

    class ReadTool:
        def __init__(self) -> None:
            self.name = "read"
            self.description = "Read a file"
            self.parameters = schema

    llm = ScriptedLLM(["ok"])
    llm.complete([user("q")], tools=[ReadTool()])
    assert llm.calls[0].options.tools[0].name == "read"
    assert llm.calls[0].options.tools[0].parameters == schema
