"""Ask a local server how large its context window is, and tidy its model ids.

A local server's window is set when it starts (``--ctx-size 4096``, ``num_ctx``), so no
table can know it; pinb's default for unknown ids (128,000) would make it compact far too
late and overflow instead. The server a model is configured to talk to is asked once per
base URL and model, each kind where it tells:

=================  =============================================  ====================
server             where                                          field
=================  =============================================  ====================
llama-server       ``GET /props``                                 ``n_ctx``
Ollama             ``POST /api/show``                             ``num_ctx``, else
                                                                  ``*.context_length``
LM Studio          ``GET /api/v0/models``                         ``loaded_context_length``,
                                                                  else ``max_context_length``
vLLM               ``GET /v1/models``                             ``max_model_len``
llama-cpp-python   (``/props`` is 404; nothing else is asked)     its overflow message
=================  =============================================  ====================

Only that base URL is asked; nothing else on the machine (see `pinb.llm.local` for the
explicit discovery of servers)::

    >>> clean_model_id("/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    'SmolLM2-135M-Instruct.Q4_1'
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from pinb.llm.pool import sync_client
from pinb.llm.urls import display_url, join_url, split_query

__all__ = [
    "WindowAnswer",
    "clean_model_id",
    "discover_context_window",
    "discover_window",
    "forget_discoveries",
    "probe_client",
    "server_root",
]

log = logging.getLogger("pinb.llm")


@dataclass(frozen=True, slots=True)
class WindowAnswer:
    """A window a server reported, and where (``"/props n_ctx"``, ``"/api/show num_ctx"`` ...)."""

    tokens: int
    source: str

    @property
    def label(self) -> str:
        """How labels name it: ``server: /props n_ctx``."""
        return f"server: {self.source}"


_CACHE: dict[tuple[str, str], WindowAnswer | None] = {}
_LOCK = threading.Lock()


def server_root(base_url: str) -> str:
    """The server's address without the OpenAI-compatible ``/v1`` suffix (its query kept).

    >>> server_root("http://127.0.0.1:8080/v1"), server_root("http://box/v1?key=k")
    ('http://127.0.0.1:8080', 'http://box?key=k')
    """
    path, query = split_query(base_url)
    root = path.rstrip("/")
    return (root[: -len("/v1")] if root.endswith("/v1") else root) + query


def clean_model_id(model_id: str) -> str:
    """A model id fit for ``provider/id``: llama-cpp-python names a model by its file path.

    Only path-like ids change (a slash or a ``.gguf`` ending); servers that load one
    model answer any id, so the short name works in requests too.
    """
    if "/" not in model_id and "\\" not in model_id and not model_id.endswith(".gguf"):
        return model_id
    name = model_id.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name[: -len(".gguf")] if name.endswith(".gguf") else name or model_id


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number > 0 else None


_Found = tuple[int, str] | None


def _first(*candidates: tuple[Any, str]) -> _Found:
    for value, source in candidates:
        found = _positive(value)
        if found:
            return found, source
    return None


class _Client:
    """GET and POST with one timeout, on the shared client or around a given transport."""

    def __init__(self, client: httpx.Client, timeout: float) -> None:
        self._client = client
        self._timeout = timeout

    def get(self, url: str) -> httpx.Response:
        return self._client.get(url, timeout=self._timeout)

    def post(self, url: str, *, json: Any) -> httpx.Response:
        return self._client.post(url, json=json, timeout=self._timeout)


@contextlib.contextmanager
def probe_client(timeout: float, transport: httpx.BaseTransport | None = None) -> Iterator[_Client]:
    """A client for a few quick requests: the process's shared one (its kept connections
    serve the model's requests too), or one around ``transport`` (tests), closed after."""
    if transport is None:
        yield _Client(sync_client(), timeout)
        return
    with httpx.Client(transport=transport) as own:
        yield _Client(own, timeout)


def _json(response: httpx.Response) -> Any:
    response.raise_for_status()  # a 404 (llama-cpp-python has no /props) is "not here"
    return response.json()


def _llamacpp_props(client: _Client, root: str, model_id: str) -> _Found:
    data = _json(client.get(join_url(root, "props")))
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    nested = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _first((nested, "/props n_ctx"), (data.get("n_ctx"), "/props n_ctx"))


