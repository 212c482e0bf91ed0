"""One event loop and one HTTP connection pool per process, shared by every request pinb sends.

A connection is only worth keeping if the next request can find it. httpx's async
connections belong to the event loop that opened them, so pinb runs its async work (the
agent's runs, `stream`/`complete`) on one long-lived loop, on a daemon thread started on
first use and stopped at interpreter exit. That loop owns one ``httpx.AsyncClient`` per
server (its scheme, host and port, with the environment that shapes TLS and proxies), kept
across requests, retries and notebook cells. Code awaiting a model on a loop of its own
(``asyncio.run(model.acomplete(...))``) gets a client of its own for the request, as before.
Probes made from synchronous code (window discovery, local server discovery) share one
``httpx.Client``.

HTTP/1.1 only, on purpose: a cancelled HTTP/1.1 stream closes its connection, which stops
the server generating; under HTTP/2 httpx would leave the server streaming into a stream
nobody reads.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

__all__ = [
    "KEEPALIVE_EXPIRY",
    "LoopFeed",
    "async_client",
    "close_pool",
    "on_loop_thread",
    "pool_clients",
    "send",
    "shared_loop",
    "submit",
    "sync_client",
]

log = logging.getLogger("pinb.llm")
T = TypeVar("T")

#: Seconds an idle connection is kept. Longer than httpx's 5 s default, which a person
#: reading a reply before the next cell always exceeds; a server that closed it first is
#: noticed before reuse (and the rare race is sent again once, see `send`).
KEEPALIVE_EXPIRY = 120.0
#: Servers whose idle client is kept; past this the least recently used idle one is closed.
MAX_CLIENTS = 16
#: Variables httpx reads when a client is made (trust_env): a change needs a new client.
_CLIENT_ENV = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
)
#: Seconds the loop waits at interpreter exit for cancelled runs to end.
_EXIT_WAIT = 2.0
_LIMITS = httpx.Limits(max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY)


# -- the loop ----------------------------------------------------------------------------


class _LoopThread:
    """The shared loop and its daemon thread, started on first use."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.clients: OrderedDict[tuple[Any, ...], _Pooled] = OrderedDict()
        self.sync: dict[tuple[str | None, ...], httpx.Client] = {}

    def get(self) -> asyncio.AbstractEventLoop:
        with self.lock:
            if self.loop is None or self.thread is None or not self.thread.is_alive():
                # Clients of a loop that is gone cannot be used (nor closed) on a new one.
                self.clients = OrderedDict()
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(
                    target=self._run, args=(loop, ready), name="pinb-loop", daemon=True
                )
                thread.start()
                ready.wait()
                self.loop, self.thread = loop, thread
            return self.loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            # What asyncio.run does at its end, with a bound: a run still going at exit
            # is cancelled (its turn lock released), not left for the collector.
            with contextlib.suppress(Exception):
                tasks = asyncio.all_tasks(loop)
                for task in tasks:
                    task.cancel()
                if tasks:
                    loop.run_until_complete(asyncio.wait(tasks, timeout=_EXIT_WAIT))
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def stop(self, timeout: float = 5.0) -> None:
        """Close every client and stop the loop (at interpreter exit)."""
        with self.lock:
            loop, thread = self.loop, self.thread
            self.loop = self.thread = None
        if loop is not None and thread is not None and thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(_close_async(), loop).result(timeout)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        _close_sync()

    def forget(self) -> None:
        """In a forked child: the parent's loop thread is not here, and its connections are
        the parent's (closing them would end the parent's TLS sessions)."""
        self.lock = threading.Lock()
        self.loop = self.thread = None
        self.clients = OrderedDict()
        self.sync = {}


_STATE = _LoopThread()
atexit.register(_STATE.stop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_STATE.forget)


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's shared event loop (started on first use)."""
    return _STATE.get()


