"""A pure, incremental Server-Sent Events parser: bytes in, events out, no I/O."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["SSEEvent", "SSEParser", "parse_sse"]

# SSE lines end with CRLF, LF or a lone CR (WHATWG HTML, "Parsing an event stream").
_EOL = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event.

    Attributes
    ----------
    event:
        The ``event:`` field, ``"message"`` when the stream gave none.
    data:
        The ``data:`` lines joined with ``"\\n"``.
    id:
        The last ``id:`` seen so far, if any.
    retry:
        The ``retry:`` reconnection time in milliseconds, when this event set one.
    """

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEParser:
    """Incremental SSE parser.

    Feed it byte chunks cut anywhere (inside a line, a CRLF pair or a UTF-8 sequence);
    it returns the events completed by each chunk. It does no I/O and keeps no
    reference to the chunks.

    Examples
    --------
    >>> p = SSEParser()
    >>> p.feed(b"event: ping\\ndata: {}\\n")
    []
    >>> p.feed(b"\\n")
    [SSEEvent(event='ping', data='{}', id=None, retry=None)]
    """

    __slots__ = ("_buf", "_data", "_decoder", "_event", "_has_data", "_id", "_retry", "_started")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf = ""
        self._data: list[str] = []
        self._has_data = False
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._started = False

    @property
    def pending(self) -> bool:
        """True when bytes of an event that has not been dispatched yet are buffered."""
        return bool(self._buf) or self._has_data or bool(self._event)

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add bytes and return the events they complete."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        buf = self._buf + text if self._buf else text
        events: list[SSEEvent] = []
        if "\r" not in buf:  # the common case: LF line ends only
            lines = buf.split("\n")
            self._buf = lines.pop()
            for line in lines:
                self._line(line, events)
            return events
        pos = 0
        end = len(buf)
        for match in _EOL.finditer(buf):
            if match.end() == end and match.start() == end - 1 and buf[-1] == "\r":
                # A CR at the very end may be the first half of a CRLF split across chunks.
                break
            self._line(buf[pos : match.start()], events)
            pos = match.end()
        self._buf = buf[pos:]
        return events

    def close(self) -> list[SSEEvent]:
        """Signal end of input and return what is left.

        A final line ended by a lone CR is processed. An event that was never ended by a
        blank line is discarded, as the SSE specification requires; check `pending`
        before calling this to tell a truncated stream from a complete one.
        """
        events: list[SSEEvent] = []
        tail = self._buf + self._decoder.decode(b"", final=True)
        if tail.endswith("\r"):
            self._line(tail[:-1], events)
            tail = ""
        self._buf = ""
        self._reset_event()
        return events

    def _reset_event(self) -> None:
        self._data = []
        self._has_data = False
        self._event = ""
        self._retry = None

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            if self._has_data:
                events.append(
                    SSEEvent(self._event or "message", "\n".join(self._data), self._id, self._retry)
                )
            self._reset_event()
            return
        if line[0] == ":":
            return  # comment / keep-alive
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        # Any other field name is ignored, as the specification says.


def parse_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Parse a whole stream given as byte chunks.

    Parameters
    ----------
    chunks:
        The body, cut anywhere.

    Returns
    -------
    Iterator[SSEEvent]
        The dispatched events, in order.

    Examples
    --------
    >>> [e.data for e in parse_sse([b"data: a\\r\\n\\r", b"\\ndata: [DONE]\\n\\n"])]
    ['a', '[DONE]']
    """
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()
