"""Providers and models: built-in data, Pi's ``<agentDir>/models.json``, and user overrides."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pinb.core.file.paths import agent_dir
from pinb.errors import PinbError
from pinb.llm.config.catalog import (
    BUILTIN_MODELS,
    BUILTIN_PROVIDERS,
    LOCAL_COMPAT,
    OpenAICompat,
    ProviderConfig,
)
from pinb.llm.errors import UnknownProviderError
from pinb.llm.types import API_OPENAI, ModelCost, ModelInfo

__all__ = [
    "ModelRegistry",
    "OpenAICompat",
    "ProviderConfig",
    "default_registry",
    "split_spec",
    "window_of",
]

log = logging.getLogger("pinb.llm")


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def split_spec(spec: str) -> tuple[str, str]:
    """Split ``"provider/model-id"`` at the first slash.

    OpenRouter ids keep their own slash: ``"openrouter/openai/gpt-4o"`` gives
    ``("openrouter", "openai/gpt-4o")``. A bare id gives ``("", id)``.
    """
    provider, sep, model_id = spec.strip().partition("/")
    if not sep:
        return "", provider
    return provider, model_id


class ModelRegistry:
    """Built-in providers and models, Pi's models.json, and overrides made in code.

    Later layers win: built-ins < ``<agentDir>/models.json`` < `register_provider` /
    `register_model` / `override`. models.json is re-read when it changes on disk.
    Problems found in it (bad JSON, missing fields) are listed in `problems` and logged;
    the rest of the file still counts.

    Parameters
    ----------
    models_json:
        Path of Pi's models.json; default ``<agentDir>/models.json`` resolved on each
        lookup (so ``PI_CODING_AGENT_DIR`` changes are seen). ``False`` disables it.
    env:
        Environment used to find the agent directory (default ``os.environ``).
    """

    def __init__(
        self,
        models_json: str | os.PathLike[str] | Literal[False] | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ):
        self._models_json = models_json
        self._env = env
        self._lock = threading.RLock()
        self._user_providers: dict[str, ProviderConfig] = {}
        self._user_models: dict[tuple[str, str], ModelInfo] = {}
        self._user_overrides: dict[tuple[str, str], dict[str, Any]] = {}
        self._file_key: tuple[str, float] | None = None
        self._file_providers: dict[str, ProviderConfig] = {}
        self._file_models: dict[tuple[str, str], ModelInfo] = {}
        self._file_overrides: dict[tuple[str, str], dict[str, Any]] = {}
        self.problems: list[str] = []

    # ------------------------------------------------------------------ public API

    def register_provider(self, config: ProviderConfig) -> None:
        """Add or replace a provider."""
        with self._lock:
            self._user_providers[config.name] = config

    def register_model(self, info: ModelInfo) -> None:
        """Add or replace a model (its provider must be known when it is used)."""
        with self._lock:
            self._user_models[(info.provider, info.id)] = info

    def override(self, spec: str, **changes: Any) -> ModelInfo:
        """Change some fields of a model, e.g. ``override("openai/gpt-4o", context_window=64000)``.

        ``cost`` may be a `ModelCost` or a mapping with any of ``input``, ``output``,
        ``cache_read``, ``cache_write``.
        """
        provider, model_id = self._split(spec)
        with self._lock:
            self._user_overrides.setdefault((provider, model_id), {}).update(changes)
        return self.info(f"{provider}/{model_id}")

    def provider(self, name: str) -> ProviderConfig:
        """The provider's configuration.

        Raises
        ------
        UnknownProviderError
            If no layer defines it.
        """
        self._refresh()
        with self._lock:
            for layer in (self._user_providers, self._file_providers, BUILTIN_PROVIDERS):
                if name in layer:
                    return layer[name]
        known = ", ".join(sorted(self.providers()))
        raise UnknownProviderError(f"Unknown provider {name!r}. Known providers: {known}.")

    def providers(self) -> list[str]:
        """Names of every known provider."""
        self._refresh()
        with self._lock:
            return sorted({*BUILTIN_PROVIDERS, *self._file_providers, *self._user_providers})

    def models(self, provider: str | None = None) -> list[ModelInfo]:
        """Every model the registry lists (not the unknown ids it would also accept)."""
        self._refresh()
        with self._lock:
            keys = {(m.provider, m.id) for m in BUILTIN_MODELS}
            keys |= set(self._file_models) | set(self._user_models)
        return [self.info(f"{p}/{i}") for p, i in sorted(keys) if provider in (None, p)]

    def info(self, spec: str) -> ModelInfo:
        """Model info for ``"provider/model-id"``; unknown ids get the provider's defaults.

        Raises
        ------
        UnknownProviderError
            If the provider is unknown, or a bare id is not in the registry.
        """
        provider, model_id = self._split(spec)
        config = self.provider(provider)
        key = (provider, model_id)
        with self._lock:
            base = self._lookup(key)
            if base is None and _SNAPSHOT.search(model_id):
                # "gpt-4o-2024-08-06", "claude-haiku-4-5-latest": a dated snapshot of a
                # listed model has that model's limits and prices.
                family = self._lookup((provider, _SNAPSHOT.sub("", model_id)))
                if family is not None:
                    base = dataclasses.replace(family, id=model_id, name=model_id)
            if base is None:
                base = ModelInfo(
                    provider,
                    model_id,
                    config.api,
                    config.default_context_window,
                    config.default_max_tokens,
                    ModelCost(),
                    False,
                    ("text",),
                    model_id,
                    known=False,
                )
            for overrides in (self._file_overrides.get(key), self._user_overrides.get(key)):
                if overrides:
                    base = _apply_overrides(base, overrides)
        return base

    # ------------------------------------------------------------------ internals

    def _lookup(self, key: tuple[str, str]) -> ModelInfo | None:
        found = self._user_models.get(key) or self._file_models.get(key)
        if found is None:
            found = next((m for m in BUILTIN_MODELS if (m.provider, m.id) == key), None)
        return found

    def _split(self, spec: str) -> tuple[str, str]:
        provider, model_id = split_spec(spec)
        if not model_id:
            raise UnknownProviderError(
                f"Model spec {spec!r} has no model id; use 'provider/model-id'."
            )
        if provider:
            if provider in self.providers():
                return provider, model_id
            # "gpt-4o/..."-like specs are not ours; a bare id may itself contain a slash.
        matches = sorted({m.provider for m in self.models() if m.id == spec.strip()})
        if len(matches) == 1:
            return matches[0], spec.strip()
        if provider:
            known = ", ".join(self.providers())
            raise UnknownProviderError(
                f"Unknown provider {provider!r} in {spec!r}. Known providers: {known}."
            )
        if matches:
            raise UnknownProviderError(
                f"Model id {spec!r} is offered by several providers ({', '.join(matches)}); "
                "write it as 'provider/model-id'."
            )
        raise UnknownProviderError(f"Unknown model {spec!r}; write it as 'provider/model-id'.")

    def _models_json_path(self) -> Path | None:
        if self._models_json is False:
            return None
        if self._models_json is not None:
            return Path(self._models_json)
        return agent_dir(None if self._env is None else dict(self._env)) / "models.json"

    def _refresh(self) -> None:
        path = self._models_json_path()
        try:
            key = (str(path), path.stat().st_mtime) if path is not None else None
        except OSError:
            key = None
        with self._lock:
            if key == self._file_key:
                return
            self._file_key = key
            self._file_providers, self._file_models, self._file_overrides = {}, {}, {}
            self.problems = []
            if key is not None and path is not None:
                self._load_models_json(path)

    def _problem(self, path: Path, text: str) -> None:
        message = f"{path}: {text}"
        self.problems.append(message)
        log.warning("%s", message)

    def _load_models_json(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            self._problem(path, f"cannot be read as JSON ({type(exc).__name__}); ignored")
            return
        providers = data.get("providers") if isinstance(data, dict) else None
        if not isinstance(providers, dict):
            self._problem(path, 'has no "providers" object; ignored')
            return
        for name, raw in providers.items():
            if not isinstance(raw, dict):
                self._problem(path, f"provider {name!r} is not an object; skipped")
                continue
            self._load_provider(path, str(name), raw)

    def _load_provider(self, path: Path, name: str, raw: dict[str, Any]) -> None:
        builtin = BUILTIN_PROVIDERS.get(name)
        api = raw.get("api") or (builtin.api if builtin else None)
        base_url = raw.get("baseUrl") or (builtin.base_url if builtin else None)
        raw_headers = raw.get("headers")
        headers: dict[str, str] = (
            {str(k): str(v) for k, v in raw_headers.items()}
            if isinstance(raw_headers, dict)
            else {}
        )
        if builtin is not None:
            config = dataclasses.replace(
                builtin,
                api=api if isinstance(api, str) else builtin.api,
                base_url=str(base_url),
                api_key_config=raw.get("apiKey") or None,
                headers={**builtin.headers, **headers},
                compat=_compat(builtin.compat, raw.get("compat")),
            )
        elif not base_url:
            self._problem(path, f'provider {name!r} has no "baseUrl"; skipped')
            return
        else:
            config = ProviderConfig(
                name=name,
                api=str(api) if api else API_OPENAI,
                base_url=str(base_url),
                requires_key=bool(raw.get("apiKey")),
                api_key_config=raw.get("apiKey") or None,
                headers=headers,
                compat=_compat(LOCAL_COMPAT, raw.get("compat")),
            )
            if not api and not any(
                isinstance(m, dict) and m.get("api") for m in raw.get("models") or []
            ):
                self._problem(path, f'provider {name!r} has no "api"; assuming {API_OPENAI}')
        self._file_providers[name] = config
        for model in raw.get("models") or []:
            if (
                not isinstance(model, dict)
                or not isinstance(model.get("id"), str)
                or not model["id"]
            ):
                self._problem(path, f"provider {name!r} lists a model without an id; skipped")
                continue
            raw_cost = model.get("cost")
            cost: dict[str, Any] = raw_cost if isinstance(raw_cost, dict) else {}
            self._file_models[(name, model["id"])] = ModelInfo(
                provider=name,
                id=model["id"],
                api=str(model.get("api") or config.api),
                context_window=int(model.get("contextWindow") or 128_000),
                max_tokens=int(model.get("maxTokens") or 16_384),
                cost=_cost(ModelCost(), cost),
                reasoning=bool(model.get("reasoning", False)),
                input=tuple(model.get("input") or ("text",)),
                name=str(model.get("name") or model["id"]),
                # Labels say where a window came from: the user's own file, when it says one.
                window_source="models.json" if model.get("contextWindow") else "",
            )
        for model_id, override in (raw.get("modelOverrides") or {}).items():
            if isinstance(override, dict):
                self._file_overrides[(name, str(model_id))] = _pi_override(override)


def _cost(base: ModelCost, raw: Mapping[str, Any]) -> ModelCost:
    def pick(*names: str, default: float) -> float:
        for n in names:
            if isinstance(raw.get(n), int | float):
                return float(raw[n])
        return default

    return ModelCost(
        input=pick("input", default=base.input),
        output=pick("output", default=base.output),
        cache_read=pick("cache_read", "cacheRead", default=base.cache_read),
        cache_write=pick("cache_write", "cacheWrite", default=base.cache_write),
    )


_PI_FIELDS = {
    "contextWindow": "context_window",
    "maxTokens": "max_tokens",
    "reasoning": "reasoning",
    "input": "input",
    "name": "name",
    "cost": "cost",
}


def _pi_override(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {_PI_FIELDS[k]: v for k, v in raw.items() if k in _PI_FIELDS}


def _apply_overrides(info: ModelInfo, overrides: Mapping[str, Any]) -> ModelInfo:
    changes = dict(overrides)
    if "cost" in changes and not isinstance(changes["cost"], ModelCost):
        changes["cost"] = _cost(info.cost, changes["cost"])
    if "input" in changes:
        changes["input"] = tuple(changes["input"])
    valid = {f.name for f in dataclasses.fields(ModelInfo)}
    unknown = set(changes) - valid
    if unknown:
        raise TypeError(f"ModelInfo has no field(s) {', '.join(sorted(unknown))}")
    return dataclasses.replace(info, **changes)


_COMPAT_FIELDS = {
    "maxTokensField": "max_tokens_field",
    "supportsDeveloperRole": "supports_developer_role",
    "supportsUsageInStreaming": "supports_usage_in_streaming",
    "supportsStore": "supports_store",
    "requiresThinkingAsText": "requires_thinking_as_text",
}


def _compat(base: OpenAICompat, raw: Any) -> OpenAICompat:
    if not isinstance(raw, dict):
        return base
    changes: dict[str, Any] = {v: raw[k] for k, v in _COMPAT_FIELDS.items() if k in raw}
    if raw.get("supportsReasoningEffort") is False:
        changes["reasoning_format"] = "none"
    elif raw.get("supportsReasoningEffort") is True and base.reasoning_format == "none":
        changes["reasoning_format"] = "reasoning_effort"
    return dataclasses.replace(base, **changes)


_DEFAULT: ModelRegistry | None = None
_DEFAULT_LOCK = threading.Lock()


def default_registry() -> ModelRegistry:
    """The process-wide registry `get_model` uses unless given another."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = ModelRegistry()
        return _DEFAULT


def window_of(
    model: Mapping[str, Any] | None, registry: ModelRegistry | None = None
) -> tuple[int | None, str]:
    """The context window of a session's recorded model, and where it came from.

    ``model`` is a context's ``model`` (``{"provider": ..., "modelId": ...}``, what the
    latest ``model_change`` or assistant message says). Returns ``(window, source)``
    with source ``"model registry"`` or ``"provider default"`` (a model the registry
    does not list), or ``(None, "unknown")`` without a model or a known provider.
    """
    provider = model.get("provider") if model else None
    model_id = model.get("modelId") if model else None
    if not (isinstance(provider, str) and isinstance(model_id, str) and provider and model_id):
        return None, "unknown"
    try:
        info = (registry or default_registry()).info(f"{provider}/{model_id}")
    except PinbError:
        return None, "unknown"
    if not info.context_window:
        return None, "unknown"
    return info.context_window, info.window_origin
