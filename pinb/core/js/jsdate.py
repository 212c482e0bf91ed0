"""``Date.parse`` exactly as V8 (Node 22) reads strings.

V8 reads a date string in two stages over one stream of tokens (digit runs, the symbols
``: - + . )``, words, whitespace and everything else). The first stage is the ES5 ISO
parser: ``[±YY]YYYY[-MM[-DD]][THH:mm[:ss[.f…]][Z|±HH:mm|±HHmm]]``. When it reads the
whole string a date-only form is UTC and a date-time without an offset is local time.
When it stops early, the token it stopped at and whatever it had read go on to the
"legacy" parser, which is a small state machine rather than a grammar.

Surprises of V8's rules, all reproduced here:

* The ISO stage hands over mid-way, keeping what it read: ``2025-3-1`` is year 2025 from
  the ISO stage and ``3``, ``1`` read by the legacy one, so it is local midnight, not UTC.
  ``2025-`` alone is local 1 January. ``-000000-01-01`` drops the six zeros (they were
  read before the sign was refused) and means 1 January 2001.
* Once ``T`` is read the ISO stage cannot hand over, so ``2025-03-01T10:00:00.000 Z``
  and ``…GMT`` are NaN while ``2025-03-01 10:00:00 GMT`` is fine. ``T`` and ``Z`` are
  matched without regard to case.
* Words are runs of characters at or above ``A`` other than JavaScript's white space, so
  ``[``, ``_``, ``~``, every non-ASCII letter and the line separators U+2028/U+2029 are
  letters while U+00A0 and U+3000 separate words. Only month names (any word whose first
  three letters name one: ``Marchx``), ``am pm ut utc gmt z``, ``t`` and the US zones
  ``est edt cst cdt mst mdt pst pdt`` mean something; other words are ignored before the
  first number and make the string NaN after it. A NUL character ends the string.
* A digit run's value skips its leading zeros and keeps nine digits after them, while its
  length counts every digit: ``0000000012025`` is the year 12025, and a fraction longer
  than nine digits gives its first three significant ones (``.0001239999999999`` is 123
  ms). A number becomes a time part when followed by ``:`` or ``.`` or when the time
  expects it, a zone minute when a ``±hh:`` offset expects it, else one of at most three
  date parts. Date parts are year-month-day when the first is not a possible day (1–31),
  else month-day-year; with a month name they are day-year or year-day. Missing parts
  default to 1, so ``Mar 1`` and ``3/1`` are in 2001. Outside the ISO stage years 0–49
  mean 2000–2049 and 50–99 mean 1950–1999.
* A sign starts an offset only after a time or a UTC zone name: ``+h``/``+hh`` are hours,
  ``+hmm``/``+hhmm`` hours and minutes, ``+n:`` hours with minutes from a later number.
  The offset in seconds is computed in unsigned 32-bit arithmetic (hours are not range
  checked) and refused above 2**31 - 1, so ``GMT+1193047:`` is an offset of 1904 s.
* Days 1–31 are accepted in every month and roll over (``2025-02-30`` is 2 March);
  hour 24 is accepted when the rest of the time is zero; ``12 am`` is midnight.
* Local times become UTC with the offset in force before a transition: a time skipped by
  a spring-forward change is read with the winter offset and a repeated one is its first
  occurrence. They must lie within 10 days beyond the ±8.64e15 ms range before
  conversion and, as every result, within that range after it.
"""

from __future__ import annotations

import re
import time
from typing import Final

__all__ = ["parse_js_date"]

_MAX_TIME_MS: Final = 8_640_000_000_000_000
_MAX_LOCAL_MS: Final = _MAX_TIME_MS + 864_000_000
_MS_PER_DAY: Final = 86_400_000
_NONE: Final = 2**31 - 1
_SMI_MAX: Final = 2**31 - 1

#: ``toISOString``'s exact form, which is every timestamp Pi writes.
_CANONICAL = re.compile(r"(\d{4}-\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z", re.ASCII)
#: The first millisecond of each ``YYYY-MM`` the fast path has met.
_MONTH_STARTS: dict[str, int] = {}
#: The ISO forms V8's first stage reads to the end (ranges are checked after matching).
_ISO = re.compile(
    r"(?:([+-])(\d{6})|(\d{4}))(?:-(\d\d)(?:-(\d\d))?)?"
    r"(?:[Tt](\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?"
    r"(?:([Zz])|([+-])(?:(\d\d)(\d\d)|(\d\d):(\d\d)))?)?",
    re.ASCII,
)

