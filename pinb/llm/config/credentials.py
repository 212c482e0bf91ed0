"""API keys: from an explicit argument, Pi's ``<agentDir>/auth.json``, environment variables or models.json."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pinb.core.file.paths import agent_dir
from pinb.llm.errors import InvalidCredentialsError

__all__ = [
    "ENV_API_KEYS",
    "InvalidCredentialsError",
    "Redactor",
    "Secret",
    "auth_json_path",
    "find_api_key",
    "read_auth_json",
    "redact",
    "resolve_config_value",
    "sanitize_key",
]

log = logging.getLogger("pinb.llm")

#: Environment variables holding each built-in provider's key, first one wins (as in Pi).
ENV_API_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
}


class Secret:
    """A string that never shows itself in ``repr``, ``str``, logs or tracebacks.

    Examples
    --------
    >>> s = Secret("sk-live-123")
    >>> s, str(s), s.reveal()
    (Secret('***'), '***', 'sk-live-123')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        """The actual value, for building a request header only."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Any:  # pickling would write the key somewhere
        raise TypeError("Secret values cannot be pickled")


def _variants(value: str) -> set[str]:
    """The forms a key takes in error texts: as is, escaped, encoded, in a header repr."""
    forms = {value, value.strip()}
    for form in list(forms):
        forms.add(repr(form)[1:-1])  # Python escapes: \n, \xe9
        forms.add(json.dumps(form)[1:-1])  # JSON escapes: \n, \u00e9
        forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
        forms.add(form.encode("unicode_escape").decode("ascii"))
        forms.add(repr(form.encode("utf-8", "surrogateescape"))[2:-1])  # b'...' in httpx errors
        forms.add(urllib.parse.quote(form, safe=""))
        forms.add(urllib.parse.quote_plus(form, safe=""))
        forms.add(base64.b64encode(form.encode("utf-8", "surrogateescape")).decode("ascii"))
    return {f for f in forms if len(f) >= 4}


class Redactor:
    """Removes a fixed set of secrets from texts; the forms of each are worked out once.

    Parameters
    ----------
    secrets:
        Keys: every escaped and encoded form (``\\n``, ``\\xe9``, ``%0A``, base64, a
        header's bytes repr) is replaced by ``***``, and so is a long enough start of
        one followed by anything that is not a blank (an error that quotes a key with a
        mangled tail still shows none of it).
    exact:
        Values removed in the same forms but without the start rule: header values and
        user names, whose start may be a common word (``https://``, ``Bearer``).

    Values shorter than 4 characters are ignored (they would match everywhere).

    Examples
    --------
    >>> scrub = Redactor([Secret("sk-live-123456")], exact=["alice:pw12"])
    >>> scrub("key sk-live-123456, sk-live-12… and alice:pw12")
    'key ***, *** and ***'
    """

    __slots__ = ("_forms", "_heads")

    def __init__(
        self, secrets: Iterable[Secret | str | None] = (), exact: Iterable[str | None] = ()
    ):
        forms: set[str] = set()
        heads: set[str] = set()
        for secret in secrets:
            value = secret.reveal() if isinstance(secret, Secret) else secret
            if not value or len(value.strip()) < 4:
                continue
            forms |= _variants(value)
            head = value.strip()[:_HEAD]
            if len(head) == _HEAD:
                heads.add(head)
        for value in exact:
            if value and len(value.strip()) >= 4:
                forms |= _variants(value)
        # Longest first: a secret that holds another is removed whole, not in pieces.
        self._forms = tuple(sorted(forms, key=len, reverse=True))
        self._heads = (
            re.compile("(?:" + "|".join(map(re.escape, sorted(heads))) + r")\S*") if heads else None
        )

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, "***")
        if self._heads is not None:
            text = self._heads.sub("***", text)
        return text

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __repr__(self) -> str:
        return f"Redactor({len(self._forms)} forms)"

    def __reduce__(self) -> Any:  # its forms are the secrets themselves
        raise TypeError("Redactor objects cannot be pickled")


def redact(text: str, secrets: Iterable[Secret | str | None]) -> str:
    """Replace every occurrence of each secret in ``text`` by ``***``.

    Escaped and encoded forms count too (``\\n``, ``\\xe9``, ``%0A``, base64), and so
    does a long enough start of a key followed by anything that is not a blank: an error
    that quotes a key with a mangled tail still shows none of it. (`Redactor` does the
    same for many texts with the work done once; `pinb.llm.config.secrets.redact_secrets` adds
    every secret the user configured.)
    """
    return Redactor(secrets)(text)


#: How much of a key's start identifies it in text whose remainder was escaped or cut.
_HEAD = 8


def sanitize_key(value: str, source: str) -> str:
    """A key as it can go into a header: surrounding blanks and line breaks removed.

    A trailing newline is what ``echo key > file`` or a copied line leaves, so it is
    dropped; a character that no header may hold (non-ASCII, a control character) is
    refused with `InvalidCredentialsError` naming ``source``, before any request.
    """
    key = value.strip()
    if not key:
        raise InvalidCredentialsError(source, "is empty")
    for char in key:
        code = ord(char)
        if code > 0x7E:
            raise InvalidCredentialsError(source, "holds a non-ASCII character")
        if code < 0x20 or code == 0x7F:
            raise InvalidCredentialsError(source, "holds a control character (a line break?)")
    return key


def auth_json_path(env: Mapping[str, str] | None = None) -> Path:
    """``<agentDir>/auth.json``."""
    return agent_dir(None if env is None else dict(env)) / "auth.json"


def read_auth_json(path: Path) -> dict[str, dict[str, Any]]:
    """Read Pi's credential file; a missing or unreadable file gives ``{}`` (with a warning)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc.strerror)
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        # Never echo the content: it holds keys.
        log.warning("%s is not valid JSON; ignoring it", path)
        return {}
    if not isinstance(data, dict):
        log.warning("%s does not hold a JSON object; ignoring it", path)
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _interpolate(value: str, env: Mapping[str, str]) -> str | None:
    """Pi 1.x's template (``resolve-config-value.js``): ``$NAME``, ``${NAME}``, ``$$``, ``$!``.

    An unset variable leaves the whole value unresolved (``None``), as in Pi.
    """
    out: list[str] = []
    i = 0
    while i < len(value):
        dollar = value.find("$", i)
        if dollar < 0:
            out.append(value[i:])
            break
        out.append(value[i:dollar])
        after = value[dollar + 1 : dollar + 2]
        if after in ("$", "!"):
            out.append(after)
            i = dollar + 2
            continue
        if after == "{":
            end = value.find("}", dollar + 2)
            if end < 0:
                out.append("$")
                i = dollar + 1
                continue
            name = value[dollar + 2 : end]
            if _NAME.fullmatch(name):
                if not env.get(name):
                    return None
                out.append(env[name])
            else:
                out.append(value[dollar : end + 1])
            i = end + 1
            continue
        match = _NAME.match(value, dollar + 1)
        if match:
            if not env.get(match.group(0)):
                return None
            out.append(env[match.group(0)])
            i = match.end()
            continue
        out.append("$")
        i = dollar + 1
    return "".join(out)


def resolve_config_value(value: str, env: Mapping[str, str]) -> str | None:
    """Resolve a models.json ``apiKey``/header value as Pi does, minus shell commands.

    Pi 1.x: ``$NAME`` and ``${NAME}`` are replaced by environment variables (an unset one
    leaves the value unresolved), ``$$`` and ``$!`` give a literal ``$`` and ``!``. Pi 0.x:
    a bare value that names a set environment variable is that variable (kept, so older
    files read as before). Otherwise the value is a literal. Values starting with ``!``
    are shell commands in Pi; pinb does not run them (a notebook should not execute
    commands found in a config file), so they resolve to ``None`` with a warning.
    """
    if value.startswith("!"):
        log.warning(
            "models.json value %r is a shell command; pinb does not run those", value[:1] + "..."
        )
        return None
    if "$" in value:
        return _interpolate(value, env) or None
    return env.get(value) or value


def find_api_key(
    provider: str,
    *,
    env_vars: Iterable[str] = (),
    config_value: str | None = None,
    explicit: str | Secret | None = None,
    env: Mapping[str, str] | None = None,
    auth_path: Path | None = None,
) -> Secret | None:
    """Find a provider's key in Pi's order.

    1. ``explicit`` (an ``api_key=`` argument);
    2. an ``{"type": "api_key", "key": ...}`` entry for ``provider`` in ``auth.json``;
    3. ``config_value`` (a models.json ``apiKey``: ``$NAME``, an env-var name or a literal);
    4. the first set variable of ``env_vars``.

    OAuth entries in ``auth.json`` are skipped (pinb does not do Pi's OAuth flows).

    Returns
    -------
    Secret or None
        The key, wrapped so it never prints; surrounding blanks and line breaks removed.

    Raises
    ------
    InvalidCredentialsError
        The key holds a character no HTTP header may carry; the message names the
        variable or file, never the key.
    """
    if explicit:
        raw = explicit.reveal() if isinstance(explicit, Secret) else explicit
        return Secret(sanitize_key(raw, "the api_key argument"))
    environ: Mapping[str, str] = os.environ if env is None else env
    path = auth_path if auth_path is not None else auth_json_path(env)
    entry = read_auth_json(path).get(provider)
    if entry is not None:
        if entry.get("type") == "api_key" and isinstance(entry.get("key"), str) and entry["key"]:
            return Secret(sanitize_key(entry["key"], f"{path.name} ({provider!r})"))
        if entry.get("type") == "oauth":
            log.info("auth.json has OAuth credentials for %r; pinb uses API keys only", provider)
    if config_value:  # before the provider's variables, as in Pi 1.x (docs/models.md)
        resolved = resolve_config_value(config_value, environ)
        if resolved:
            source = (
                config_value
                if environ.get(config_value)
                else f"models.json (apiKey of {provider!r})"
            )
            return Secret(sanitize_key(resolved, source))
    for name in env_vars:
        value = environ.get(name)
        if value:
            return Secret(sanitize_key(value, name))
    return None
