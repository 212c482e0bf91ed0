"""The SSE parser is pure: bytes in, events out, whatever the chunking."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from pinb.llm.providers.sse import SSEEvent, SSEParser, parse_sse

STREAM = (
    b": keep-alive comment\n"
    b"event: message_start\n"
    b'data: {"type":"message_start"}\n'
    b"\n"
    b"data: line one\n"
    b"data: line two\n"
    b"id: 7\n"
    b"\n"
    b"event: ping\r\n"
    b"data: {}\r\n"
    b"\r\n"
    b"data: caf\xc3\xa9 \xe2\x9c\x93\r"
    b"\r"
    b"retry: 1500\n"
    b"data:no-space\n"
    b"\n"
    b"data: [DONE]\n"
    b"\n"
)

EXPECTED = [
    SSEEvent("message_start", '{"type":"message_start"}'),
    SSEEvent("message", "line one\nline two", id="7"),
    SSEEvent("ping", "{}", id="7"),
    SSEEvent("message", "café ✓", id="7"),
    SSEEvent("message", "no-space", id="7", retry=1500),
    SSEEvent("message", "[DONE]", id="7"),
]


def test_whole_stream():
    assert list(parse_sse([STREAM])) == EXPECTED


def test_split_at_every_byte_boundary():
    for cut in range(len(STREAM) + 1):
        assert list(parse_sse([STREAM[:cut], STREAM[cut:]])) == EXPECTED, cut


def test_one_byte_at_a_time():
    assert list(parse_sse(STREAM[i : i + 1] for i in range(len(STREAM)))) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking(cuts):
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    assert list(parse_sse(chunks)) == EXPECTED


def test_crlf_split_between_chunks_is_one_line_end():
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r") == []
    assert parser.feed(b"\n") == [SSEEvent("message", "a")]


def test_comments_and_unknown_fields_are_ignored():
    events = list(parse_sse([b":hello\nfoo: bar\ndata: x\n\n: bye\n\n"]))
    assert events == [SSEEvent("message", "x")]


def test_event_without_data_is_not_dispatched():
    assert list(parse_sse([b"event: lonely\n\ndata: y\n\n"])) == [SSEEvent("message", "y")]


def test_empty_data_line_dispatches_empty_string():
    assert list(parse_sse([b"data\n\n"])) == [SSEEvent("message", "")]


def test_bom_is_stripped_once():
    assert list(parse_sse([b"\xef\xbb", b"\xbfdata: z\n\n"])) == [SSEEvent("message", "z")]


def test_truncated_event_is_not_dispatched_and_is_pending():
    parser = SSEParser()
    assert parser.feed(b'data: {"partial"') == []
    assert parser.pending
    assert parser.close() == []


def test_lone_cr_at_end_of_input_ends_the_line():
    assert list(parse_sse([b"data: q\n\r"])) == [SSEEvent("message", "q")]


def test_invalid_utf8_is_replaced_not_fatal():
    assert list(parse_sse([b"data: \xff\n\n"])) == [SSEEvent("message", "\ufffd")]
