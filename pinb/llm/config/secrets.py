"""Every secret the user configured, and the one way to keep them out of text that is shown.

Keys reach pinb, and the user's own Pi, from several places: Pi's ``auth.json``;
``models.json`` (``apiKey`` and header values, each a literal or ``$NAME``/``${NAME}``,
and base URLs); the providers' key variables (``OPENAI_API_KEY`` ... and the others Pi
reads); base URLs whose userinfo holds a password or whose query holds a key
(``*_BASE_URL``, ``OLLAMA_HOST``, the proxy variables). `redact_secrets` removes all of
them, in every escaped and encoded form, from a text before it is shown, logged, raised
or saved, and masks the credentials of any URL in it::

    >>> redact_secrets("401 for http://me:pw12@box/v1?key=k", env={})
    '401 for http://***:***@box/v1?key=***'

What it reads is cached until ``models.json``, ``auth.json`` or the environment change,
so it is cheap enough for every line shown (some ten microseconds for a short one).
``!command`` values are not run (pinb never runs commands from a config file), so what
such a command prints is not known here.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pinb.core.file.paths import agent_dir
from pinb.llm.config.catalog import BUILTIN_PROVIDERS
from pinb.llm.config.credentials import ENV_API_KEYS, Redactor, Secret, resolve_config_value
from pinb.llm.urls import display_url, mask_urls, query_secrets, userinfo_secrets

__all__ = [
    "GUARDED_LOGGERS",
    "PLACEHOLDER_KEYS",
    "configured_redactor",
    "connection_redactor",
    "display_url",
    "guard_logs",
    "redact_secrets",
]

#: Keys that local servers ignore and their docs tell people to write (Pi's own docs use
#: ``"ollama"`` and ``"local"``): not secrets, and words that errors and listings use.
PLACEHOLDER_KEYS = frozenset(
    {
        "ollama",
        "lm-studio",
        "lmstudio",
        "local",
        "none",
        "null",
        "dummy",
        "empty",
        "placeholder",
        "unused",
        "not-needed",
        "no-key",
        "nokey",
        "sk-no-key-required",
    }
)

#: Variables whose value is a credential: Pi reads dozens (``GEMINI_API_KEY``,
#: ``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, ``ANTHROPIC_AUTH_TOKEN`` ...), and people
#: name their own the same way (``MY_KEY``). Paths (``*_TOKEN_FILE``) do not match.
_SECRET_VARIABLE = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|ACCESS_KEY_ID)$", re.IGNORECASE
)
_SECRET_VARIABLES = frozenset({"AWS_BEARER_TOKEN_BEDROCK"})
#: Variables holding a URL that may carry credentials (httpx reads the proxy ones).
_URL_VARIABLES = frozenset(
    {
        "OLLAMA_HOST",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    }
)
#: Header names whose value is a credential: its start alone identifies it too.
_AUTH_HEADER = re.compile(r"auth|key|token|secret|cookie|sign|pass|session|credential", re.I)
#: ``auth.json`` fields holding credentials (``key``, OAuth ``access`` and ``refresh``).
_AUTH_FIELD = re.compile(r"key|token|access|refresh|secret|password", re.I)
#: ``Bearer <token>``, ``Basic <...>``: the credential inside a header value.
_SCHEME_VALUE = re.compile(r"(?i)(?:bearer|basic|token|bot|key|apikey|digest)\s+(\S{4,})")
_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Shortest value of a variable that is a key by its name only (``SOME_TOKEN``).
_GUESSED_LENGTH = 8
#: Values that are never secrets, whatever holds them: flags.
_FLAGS = frozenset({"true", "false", "yes", "on", "off", "null", "none", "undefined"})
#: How deep into a provider's object models.json is searched (models, modelOverrides).
_DEPTH = 8


class _Found:
    """Secrets being gathered: keys (start rule on) and exact values (header values, users)."""

    def __init__(self, env: Mapping[str, str]):
        self.env = env
        self.keys: set[str] = set()
        self.exact: set[str] = set()
        self.not_secret: set[str] = {*PLACEHOLDER_KEYS, *_FLAGS, *BUILTIN_PROVIDERS}

    def key(self, value: str | None) -> None:
        if value and value.strip():
            self.keys.add(value)

    def url(self, url: str) -> None:
        self.exact.update(userinfo_secrets(url))
        self.keys.update(query_secrets(url))

    def config(self, value: str, *, key: bool) -> None:
        """A models.json/auth.json value: a literal, ``$NAME``/``${NAME}`` or ``!command``."""
        if value.startswith("!"):
            return  # a command pinb does not run: what it prints is unknown here
        for braced, bare in _REFERENCE.findall(value.replace("$$", "")):
            self.key(self.env.get(braced or bare))
        if _NAME.fullmatch(value):  # Pi 0.x: a bare name of a set variable
            self.key(self.env.get(value))
        resolved = resolve_config_value(value, self.env)
        if not resolved:
            return
        if key:
            self.key(resolved)
        else:
            self.exact.add(resolved)
        for credential in _SCHEME_VALUE.findall(resolved):
            self.key(credential)

    def headers(self, headers: Mapping[str, Any]) -> None:
        for name, value in headers.items():
            if isinstance(value, str):
                self.config(value, key=bool(_AUTH_HEADER.search(str(name))))

    def redactor(self) -> Redactor:
        def kept(values: set[str]) -> list[str]:
            return [v for v in values if v.strip().lower() not in self.not_secret]

        return Redactor(kept(self.keys), exact=kept(self.exact - self.keys))


def _walk(node: Any, found: _Found, depth: int = 0) -> None:
    """Every ``apiKey``, ``headers`` and ``baseUrl`` of a provider, its models included."""
    if depth > _DEPTH:
        return
    if isinstance(node, dict):
        for name, value in node.items():
            if name == "apiKey" and isinstance(value, str):
                found.config(value, key=True)
            elif name == "headers" and isinstance(value, dict):
                found.headers(value)
            elif name == "baseUrl" and isinstance(value, str):
                found.url(value)
                if "$" in value and not value.startswith("!"):
                    found.url(resolve_config_value(value, found.env) or "")
            else:
                _walk(value, found, depth + 1)
    elif isinstance(node, list):
        for item in node:
            _walk(item, found, depth + 1)


def _read_json(path: Path) -> Any:
    # Quietly: the registry and find_api_key warn about these files; a redaction that
    # warned would do it on every line shown.
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def _gather(folder: Path, env: Mapping[str, str]) -> Redactor:
    found = _Found(env)
    models = _read_json(folder / "models.json")
    providers = models.get("providers") if isinstance(models, dict) else None
    if isinstance(providers, dict):
        found.not_secret.update(str(name).lower() for name in providers)
        for raw in providers.values():
            _walk(raw, found)
    auth = _read_json(folder / "auth.json")
    if isinstance(auth, dict):
        for entry in auth.values():
            if isinstance(entry, dict):
                for field, value in entry.items():
                    if isinstance(value, str) and _AUTH_FIELD.search(str(field)):
                        found.config(value, key=True)
    key_variables = {name for names in ENV_API_KEYS.values() for name in names}
    key_variables.update(name for p in BUILTIN_PROVIDERS.values() for name in p.env_keys)
    for name, value in env.items():
        if name in key_variables or name in _SECRET_VARIABLES:
            found.key(value)
        elif _SECRET_VARIABLE.search(name) and len(value.strip()) >= _GUESSED_LENGTH:
            # Named like a key but read by nobody pinb knows: a short value (a flag,
            # a count) would only blank out ordinary words.
            found.key(value)
        elif name.endswith("_BASE_URL") or name in _URL_VARIABLES:
            found.url(value)
    return found.redactor()


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def _env_key(environ: Mapping[str, str]) -> tuple[Any, ...]:
    raw = getattr(environ, "_data", None) if environ is os.environ else None
    # os.environ keeps the bytes it was given: reading those skips decoding every
    # variable on every call (most of the cost of a call otherwise).
    return tuple(raw.items()) if isinstance(raw, dict) else tuple(environ.items())


class _Cached:
    """The last configuration read: its environment, files and their stats, its redactor."""

    __slots__ = ("env", "files", "redactor", "stats")

    def __init__(
        self,
        env: tuple[Any, ...],
        files: tuple[Path, Path],
        stats: tuple[Any, ...],
        redactor: Redactor,
    ):
        self.env, self.files, self.stats, self.redactor = env, files, stats, redactor


_LOCK = threading.Lock()
#: The last few configurations read, newest first: the kernel's environment and, say, the
#: one a Pi process was started with, each kept without evicting the other.
_RECENT: list[_Cached] = []
_KEEP = 4


def configured_redactor(env: Mapping[str, str] | None = None) -> Redactor:
    """The `Redactor` of every secret the user configured (see the module docstring).

    Built again only when ``<agentDir>/models.json`` or ``auth.json`` change (mtime,
    size, inode) or the environment does; otherwise the cached one is returned.

    Parameters
    ----------
    env:
        The environment to read (default ``os.environ``); it also locates the agent
        directory (``PI_CODING_AGENT_DIR``).
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    env_key = _env_key(environ)
    with _LOCK:
        last = next((c for c in _RECENT if c.env == env_key), None)
    if last is not None:
        files = last.files
    else:
        folder = agent_dir(dict(environ))
        files = (folder / "models.json", folder / "auth.json")
    stats = tuple(_stat(path) for path in files)
    if last is not None and last.stats == stats:
        return last.redactor
    redactor = _gather(files[0].parent, dict(environ))
    with _LOCK:
        _RECENT[:] = [
            _Cached(env_key, files, stats, redactor),
            *(c for c in _RECENT if c.env != env_key),
        ][:_KEEP]
    return redactor