def _ollama_show(client: _Client, root: str, model_id: str) -> _Found:
    data = _json(client.post(join_url(root, "api/show"), json={"model": model_id}))
    if not isinstance(data, dict):
        return None
    # The window Ollama really uses is num_ctx when the model sets one; the model's
    # trained length otherwise (Ollama may still run it smaller: set num_ctx to be sure).
    for line in str(data.get("parameters") or "").splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "num_ctx":
            return _first((words[1], "/api/show num_ctx"))
    info = data.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if str(key).endswith(".context_length"):
                return _first((value, f"/api/show {key}"))
    return None


def _pick(data: Any, model_id: str) -> dict[str, Any] | None:
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        return None
    entries = [m for m in models if isinstance(m, dict)]
    return next(
        (m for m in entries if model_id in (m.get("id"), clean_model_id(str(m.get("id"))))),
        entries[0] if len(entries) == 1 else None,
    )


def _lmstudio_models(client: _Client, root: str, model_id: str) -> _Found:
    chosen = _pick(_json(client.get(join_url(root, "api/v0/models"))), model_id)
    if chosen is None:
        return None
    # loaded_context_length is what the loaded model runs with; max is what it could.
    return _first(
        (chosen.get("loaded_context_length"), "/api/v0/models loaded_context_length"),
        (chosen.get("max_context_length"), "/api/v0/models max_context_length"),
    )


def _openai_models(client: _Client, root: str, model_id: str) -> _Found:
    chosen = _pick(_json(client.get(join_url(root, "v1/models"))), model_id)
    if chosen is None:
        return None
    raw_meta = chosen.get("meta")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    return _first(
        (chosen.get("max_model_len"), "/v1/models max_model_len"),  # vLLM
        (chosen.get("context_length"), "/v1/models context_length"),
        (chosen.get("loaded_context_length"), "/v1/models loaded_context_length"),
        (meta.get("n_ctx"), "/v1/models meta.n_ctx"),
    )


_Probe = Callable[[_Client, str, str], _Found]
_PROBES: dict[str, tuple[_Probe, ...]] = {
    "ollama": (_ollama_show, _openai_models),
    "lmstudio": (_lmstudio_models, _openai_models),
    "vllm": (_openai_models,),
    # Not /v1/models: llama-cpp-python takes its model lock for it, which ends a reply
    # another kernel is streaming (its --interrupt_requests default); it tells no window.
    "llamacpp": (_llamacpp_props,),
    "default": (_llamacpp_props, _openai_models, _lmstudio_models, _ollama_show),
}


def discover_window(
    base_url: str,
    model_id: str,
    *,
    provider: str = "",
    timeout: float = 1.0,
    transport: httpx.BaseTransport | None = None,
) -> WindowAnswer | None:
    """The context window the server at ``base_url`` reports for ``model_id``, and where.

    Asks only that server, in the order its kind answers (the table above; every kind
    for a provider pinb does not know). Answers, including "no answer", are remembered
    per base URL and model for the life of the process.
    """
    key = (base_url.rstrip("/"), model_id)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    root = server_root(base_url)
    found: _Found = None
    with probe_client(timeout, transport) as client:
        for probe in _PROBES.get(provider, _PROBES["default"]):
            try:
                found = probe(client, root, model_id)
            except (httpx.HTTPError, ValueError) as exc:
                log.debug(
                    "window probe %s at %s: %s",
                    probe.__name__,
                    display_url(root),
                    type(exc).__name__,
                )
                continue
            if found:
                break
    answer = WindowAnswer(*found) if found else None
    log.info(
        "context window of %s at %s: %s", model_id, display_url(root), answer or "not reported"
    )
    with _LOCK:
        _CACHE[key] = answer
    return answer


def discover_context_window(
    base_url: str,
    model_id: str,
    *,
    provider: str = "",
    timeout: float = 1.0,
    transport: httpx.BaseTransport | None = None,
) -> int | None:
    """The window `discover_window` finds, in tokens, or ``None``."""
    answer = discover_window(
        base_url, model_id, provider=provider, timeout=timeout, transport=transport
    )
    return answer.tokens if answer else None


def forget_discoveries() -> None:
    """Drop remembered answers (a server restarted with another window)."""
    with _LOCK:
        _CACHE.clear()
