"""JavaScript-compatible JSON, string lengths and date parsing, so pinb reads and writes as Pi does.

Pi is written in TypeScript: it measures strings in UTF-16 code units, writes JSON with
``JSON.stringify`` and parses dates with ``Date.parse``. Python differs from each in small
ways that change token estimates, truncation points, key order and synthesized timestamps;
this module closes those gaps (spec §2.4, §2.6, §3.8, §6.1, §7.7).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from .jsdate import parse_js_date

__all__ = [
    "JS_WHITESPACE",
    "MISSING",
    "dumps",
    "js_date_ms",
    "js_key_order",
    "js_number",
    "js_string",
    "js_to_number",
    "js_trim",
    "js_truthy",
    "loads",
    "loads_line",
    "parse_js_date",
    "utf16_len",
    "utf16_truncate",
]


class _Missing:
    """JavaScript's ``undefined``: a key that is absent (distinct from ``null``)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


#: Characters removed by JavaScript's ``String.prototype.trim``.
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_MAX_SAFE_INTEGER = 2**53


def js_trim(text: str) -> str:
    """Trim like JavaScript's ``String.prototype.trim`` (drops a BOM, keeps U+0085)."""
    return text.strip(JS_WHITESPACE)


def _reject_constant(name: str) -> Any:
    # JSON.parse rejects NaN / Infinity; Python's json accepts them by default.
    raise ValueError(f"invalid JSON literal {name}")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def loads(text: str) -> Any:
    """Parse one JSON text as ``JSON.parse`` would (no ``NaN``/``Infinity`` literals).

    Python's parser refuses two things ``JSON.parse`` reads: nesting deeper than its
    recursion limit and integers of more than 4,300 digits. Such a text goes through
    :func:`_loads_exact`, an iterative parser with JavaScript's number rules, so nothing
    Pi reads is refused here.
    """
    try:
        return _decoder.decode(text)
    except RecursionError:
        return _loads_exact(text)
    except ValueError as exc:
        try:
            return _loads_exact(text)
        except ValueError:
            raise exc from None


_fast_loads: Callable[[bytes | memoryview], Any] | None
try:  # An optional, much faster parser; every line it refuses goes to the exact one.
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson is in the notebook extra
    _fast_loads = None


def loads_line(line: bytes | memoryview) -> Any:
    """Parse one line of a session file (UTF-8 bytes, or a view of them) as ``JSON.parse``
    would.

    The one entry point for session lines. With orjson installed it parses first; it
    refuses exactly the lines where it would differ from ``JSON.parse`` — lone
    surrogates, ``1e400``, invalid UTF-8, nesting deeper than 1,024 — and those go
    through :func:`loads`, which reads any depth and any integer. (Integers beyond 64
    bits come back as doubles, which is what JavaScript makes of them too.)
    """
    if _fast_loads is not None:
        try:
            return _fast_loads(line)
        except ValueError:
            pass
    return loads(bytes(line).decode("utf-8", errors="replace"))


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_LITERALS: Final = (("true", True), ("false", False), ("null", None))
#: Python's limit on the digits of an integer it converts from text (``sys.int_info``).
_INT_DIGITS = 4300
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _number(text: str, pos: int) -> tuple[float | int, int]:
    match = _JSON_NUMBER.match(text, pos)
    if match is None:
        raise json.JSONDecodeError("Expecting value", text, pos)
    literal = match.group()
    if match.group(1) is None and match.group(2) is None and len(literal) <= _INT_DIGITS:
        return int(literal), match.end()
    # A longer integer is beyond any double: Infinity, as in JavaScript (float reads any length).
    return float(literal), match.end()


def _key(text: str, pos: int) -> tuple[str, int]:
    """An object key and the colon after it; ``pos`` is past any whitespace."""
    if text[pos : pos + 1] != '"':
        raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
    key, pos = _scanstring(text, pos + 1, True)
    pos = _JSON_SPACE.match(text, pos).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] != ":":
        raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
    return key, _JSON_SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]


