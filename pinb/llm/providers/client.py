"""The HTTP model machinery: request loop with retries, cancel, SSE decoding and assembly."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
import logging
import math
import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Unpack

import httpx

from pinb._version import __version__
from pinb.llm.base import ChatModelBase
from pinb.llm.config.catalog import OpenAICompat
from pinb.llm.config.credentials import Secret, sanitize_key
from pinb.llm.config.secrets import connection_redactor, guard_logs, redact_secrets
from pinb.llm.errors import ProviderStreamError, StreamProtocolError
from pinb.llm.guard import Guard as _Guard
from pinb.llm.guard import GuardAborted as _Aborted
from pinb.llm.limits import DEFAULT_DEADLINE, OutputLimit, choose_output_limit, stream_deadline
from pinb.llm.pool import async_client, send
from pinb.llm.providers.assemble import MessageBuilder
from pinb.llm.providers.errorbody import (
    ERROR_BODY_READ,
    ERROR_KEEP,
    TOOL_CHOICE_HINT,
    empty_server_error,
    error_detail,
)
from pinb.llm.providers.overflow import is_context_overflow
from pinb.llm.providers.retry import RETRYABLE_STATUS, RetryPolicy, parse_retry_after
from pinb.llm.providers.sse import SSEEvent, SSEParser
from pinb.llm.providers.transform import transform_messages
from pinb.llm.types import (
    THINKING_LEVELS,
    CancelToken,
    Done,
    ModelInfo,
    RequestFields,
    RequestOptions,
    Retry,
    StreamEvent,
    Usage,
)
from pinb.llm.urls import display_url, split_query

__all__ = [
    "ABORTED_MESSAGE",
    "DEFAULT_DEADLINE",
    "DEFAULT_TIMEOUT",
    "ERROR_KEEP",
    "HTTPChatModel",
    "ProviderStreamError",
    "StreamDecoder",
    "error_detail",
    "normalize_thinking_level",
]

log = logging.getLogger("pinb.llm")
T = TypeVar("T")
guard_logs()  # httpx logs every request's URL whole, with its password and ?key=

#: Connect quickly, but let a slow model pause for minutes between chunks.
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=15.0, read=300.0)

#: ``errorMessage`` of a cancelled response.
ABORTED_MESSAGE = "Request was aborted"


class StreamDecoder:
    """Turns a provider's SSE events into builder calls. Subclassed per wire format."""

    def __init__(self, builder: MessageBuilder):
        self.builder = builder
        self.complete = False
        self.stop_reason = "stop"
        self.error: str | None = None

    def feed(self, event: SSEEvent) -> list[StreamEvent]:  # pragma: no cover - abstract
        raise NotImplementedError

    def at_eof(self) -> None:
        """The connection closed without the end marker; set `complete` if that is fine."""

    def finish(self) -> list[StreamEvent]:
        """Called once after the end marker: close open blocks."""
        return list(self.builder.end_tools())


def _load_json(data: str | bytes, what: str) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise StreamProtocolError(
            f"Malformed {what} from provider: JSON nested too deeply to read"
        ) from None
    except ValueError:
        excerpt = data[:200] if isinstance(data, str) else data[:200].decode("utf-8", "replace")
        raise StreamProtocolError(f"Malformed {what} from provider: {excerpt!r}") from None


def _body_tokens(body: dict[str, Any]) -> int:
    """chars/4 of a whole request body, as pinb estimates tokens everywhere else."""
    return math.ceil(len(_dumps(body).decode("utf-8", "replace")) / 4)


def _dumps(body: Mapping[str, Any]) -> bytes:
    # Lone surrogates (from broken tool output) would make the UTF-8 encoding fail.
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