def connection_redactor(
    *,
    api_key: Secret | str | None = None,
    headers: Mapping[str, Secret | str] | None = None,
    base_url: str | None = None,
) -> Redactor:
    """The `Redactor` of one connection's own secrets: its key, header values and URL.

    Header values whose name says credential (``Authorization``, ``x-api-key``,
    ``*-token`` ...) and the token of a ``Bearer``/``Basic`` value count as keys; other
    header values and a URL's user name are removed in their exact forms only.
    """
    found = _Found({})
    found.key(api_key.reveal() if isinstance(api_key, Secret) else api_key)
    found.headers(
        {k: v.reveal() if isinstance(v, Secret) else v for k, v in (headers or {}).items()}
    )
    if base_url:
        found.url(base_url)
    return found.redactor()


def redact_secrets(
    text: str,
    extra: Redactor | Iterable[Secret | str | None] = (),
    *,
    env: Mapping[str, str] | None = None,
    urls: bool = True,
) -> str:
    """``text`` without any secret the user configured, nor any credential in a URL.

    Every key of ``models.json`` (literal, ``$NAME``/``${NAME}`` resolved, header values),
    ``auth.json``, the providers' key variables, and the passwords (with their user
    names) and key-like query values of configured base URLs are replaced by ``***``, in
    every escaped and encoded form (`pinb.llm.config.credentials.Redactor`). With ``urls``, the
    userinfo and key-like query values of any URL left in the text are masked as
    `display_url` does.

    Parameters
    ----------
    text:
        Any text about to be shown, logged, raised or written to a session file.
    extra:
        More secrets (a `Redactor`, or keys): e.g. those of one connection
        (`connection_redactor`), or an ``api_key=`` given in code.
    env:
        The environment to read (default ``os.environ``).
    urls:
        Also mask credentials of URLs that no configuration names.

    Returns
    -------
    str
        The text, with ``***`` in place of each secret.

    Notes
    -----
    Cost: two ``stat`` calls and a comparison of the environment, then one substring
    search per form of each secret; the configuration is read again only when it
    changed.
    """
    if not text:
        return text
    if extra:
        text = (extra if isinstance(extra, Redactor) else Redactor(extra))(text)
    text = configured_redactor(env)(text)
    return mask_urls(text) if urls else text


class _RedactingFilter(logging.Filter):
    """Cleans a log record of secrets before any handler sees it."""

    def __init__(self) -> None:
        super().__init__()
        self._busy = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(self._busy, "on", False):
            return True  # a line logged while reading the configuration: no recursion
        try:
            message = record.getMessage()
        except Exception:  # a record that cannot format is the handler's problem to show
            return True
        self._busy.on = True
        try:
            cleaned = redact_secrets(message)
        finally:
            self._busy.on = False
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


#: The loggers that may carry a URL or a key: httpx logs each request's full URL at INFO
#: (``HTTP Request: POST http://user:pw@host/v1?key=...``), with its userinfo and query.
GUARDED_LOGGERS = ("httpx", "httpcore", "pinb.llm")
_GUARD = _RedactingFilter()


def guard_logs() -> None:
    """Clean every record of the `GUARDED_LOGGERS` with `redact_secrets` (done once).

    A filter on a logger sees the records logged to that logger itself, before its
    handlers and its parents' handlers, so whatever the application's logging setup is,
    those lines never show a key or a URL's credentials.
    """
    for name in GUARDED_LOGGERS:
        logger = logging.getLogger(name)
        if _GUARD not in logger.filters:
            logger.addFilter(_GUARD)
