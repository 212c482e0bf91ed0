"""URLs that may carry credentials: join a path on, show them masked, and list what they hide.

A base URL can hold a password (``http://user:pw@host/v1``) or a key in its query
(``https://host/v1?key=...``, Azure's ``?api-version=`` beside it). Requests need the URL
whole; everything that shows one goes through `display_url`::

    >>> display_url("http://me:hunter22@box:8080/v1?key=abc123&api-version=2024")
    'http://***:***@box:8080/v1?key=***&api-version=2024'
    >>> join_url("https://host/v1?key=abc123", "chat/completions")
    'https://host/v1/chat/completions?key=abc123'
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = [
    "display_url",
    "is_key_param",
    "join_url",
    "mask_urls",
    "query_secrets",
    "split_query",
    "url_secrets",
    "userinfo_secrets",
]

#: Words in a query parameter's name that make its value a credential (``key``,
#: ``api_key``, ``access_token``, ``sig``, ``password`` ...). Masking a harmless value
#: costs nothing; showing a key cannot be taken back.
_KEY_WORDS = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session|jwt", re.I)

_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*://"
#: ``scheme://userinfo@`` anywhere in a text (the userinfo has no ``/``, blank or quote).
_USERINFO_IN_TEXT = re.compile(rf"({_SCHEME})([^\s/?#@'\"<>]*)@")
#: ``?name=value`` / ``&name=value`` anywhere in a text; the value ends at a blank, ``&``,
#: ``#`` or a quote, as it does in a URL quoted in an error message.
_PARAM_IN_TEXT = re.compile(r"([?&;])([^=&#\s'\"<>?;]+)=([^&#\s'\"<>;]*)")


def is_key_param(name: str) -> bool:
    """Whether a query parameter named ``name`` carries a credential.

    >>> [is_key_param(n) for n in ("key", "api_key", "access_token", "api-version")]
    [True, True, True, False]
    """
    return bool(_KEY_WORDS.search(urllib.parse.unquote_plus(name)))


def _mask_userinfo(userinfo: str) -> str:
    return "***:***" if ":" in userinfo else "***"


def _mask_param(match: re.Match[str]) -> str:
    sep, name, value = match.groups()
    return f"{sep}{name}=***" if value and is_key_param(name) else match.group(0)


def mask_urls(text: str) -> str:
    """``text`` with the userinfo and key-like query values of every URL in it masked.

    Only what looks like a URL is touched: ``scheme://user:pw@`` becomes
    ``scheme://***:***@`` and ``?key=abc`` becomes ``?key=***``; ``user@example.com``
    and ``?api-version=2024`` stay as they are.

    >>> mask_urls("404 for http://u:p4ss@h/v1/chat?token=t0k3n&x=1")
    '404 for http://***:***@h/v1/chat?token=***&x=1'
    """
    if "@" in text:
        text = _USERINFO_IN_TEXT.sub(lambda m: f"{m.group(1)}{_mask_userinfo(m.group(2))}@", text)
    if "=" in text:
        text = _PARAM_IN_TEXT.sub(_mask_param, text)
    return text


def display_url(url: str) -> str:
    """A URL as it may be shown: its userinfo and key-like query values replaced by ``***``.

    Everything else is kept as written (host, port, path, other parameters), so the URL
    still says where a server is. A URL without a scheme (``OLLAMA_HOST=me:pw@box``)
    is masked too.

    Parameters
    ----------
    url:
        Any URL, or text that is not one (then only what looks like a URL inside it is
        masked).

    Returns
    -------
    str
        The URL with ``***`` in place of each credential.

    Examples
    --------
    >>> display_url("https://api.example.com/v1")
    'https://api.example.com/v1'
    >>> display_url("me:pw@box:11434")
    '***:***@box:11434'
    """
    if re.search(r"\s", url.strip()):
        return mask_urls(url)
    head, tail = split_query(url)
    scheme, sep, rest = head.partition("://")
    authority, slash, path = (rest if sep else head).partition("/")
    # The last "@" ends the userinfo: a password may hold an unencoded "@".
    userinfo, at, host = authority.rpartition("@")
    if at:
        authority = f"{_mask_userinfo(userinfo)}@{host}"
    prefix = f"{scheme}{sep}" if sep else ""
    return f"{prefix}{authority}{slash}{path}{mask_urls(tail)}"


def split_query(url: str) -> tuple[str, str]:
    """``(url before "?", "?query#fragment" or "")``."""
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    return url[:cut], url[cut:]


def join_url(base: str, path: str) -> str:
    """``base`` with ``path`` appended to its path; its query and fragment stay at the end.

    Plain concatenation would put the path inside a base URL's query
    (``.../v1?key=k/chat/completions``): the server would get neither.
    """
    head, tail = split_query(base)
    return f"{head.rstrip('/')}/{path.lstrip('/')}{tail}"


def userinfo_secrets(url: str) -> list[str]:
    """What the userinfo of a URL hides: its password, and with a password the user name and
    ``user:password`` (what an ``Authorization: Basic`` header encodes); a lone user name
    (``https://TOKEN@host``) is a token. Each as written and percent-decoded. A URL
    without a scheme is read as ``userinfo@host``.

    >>> userinfo_secrets("http://me:p%40ss@h/v1")
    ['p%40ss', 'p@ss', 'me', 'me:p%40ss', 'me:p@ss']
    """
    found: list[str] = []
    head, _tail = split_query(url)
    _, sep, rest = head.partition("://")
    authority = (rest if sep else head).split("/", 1)[0]
    userinfo, at, _host = authority.rpartition("@")
    if not (at and userinfo):
        return found
    user, colon, password = userinfo.partition(":")
    if colon:
        _add(found, password)
        _add(found, user)
        _add(found, userinfo)
        _add(found, f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}")
    else:
        _add(found, user)
    return found


def query_secrets(url: str) -> list[str]:
    """The values of a URL's key-like query parameters (`is_key_param`), as written and
    decoded.

    >>> query_secrets("https://h/v1?api-version=1&key=k%2Fy&sig=")
    ['k%2Fy', 'k/y']
    """
    found: list[str] = []
    _head, tail = split_query(url)
    query = tail[1:].split("#", 1)[0] if tail.startswith("?") else ""
    for pair in re.split(r"[&;]", query):
        name, eq, value = pair.partition("=")
        if eq and value and is_key_param(name):
            _add(found, value)
    return found


def url_secrets(url: str) -> list[str]:
    """Every credential a URL holds: what `display_url` masks (`userinfo_secrets` and
    `query_secrets`).

    >>> url_secrets("http://me:pw@h/v1?key=k3y&api-version=1")
    ['pw', 'me', 'me:pw', 'k3y']
    """
    return [*userinfo_secrets(url), *query_secrets(url)]


def _add(found: list[str], value: str) -> None:
    for form in (value, urllib.parse.unquote(value), urllib.parse.unquote_plus(value)):
        if form and form not in found:
            found.append(form)