async def _read_rest(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows a stream's end marker (the end of the chunked body), so that its
    connection can serve the next request. A server slow to end the body, or sending more,
    loses the connection instead: the turn does not wait for it."""
    read = 0
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(_REST_WAIT):
            async for chunk in chunks:
                read += len(chunk)
                if read > _REST_LIMIT:
                    return


#: How long and how much `_read_rest` reads after the end marker.
_REST_WAIT = 0.25
_REST_LIMIT = 65536


@dataclass
class _Outcome:
    error: str | None = None
    retryable: bool = False
    status: int | None = None
    retry_after: float | None = None
    aborted: bool = False
    stop_reason: str = "stop"
    dropped: bool = False  # the connection ended early (not an error the server sent)
    sse_events: int = 0  # events received in this attempt's stream


#: Words of a server that rejected the request itself: sending it again cannot help, even
#: when the status says 500 (llama-cpp-python answers a schema error with a 500).
_REQUEST_REJECTED = re.compile(
    r"validation error|validationerror|invalid request|invalid_request|unprocessable"
    r"|field required|input should be|is not valid under|jinja|template",
    re.IGNORECASE,
)
#: A dropped stream before any reply is read as an overflow when the request was at least
#: this share of the window (servers like llama-cpp-python fail inside the stream).
DROP_OVERFLOW_SHARE = 0.85


def normalize_thinking_level(level: str | None) -> str:
    """Map Pi's thinking levels to the ones adapters use; unknown ones become ``medium``."""
    value = (level or "off").strip().lower()
    if value == "max":
        return "xhigh"
    if value not in THINKING_LEVELS:
        log.warning("unknown thinking level %r; using 'medium'", level)
        return "medium"
    return value


class HTTPChatModel(ChatModelBase):
    """A model behind an HTTP API. Subclasses build requests and decode responses.

    Parameters
    ----------
    info:
        The model's registry entry.
    base_url:
        Provider base URL.
    api_key:
        The key (kept as a `Secret`; never printed). ``None`` for local servers.
    headers:
        Extra request headers.
    compat:
        OpenAI-compatible quirks (ignored by the Anthropic adapter).
    transport:
        An ``httpx.AsyncBaseTransport`` (e.g. ``httpx.MockTransport``) to use instead
        of the network. It is not closed by the model.
    retry:
        `RetryPolicy`; default Pi's (3 retries, 2/4/8 s).
    timeout:
        Seconds or an ``httpx.Timeout``; default `DEFAULT_TIMEOUT` (read 300 s, so
        slow streams survive long pauses).
    stream:
        Use SSE streaming (default) or one JSON response.
    deadline:
        Seconds one response may take in all, from the request to its last event
        (default: ``PINB_STREAM_DEADLINE``, else `DEFAULT_DEADLINE`; ``0``: none). A
        stream that trickles past it ends with an error that is not retried.
    """

    api: ClassVar[str] = ""

    def __init__(
        self,
        info: ModelInfo,
        *,
        base_url: str,
        api_key: Secret | str | None = None,
        headers: Mapping[str, str] | None = None,
        compat: OpenAICompat | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | httpx.Timeout | None = None,
        stream: bool = True,
        deadline: float | None = None,
    ):
        self.info = info
        raw_key = api_key.reveal() if isinstance(api_key, Secret) else api_key
        # Checked here too, so a model built by hand cannot put a broken key on the wire
        # (httpx would then quote the key in its error).
        self._api_key = Secret(sanitize_key(raw_key, "the api_key argument")) if raw_key else None
        self._extra_headers = {
            k: Secret(sanitize_key(v, f"the {k!r} header")) for k, v in (headers or {}).items()
        }
        self.base_url = base_url  # after the key and headers: it builds the redactor
        self.compat = compat or OpenAICompat()
        self.transport = transport
        self.retry = retry or RetryPolicy()
        if timeout is None:
            self.timeout = DEFAULT_TIMEOUT
        elif isinstance(timeout, httpx.Timeout):
            self.timeout = timeout
        else:
            self.timeout = httpx.Timeout(timeout)
        self.streaming = stream
        self.deadline = stream_deadline(deadline)

    @property
    def base_url(self) -> str:
        """The server's base URL as requests use it (show it through `display_url`)."""
        return self._base_url.reveal()

    @base_url.setter
    def base_url(self, url: str) -> None:
        head, tail = split_query(url)
        # Kept as a Secret: the URL may hold a password or a key (``vars(model)`` too).
        self._base_url = Secret(head.rstrip("/") + tail)
        self._redactor = connection_redactor(
            api_key=self._api_key,
            headers=self._extra_headers,
            base_url=self.base_url,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(provider={self.info.provider!r}, id={self.info.id!r}, "
            f"base_url={display_url(self.base_url)!r})"
        )

    # ------------------------------------------------------------------ hooks

    def _url(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _auth_headers(self, key: str) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _normalize_tool_id(self, tool_id: str) -> str:
        return tool_id

    def _body(
        self, messages: list[dict[str, Any]], options: RequestOptions
    ) -> dict[str, Any]:  # pragma: no cover - abstract
        """The wire format's body for prepared ``messages``; ``options`` hold a known
        thinking level, and a ``tool_choice`` only beside tools."""
        raise NotImplementedError

    def _decoder(self, builder: MessageBuilder) -> StreamDecoder:  # pragma: no cover
        raise NotImplementedError

    def _parse_response(
        self, data: Any, builder: MessageBuilder
    ) -> tuple[list[StreamEvent], str, str | None]:
        raise NotImplementedError  # pragma: no cover - abstract

    # ------------------------------------------------------------------ request

    def build_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        **fields: Unpack[RequestFields],
    ) -> dict[str, Any]:
        """The JSON body this model would send (after the §5.6 transform) for ``messages``
        and ``options`` (or their fields as keyword arguments), before its output limit."""
        request = RequestOptions.of(options, **fields)
        prepared = transform_messages(
            messages, self.info, normalize_tool_id=self._normalize_tool_id
        )
        return self._body(
            prepared,
            dataclasses.replace(
                request,
                thinking_level=normalize_thinking_level(request.thinking_level),
                tool_choice=request.tool_choice if request.tools else None,
            ),
        )

    def request_tokens(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        **fields: Unpack[RequestFields],
    ) -> int:
        """Tokens of the request `astream` would send (arguments as for `build_body`):
        chars/4 of its whole JSON body, the figure the output limit is cut against."""
        return _body_tokens(self.build_body(messages, options, **fields))

    def with_retry(self, retry: RetryPolicy) -> HTTPChatModel:
        """A copy of this model with another retry policy (same server, key and window).

        The agent uses ``RetryPolicy(max_retries=0)``: like Pi, it retries failed turns
        itself, so each failure is saved once and shown once.
        """
        clone = copy.copy(self)
        clone.retry = retry
        return clone

    def _headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if self.streaming else "application/json",
            "user-agent": f"pinb/{__version__}",
        }
        if self._api_key:
            headers.update(self._auth_headers(self._api_key.reveal()))
        headers.update({k: v.reveal() for k, v in self._extra_headers.items()})
        return headers

    def _redact(self, text: str) -> str:
        """``text`` without this connection's secrets, the configured ones, or any URL's."""
        return redact_secrets(text, self._redactor)

    async def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        **fields: Unpack[RequestFields],
    ) -> AsyncIterator[StreamEvent]:
        """Stream one response: deltas, maybe `Retry` notices, then `Usage` and `Done`.

        Provider failures do not raise: after the retries they end the stream with a
        `Done` whose message has ``stopReason: "error"`` and ``errorMessage``; a cancel
        ends it with ``"aborted"``. Partial content is kept in both cases.
        """
        request = RequestOptions.of(options, **fields)
        token = cancel or CancelToken()
        builder = MessageBuilder(self.info)
        body = self.build_body(messages, request)
        prompt_tokens = _body_tokens(body)
        # Every request carries an output limit that leaves the prompt room in the window.
        limit = choose_output_limit(self.info, prompt_tokens, request.max_tokens)
        self._set_output_limit(body, limit)
        payload = _dumps(body)
        log.debug("%s: output limit %s", self.info.spec, limit)
        guard = _Guard(token)
        log.debug(
            "POST %s (%s, %d messages)", display_url(self._url()), self.info.spec, len(messages)
        )
        attempt = 0
        try:
            while True:
                outcome = _Outcome()
                async with contextlib.aclosing(
                    self._attempt(payload, builder, guard, outcome)
                ) as events:
                    async for event in events:
                        yield event
                if outcome.dropped and outcome.sse_events == 0 and self.streaming:
                    # Not one event: llama-cpp-python ends the stream this way when the
                    # prompt does not fit, and says why only when asked without streaming.
                    log.info("%s: empty stream; asking again without streaming", self.info.spec)
                    plain = copy.copy(self)
                    plain.streaming = False
                    plain_body = plain.build_body(messages, request)
                    plain._set_output_limit(plain_body, limit)
                    outcome = _Outcome()
                    async with contextlib.aclosing(
                        plain._attempt(_dumps(plain_body), builder, guard, outcome)
                    ) as events:
                        async for event in events:
                            yield event
                if outcome.aborted:
                    message = builder.finish("aborted", ABORTED_MESSAGE)
                    break
                if outcome.error is None:
                    message = builder.finish(outcome.stop_reason)
                    break
                if outcome.dropped and not builder.content_started:
                    self._judge_drop(outcome, prompt_tokens)
                error = self._redact(outcome.error)
                required = request.tool_choice == "required"
                if empty_server_error(outcome.status, outcome.error) and required:
                    outcome.retryable = False  # it fails the same way every time
                    error = error.rstrip() + TOOL_CHOICE_HINT
                if outcome.retryable and is_context_overflow(
                    {"stopReason": "error", "errorMessage": error}
                ):
                    outcome.retryable = False  # the same prompt cannot fit the next time
                attempt += 1
                too_long = (
                    outcome.retry_after is not None
                    and outcome.retry_after > self.retry.max_retry_after
                )
                if (
                    outcome.retryable
                    and not builder.content_started
                    and self.retry.should_retry(attempt)
                    and not too_long
                ):
                    delay = self.retry.delay(attempt, outcome.retry_after)
                    # The Retry event is what users see; a log line at warning level would
                    # print the same news a second time, in other words.
                    log.info(
                        "%s: %s; retrying in %.1f s (retry %d of %d)",
                        self.info.spec,
                        error,
                        delay,
                        attempt,
                        self.retry.max_retries,
                    )
                    yield Retry(attempt, self.retry.max_retries, delay, error, outcome.status)
                    try:
                        await guard.run(self.retry.sleep(delay))
                    except _Aborted:
                        message = builder.finish("aborted", ABORTED_MESSAGE)
                        break
                    builder.reset()
                    continue
                if too_long:
                    error += (
                        f" (Retry-After {outcome.retry_after:.0f} s exceeds the "
                        f"{self.retry.max_retry_after:.0f} s limit)"
                    )
                elif attempt > 1:
                    error += f" (gave up after {attempt - 1} retries)"
                message = builder.finish("error", error)
                break
        finally:
            guard.close()
        yield Usage(message["usage"])
        failed = message["stopReason"] == "error"
        overflow = is_context_overflow(message, self.info.context_window)
        yield Done(
            message,
            overflow,
            outcome.status if failed else None,
            retryable=(outcome.retryable and not overflow) if failed else None,
            retry_after=outcome.retry_after if failed else None,
            usage_reported=builder.usage_reported,
            output_limit=limit,
        )

    def _set_output_limit(self, body: dict[str, Any], limit: OutputLimit) -> None:
        """Put the output limit into a request body (the field the server's API wants)."""
        for name in ("max_tokens", "max_completion_tokens"):
            body.pop(name, None)
        body[self.compat.max_tokens_field] = limit.tokens

    def _judge_drop(self, outcome: _Outcome, prompt_tokens: int) -> None:
        """A stream that died before the first byte of a reply, after a large request.

        llama-cpp-python checks the prompt's size only once the stream has started, and
        then just closes the connection. Sending the same request again would fail the
        same way, so a drop of a request near the window is reported as an overflow.
        """
        window = self.info.context_window
        if window and prompt_tokens >= DROP_OVERFLOW_SHARE * window:
            outcome.error = (
                f"{outcome.error}. The request (about {prompt_tokens:,} tokens) probably "
                f"exceeds the context window ({window:,} tokens)"
            )
            outcome.retryable = False

    def _client(self) -> contextlib.AbstractAsyncContextManager[httpx.AsyncClient]:
        """The client of one attempt: the process's pooled one for this server, or one
        around an injected transport (whose connections, if any, are the caller's)."""
        if self.transport is None:
            return async_client(self.base_url)
        return contextlib.nullcontext(httpx.AsyncClient(transport=self.transport))

    async def _attempt(
        self, payload: bytes, builder: MessageBuilder, guard: _Guard, outcome: _Outcome
    ) -> AsyncGenerator[StreamEvent, None]:
        # Each of our awaits is bounded by the deadline; the consumer's time between two
        # events is never cut short by it.
        until = None if self.deadline is None else asyncio.get_running_loop().time() + self.deadline
        try:
            async with self._client() as client:
                request = client.build_request(
                    "POST",
                    self._url(),
                    content=payload,
                    headers=self._headers(),
                    timeout=self.timeout,
                )
                sending = (
                    send(client, request)
                    if self.transport is None
                    else client.send(request, stream=True)
                )
                response = await guard.run(sending, until)
                try:
                    async for event in self._events(response, builder, guard, outcome, until):
                        yield event
                finally:
                    # Closing a response read to its end gives its connection back to the
                    # pool; one cut short (a cancel, an error) closes the connection.
                    await response.aclose()
        except _Aborted:
            outcome.aborted = True
        except TimeoutError:
            outcome.error = (
                f"The response did not finish within the {self.deadline:g} s deadline "
                "(PINB_STREAM_DEADLINE sets it)"
            )
            outcome.retryable = False  # the same request would trickle again
        except httpx.TimeoutException as exc:
            outcome.error = f"Request timed out ({type(exc).__name__}) after {self._read_timeout()}"
            outcome.retryable = True
        except (httpx.LocalProtocolError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            # Our side could not even form the request (a bad header value, a bad URL):
            # the same request would fail again.
            outcome.error = f"The request could not be sent ({type(exc).__name__}): {exc}"
            outcome.retryable = False
        except httpx.TransportError as exc:
            outcome.error = f"Connection error ({type(exc).__name__}): {exc}"
            outcome.retryable = True
            outcome.dropped = isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError)
        except StreamProtocolError as exc:
            # A cut connection, a stream without its end marker or a garbled chunk: a
            # glitch between us and the server that a new request usually gets past.
            outcome.error = str(exc)
            outcome.retryable = True
            outcome.dropped = str(exc).startswith("Connection lost")
        except ProviderStreamError as exc:
            # The message keeps the provider's own words, as Pi's does; the exception's
            # sentence around them is for a caller that meets it outside a stream.
            outcome.error = exc.detail
            outcome.retryable = exc.retryable

    async def _events(
        self,
        response: httpx.Response,
        builder: MessageBuilder,
        guard: _Guard,
        outcome: _Outcome,
        until: float | None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """The events of one response: an error body, one JSON reply, or an SSE stream."""
        if response.status_code >= 400:
            raw, total = await self._error_body(response, guard, until)
            self._http_error(response, raw, outcome, total)
            return
        if not self.streaming:
            raw = await guard.run(response.aread(), until)
            events, outcome.stop_reason, outcome.error = self._parse_response(
                _load_json(raw, "response"), builder
            )
            for event in events:
                yield event
            return
        decoder = self._decoder(builder)
        parser = SSEParser()
        chunks = response.aiter_bytes().__aiter__()
        while not decoder.complete:
            try:
                chunk = await guard.run(chunks.__anext__(), until)
            except StopAsyncIteration:
                break
            for sse in parser.feed(chunk):
                outcome.sse_events += 1
                for event in decoder.feed(sse):
                    yield event
                guard.check()
                if decoder.complete:
                    break
        if decoder.complete:
            await _read_rest(chunks)
        else:
            for sse in parser.close():
                outcome.sse_events += 1
                for event in decoder.feed(sse):
                    yield event
        if not decoder.complete:
            decoder.at_eof()
        if not decoder.complete:
            raise StreamProtocolError(
                "Connection lost: the stream ended before the response was complete"
            )
        for event in decoder.finish():
            yield event
        outcome.stop_reason, outcome.error = decoder.stop_reason, decoder.error

    async def _error_body(
        self, response: httpx.Response, guard: _Guard, until: float | None
    ) -> tuple[bytes, int | None]:
        """The start of an error body (`ERROR_BODY_READ` bytes) and its size, when known."""
        kept = bytearray()
        chunks = response.aiter_bytes().__aiter__()
        while len(kept) <= ERROR_BODY_READ:
            try:
                kept += await guard.run(chunks.__anext__(), until)
            except StopAsyncIteration:
                return bytes(kept), None
        length = response.headers.get("content-length", "")
        return bytes(kept[:ERROR_BODY_READ]), int(length) if length.isdigit() else None

    def _read_timeout(self) -> str:
        read = self.timeout.read
        return "no read timeout" if read is None else f"{read:g} s without data"

    def _http_error(
        self, response: httpx.Response, raw: bytes, outcome: _Outcome, total: int | None = None
    ) -> None:
        status = response.status_code
        outcome.status = status
        outcome.error = f"{status} {error_detail(raw, total)}"
        outcome.retry_after = parse_retry_after(response.headers)
        should = response.headers.get("x-should-retry")
        if should in ("true", "false"):
            outcome.retryable = should == "true"
        elif _REQUEST_REJECTED.search(outcome.error):
            outcome.retryable = False
        else:
            outcome.retryable = status in RETRYABLE_STATUS or status >= 500