def on_loop_thread() -> bool:
    """Whether the caller runs on the shared loop's thread (where blocking on it would hang)."""
    thread = _STATE.thread
    return thread is not None and thread is threading.current_thread()


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on the shared loop; the future may be waited on from any thread."""
    return asyncio.run_coroutine_threadsafe(coro, shared_loop())


def _on_shared_loop() -> bool:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return running is _STATE.loop


# -- clients -----------------------------------------------------------------------------


@dataclass
class _Pooled:
    client: httpx.AsyncClient
    leases: int = 0


def _env_key(environ: Mapping[str, str]) -> tuple[str | None, ...]:
    return tuple(environ.get(name) for name in _CLIENT_ENV)


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = httpx.URL(url)
    return parsed.scheme, parsed.host, parsed.port


def _new_async_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(limits=_LIMITS, timeout=None)


@contextlib.asynccontextmanager
async def async_client(url: str) -> AsyncIterator[httpx.AsyncClient]:
    """An ``httpx.AsyncClient`` for requests to ``url``'s server.

    On the shared loop it is the pooled client of that server, kept for the next request;
    on any other loop a client of the request's own, closed after it (its connections
    could not be used from another loop).

    Parameters
    ----------
    url:
        Any URL of the server; its scheme, host and port choose the client, together with
        the variables httpx reads for TLS and proxies (``SSL_CERT_FILE``, ``HTTPS_PROXY``...).

    Yields
    ------
    httpx.AsyncClient
        Without a timeout of its own: pass each request's timeout with the request.
    """
    if not _on_shared_loop():
        own = _new_async_client()
        try:
            yield own
        finally:
            await own.aclose()
        return
    key = (*_origin(url), *_env_key(os.environ))
    pooled = _STATE.clients.get(key)
    if pooled is None:  # no await between the look-up and the insert: one client a key
        pooled = _STATE.clients[key] = _Pooled(_new_async_client())
    _STATE.clients.move_to_end(key)
    pooled.leases += 1
    try:
        await _evict()
        yield pooled.client
    finally:
        pooled.leases -= 1


async def _evict() -> None:
    """Close the least recently used idle clients past `MAX_CLIENTS` (never one in use)."""
    excess = len(_STATE.clients) - MAX_CLIENTS
    idle = [k for k, p in _STATE.clients.items() if p.leases == 0][: max(0, excess)]
    for key in idle:
        evicted = _STATE.clients.pop(key, None)
        if evicted is not None:
            await evicted.client.aclose()


def sync_client() -> httpx.Client:
    """The ``httpx.Client`` synchronous probes share (thread-safe; pass timeouts per request).

    A new one is made when the variables httpx reads for TLS and proxies change.
    """
    key = _env_key(os.environ)
    stale: list[httpx.Client] = []
    with _STATE.lock:
        client = _STATE.sync.get(key)
        if client is None:
            stale = list(_STATE.sync.values())  # made for an environment that is gone
            _STATE.sync = {key: httpx.Client(limits=_LIMITS, timeout=None)}
            client = _STATE.sync[key]
    for old in stale:
        old.close()
    return client


def pool_clients() -> int:
    """How many pooled async clients are open (one per server and environment)."""
    return len(_STATE.clients)


async def _close_async() -> None:
    clients = list(_STATE.clients.values())
    _STATE.clients.clear()
    for pooled in clients:
        with contextlib.suppress(Exception):
            await pooled.client.aclose()


def _close_sync() -> None:
    with _STATE.lock:
        clients = list(_STATE.sync.values())
        _STATE.sync.clear()
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()


def close_pool(timeout: float = 10.0) -> None:
    """Close every kept connection (the loop stays); the next request opens new ones.

    Call it after a server's certificate or address changed under the same URL.
    """
    loop, thread = _STATE.loop, _STATE.thread
    if loop is not None and thread is not None and thread.is_alive():
        if on_loop_thread():
            raise RuntimeError("close_pool() blocks: call it from outside the shared loop")
        asyncio.run_coroutine_threadsafe(_close_async(), loop).result(timeout)
    _close_sync()


# -- sending -----------------------------------------------------------------------------


class _Trace:
    """Notes whether a request opened a connection (httpcore's trace events)."""

    def __init__(self) -> None:
        self.connected = False

    async def __call__(self, name: str, info: Mapping[str, Any]) -> None:
        if name.startswith("connection.connect_"):
            self.connected = True


#: Failures of a request sent on a kept-alive connection the server closed meanwhile.
_STALE = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


async def send(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """``client.send(request, stream=True)``, sent once more if a reused connection was
    closed by the server as the request went out.

    A server may close an idle connection at the moment a request arrives on it; no reply
    came, so nothing was generated, and the request goes again on a new connection
    instead of failing the turn. A request on a new connection is never sent twice.

    Parameters
    ----------
    client:
        A client of `async_client` (not one around an injected transport, whose
        connections pinb cannot see).
    request:
        The request, with its body in memory (it may be sent twice).

    Returns
    -------
    httpx.Response
        The streaming response; the caller closes it.
    """
    trace = _Trace()
    request.extensions = {**request.extensions, "trace": trace}
    try:
        return await client.send(request, stream=True)
    except _STALE as exc:
        if trace.connected:
            raise
        log.debug("a kept-alive connection was closed by the server (%s); sending again", exc)
    return await client.send(request, stream=True)


# -- synchronous consumers ---------------------------------------------------------------

_ITEM, _FAILED, _END = 0, 1, 2


class LoopFeed(Iterator[T]):
    """Run an async iterator on the shared loop and hand its items to a synchronous reader.

    Iterating raises what the iterator raised. Called from the shared loop's own thread
    (which would wait for itself), the iterator runs on a new thread with its own loop.

    Parameters
    ----------
    factory:
        Makes the async iterator; called on the loop that runs it.
    """

    def __init__(self, factory: Callable[[], AsyncIterator[T]]) -> None:
        self._queue: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        self.finished = False
        self._ended = threading.Event()
        if on_loop_thread():
            threading.Thread(
                target=lambda: asyncio.run(self._pump(factory)), name="pinb-feed", daemon=True
            ).start()
        else:
            submit(self._pump(factory))

    async def _pump(self, factory: Callable[[], AsyncIterator[T]]) -> None:
        try:
            iterator = factory()
            try:
                async for item in iterator:
                    self._queue.put((_ITEM, item))
            finally:
                close = getattr(iterator, "aclose", None)
                if close is not None:
                    await close()
        except BaseException as exc:  # handed to the reading thread
            self._queue.put((_FAILED, exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._queue.put((_END, None))
            self._ended.set()

    def __iter__(self) -> LoopFeed[T]:
        return self

    def __next__(self) -> T:
        while not self.finished:
            try:
                kind, value = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if kind == _ITEM:
                return value  # type: ignore[no-any-return]
            self.finished = True
            if kind == _FAILED:
                raise value
        raise StopIteration

    def wait(self, timeout: float | None = None) -> bool:
        """Let the iterator run to its end, dropping what it still yields; whether it ended."""
        ended = self._ended.wait(timeout)
        self.finished = True
        return ended