def _loads_exact(text: str) -> Any:
    """``JSON.parse(text)`` without recursion: any nesting depth, any integer length.

    Integers of more than 4,300 digits become ``inf`` (JavaScript's ``Infinity``, which
    ``JSON.stringify`` writes as ``null``); everything else is read as Python's parser
    reads it. Raises :class:`json.JSONDecodeError` (a ValueError) for invalid JSON.
    """
    space = _JSON_SPACE.match
    end = len(text)
    containers: list[Any] = []  # the open arrays and objects, innermost last
    keys: list[str] = []  # the pending key of each open object, innermost last
    pos = space(text, 0).end()  # type: ignore[union-attr]
    while True:
        char = text[pos : pos + 1]
        value: Any
        if char == "{":
            pos = space(text, pos + 1).end()  # type: ignore[union-attr]
            if text[pos : pos + 1] == "}":
                value, pos = {}, pos + 1
            else:
                key, pos = _key(text, pos)
                containers.append({})
                keys.append(key)
                continue
        elif char == "[":
            pos = space(text, pos + 1).end()  # type: ignore[union-attr]
            if text[pos : pos + 1] == "]":
                value, pos = [], pos + 1
            else:
                containers.append([])
                continue
        elif char == '"':
            value, pos = _scanstring(text, pos + 1, True)
        elif char in ("t", "f", "n"):
            for literal, constant in _LITERALS:
                if text.startswith(literal, pos):
                    value, pos = constant, pos + len(literal)
                    break
            else:
                raise json.JSONDecodeError("Expecting value", text, pos)
        else:
            value, pos = _number(text, pos)
        # Put the value in its container; close every container that ends here.
        while True:
            pos = space(text, pos).end()  # type: ignore[union-attr]
            if not containers:
                if pos != end:
                    raise json.JSONDecodeError("Extra data", text, pos)
                return value
            top = containers[-1]
            if top.__class__ is list:
                top.append(value)
                closer = "]"
            else:
                top[keys[-1]] = value
                closer = "}"
            char = text[pos : pos + 1]
            if char == ",":
                pos = space(text, pos + 1).end()  # type: ignore[union-attr]
                if closer == "}":
                    keys[-1], pos = _key(text, pos)
                break
            if char != closer:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos += 1
            value = containers.pop()
            if closer == "}":
                keys.pop()


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units: JavaScript's ``string.length``."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_truncate(text: str, units: int) -> str:
    """The first ``units`` UTF-16 code units of ``text`` (``text.slice(0, units)``).

    Like JavaScript, this may cut an astral character in half and leave a lone high
    surrogate at the end.
    """
    if text.isascii() or len(text) * 2 <= units:
        return text[:units]
    raw = text.encode("utf-16-le", "surrogatepass")[: units * 2]
    return raw.decode("utf-16-le", "surrogatepass")


# ---------------------------------------------------------------------------------------
# JSON.stringify
# ---------------------------------------------------------------------------------------


def js_number(value: float | int) -> str:
    """Format a number as JavaScript's ``Number.prototype.toString`` (and JSON) does.

    >>> js_number(1.0), js_number(1e-7), js_number(1e21), js_number(0.5)
    ('1', '1e-7', '1e+21', '0.5')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -_MAX_SAFE_INTEGER < value < _MAX_SAFE_INTEGER:
            return str(value)
        value = float(value)
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < _MAX_SAFE_INTEGER:
        return str(int(value))
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    # value = 0.d1d2...dk x 10^n
    k = len(digits)
    n = len("".join(map(str, digit_tuple))) + exponent
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX.fullmatch(key) is not None and int(key) < 2**32 - 1


def js_key_order(obj: dict[str, Any]) -> list[str]:
    """Keys in the order a JavaScript object enumerates them: array indices first."""
    keys = list(obj)
    indices = [k for k in keys if _is_array_index(k)]
    if not indices:
        return keys
    indices.sort(key=int)
    return indices + [k for k in keys if not _is_array_index(k)]


def _needs_js_care(obj: Any) -> bool:
    """True when ``json.dumps`` would not give ``JSON.stringify``'s output for ``obj``."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str) or (key[:1].isdigit() and _is_array_index(key)):
                    return True
                stack.append(value)
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, float):
            if item != item or item in (math.inf, -math.inf) or item.is_integer():
                return True
            magnitude = abs(item)
            if magnitude < 1e-4 or magnitude >= 1e16:
                return True
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -_MAX_SAFE_INTEGER < item < _MAX_SAFE_INTEGER:
                return True
    return False


