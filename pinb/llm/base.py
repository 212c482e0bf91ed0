"""The model base class: `astream` is abstract; `acomplete`, `stream` and `complete` derive from it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Unpack

from pinb.llm.errors import ContextOverflowError, ProviderHTTPError, StreamProtocolError
from pinb.llm.pool import LoopFeed
from pinb.llm.types import (
    CancelToken,
    Done,
    ModelInfo,
    RequestFields,
    RequestOptions,
    StreamEvent,
)

__all__ = ["ChatModelBase", "ThreadedStream"]

log = logging.getLogger("pinb.llm")


class ChatModelBase:
    """`astream` is the one method to write; this class derives the other three.

    Each of the four takes the request's `RequestOptions` whole or as its fields given as
    keyword arguments (``complete(messages, system_prompt=..., max_tokens=...)``), and
    hands `astream` the one value.
    """

    info: ModelInfo

    def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        **fields: Unpack[RequestFields],
    ) -> AsyncIterator[StreamEvent]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _finalize(
        self, done: Done | None, raise_on_overflow: bool, raise_on_error: bool
    ) -> dict[str, Any]:
        if done is None:  # pragma: no cover - every stream ends with Done
            raise StreamProtocolError("the stream ended without a final message")
        failed = done.stop_reason == "error"
        if failed and done.overflow and (raise_on_overflow or raise_on_error):
            raise ContextOverflowError(
                f"Context overflow on {self.info.spec}: {done.error_message}", message=done.message
            )
        if failed and raise_on_error:
            raise ProviderHTTPError(
                f"{self.info.spec} failed: {done.error_message}",
                status_code=done.status_code,
                message=done.message,
            )
        return done.message

    async def acomplete(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        raise_on_overflow: bool = False,
        raise_on_error: bool = False,
        **fields: Unpack[RequestFields],
    ) -> dict[str, Any]:
        """Run a request to the end and return the final Pi-shaped assistant message.

        Parameters
        ----------
        messages:
            The conversation (Pi's ``convertToLlm`` output).
        options, **fields:
            The rest of the request: `RequestOptions`, or its fields as keyword arguments
            (``system_prompt``, ``tools``, ``max_tokens``, ``thinking_level``,
            ``tool_choice``), which win over ``options``.
        cancel:
            A `CancelToken` that stops the request from any thread.
        raise_on_overflow:
            Raise `ContextOverflowError` (carrying the message in ``.message``) instead
            of returning an error message that reports a context overflow. A successful
            response whose usage exceeds the window (silent overflow) is still returned.
        raise_on_error:
            Raise for every ``stopReason: "error"``: `ContextOverflowError` for an
            overflow, otherwise `ProviderHTTPError` (``status_code``, ``message``).
            Cancelled requests are always returned (``stopReason: "aborted"``).

        Returns
        -------
        dict
            The Pi-shaped assistant message; by default failures are returned too, with
            ``stopReason`` ``"error"`` and ``errorMessage``.
        """
        done: Done | None = None
        request = RequestOptions.of(options, **fields)
        async for event in self.astream(messages, request, cancel=cancel):
            if isinstance(event, Done):
                done = event
        return self._finalize(done, raise_on_overflow, raise_on_error)

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        **fields: Unpack[RequestFields],
    ) -> ThreadedStream:
        """Synchronous `astream`, usable inside a running event loop (Jupyter).

        The request runs on pinb's shared event loop (`pinb.llm.pool`). Ctrl-C
        (KeyboardInterrupt) while waiting for the next event cancels the request; the
        stream then still ends with `Done` carrying ``stopReason: "aborted"``.
        """
        request = RequestOptions.of(options, **fields)
        return ThreadedStream(lambda token: self.astream(messages, request, cancel=token), cancel)

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        raise_on_overflow: bool = False,
        raise_on_error: bool = False,
        **fields: Unpack[RequestFields],
    ) -> dict[str, Any]:
        """Synchronous `acomplete`; Ctrl-C returns the partial message as ``aborted``."""
        events = self.stream(messages, RequestOptions.of(options, **fields), cancel=cancel)
        with events:
            while True:
                try:
                    for _ in events:
                        pass
                    break
                except KeyboardInterrupt:
                    events.interrupt()
        return self._finalize(events.final, raise_on_overflow, raise_on_error)


class ThreadedStream(Iterator[StreamEvent]):
    """Iterate an async event stream from synchronous code.

    The stream runs on pinb's shared event loop (`pinb.llm.pool`), so its requests use
    the process's kept connections. Use as an iterator (and optionally a context manager,
    which cancels an unfinished stream on exit). `final` holds the `Done` event once seen.
    """

    def __init__(
        self,
        factory: Callable[[CancelToken], AsyncIterator[StreamEvent]],
        cancel: CancelToken | None = None,
    ):
        self._token = CancelToken()
        self._unlink = (
            cancel.add_callback(lambda: self._token.cancel(cancel.reason or "cancelled"))
            if cancel is not None
            else (lambda: None)
        )
        self._finished = False
        self.final: Done | None = None
        self._feed = LoopFeed(lambda: factory(self._token))

    def interrupt(self, reason: str = "interrupted") -> None:
        """Cancel the request (what Ctrl-C does)."""
        log.info("stream interrupted; cancelling the request")
        self._token.cancel(reason)

    def __iter__(self) -> ThreadedStream:
        return self

    def __next__(self) -> StreamEvent:
        while True:
            if self._finished:
                raise StopIteration
            try:
                item = next(self._feed)
            except KeyboardInterrupt:
                self.interrupt()  # the stream goes on to its Done, marked aborted
                continue
            except BaseException:  # its end (StopIteration) or its failure
                self._finished = True
                self._unlink()
                raise
            if isinstance(item, Done):
                self.final = item
            return item

    def close(self) -> None:
        """Cancel an unfinished stream and wait briefly for it to stop."""
        if not self._finished:
            self._token.cancel("stream closed")
            self._feed.wait(timeout=10)
            self._finished = True
            self._unlink()

    def __enter__(self) -> ThreadedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_finished", True):
            self._token.cancel("stream dropped")
