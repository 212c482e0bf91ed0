"""Turn what the model passed a tool into usable values: paths against the cwd, numbers and flags."""

from __future__ import annotations

import math
import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import PinbError

__all__ = [
    "ToolInputError",
    "expand_path",
    "is_cancelled",
    "optional_bool",
    "optional_int",
    "optional_number",
    "optional_str",
    "required_str",
    "resolve_read_path",
    "tool_cwd",
]

# Models copy paths from terminals and screenshots with exotic spaces in them.
_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_NARROW_NO_BREAK_SPACE = "\u202f"


class ToolInputError(PinbError, ValueError):
    """An argument the model gave a tool cannot be used; the message says which and why.

    A ``PinbError`` like every error pinb raises, and a ``ValueError`` still, so code that
    caught it as one goes on catching it. Each tool turns it into an error result the model
    reads (``ToolResult.error``), so the model can call again with the argument fixed.
    """


def tool_cwd(pinned: Path | None, context_cwd: str | os.PathLike[str]) -> Path:
    """The folder a tool works in: its pinned ``cwd`` if any, else the run's."""
    return pinned if pinned is not None else Path(context_cwd)


def expand_path(path: str, cwd: str | os.PathLike[str]) -> Path:
    """Resolve a model-given path against ``cwd`` as Pi does.

    ``~`` and ``~/...`` expand to the home folder; absolute paths stay as they are; a
    leading ``@`` (the way users mention files in prompts) is dropped unless a file by
    that literal name exists; unusual Unicode spaces become plain spaces. The result is
    normalized lexically (``a/../b`` is ``b``) without resolving symlinks.

    Parameters
    ----------
    path:
        The path as the model wrote it.
    cwd:
        The folder relative paths start from.

    Returns
    -------
    Path
        An absolute path.

    Examples
    --------
    >>> str(expand_path("src/../README.md", "/repo"))
    '/repo/README.md'
    >>> str(expand_path("/etc/hosts", "/repo"))
    '/etc/hosts'
    """
    base = os.fspath(cwd)
    if path.startswith("@") and not os.path.lexists(os.path.join(base, path)):
        path = path[1:]
    text = _UNICODE_SPACES.sub(" ", path)
    if text == "~":
        text = os.path.expanduser("~")
    elif text.startswith("~/"):
        text = os.path.expanduser("~") + text[1:]
    return Path(os.path.normpath(os.path.join(base, text)))


def resolve_read_path(path: str, cwd: str | os.PathLike[str]) -> Path:
    """`expand_path`, then the spellings macOS uses in file names when that path is missing.

    Screenshots are named with a narrow no-break space before ``AM``/``PM``, decomposed
    (NFD) accents and a curly apostrophe; a model types plain characters.
    """
    expanded = expand_path(path, cwd)
    if expanded.exists():
        return expanded
    text = str(expanded)
    screenshot = re.sub(r" (AM|PM)\.", _NARROW_NO_BREAK_SPACE + r"\1.", text)
    nfd = unicodedata.normalize("NFD", text)
    for candidate in (screenshot, nfd, text.replace("'", "\u2019"), nfd.replace("'", "\u2019")):
        if candidate != text and os.path.exists(candidate):
            return Path(candidate)
    return expanded


def is_cancelled(cancel: Any) -> bool:
    """Whether a cancel token (or None) has been cancelled."""
    return bool(cancel is not None and getattr(cancel, "cancelled", False))


# ---------------------------------------------------------------------------------------
# Arguments. Models send ``null`` for optional values and numbers as strings now and then;
# both are accepted, anything else is a clear error.
# ---------------------------------------------------------------------------------------


def required_str(arguments: Mapping[str, Any], key: str) -> str:
    """The string argument ``key``; raises `ToolInputError` when missing or not a string."""
    value = arguments.get(key)
    if value is None:
        raise ToolInputError(f"Missing required argument '{key}'.")
    if not isinstance(value, str):
        raise ToolInputError(f"Argument '{key}' must be a string, got {_kind(value)}.")
    return value


def optional_str(arguments: Mapping[str, Any], key: str) -> str | None:
    """The string argument ``key``, or None when it is absent, null or empty."""
    value = arguments.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolInputError(f"Argument '{key}' must be a string, got {_kind(value)}.")
    return value


def optional_number(arguments: Mapping[str, Any], key: str) -> float | None:
    """The numeric argument ``key`` (a number or a numeric string), or None when absent."""
    value = arguments.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ToolInputError(f"Argument '{key}' must be a number, got {_kind(value)}.")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ToolInputError(f"Argument '{key}' must be a number, got {value!r}.") from None
    else:
        raise ToolInputError(f"Argument '{key}' must be a number, got {_kind(value)}.")
    if not math.isfinite(number):
        raise ToolInputError(f"Argument '{key}' must be a finite number, got {value!r}.")
    return number


def optional_int(
    arguments: Mapping[str, Any], key: str, *, minimum: int | None = None
) -> int | None:
    """The whole-number argument ``key`` (fractions are cut), or None when absent.

    Raises `ToolInputError` when it is below ``minimum``.
    """
    number = optional_number(arguments, key)
    if number is None:
        return None
    result = int(number)
    if minimum is not None and result < minimum:
        raise ToolInputError(f"Argument '{key}' must be at least {minimum}, got {result}.")
    return result


def optional_bool(arguments: Mapping[str, Any], key: str, default: bool = False) -> bool:
    """The boolean argument ``key`` (``true``/``false``, also as strings), else ``default``."""
    value = arguments.get(key)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
        return value.strip().lower() == "true"
    raise ToolInputError(f"Argument '{key}' must be true or false, got {value!r}.")


def _kind(value: Any) -> str:
    names = {
        dict: "an object",
        list: "an array",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }
    return names.get(type(value), type(value).__name__)
