"""Pi's own configuration files, as both engines need them: a ``models.json`` entry that Pi 1.6
lists, Pi's compaction settings for a small window, and why Pi cannot find a model.

pinb writes these files only when asked (``%pi model --save``, ``%pi model --fit-pi``), and
then as Pi writes its settings: under Pi's own lock (``<file>.lock``, proper-lockfile's
convention), reading the file again inside it and changing only what was asked, so a
running Pi or a second pinb loses nothing; the file is replaced whole (a temporary file,
then a rename), the previous version beside it as ``<name>.bak`` when asked
(:func:`pinb.core.file.jsonfile.edit_json`).

Pi 1.6.0 uses a ``models.json`` model only when its provider (or the model) names an
``api`` and an ``apiKey``: a local server that needs no key still needs a placeholder
(``"apiKey": "none"``). Without ``api`` Pi skips the provider (``pi --list-models`` warns
``no "api" specified``) and stops at start-up; without ``apiKey`` it starts, then refuses
every prompt ("No API key found").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pinb.core.context.tokens import CompactionSettings
from pinb.core.file.jsonfile import Edited, edit_json, read_json_object
from pinb.core.file.paths import agent_dir
from pinb.errors import UserFileError

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


def _object(path: Path, parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """``parent[key]``, a JSON object (made when missing); one that is not refuses the change."""
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise UserFileError(f"{path}: {where} is not an object; fix it by hand first", path=path)
    return value


def save_model(
    spec: str,
    base_url: str,
    *,
    window: int,
    max_tokens: int | None = None,
    api: str = "openai-completions",
    api_key: str | None = None,
    agent: Path | None = None,
    backup: bool = False,
) -> Edited:
    """Add (or update) ``provider/model`` in ``<agentDir>/models.json`` so both engines use it.

    The entry carries what Pi 1.6 needs to list it (``api`` and an ``apiKey``: a
    placeholder when the server needs none) and the window both engines compact by. An
    address without a path gets ``/v1``, as pinb reads one (Pi takes it as written).
    The file is changed under Pi's lock as it is at that moment: other providers, models
    and fields (the model's own included) are kept, and two saves at once both land.

    Parameters
    ----------
    backup:
        Keep the file as it was in ``models.json.bak`` (one, replaced each time).

    Returns
    -------
    Edited
        The file, whether it changed, and the backup written.

    Raises
    ------
    ValueError
        ``spec`` is not ``provider/model`` or the window is not positive.
    UserFileError
        The file is not JSON pinb can update (naming line and column), or cannot be
        written (the system's reason), or stayed locked.
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

    def add(data: dict[str, Any]) -> None:
        providers = _object(path, data, "providers", "'providers'")
        entry = _object(path, providers, provider, f"provider {provider!r}")
        entry["baseUrl"] = base_url
        entry.setdefault("api", api)
        if api_key is not None or not entry.get("apiKey"):
            entry["apiKey"] = api_key or PLACEHOLDER_KEY
        models = entry.setdefault("models", [])
        if not isinstance(models, list):
            raise UserFileError(
                f"{path}: the models of provider {provider!r} are not a list; fix it by hand first",
                path=path,
            )
        model = next((m for m in models if isinstance(m, dict) and m.get("id") == model_id), None)
        if model is None:
            model = {"id": model_id}
            models.append(model)
        model["contextWindow"] = window
        model["maxTokens"] = max_tokens or max(256, min(window // 4, 8192))

    return edit_json(path, add, backup=backup)


def models_json_problem(spec: str, agent: Path | None = None) -> str | None:
    """Why Pi 1.6 would not list ``provider/model`` from ``models.json`` (``None``: it would).

    The reasons Pi gives no error for (a missing ``apiKey``) and the one it only warns about
    in ``pi --list-models`` (a missing ``api``), said in one sentence with the fix.
    """
    provider, _, model_id = spec.partition("/")
    path = (agent or agent_dir()) / "models.json"
    try:
        data = read_json_object(path)
    except UserFileError as exc:
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


def fit_pi_compaction(
    spec: str, window: int, agent: Path | None = None, *, backup: bool = False
) -> Edited:
    """Write the small-window values for ``provider/model`` into Pi's ``settings.json``.

    A ``compaction.modelOverrides`` entry (Pi 1.6's per-model settings), with pinb's own
    rule for a small window: reserve and keep each a quarter of the window. The file is
    changed under Pi's own lock as it is at that moment (Pi may be saving a setting):
    other settings, and other fields of the model's entry, are kept. ``backup`` keeps
    the file as it was in ``settings.json.bak``.

    Raises
    ------
    UserFileError
        The file is not JSON pinb can update, cannot be written, or stayed locked.
    """
    fitted = CompactionSettings().fit_window(window)
    path = (agent or agent_dir()) / "settings.json"

    def fit(data: dict[str, Any]) -> None:
        compaction = _object(path, data, "compaction", "'compaction'")
        overrides = _object(path, compaction, "modelOverrides", "'compaction.modelOverrides'")
        entry = _object(path, overrides, spec, f"the override of {spec!r}")
        entry["reserveTokens"] = fitted.reserve_tokens
        entry["keepRecentTokens"] = fitted.keep_recent_tokens

    return edit_json(path, fit, backup=backup)