_escape = json.encoder.encode_basestring
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape_js(text: str) -> str:
    quoted: str = _escape(text)
    # JSON.stringify (ES2019 well-formed) escapes lone surrogates; Python would write them raw.
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _scalar(obj: Any) -> str:
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, str):
        return _escape_js(obj)
    if isinstance(obj, int | float):
        return js_number(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _encode(obj: Any, out: list[str]) -> None:
    """Append ``JSON.stringify(obj)`` to ``out``, without recursion (any nesting depth)."""
    # Each frame: the items still to write (key or None, value), in reverse order.
    frames: list[tuple[list[tuple[str | None, Any]], str, bool]] = []
    value: Any = obj
    key: str | None = None
    while True:
        if key is not None:
            out.append(_escape_js(key))
            out.append(":")
        if isinstance(value, dict):
            # JSON.stringify leaves out keys whose value is undefined (MISSING).
            items = {str(k): v for k, v in value.items() if v is not MISSING}
            pending: list[tuple[str | None, Any]] = [(k, items[k]) for k in js_key_order(items)]
            out.append("{")
            frames.append((pending[::-1], "}", True))
        elif isinstance(value, list | tuple):
            out.append("[")
            frames.append(
                ([(None, None if item is MISSING else item) for item in reversed(value)], "]", True)
            )
        else:
            out.append(_scalar(value))
        while frames:
            pending, closer, first = frames[-1]
            if pending:
                key, value = pending.pop()
                if not first:
                    out.append(",")
                frames[-1] = (pending, closer, False)
                break
            frames.pop()
            out.append(closer)
        else:
            return


def dumps(obj: Any) -> str:
    """Serialize ``obj`` exactly as ``JSON.stringify(obj)`` would.

    Compact separators, raw non-ASCII, lone surrogates escaped, JavaScript number
    formatting and JavaScript object key order (array-index keys first).
    """
    if not _needs_js_care(obj):
        try:
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        except (RecursionError, TypeError):  # too deep for Python's stack, or an undefined
            text = ""
        if text and (text.isascii() or _LONE_SURROGATE.search(text) is None):
            return text
    out: list[str] = []
    _encode(obj, out)
    return "".join(out)


# ---------------------------------------------------------------------------------------
# Date.parse
# ---------------------------------------------------------------------------------------

#: ``new Date(n)`` keeps numbers within ±8.64e15 ms (TimeClip); strings go through V8's
#: parser in ``jsdate``.
_MAX_TIME_MS = 8.64e15


def js_date_ms(value: object) -> int | None:
    """``new Date(value).getTime()`` for a JSON value, ``None`` where JavaScript gives NaN.

    Strings go through ``Date.parse``; ``null`` is 0, booleans 0/1 and numbers themselves
    (time-clipped); objects and arrays are NaN.
    """
    if isinstance(value, str):
        return parse_js_date(value)
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        if math.isnan(value) or abs(value) > _MAX_TIME_MS:
            return None
        return int(value)  # TimeClip truncates toward zero
    if isinstance(value, list) and len(value) <= 1:
        # Arrays convert through their string form: [] is "" (NaN), [x] is String(x).
        return parse_js_date(str(value[0])) if value and isinstance(value[0], str) else None
    return None


_JS_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_JS_RADIX = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")


def js_to_number(value: object) -> float:
    """JavaScript's ``Number(value)`` (``ToNumber``) for a JSON value; NaN where JS gives it."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return js_to_number(js_string(value)) if len(value) <= 1 else math.nan
    if not isinstance(value, str):
        return math.nan  # undefined, an object
    text = js_trim(value)
    if not text:
        return 0.0
    if text in ("Infinity", "+Infinity", "-Infinity"):
        return -math.inf if text[0] == "-" else math.inf
    if _JS_DECIMAL.fullmatch(text):
        return float(text)
    match = _JS_RADIX.fullmatch(text)
    if match:
        base = {"x": 16, "o": 8, "b": 2}[match.group(1).lower()]
        try:
            return float(int(match.group(2), base))
        except ValueError:
            return math.nan
    return math.nan


def js_truthy(value: object) -> bool:
    """JavaScript truthiness of a JSON value (``[]`` and ``{}`` are truthy)."""
    if value is None or value is False or value is MISSING:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def js_string(value: object) -> str:
    """``String(value)`` for JSON values, as used when Pi concatenates text."""
    if isinstance(value, str):
        return value
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        # Number.prototype.toString (JSON alone writes these as null).
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, list):
        return _js_join(value)
    return "[object Object]"


def _js_join(value: list[Any]) -> str:
    """``String(array)``: ``array.join(",")`` at every level, without recursion."""
    out: list[str] = []
    stack: list[tuple[list[Any], int]] = [(value, 0)]
    while stack:
        items, position = stack.pop()
        if position >= len(items):
            continue
        if position:
            out.append(",")
        stack.append((items, position + 1))
        item = items[position]
        if isinstance(item, list):
            stack.append((item, 0))
        elif item is not None:
            out.append(js_string(item))
    return "".join(out)