_END, _NUMBER, _SYMBOL, _SPACE, _OTHER = range(5)
_WORD, _MONTH, _ZONE, _T, _AM_PM = range(5, 10)
Token = tuple[int, int, int]
_END_TOKEN: Final[Token] = (_END, 0, 0)
_INVALID_TOKEN: Final[Token] = (-1, 0, 0)

#: JavaScript's white space above ``@``, which V8 keeps out of words.
_WIDE_SPACE = "\xa0\ufeff\u1680\u2000-\u200a\u202f\u205f\u3000"
_TOKEN = re.compile(
    rf"([0-9]+)|([-+:.)])|([^\x00-@{_WIDE_SPACE}]+)|([\t\n\v\f\r {_WIDE_SPACE}]+)|(\()|.",
    re.DOTALL,
)
_PAREN = re.compile(r"[()]")
_MONTHS: Final = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_SHORT_WORDS: Final[dict[str, tuple[int, int]]] = {
    "am": (_AM_PM, 0),
    "pm": (_AM_PM, 12),
    "ut": (_ZONE, 0),
    "utc": (_ZONE, 0),
    "z": (_ZONE, 0),
    "gmt": (_ZONE, 0),
    "cdt": (_ZONE, -5),
    "cst": (_ZONE, -6),
    "edt": (_ZONE, -4),
    "est": (_ZONE, -5),
    "mdt": (_ZONE, -6),
    "mst": (_ZONE, -7),
    "pdt": (_ZONE, -7),
    "pst": (_ZONE, -8),
    "t": (_T, 0),
}
_PLUS, _MINUS, _COLON, _DOT, _CLOSE = (ord(c) for c in "+-:.)")
_POWERS: Final = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date; ``day`` may overflow the month."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468 + (day - 1)


