"""``parse_js_date`` against answers recorded from Node 22's ``Date.parse``, rule by rule.

Strings with an offset are checked against Node's value itself; strings without one are
local time, checked as Node's answer under TZ=UTC (the wall time) less the local offset.
tests/pi/test_dates.py compares many more strings with the running Node.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pinb.core.js import jsdate, wire
from pinb.core.js.jsdate import _local_offset_ms, parse_js_date

# (string, Node's Date.parse), every one with an explicit offset or date-only ISO (UTC).
ISO = [
    ("2025-03-01T10:00:00.000Z", 1740823200000),
    ("2025-03-01T10:00:00.000z", 1740823200000),
    ("2025-03-01t10:00:00Z", 1740823200000),
    ("2025-03-01T10:00Z", 1740823200000),
    ("2025-03-01T12:00:00.000+02:00", 1740823200000),
    ("2025-03-01T12:00:00+0200", 1740823200000),
    ("2025-03-01T05:30-04:30", 1740823200000),
    ("2025-03-01", 1740787200000),
    ("2025-03", 1740787200000),
    ("2025", 1735689600000),
    ("+002025-03-01", 1740787200000),
    ("-000001-01-01T00:00:00Z", -62198755200000),
    ("1969-12-31T23:59:59.999Z", -1),
]
FRACTIONS = [
    ("2025-03-01T10:00:00.1Z", 1740823200100),
    ("2025-03-01T10:00:00.12Z", 1740823200120),
    ("2025-03-01T10:00:00.1239Z", 1740823200123),
    # Past nine digits V8 keeps nine significant ones, then reads the first three.
    ("2025-03-01T10:00:00.0001239999999999Z", 1740823200123),
    ("Mar 1 2025 10:00:00.5 UTC", 1740823200500),
    ("Mar 1 2025 10:00:00:5 UTC", 1740823200005),
]
RANGES = [
    ("+275760-09-13T00:00:00Z", 8640000000000000),
    ("+275760-09-13T00:00:00.001Z", None),
    ("-271821-04-20T00:00:00Z", -8640000000000000),
    ("-271821-04-19T23:59:59.999Z", None),
    ("2025-02-30T00:00:00Z", 1740873600000),
    ("2025-02-31", 1740960000000),
    ("2025-03-01T24:00:00Z", 1740873600000),
    ("2025-03-01T24:00:00.000000000Z", 1740873600000),
    ("2025-03-01T24:00:01Z", None),
    ("2025-03-01T24:00:00.0000000001Z", None),
    ("Mar 1 2025 24:00 UTC", 1740873600000),
    ("Mar 1 2025 24:01 UTC", None),
    ("2025-03-01T25:00Z", None),
    ("2025-03-01T10:60Z", None),
    ("2025-03-01T10:00+24:00", None),
    ("2025-13-01", None),
    ("2025-03-32", None),
    ("2025-03-00", None),
    ("13/1/2025 UTC", None),
    ("-000000-01-01T00:00:00Z", None),
]
# After "T" the ISO stage cannot hand over to the legacy parser.
AFTER_T = [
    ("2025-03-01T10:00:00.000 Z", None),
    ("2025-03-01T10:00:00.000GMT", None),
    ("2025-3-1T10:00:00.000Z", None),
    ("2025-03-01T10", None),
    ("2025-03-01T10:00+02", None),
    ("20250301T100000", None),
]
ZONES = [
    ("2025-03-01Z", 1740787200000),
    ("2025-03-01 10:00:00Z", 1740823200000),
    ("2025-03-01 10:00:00 GMT+02:00", 1740816000000),
    ("2025-03-01 10:00 UTC", 1740823200000),
    ("2025-03-01 10:00 UT", 1740823200000),
    ("2025-03-01 10:00 gmt-0130", 1740828600000),
    ("Mar 1 2025 10:00 EST", 1740841200000),
    ("Mar 1 2025 10:00 EDT", 1740837600000),
    ("Mar 1 2025 10:00 CST", 1740844800000),
    ("Mar 1 2025 10:00 CDT", 1740841200000),
    ("Mar 1 2025 10:00 MST", 1740848400000),
    ("Mar 1 2025 10:00 MDT", 1740844800000),
    ("Mar 1 2025 10:00 PST", 1740852000000),
    ("Mar 1 2025 10:00 PDT", 1740848400000),
    ("Mar 1 2025 10:00 EST+1", 1740819600000),
    ("Mar 1 2025 10:00 ESTX", None),
    ("Mar 1 2025 10:00 +0200", 1740816000000),
    ("Mar 1 2025 10:00 GMT+2", 1740816000000),
    ("Mar 1 2025 10:00 GMT-8", 1740852000000),
    ("Mar 1 2025 10:00 GMT+530", 1740803400000),
    ("Mar 1 2025 10:00 GMT+05:30", 1740803400000),
    ("Mar 1 2025 10:00 GMT+05: 30", 1740803400000),
    ("Mar 1 2025 10:00 GMT+05:", 1740805200000),
    ("Mar 1 2025 10:00 GMT+12345", None),
    ("Mar 1 2025 10:00 GMT+", None),
    ("Mar 1 2025 UTC +", None),
    # Offsets are summed in unsigned 32-bit seconds and refused above 2**31 - 1.
    ("Mar 1 2025 10:00 GMT+1193047:", 1740821296000),
    ("Mar 1 2025 10:00 GMT+596524:", None),
]
LEGACY = [
    ("Mar 1 2025 10:00:00 GMT+0200", 1740816000000),
    ("Sat Mar 01 2025 10:00:00 GMT+0200 (Eastern European Standard Time)", 1740816000000),
    ("Sat, 01 Mar 2025 10:00:00 GMT", 1740823200000),
    ("March 1, 2025 10:00 UTC", 1740823200000),
    ("1 Mar 2025 10:00 Z", 1740823200000),
    ("01-Mar-2025 10:00 Z", 1740823200000),
    ("2025 Mar 1 10:00 Z", 1740823200000),
    ("Marchx 1 2025 10:00 Z", 1740823200000),
    ("Ma 1 2025 10:00 Z", None),
    ("3/1/2025 10:00 UTC", 1740823200000),
    ("2025/03/01 10:00 UTC", 1740823200000),
    ("03/01/2025 UTC", 1740787200000),
    ("Mar 1 2025 10:00 PM UTC", 1740866400000),
    ("Mar 1 2025 12:00 AM UTC", 1740787200000),
    ("Mar 1 2025 12:00 PM UTC", 1740830400000),
    ("Mar 1 2025 13:00 PM UTC", None),
    ("Mar 1 2025 10:: UTC", 1740823200000),
    ("Mar 1 2025 10:00x UTC", None),
    ("1 2 3 4 UTC", None),
    ("Mar 1 0000000012025 UTC", 317310307200000),
]
YEARS = [
    ("3/1/25 UTC", 1740787200000),
    ("3/1/49 UTC", 2498169600000),
    ("3/1/50 UTC", -626054400000),
    ("3/1/99 UTC", 920246400000),
    ("3/1/100 UTC", -59006361600000),
    ("Mar 1 UTC", 983404800000),
    ("3/1 UTC", 983404800000),
]
WORDS_AND_COMMENTS = [
    ("Mar 1 2025 (comment) 10:00 UTC", 1740823200000),
    ("(Sat) Mar 1 2025 UTC", 1740787200000),
    ("Mar 1 2025 UTC (unclosed", 1740787200000),
    ("Mar 1 2025 ) UTC", None),
    ("Saturday Mar 1 2025 UTC", 1740787200000),
    ("Sat1 Mar 2025 UTC", None),
    ("Mar 1 2025 foo UTC", None),
    ("2025-03-01\u00a0UTC", 1740787200000),
    ("2025-03-01\u3000UTC", 1740787200000),
    ("2025-03-01\u2028UTC", None),
    ("2025-03-01 UTC\x00garbage", 1740787200000),
]
NAN = [
    ("", None),
    (" ", None),
    ("\x00", None),
    ("garbage", None),
    ("T", None),
    ("2025-\u0660\u0663-01", None),
]
# (string, Node's answer under TZ=UTC): the wall time of a form read as local time.
LOCAL = [
    ("2025-03-01T10:00", 1740823200000),
    ("2025-03-01T10:00:00.5", 1740823200500),
    ("2025-03-01 10:00:00", 1740823200000),
    ("2025-03-01  10:00:00", 1740823200000),
    ("2025-3-1", 1740787200000),
    ("2025-", 1735689600000),
    ("2025 ", 1735689600000),
    ("-000000-01-01", 978307200000),
    ("0049-3-1", 2498169600000),
    ("Mar 1 2025", 1740787200000),
    ("Mar 1", 983404800000),
    ("3/1/2025 10:00 PM", 1740866400000),
    ("2025-03-01 12:00 am", 1740787200000),
    ("\uff12\uff10\uff12\uff15-03-01", 983404800000),
    ("1800-01-01T00:00", -5364662400000),
]


@pytest.mark.parametrize(
    ("text", "ms"),
    ISO + FRACTIONS + RANGES + AFTER_T + ZONES + LEGACY + YEARS + WORDS_AND_COMMENTS + NAN,
)
def test_node_answers(text: str, ms: int | None) -> None:
    assert parse_js_date(text) == ms


@pytest.mark.parametrize(("text", "wall_ms"), LOCAL)
def test_forms_without_offset_are_local_time(text: str, wall_ms: int) -> None:
    assert parse_js_date(text) == wall_ms - _local_offset_ms(wall_ms)


def test_non_strings_are_nan() -> None:
    assert parse_js_date(None) is None
    assert parse_js_date(1740823200000) is None


def test_wire_exports_the_same_function() -> None:
    assert wire.parse_js_date is jsdate.parse_js_date


@pytest.fixture()
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # New York's rules as a POSIX TZ string: the C library reads it without a tz database.
    with monkeypatch.context() as patch:
        patch.setenv("TZ", "EST5EDT,M3.2.0,M11.1.0")
        time.tzset()
        try:
            assert time.localtime(0).tm_gmtoff == -18000
            yield
        finally:
            patch.undo()
            time.tzset()


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2025-03-01T10:00", 1740841200000),
        # Skipped by the spring-forward change: read with the winter offset.
        ("2025-03-09T02:30:00", 1741505400000),
        # Repeated by the fall-back change: its first occurrence.
        ("2025-11-02T01:30:00", 1762061400000),
        ("+275760-09-13T00:00:00", None),
        # Within the range once read as UTC - 5 h (the rule has no local mean time).
        ("-271821-04-20T00:00:00", -8639999982000000),
    ],
)
def test_local_time_in_new_york(new_york: None, text: str, ms: int | None) -> None:
    assert parse_js_date(text) == ms
