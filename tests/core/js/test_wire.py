"""JavaScript-exact JSON, lengths and dates (spec §2.6, §3.8, §6.1, §7.7)."""

from __future__ import annotations

import json

import pytest

from pinb.core.js.wire import (
    dumps,
    js_date_ms,
    js_number,
    js_trim,
    loads,
    parse_js_date,
    utf16_len,
    utf16_truncate,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (0.00001, "0.00001"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (123.456, "123.456"),
        (0.011112, "0.011112"),
        (2**53 + 1, "9007199254740992"),
        (12345678901234567890, "12345678901234567000"),
        (1.5e20, "150000000000000000000"),
        (float("nan"), "null"),
        (-2.5, "-2.5"),
    ],
)
def test_numbers_print_as_javascript(value: float, text: str) -> None:
    assert js_number(value) == text


def test_dumps_matches_json_stringify() -> None:
    value = {"b": 1, "2": [1.0, None, True], "10": "x", "1": "é\u2028", "a": {"z": 1e-7}}
    assert dumps(value) == '{"1":"é\u2028","2":[1,null,true],"10":"x","b":1,"a":{"z":1e-7}}'


def test_dumps_escapes_lone_surrogates_like_well_formed_stringify() -> None:
    assert dumps("a\ud83d") == '"a\\ud83d"'
    assert dumps("🎉") == '"🎉"'


def test_dumps_fast_path_is_plain_json() -> None:
    value = {"type": "message", "x": [1, 2, "ü"], "cost": 0.0123}
    assert dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_loads_rejects_what_json_parse_rejects() -> None:
    for text in ("NaN", "[Infinity]", "{'a':1}", "\ufeff{}"):
        with pytest.raises(ValueError):
            loads(text)
    assert loads('{"a":"\\ud800"}') == {"a": "\ud800"}


def test_utf16_lengths_and_truncation() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("a😀") == 3
    assert utf16_truncate("ab😀c", 3) == "ab\ud83d"
    assert utf16_truncate("ab😀c", 4) == "ab😀"
    assert utf16_truncate("abc", 10) == "abc"


def test_js_trim_drops_bom_but_not_nel() -> None:
    assert js_trim("\ufeff \u3000x\u2028\n") == "x"
    assert js_trim("\x85x") == "\x85x"


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2025-03-01T10:00:00.000Z", 1740823200000),
        ("2025-03-01T10:00:00Z", 1740823200000),
        ("2025-03-01T10:00Z", 1740823200000),
        ("2025-03-01T12:00:00.000+02:00", 1740823200000),
        ("2025-03-01T10:00:00.1239Z", 1740823200123),
        ("2025-03-01", 1740787200000),
        ("2025-03", 1740787200000),
        ("2025", 1735689600000),
        ("2025-02-30T00:00:00Z", 1740873600000),
        ("2025-03-01T24:00:00Z", 1740873600000),
        ("+002025-03-01T00:00:00Z", 1740787200000),
    ],
)
def test_dates_parse_as_date_parse(text: str, ms: int) -> None:
    assert parse_js_date(text) == ms


@pytest.mark.parametrize(
    "text",
    ["", "not a date", "2025-13-01", "2025-03-32", "2025-03-01T25:00:00Z", "20250301T100000"],
)
def test_invalid_dates_are_nan(text: str) -> None:
    assert parse_js_date(text) is None


def test_new_date_of_non_strings() -> None:
    assert js_date_ms(None) == 0
    assert js_date_ms(1740823200000) == 1740823200000
    assert js_date_ms({"x": 1}) is None
    assert js_date_ms(True) == 1
