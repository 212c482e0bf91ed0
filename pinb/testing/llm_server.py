"""A real loopback HTTP server speaking OpenAI Chat Completions and Anthropic Messages, with faults.

Use it in tests to exercise a model end to end without any network::

    from pinb.llm import get_model
    from pinb.testing.llm_server import LLMServer

    with LLMServer() as server:
        server.reply(text="Hello!", usage={"input": 12, "output": 3})
        model = get_model("openai/gpt-4o", base_url=server.openai_base_url, api_key="test")
        assert model.complete([{"role": "user", "content": "hi", "timestamp": 0}])[
            "content"] == [{"type": "text", "text": "Hello!"}]
        assert server.requests[0].body["messages"][0]["content"] == "hi"

Each request takes the next queued `ServerReply` (a reply or a fault). With nothing
queued the server answers ``418`` with a message saying so (never retried).

With ``certificate=`` (see `pinb.testing.tls.self_signed_certificate`) it speaks HTTPS;
``connections`` and ``open_connections`` count the TCP connections clients opened, as the
server sees them, so tests can tell a kept connection from a new one.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .llm_wire import (
    _OVERFLOW_ANTHROPIC,
    _OVERFLOW_OPENAI,
    ServerReply,
    ToolCallScript,
    _anthropic_events,
    _anthropic_json,
    _openai_events,
    _openai_json,
    _stream_error,
    first_argument_event,
    null_content_error,
    prompt_tokens,
    render_chatml,
)
from .tls import Certificate

__all__ = ["LLMServer", "RecordedRequest", "ServerReply", "ToolCallScript"]


@dataclass
class RecordedRequest:
    """A request the server received (``body`` is the parsed JSON, or the raw text)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    wire: str
    #: The prompt as the server's chat template renders it for the model (``None``: the
    #: server renders none: only with ``escape_html``, as llama-cpp-python's
    #: ``chatml-function-calling`` does).
    rendered: str | None = None

    @property
    def stream(self) -> bool:
        """Whether the client asked for SSE."""
        return bool(isinstance(self.body, dict) and self.body.get("stream"))