def _utc_offset_ms(utc_ms: int) -> int:
    """Offset of local time from UTC (ms) at an instant, from the C library's tz database
    (Node reads ICU's copy: the two differ only where their versions' histories do)."""
    try:
        return time.localtime(utc_ms // 1000).tm_gmtoff * 1000
    except (OverflowError, OSError, ValueError):
        return 0


def _local_offset_ms(local_ms: int) -> int:
    """Offset to subtract from a local wall time (ms, read as if UTC) to reach UTC.

    Offsets lie within ±15 h, so only a transition within 36 h can matter; for one the
    offset before it applies to the skipped or repeated wall times, as ICU's "former"
    option (what V8 asks for) gives.
    """
    before = _utc_offset_ms(local_ms - 129_600_000)
    after = _utc_offset_ms(local_ms + 129_600_000)
    if before == after:
        return before
    if after > before:
        return after if _utc_offset_ms(local_ms - after) == after else before
    return before if _utc_offset_ms(local_ms - before) == before else after


def _finish(
    year: int,
    month: int,
    day: int,
    hour: int,
    minute: int,
    second: int,
    millis: int,
    offset_ms: int | None,
) -> int | None:
    ms = (
        _days_from_civil(year, month, day) * _MS_PER_DAY
        + ((hour * 60 + minute) * 60 + second) * 1000
        + millis
    )
    if offset_ms is None:
        if abs(ms) > _MAX_LOCAL_MS:
            return None
        ms -= _local_offset_ms(ms)
    else:
        ms -= offset_ms
    return ms if abs(ms) <= _MAX_TIME_MS else None


def _parse_iso(match: re.Match[str]) -> tuple[bool, int | None]:
    """``(True, value)`` for a string the ISO pattern matched, or ``(False, None)`` when
    a field is out of range and the token parser must decide."""
    (sign, wide, year4, month, day, hour, minute, second, fraction, z) = match.groups()[:10]
    if wide is not None:
        if sign == "-" and wide == "000000":
            return False, None
        year = -int(wide) if sign == "-" else int(wide)
    else:
        year = int(year4)
    mo = int(month) if month else 1
    d = int(day) if day else 1
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return False, None
    if hour is None:
        return True, _finish(year, mo, d, 0, 0, 0, 0, 0)
    h, mi, s = int(hour), int(minute), int(second or 0)
    ms = _read_millis(_number(fraction)) if fraction else 0
    if h > 24 or mi > 59 or s > 59 or (h == 24 and (mi or s or (fraction and fraction.strip("0")))):
        return True, None
    offset: int | None = 0 if z else None
    zone_sign, hh, mm, hh2, mm2 = match.groups()[10:]
    if zone_sign is not None:
        zh, zm = int(hh or hh2), int(mm or mm2)
        if zh > 23 or zm > 59:
            return True, None
        offset = (zh * 60 + zm) * 60_000 * (-1 if zone_sign == "-" else 1)
    return True, _finish(year, mo, d, h, mi, s, ms, offset)


def _number(digits: str) -> Token:
    """A digit run as V8 reads it: leading zeros skipped, then nine digits at most."""
    return (_NUMBER, int(digits.lstrip("0")[:9] or 0), len(digits))


def _tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos, size = 0, len(text)
    while pos < size:
        match = _TOKEN.match(text, pos)
        assert match is not None
        digits, symbol, word, space, paren = match.groups()
        end = match.end()
        if digits is not None:
            tokens.append(_number(digits))
        elif symbol is not None:
            tokens.append((_SYMBOL, ord(symbol), 1))
        elif word is not None:
            low = "".join(chr(ord(c) | 0x20) for c in word[:3])
            if low in _MONTHS:
                tokens.append((_MONTH, _MONTHS[low], len(word)))
            elif len(word) <= 3 and low in _SHORT_WORDS:
                kind, value = _SHORT_WORDS[low]
                tokens.append((kind, value, len(word)))
            else:
                tokens.append((_WORD, 0, len(word)))
        elif space is not None:
            tokens.append((_SPACE, 0, len(space)))
        elif paren is not None:
            depth = 1
            while depth > 0:
                found = _PAREN.search(text, end)
                if found is None:
                    end = size
                    break
                end = found.end()
                depth += 1 if found.group() == "(" else -1
            tokens.append((_OTHER, 0, 1))
        else:
            tokens.append((_OTHER, 0, 1))
        pos = end
    tokens.append(_END_TOKEN)
    return tokens


class _Scanner:
    __slots__ = ("index", "tokens")

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.index = 0

    def peek(self) -> Token:
        return self.tokens[self.index]

    def next(self) -> Token:
        token = self.tokens[self.index]
        if token[0] != _END:
            self.index += 1
        return token

    def skip(self, symbol: int) -> bool:
        token = self.tokens[self.index]
        if token[0] == _SYMBOL and token[1] == symbol:
            self.index += 1
            return True
        return False


def _fixed(token: Token, length: int) -> bool:
    return token[0] == _NUMBER and token[2] == length


def _is_sign(token: Token) -> bool:
    return token[0] == _SYMBOL and token[1] in (_PLUS, _MINUS)


def _is_z(token: Token) -> bool:
    return token[0] == _ZONE and token[2] == 1


def _read_millis(token: Token) -> int:
    value, length = token[1], min(token[2], 9)
    return value * _POWERS[3 - length] if length < 3 else value // _POWERS[length - 3]


class _State:
    """What the two stages have read: date parts, time parts and the zone."""

    __slots__ = (
        "day",
        "hour_offset",
        "iso",
        "month_name",
        "time",
        "zone_hour",
        "zone_minute",
        "zone_sign",
    )

    def __init__(self) -> None:
        self.day: list[int] = []
        self.month_name = _NONE
        self.iso = False
        self.time: list[int] = []
        self.hour_offset = _NONE
        self.zone_sign = _NONE
        self.zone_hour = _NONE
        self.zone_minute = _NONE

    def set_zone(self, hours: int) -> None:
        self.zone_sign = -1 if hours < 0 else 1
        self.zone_hour = abs(hours)
        self.zone_minute = 0

    def zone_expects(self, n: int) -> bool:
        return self.zone_hour != _NONE and self.zone_minute == _NONE and 0 <= n <= 59

    def time_expects(self, n: int) -> bool:
        parts = len(self.time)
        return (parts in (1, 2) and 0 <= n <= 59) or (parts == 3 and 0 <= n <= 999)

    def add_time(self, n: int) -> bool:
        if len(self.time) >= 4:
            return False
        self.time.append(n)
        return True

    def add_final_time(self, n: int) -> None:
        if self.add_time(n):
            self.time.extend([0] * (4 - len(self.time)))

    def result(self) -> int | None:
        if not self.day:
            return None
        parts = self.day + [1] * (3 - len(self.day))
        if self.month_name == _NONE:
            if self.iso or not 1 <= parts[0] <= 31:
                year, month, day = parts
            else:
                month, day, year = parts
        else:
            month = self.month_name
            if not 1 <= parts[0] <= 31:
                year, day = parts[0], parts[1]
            else:
                day, year = parts[0], parts[1]
        if not self.iso:
            if 0 <= year <= 49:
                year += 2000
            elif 50 <= year <= 99:
                year += 1900
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return None
        hour, minute, second, millis = self.time + [0] * (4 - len(self.time))
        if self.hour_offset != _NONE:
            if not 0 <= hour <= 12:
                return None
            hour = hour % 12 + self.hour_offset
        if not (hour <= 23 and minute <= 59 and second <= 59 and millis <= 999) and (
            hour != 24 or minute or second or millis
        ):
            return None
        offset: int | None = None
        if self.zone_sign != _NONE:
            hours = 0 if self.zone_hour == _NONE else self.zone_hour
            minutes = 0 if self.zone_minute == _NONE else self.zone_minute
            seconds = (hours * 3600 + minutes * 60) & 0xFFFFFFFF
            if seconds > _SMI_MAX:
                return None
            offset = seconds * 1000 * self.zone_sign
        return _finish(year, month, day, hour, minute, second, millis, offset)


def _iso_stage(scan: _Scanner, state: _State) -> Token:
    """V8's ES5 stage: ``_END_TOKEN`` when it read everything, ``_INVALID_TOKEN`` when
    the string is NaN, else the token the legacy stage starts from."""
    if _is_sign(scan.peek()):
        sign = scan.next()
        if not _fixed(scan.peek(), 6):
            return sign
        year = scan.next()[1]
        if sign[1] == _MINUS and year == 0:
            return sign
        state.day.append(-year if sign[1] == _MINUS else year)
    elif _fixed(scan.peek(), 4):
        state.day.append(scan.next()[1])
    else:
        return scan.next()
    if scan.skip(_MINUS):
        if not (_fixed(scan.peek(), 2) and 1 <= scan.peek()[1] <= 12):
            return scan.next()
        state.day.append(scan.next()[1])
        if scan.skip(_MINUS):
            if not (_fixed(scan.peek(), 2) and 1 <= scan.peek()[1] <= 31):
                return scan.next()
            state.day.append(scan.next()[1])
    if scan.peek()[0] != _T:
        if scan.peek()[0] != _END:
            return scan.next()
    else:
        scan.next()
        if not (_fixed(scan.peek(), 2) and scan.peek()[1] <= 24):
            return _INVALID_TOKEN
        hour_24 = scan.peek()[1] == 24
        state.time.append(scan.next()[1])
        if not scan.skip(_COLON):
            return _INVALID_TOKEN
        if not (_fixed(scan.peek(), 2) and scan.peek()[1] <= (0 if hour_24 else 59)):
            return _INVALID_TOKEN
        state.time.append(scan.next()[1])
        if scan.skip(_COLON):
            if not (_fixed(scan.peek(), 2) and scan.peek()[1] <= (0 if hour_24 else 59)):
                return _INVALID_TOKEN
            state.time.append(scan.next()[1])
            if scan.skip(_DOT):
                if scan.peek()[0] != _NUMBER or (hour_24 and scan.peek()[1] > 0):
                    return _INVALID_TOKEN
                state.time.append(_read_millis(scan.next()))
        if _is_z(scan.peek()):
            scan.next()
            state.set_zone(0)
        elif _is_sign(scan.peek()):
            state.zone_sign = -1 if scan.next()[1] == _MINUS else 1
            if _fixed(scan.peek(), 4):
                hour, minute = divmod(scan.next()[1], 100)
                if hour > 23 or minute > 59:
                    return _INVALID_TOKEN
            else:
                if not (_fixed(scan.peek(), 2) and scan.peek()[1] <= 23):
                    return _INVALID_TOKEN
                hour = scan.next()[1]
                if not scan.skip(_COLON):
                    return _INVALID_TOKEN
                if not (_fixed(scan.peek(), 2) and scan.peek()[1] <= 59):
                    return _INVALID_TOKEN
                minute = scan.next()[1]
            state.zone_hour, state.zone_minute = hour, minute
        if scan.peek()[0] != _END:
            return _INVALID_TOKEN
    if state.zone_hour == _NONE and not state.time:
        state.set_zone(0)
    state.iso = True
    return _END_TOKEN


def _legacy_number(scan: _Scanner, state: _State, n: int) -> bool:
    if scan.skip(_COLON):
        if scan.skip(_COLON):
            if state.time:
                return False
            state.time += [n, 0]
        else:
            if not state.add_time(n):
                return False
            if scan.peek()[:2] == (_SYMBOL, _DOT):
                scan.next()
    elif scan.skip(_DOT) and state.time_expects(n):
        state.add_time(n)
        if scan.peek()[0] != _NUMBER:
            return False
        state.add_final_time(_read_millis(scan.next()))
    elif state.zone_expects(n):
        state.zone_minute = n
    elif state.time_expects(n):
        state.add_final_time(n)
        after = scan.peek()
        if after[0] not in (_END, _SPACE) and not _is_z(after) and not _is_sign(after):
            return False
    else:
        if len(state.day) >= 3:
            return False
        state.day.append(n)
        scan.skip(_MINUS)
    return True


def _legacy_offset(scan: _Scanner, state: _State, sign: Token) -> bool:
    state.zone_sign = -1 if sign[1] == _MINUS else 1
    n = length = 0
    if scan.peek()[0] == _NUMBER:
        _, n, length = scan.next()
    if scan.peek()[:2] == (_SYMBOL, _COLON):
        state.zone_hour, state.zone_minute = n, _NONE
    elif length in (1, 2):
        state.zone_hour, state.zone_minute = n, 0
    elif length in (3, 4):
        state.zone_hour, state.zone_minute = divmod(n, 100)
    else:
        return False
    return True


def _parse_tokens(text: str) -> int | None:
    scan = _Scanner(text)
    state = _State()
    token = _iso_stage(scan, state)
    if token is _INVALID_TOKEN:
        return None
    has_number = bool(state.day)
    while token[0] != _END:
        kind = token[0]
        if kind == _NUMBER:
            has_number = True
            if not _legacy_number(scan, state, token[1]):
                return None
        elif kind >= _WORD:
            if kind == _AM_PM and state.time:
                state.hour_offset = token[1]
            elif kind == _MONTH:
                state.month_name = token[1]
                scan.skip(_MINUS)
            elif kind == _ZONE and has_number:
                state.set_zone(token[1])
            elif has_number or scan.peek()[0] == _NUMBER:
                return None
        elif _is_sign(token) and ((state.zone_hour == 0 and state.zone_minute == 0) or state.time):
            has_number = True
            if not _legacy_offset(scan, state, token):
                return None
        elif has_number and (_is_sign(token) or token[:2] == (_SYMBOL, _CLOSE)):
            return None
        token = scan.next()
    return state.result()


def _month_start_ms(year_month: str) -> int | None:
    """Milliseconds at the start of a ``YYYY-MM`` month (cached), ``None`` if no month."""
    month = int(year_month[5:])
    if not 1 <= month <= 12:
        return None
    start = _days_from_civil(int(year_month[:4]), month, 1) * _MS_PER_DAY
    _MONTH_STARTS[year_month] = start
    return start


def parse_js_date(text: object) -> int | None:
    """Milliseconds since the epoch as ``Date.parse(text)`` gives them in Node 22, or
    ``None`` for NaN (and for anything not a string)."""
    if not isinstance(text, str) or not text:
        return None
    if len(text) == 24 and text[19] == "." and text[23] == "Z" and text[10] == "T":
        canonical = _CANONICAL.fullmatch(text)
        if canonical is not None:
            year_month, day, hour, minute, second, millis = canonical.groups()
            start = _MONTH_STARTS.get(year_month)
            if start is None:
                start = _month_start_ms(year_month)
            d, h, mi, sec = int(day), int(hour), int(minute), int(second)
            if start is not None and 1 <= d <= 31 and h < 24 and mi < 60 and sec < 60:
                return start + (((d - 1) * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + int(millis)
    match = _ISO.fullmatch(text)
    if match is not None:
        decided, value = _parse_iso(match)
        if decided:
            return value
    if "\0" in text:
        text = text[: text.index("\0")]
    return _parse_tokens(text)
