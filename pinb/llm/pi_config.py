"""Pi's own configuration files, as both engines need them: a ``models.json`` entry that Pi 1.6
lists, Pi's compaction settings for a small window, and why Pi cannot find a model.

pinb writes these files only when asked (``%pi model --save``, ``%pi model --fit-pi``),
keeps everything else in them, and replaces them whole (a temporary file, then a rename)
with the previous version beside them as ``<name>.bak``.

Pi 1.6.0 uses a ``models.json`` model only when its provider (or the model) names an
``api`` and an ``apiKey``: a local server that needs no key still needs a placeholder
(``"apiKey": "none"``). Without ``api`` Pi skips the provider (``pi --list-models`` warns
``no "api" specified``) and stops at start-up; without ``apiKey`` it starts, then refuses
every prompt ("No API key found").
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pinb.core.atomic import replace_file
from pinb.core.paths import agent_dir
from pinb.core.tokens import CompactionSettings

__all__ = [
    "PLACEHOLDER_KEY",
    "SmallWindow",
    "fit_pi_compaction",
    "models_json_problem",
    "pi_small_window",
    "save_model",
]

#: The key written for a server that needs none (Pi 1.6 lists no model without one).
PLACEHOLDER_KEY = "none"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not JSON pinb can update ({exc}); fix it by hand first") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object; fix it by hand first")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    replace_file(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def save_model(
    spec: str,
    base_url: str,
    *,
    window: int,
    max_tokens: int | None = None,
    api: str = "openai-completions",
    api_key: str | None = None,
    agent: Path | None = None,
) -> Path:
    """Add (or update) ``provider/model`` in ``<agentDir>/models.json`` so both engines use it.

    The entry carries what Pi 1.6 needs to list it (``api`` and an ``apiKey``: a
    placeholder when the server needs none) and the window both engines compact by. An
    address without a path gets ``/v1``, as pinb reads one (Pi takes it as written).
    Other providers, models and fields are kept. Returns the file written.

    Raises
    ------
    ValueError
        ``spec`` is not ``provider/model``, the window is not positive, or the file
        exists but is not JSON pinb can update.
    """
    provider, _, model_id = spec.partition("/")
    if not provider or not model_id:
        raise ValueError(f"{spec!r}: name the model as provider/model-id")
    if window <= 0:
        raise ValueError("the context window must be a positive number of tokens")
    if urlsplit(base_url).path in ("", "/"):
        # pinb adds /v1 to an address without a path; Pi sends to the URL as written.
        base_url = base_url.rstrip("/") + "/v1"
    path = (agent or agent_dir()) / "models.json"
    data = _read(path)
    providers = data.setdefault("providers", {})
    if not isinstance(providers, dict):
        raise ValueError(f"{path}: 'providers' is not an object; fix it by hand first")
    entry = providers.setdefault(provider, {})
    entry["baseUrl"] = base_url
    entry.setdefault("api", api)
    if api_key is not None or not entry.get("apiKey"):
        entry["apiKey"] = api_key or PLACEHOLDER_KEY
    models = entry.setdefault("models", [])
    model = next((m for m in models if isinstance(m, dict) and m.get("id") == model_id), None)
    if model is None:
        model = {"id": model_id}
        models.append(model)
    model["contextWindow"] = window
    model["maxTokens"] = max_tokens or max(256, min(window // 4, 8192))
    _write(path, data)
    return path


def models_json_problem(spec: str, agent: Path | None = None) -> str | None:
    """Why Pi 1.6 would not list ``provider/model`` from ``models.json`` (``None``: it would).

    The reasons Pi gives no error for (a missing ``apiKey``) and the one it only warns about
    in ``pi --list-models`` (a missing ``api``), said in one sentence with the fix.
    """
    provider, _, model_id = spec.partition("/")
    path = (agent or agent_dir()) / "models.json"
    try:
        data = _read(path)
    except ValueError as exc:
        return str(exc)
    providers = data.get("providers") if isinstance(data.get("providers"), dict) else {}
    entry = providers.get(provider) if isinstance(providers, dict) else None
    if not isinstance(entry, dict):
        return None  # a built-in provider, or one Pi knows some other way
    listed = entry.get("models")
    models: list[Any] = listed if isinstance(listed, list) else []
    model = next((m for m in models if isinstance(m, dict) and m.get("id") == model_id), None)
    where = f"{path} (provider {provider!r})"
    if models and model is None:
        names = ", ".join(str(m.get("id")) for m in models if isinstance(m, dict))
        return f"{where} has no model {model_id!r} (it has: {names})"
    model = model or {}
    if not (model.get("api") or entry.get("api")):
        return (
            f'{where} names no "api": Pi 1.6 skips the provider ("no \\"api\\" specified"); '
            'add "api": "openai-completions" for an OpenAI-compatible server'
        )
    if not (model.get("apiKey") or entry.get("apiKey")):
        return (
            f'{where} has no "apiKey": Pi 1.6 finds no key for it and sends nothing; a '
            f'local server that needs no key takes a placeholder, "apiKey": "{PLACEHOLDER_KEY}"'
        )
    return None


@dataclass(frozen=True)
class SmallWindow:
    """Pi's compaction settings against a model's window, when they do not fit it."""

    spec: str
    window: int
    reserve: int
    keep: int

    def line(self) -> str:
        """The problem and the fix, in one line."""
        fitted = CompactionSettings(reserve_tokens=self.reserve, keep_recent_tokens=self.keep)
        fitted = fitted.fit_window(self.window)
        threshold = self.window - self.reserve
        if threshold <= 0:
            why = "Pi would send requests with no room for a reply and could never compact"
        else:
            why = (
                f"each compaction keeps {self.keep:,} tokens, more than the {threshold:,} "
                "above which Pi compacts, so Pi would compact on every turn"
            )
        return (
            f"Pi's compaction settings (reserve {self.reserve:,}, keep {self.keep:,} tokens) do "
            f"not fit {self.spec}'s {self.window:,}-token window: {why}. `%pi model --fit-pi` "
            f"writes reserve {fitted.reserve_tokens:,} / keep {fitted.keep_recent_tokens:,} for "
            "this model into Pi's settings.json"
        )


def pi_small_window(
    spec: str, window: int | None, settings: CompactionSettings
) -> SmallWindow | None:
    """Whether Pi's own compaction settings (as Pi uses them: not fitted) break on ``window``.

    Pi compacts above ``window - reserveTokens`` and keeps ``keepRecentTokens``; when the
    reserve takes half the window or more, or what is kept would not leave the threshold,
    requests go out with almost no room and a compaction cannot make any.
    """
    if not window:
        return None
    provider, _, model_id = spec.partition("/")
    mine = settings.for_model(provider, model_id)
    reserve, keep = mine.reserve_tokens, mine.keep_recent_tokens
    if reserve * 2 <= window and keep < window - reserve:
        return None
    return SmallWindow(spec, window, reserve, keep)


def fit_pi_compaction(spec: str, window: int, agent: Path | None = None) -> Path:
    """Write the small-window values for ``provider/model`` into Pi's ``settings.json``.

    A ``compaction.modelOverrides`` entry (Pi 1.6's per-model settings), with pinb's own
    rule for a small window: reserve and keep each a quarter of the window. Other
    settings are kept. Returns the file written.
    """
    fitted = CompactionSettings().fit_window(window)
    path = (agent or agent_dir()) / "settings.json"
    data = _read(path)
    compaction = data.setdefault("compaction", {})
    if not isinstance(compaction, dict):
        raise ValueError(f"{path}: 'compaction' is not an object; fix it by hand first")
    overrides = compaction.setdefault("modelOverrides", {})
    overrides[spec] = {
        "reserveTokens": fitted.reserve_tokens,
        "keepRecentTokens": fitted.keep_recent_tokens,
    }
    _write(path, data)
    return path