class _Dropped(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each SSE chunk goes out when written, as real servers send it (TCP_NODELAY);
    # otherwise Nagle's algorithm holds it for the client's delayed ACK (~40 ms).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        return

    def setup(self) -> None:
        super().setup()
        self.served = 0  # requests read on this connection

    def do_GET(self) -> None:
        owner = self.server.owner
        owner._probe(self.path)
        if self.path.startswith("/v1/"):
            owner._take_model_lock()
        path = self._route()
        window = owner.context_window
        if path == "/props" and owner.window_endpoint == "llamacpp" and window:
            self._json(200, {"default_generation_settings": {"n_ctx": window}, "total_slots": 1})
        elif path == "/v1/models":
            entry: dict[str, Any] = {"id": owner.model_id, "object": "model", "owned_by": "me"}
            if owner.window_endpoint == "vllm" and window:
                entry["max_model_len"] = window
            if owner.window_endpoint == "llama-cpp-python":
                entry["permissions"] = []  # what llama-cpp-python 0.3 lists: no window
            self._json(200, {"object": "list", "data": [entry]})
        elif path == "/api/v0/models" and owner.window_endpoint == "lmstudio" and window:
            entry = {
                "id": owner.model_id,
                "object": "model",
                "type": "llm",
                "state": "loaded",
                "max_context_length": 32768,
                "loaded_context_length": window,
            }
            self._json(200, {"object": "list", "data": [entry]})
        else:
            self._json(404, {"detail": "Not Found" + self._echo()})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.served += 1
        if self.served > 1 and owner._take_drop_reused():
            self.close_connection = True  # closed as the request came in: no answer
            return
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        route = self._route()
        if route == "/api/show":
            owner._probe(self.path)
            if owner.window_endpoint == "ollama" and owner.context_window:
                self._json(
                    200,
                    {
                        "parameters": f"num_ctx {owner.context_window}\nstop <|im_end|>",
                        "model_info": {"llama.context_length": 131072},
                    },
                )
            else:
                self._json(404, {"error": "not found"})
            return
        if route.endswith("/chat/completions"):
            wire = "openai"
        elif route.endswith("/messages"):
            wire = "anthropic"
        else:
            self._json(404, {"error": {"message": f"no route {self.path}{self._echo()}"}})
            return
        rendered = render_chatml(body, escape=True) if owner.escape_html else None
        owner._record(
            RecordedRequest("POST", self.path, dict(self.headers.items()), body, wire, rendered)
        )
        owner._take_model_lock()
        # The server's own checks come first and use no scripted reply, as a real
        # server's would not depend on what the test planned to answer.
        if (
            owner.window_endpoint == "llama-cpp-python"
            and isinstance(body, dict)
            and body.get("tool_choice") == "required"
        ):  # llama-cpp-python 0.3: a 500 with an empty message, every time
            self._json(500, {"error": {"message": "", "type": "internal_server_error"}})
            return
        rejected = null_content_error(body) if owner.reject_null_content else None
        if rejected is not None:
            # llama-cpp-python's schema error comes back as a 500 (it is not transient)
            self._json(500, {"error": {"message": rejected, "type": "internal_server_error"}})
            return
        if owner.context_window and wire == "openai":
            tokens = prompt_tokens(body)
            if tokens >= owner.context_window:
                self._overflow(tokens, owner, streaming=bool(body.get("stream")))
                return
            limit = body.get("max_tokens") or body.get("max_completion_tokens")
            if owner.window_endpoint == "vllm" and isinstance(limit, int):
                if tokens + limit > owner.context_window:  # vLLM checks the sum
                    message = (
                        f"This model's maximum context length is {owner.context_window} "
                        f"tokens. However, you requested {tokens + limit} tokens ({tokens} in "
                        f"the messages, {limit} in the completion). Please reduce the length "
                        "of the messages or completion."
                    )
                    self._json(400, self._error_body(wire, "BadRequestError", message))
                    return
        reply = owner._next()
        if reply is None and owner.writes_to_limit and isinstance(body, dict):
            limit = owner._output_limit(body)
            reply = ServerReply(
                text=("and then the story went on " * limit)[: int(limit) * 4],
                stop_reason="length",
                no_usage=True,
                chunk_size=512,
            )
        if reply is None:
            self._json(
                418,
                self._error_body(
                    wire,
                    "invalid_request_error",
                    "LLMServer: no scripted reply queued" + self._echo(),
                ),
            )
            return
        if reply.stall and owner._stopping.wait(reply.stall):
            return
        while reply.gate is not None and not reply.gate.wait(0.05):
            if owner._stopping.is_set():
                return
        model = body.get("model", "scripted") if isinstance(body, dict) else "scripted"
        if reply.overflow:
            text = _OVERFLOW_OPENAI if wire == "openai" else _OVERFLOW_ANTHROPIC
            self._json(400, self._error_body(wire, "invalid_request_error", text), reply.headers)
            return
        if reply.status is not None:
            self._json(
                reply.status,
                self._error_body(wire, reply.error_type, reply.error_message + self._echo()),
                reply.headers,
            )
            return
        streaming = isinstance(body, dict) and bool(body.get("stream"))
        include_usage = bool(
            isinstance(body, dict) and (body.get("stream_options") or {}).get("include_usage")
        )
        try:
            if wire == "openai":
                if streaming:
                    self._sse(reply, list(_openai_events(reply, model, include_usage)))
                else:
                    self._json(200, _openai_json(reply, model), reply.headers)
            elif streaming:
                self._sse(reply, list(_anthropic_events(reply, model)))
            else:
                self._json(200, _anthropic_json(reply, model), reply.headers)
        except (_Dropped, ConnectionError, OSError):
            self.close_connection = True

    def _overflow(self, tokens: int, owner: LLMServer, *, streaming: bool) -> None:
        """Answer a prompt larger than the window the way ``owner.overflow_style`` says."""
        window = owner.context_window
        if owner.overflow_style == "status":
            message = "the request exceeds the available context size, try increasing it"
            self._json(400, self._error_body("openai", "invalid_request_error", message))
            return
        if owner.overflow_style == "drop" and not streaming:
            # llama-cpp-python says what went wrong only to a request without streaming.
            message = (
                f"This model's maximum context length is {window} tokens. However, you "
                f"requested {tokens} tokens. Please reduce the length of the messages or "
                "completion."
            )
            self._json(400, self._error_body("openai", "invalid_request_error", message))
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        if owner.overflow_style == "sse_error":
            text = f"Requested tokens ({tokens}) exceed context window of {window}"
            payload = {"error": {"message": text, "type": "internal_server_error", "code": 500}}
            self._chunk(f"data: {json.dumps(payload)}\n\n".encode())
        # "drop": llama-cpp-python's stream of an oversized prompt ends with no event at all
        self._chunk(b"")

    def _route(self) -> str:
        """The request's path without its query (a base URL may carry ``?key=``)."""
        return urlsplit(self.path).path.rstrip("/")

    def _echo(self) -> str:
        """The request as received, for error bodies, when the server echoes requests."""
        if not self.server.owner.echo_request:
            return ""
        url = f"http://{self.headers.get('host', '')}{self.path}"
        headers = json.dumps(dict(self.headers.items()))
        return f" (request: {self.command} {url} {self.path} headers {headers})"

    @staticmethod
    def _error_body(wire: str, etype: str, message: str) -> dict[str, Any]:
        if wire == "openai":
            return {"error": {"message": message, "type": etype, "code": None}}
        return {"type": "error", "error": {"type": etype, "message": message}}

    def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _drop(self) -> None:
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        finally:
            self.close_connection = True
        raise _Dropped

    def _sse(self, reply: ServerReply, events: list[tuple[str | None, str]]) -> None:
        owner = self.server.owner
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        epoch = owner._lock_epoch
        cut = reply.disconnect_after
        if reply.disconnect_in_tool_args:
            first = first_argument_event(events)
            cut = None if first is None else first + 1
        for sent, (name, data) in enumerate(events):
            if cut is not None and sent >= cut:
                self._drop()
            if reply.end_after is not None and sent >= reply.end_after:
                break
            if reply.malformed_after is not None and sent >= reply.malformed_after:
                self._chunk(b'data: {"choices": [{"delta": {"content": "oops"\n\n')
                owner._stopping.wait(30)  # keep the connection open: the client must not wait
                raise _Dropped
            if reply.stream_error is not None and sent >= reply.stream_error_after:
                self._chunk(_stream_error(self.path, reply))
                break
            if owner.interrupt_requests and owner._lock_epoch != epoch and sent < len(events) - 2:
                # llama-cpp-python: another request took the model; this reply just ends
                for tail_name, tail in events[-2:]:
                    self._chunk(
                        (
                            (f"event: {tail_name}\n" if tail_name else "") + f"data: {tail}\n\n"
                        ).encode()
                    )
                break
            frame = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
            self._chunk(frame.encode())
            if reply.chunk_delay and owner._stopping.wait(reply.chunk_delay):
                raise _Dropped
            if reply.pause_after == sent + 1 and owner._stopping.wait(reply.pause):
                raise _Dropped
        self._chunk(b"")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: LLMServer
    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls is not None:  # the handshake happens on the connection's own thread
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._opened(request)
        super().process_request(request, client_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.do_handshake()
        super().finish_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.owner._closed(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hang up on keep-alive connections all the time; that is not an error.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class LLMServer:
    """A scripted OpenAI/Anthropic-compatible server on ``127.0.0.1`` (ephemeral port).

    Start it with ``with LLMServer() as server:`` (or `start` / `stop`). Queue replies
    with `reply`, `fail`, `overflow` or `add`; read what clients sent in `requests`.
    Thread-safe; requests are served concurrently.
    """

    def __init__(
        self,
        *,
        context_window: int | None = None,
        overflow_style: str = "status",
        window_endpoint: str | None = None,
        reject_null_content: bool = False,
        model_id: str = "/models/loopback-135M.Q4_1.gguf",
        interrupt_requests: bool = False,
        writes_to_limit: bool = False,
        echo_request: bool = False,
        certificate: Certificate | None = None,
        drop_reused: int = 0,
        output_field: str | None = None,
        escape_html: bool = False,
    ) -> None:
        #: Prompts of at least this many tokens (chars/4) overflow; ``None``: no limit.
        self.context_window = context_window
        #: How an overflow is answered: ``"status"`` (400 with llama.cpp's wording),
        #: ``"sse_error"`` (an error event in a 200 stream) or ``"drop"`` (what
        #: llama-cpp-python 0.3 does: a 200 stream that ends before any event, and a 400
        #: naming the window to the same request without streaming).
        self.overflow_style = overflow_style
        #: Which server's window endpoint to offer: ``"llamacpp"`` (llama-server's
        #: ``/props``), ``"ollama"`` (``/api/show``), ``"vllm"`` (``/v1/models``
        #: ``max_model_len``), ``"lmstudio"`` (``/api/v0/models``), or
        #: ``"llama-cpp-python"`` / ``None`` (404 on ``/props``, no window anywhere;
        #: llama-cpp-python also answers ``tool_choice: "required"`` with an empty 500).
        self.window_endpoint = window_endpoint
        #: Answer ``content: null`` in an assistant message with llama-cpp-python's 500.
        self.reject_null_content = reject_null_content
        #: llama-cpp-python's default ``--interrupt_requests True``: any request under
        #: ``/v1/`` (a chat, or just ``GET /v1/models``) ends a reply that is streaming,
        #: with a normal finish, as if the model had stopped.
        self.interrupt_requests = interrupt_requests
        #: A small model's habit (SmolLM2-135M, by hand): with nothing queued, every chat
        #: is answered with text until its output limit (``max_tokens`` x 4 characters,
        #: no usage) and ``finish_reason: "length"``; summaries included.
        self.writes_to_limit = writes_to_limit
        #: Error answers (scripted failures, "no reply queued", unknown routes) end with
        #: the request as received: method, URL and path with their query, and every
        #: header, as debugging proxies do. Whatever secret a client sent comes back.
        self.echo_request = echo_request
        #: Serve HTTPS with this certificate (clients must trust ``certificate.ca``).
        self.certificate = certificate
        #: The next this many requests that come on a kept-alive connection are met by
        #: the connection closing, unanswered: a server closing an idle connection just
        #: as a request arrives. Requests on new connections are served.
        self.drop_reused = drop_reused
        #: The one output-limit field the server reads (``"max_tokens"`` for llama-cpp-python
        #: 0.3, whose request schema has no ``max_completion_tokens``: a request carrying only
        #: that has no limit, and the model writes until the window is full). ``None``:
        #: either field.
        self.output_field = output_field
        #: Render each prompt as llama-cpp-python's ``chatml-function-calling`` template does,
        #: escaping HTML in every message (``'`` → ``&#39;``, ``&`` → ``&amp;``), into
        #: `RecordedRequest.rendered`: what the model is shown, beside what was sent.
        self.escape_html = escape_html
        #: TCP connections accepted so far.
        self.connections = 0
        self._open: set[socket.socket] = set()
        self._lock_epoch = 0
        #: The id ``/v1/models`` lists (llama-cpp-python lists the GGUF file's path).
        self.model_id = model_id
        #: Paths of window probes and model listings received (GET and ``/api/show``).
        self.probes: list[str] = []
        self._lock = threading.Lock()
        self._queue: deque[ServerReply] = deque()
        self.requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def llama_cpp_python(cls, n_ctx: int = 4096, **options: Any) -> LLMServer:
        """A server that behaves as llama-cpp-python 0.3 started with ``--n_ctx N`` and
        ``--chat_format chatml-function-calling`` (its quirks, from its code and a run by hand).

        It says no window (``/props`` is a 404, ``/v1/models`` lists the GGUF path and
        nothing more); a prompt of ``n_ctx`` tokens or more ends the stream without an event
        (and gets a 400 naming the window without streaming); ``content: null`` in an
        assistant message is a 500; ``tool_choice: "required"`` is an empty 500; it reads
        ``max_tokens`` only (``max_completion_tokens`` is not in its schema), and cuts it to
        what the window leaves; its template escapes HTML in what the model is shown
        (`RecordedRequest.rendered`). ``writes_to_limit=True`` adds a small model's habit of
        writing until its limit. Other options as for `LLMServer`.
        """
        settings: dict[str, Any] = {
            "context_window": n_ctx,
            "window_endpoint": "llama-cpp-python",
            "overflow_style": "drop",
            "reject_null_content": True,
            "output_field": "max_tokens",
            "escape_html": True,
        }
        settings.update(options)
        return cls(**settings)

    def _output_limit(self, body: dict[str, Any]) -> int:
        """How many tokens a model writing to its limit writes for ``body``."""
        if self.output_field is None:
            asked = body.get("max_tokens") or body.get("max_completion_tokens")
            return int(asked) if isinstance(asked, int) and asked > 0 else 16
        asked = body.get(self.output_field)
        if self.context_window:  # no limit, or one past the window: what the window leaves
            room = max(1, self.context_window - prompt_tokens(body))
            return min(int(asked), room) if isinstance(asked, int) and asked > 0 else room
        return int(asked) if isinstance(asked, int) and asked > 0 else 16

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> LLMServer:
        """Bind an ephemeral port and serve on a daemon thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        if self.certificate is not None:
            server.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            server.tls.load_cert_chain(self.certificate.cert, self.certificate.key)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="pinb-llm-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; stalled handlers are woken and closed."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.close_connections()

    def close_connections(self) -> None:
        """Close every open connection (kept-alive ones included), as a restarted server."""
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            # The plain socket's shutdown: the handler's thread may be inside a TLS read.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet closed (by either side)."""
        with self._lock:
            return len(self._open)

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (``https://`` with a certificate)."""
        if self._server is None:
            raise RuntimeError("LLMServer is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        scheme = "https" if self.certificate is not None else "http"
        return f"{scheme}://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for OpenAI-compatible clients (``.../v1``)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for Anthropic clients (they append ``/v1/messages``)."""
        return self.url

    # ------------------------------------------------------------------ script

    def add(self, *replies: ServerReply) -> LLMServer:
        """Queue replies, served one per request in order."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reply(self, text: str = "", **options: Any) -> LLMServer:
        """Queue a content reply: ``reply("Hi", thinking="...", tool_calls=[...])``.

        ``tool_calls`` items may be `ToolCallScript` or ``(name, arguments)`` pairs.
        """
        calls = [
            c if isinstance(c, ToolCallScript) else ToolCallScript(*c)
            for c in options.pop("tool_calls", ())
        ]
        return self.add(ServerReply(text=text, tool_calls=calls, **options))

    def fail(
        self,
        status: int = 500,
        *,
        times: int = 1,
        retry_after: float | None = None,
        message: str = "scripted error",
        error_type: str = "api_error",
    ) -> LLMServer:
        """Queue ``times`` HTTP error answers (optionally with ``Retry-After``)."""
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        for _ in range(times):
            self.add(
                ServerReply(
                    status=status, headers=headers, error_message=message, error_type=error_type
                )
            )
        return self

    def overflow(self) -> LLMServer:
        """Queue a 400 answer with the provider's context-overflow wording."""
        return self.add(ServerReply(overflow=True))

    def clear(self) -> None:
        """Drop queued replies and recorded requests."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def last_request(self) -> RecordedRequest:
        """The most recent request."""
        with self._lock:
            return self.requests[-1]

    def _probe(self, path: str) -> None:
        with self._lock:
            self.probes.append(path)

    def _opened(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._open.add(sock)

    def _closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)

    def _take_drop_reused(self) -> bool:
        with self._lock:
            if self.drop_reused <= 0:
                return False
            self.drop_reused -= 1
            return True

    def _take_model_lock(self) -> None:
        with self._lock:
            self._lock_epoch += 1

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self) -> ServerReply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None
