"""Ask a local server how large its context window is (llama.cpp, Ollama, vLLM), and tidy its model ids.

A local server's window is set when it starts (``--ctx-size 4096``, ``num_ctx``), so no
table can know it; pinb's default for unknown ids (128,000) would make it compact far too
late and overflow instead. The servers that tell are asked once per base URL and model::

    >>> clean_model_id("/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    'SmolLM2-135M-Instruct.Q4_1'
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["clean_model_id", "discover_context_window", "forget_discoveries", "server_root"]

log = logging.getLogger("pinb.llm")

_CACHE: dict[tuple[str, str], int | None] = {}
_LOCK = threading.Lock()


def server_root(base_url: str) -> str:
    """The server's address without the OpenAI-compatible ``/v1`` suffix."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


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


def _llamacpp_props(client: httpx.Client, root: str, model_id: str) -> int | None:
    data = client.get(f"{root}/props").json()
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    found = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return found or _positive(data.get("n_ctx"))


def _ollama_show(client: httpx.Client, root: str, model_id: str) -> int | None:
    data = client.post(f"{root}/api/show", json={"model": model_id}).json()
    if not isinstance(data, dict):
        return None
    # The window Ollama really uses is num_ctx when the model sets one; the model's
    # trained length otherwise (Ollama may still run it smaller: set num_ctx to be sure).
    for line in str(data.get("parameters") or "").splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "num_ctx":
            return _positive(words[1])
    info = data.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if str(key).endswith(".context_length"):
                return _positive(value)
    return None


def _openai_models(client: httpx.Client, root: str, model_id: str) -> int | None:
    data = client.get(f"{root}/v1/models").json()
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        return None
    entries = [m for m in models if isinstance(m, dict)]
    chosen = next(
        (m for m in entries if model_id in (m.get("id"), clean_model_id(str(m.get("id"))))),
        entries[0] if len(entries) == 1 else None,
    )
    if chosen is None:
        return None
    raw_meta = chosen.get("meta")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    for value in (
        chosen.get("max_model_len"),  # vLLM
        chosen.get("context_length"),
        chosen.get("loaded_context_length"),  # LM Studio
        meta.get("n_ctx"),
    ):
        found = _positive(value)
        if found:
            return found
    return None


_Probe = Callable[[httpx.Client, str, str], "int | None"]
_PROBES: dict[str, tuple[_Probe, ...]] = {
    "ollama": (_ollama_show, _openai_models),
    "default": (_llamacpp_props, _openai_models, _ollama_show),
}


def discover_context_window(
    base_url: str,
    model_id: str,
    *,
    provider: str = "",
    timeout: float = 1.0,
    transport: httpx.BaseTransport | None = None,
) -> int | None:
    """The context window the server at ``base_url`` reports for ``model_id``, or ``None``.

    Asks llama.cpp's ``/props`` (``n_ctx``), Ollama's ``/api/show`` (``num_ctx``, else
    the model's context length) and ``/v1/models`` metadata (vLLM ``max_model_len``, LM
    Studio); Ollama's own endpoint first for the ``ollama`` provider. Answers, including
    "no answer", are remembered per base URL and model for the life of the process.
    """
    key = (base_url.rstrip("/"), model_id)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    root = server_root(base_url)
    found: int | None = None
    with httpx.Client(timeout=timeout, transport=transport) as client:
        for probe in _PROBES.get(provider, _PROBES["default"]):
            try:
                found = probe(client, root, model_id)
            except (httpx.HTTPError, ValueError) as exc:
                log.debug("window probe %s at %s: %s", probe.__name__, root, type(exc).__name__)
                continue
            if found:
                break
    log.info("context window of %s at %s: %s", model_id, root, found or "not reported")
    with _LOCK:
        _CACHE[key] = found
    return found


def forget_discoveries() -> None:
    """Drop remembered answers (a server restarted with another window)."""
    with _LOCK:
        _CACHE.clear()
