"""Local OpenAI-compatible servers: the ones the user configured, and an explicit look around.

pinb never sends a request to an address the user did not name. A local server counts as
configured when its address comes from a base-URL variable (``LLAMACPP_BASE_URL``,
``OLLAMA_HOST`` ...), from Pi's ``models.json`` or from the notebook
(``%pi model provider/id --base-url URL``); only those are asked which model they serve
when no model is chosen. `discover_local_servers` is the one exception, and only when
called on purpose (``%pi model --discover``, ``pinb models --discover``): it asks the usual
local ports what answers there, lists it, and chooses nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from pinb.llm.config.catalog import BUILTIN_PROVIDERS
from pinb.llm.config.discover import clean_model_id, discover_window, probe_client, server_root
from pinb.llm.config.registry import ModelRegistry, default_registry
from pinb.llm.resolve import base_url_variable, provider_base_url
from pinb.llm.urls import display_url, join_url

__all__ = [
    "LOCAL_PROVIDERS",
    "LocalServer",
    "configured_local_servers",
    "discover_local_servers",
    "list_models",
]

log = logging.getLogger("pinb.llm")

#: OpenAI-compatible servers people run on their own machine, in the order they are tried.
LOCAL_PROVIDERS: tuple[str, ...] = ("ollama", "lmstudio", "llamacpp", "vllm")


@dataclass(frozen=True, slots=True)
class LocalServer:
    """A local server: which provider name reaches it, where, how it was found, what it serves.

    Attributes
    ----------
    provider:
        The provider name to use in ``provider/model`` specs.
    base_url:
        Its OpenAI-compatible base URL (``.../v1``).
    source:
        Where the address came from: ``LLAMACPP_BASE_URL``, ``models.json``,
        ``notebook`` or ``default port`` (found by `discover_local_servers` only).
    models:
        The model ids it lists (shortened as `clean_model_id` does).
    window:
        The window it reports for its first model, with the source, or ``None``.
    """

    provider: str
    base_url: str
    source: str
    models: tuple[str, ...] = ()
    window: str | None = None

    @property
    def spec(self) -> str | None:
        """``provider/model`` for its first model, or ``None`` when it lists none."""
        return f"{self.provider}/{self.models[0]}" if self.models else None

    def __str__(self) -> str:
        models = ", ".join(self.models) if self.models else "(no models listed)"
        window = f" · window {self.window}" if self.window else ""
        return f"{self.provider} at {display_url(self.base_url)} ({self.source}): {models}{window}"

    def __repr__(self) -> str:
        # The address may carry a password or a ?key=, as every shown URL: masked.
        return (
            f"LocalServer(provider={self.provider!r}, base_url={display_url(self.base_url)!r}, "
            f"source={self.source!r}, models={self.models!r}, window={self.window!r})"
        )


def _configured_url(
    provider: str,
    registry: ModelRegistry,
    env: Mapping[str, str],
    base_urls: Mapping[str, str],
) -> tuple[str, str] | None:
    """The address of ``provider`` and who set it, or ``None`` when nobody did."""
    config = registry.provider(provider)
    if provider in base_urls:
        return provider_base_url(config, env, base_urls[provider]), "notebook"
    for name in (config.base_url_env, base_url_variable(provider)):
        if name and env.get(name, "").strip():
            return provider_base_url(config, env), name
    if provider == "ollama" and env.get("OLLAMA_HOST", "").strip():
        return provider_base_url(config, env), "OLLAMA_HOST"
    if config is not BUILTIN_PROVIDERS.get(provider):  # models.json or code registered it
        return provider_base_url(config, env), "models.json"
    return None


def configured_local_servers(
    *,
    registry: ModelRegistry | None = None,
    env: Mapping[str, str] | None = None,
    base_urls: Mapping[str, str] | None = None,
) -> list[tuple[str, str, str]]:
    """``(provider, base_url, source)`` of each local server the user configured.

    No request is sent. A provider whose address is only pinb's built-in default is
    not listed.
    """
    reg = registry or default_registry()
    environ: Mapping[str, str] = os.environ if env is None else env
    found = []
    for provider in LOCAL_PROVIDERS:
        where = _configured_url(provider, reg, environ, base_urls or {})
        if where is not None:
            found.append((provider, *where))
    return found


def list_models(
    base_url: str, *, timeout: float = 0.3, transport: httpx.BaseTransport | None = None
) -> tuple[str, ...] | None:
    """The model ids ``GET {base_url}/models`` lists, or ``None`` when nothing answers."""
    try:
        with probe_client(timeout, transport) as client:
            response = client.get(join_url(base_url, "models"))
            response.raise_for_status()
            data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        log.debug("no model list at %s: %s", display_url(base_url), type(exc).__name__)
        return None
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        return None
    return tuple(
        clean_model_id(str(m["id"])) for m in models if isinstance(m, dict) and m.get("id")
    )


def _same_server(url: str) -> str:
    """Scheme, host and port of ``url`` (``localhost`` and ``127.0.0.1`` alike)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = (parts.hostname or "").replace("localhost", "127.0.0.1")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{host}:{port}"


def discover_local_servers(
    *,
    registry: ModelRegistry | None = None,
    env: Mapping[str, str] | None = None,
    base_urls: Mapping[str, str] | None = None,
    providers: Sequence[str] = LOCAL_PROVIDERS,
    timeout: float = 0.3,
) -> list[LocalServer]:
    """Ask each local provider's address (configured, else its usual port) what it serves.

    This sends requests to addresses nobody configured, so nothing calls it on its own:
    it is what ``%pi model --discover`` runs. It lists what answered and chooses nothing;
    pick one with ``%pi model provider/model --base-url URL`` (or set its variable).
    Note that llama-cpp-python, by default, ends a running reply when another request
    arrives: a look around can cut a reply another kernel is streaming.
    """
    reg = registry or default_registry()
    environ: Mapping[str, str] = os.environ if env is None else env
    found: list[LocalServer] = []
    addresses = [
        (provider, _configured_url(provider, reg, environ, base_urls or {}))
        for provider in providers
    ]
    # One server, one line: a configured address wins over another provider's usual port
    # (llama-cpp-python on 8000 is both LLAMACPP_BASE_URL and vLLM's default port).
    configured = {_same_server(where[0]) for _, where in addresses if where is not None}
    asked: set[str] = set()
    for provider, where in addresses:
        url, source = where or (reg.provider(provider).base_url, "default port")
        key = _same_server(url)
        if key in asked or (where is None and key in configured):
            continue
        asked.add(key)
        models = list_models(url, timeout=timeout)
        if models is None:
            continue
        answer = (
            discover_window(url, models[0], provider=provider, timeout=timeout) if models else None
        )
        found.append(
            LocalServer(
                provider,
                url,
                source,
                models,
                f"{answer.tokens:,} ({answer.source})" if answer else None,
            )
        )
    log.info("local servers found: %s", [display_url(server_root(s.base_url)) for s in found])
    return found
