"""``parse_js_date`` agrees with the real Node's ``Date.parse`` on generated strings.

The strings are a fixed product of date, separator, time and zone spellings, legacy
forms with month names, and seeded random mutations of both. The harness runs in this
process's environment, so forms without an offset are local time in the same zone.
"""

from __future__ import annotations

import itertools
import random

from pinb.core.js.wire import parse_js_date
from tests.pi.reference import PiReference

DATES = ["2025-03-01", "2025-3-1", "2025-02-30", "+002025-03-01", "-000001-12-31", "2025/03/01"]
DATES += ["03/01/2025", "3/1/25", "0049-03-01", "-000000-01-01", "2025-13-01", "2025-"]
SEPARATORS = ["T", "t", " ", "  ", ""]
TIMES = ["10:00", "10:00:00", "10:00:00.123", "24:00", "24:00:01", "1:00", "12:00 PM", "10::"]
ZONES = ["", "Z", "z", " Z", "+02:00", "+0200", " GMT", " UTC+5", " EST", " GMT-08:00", " (c)"]
LEGACY = [
    "Mar 1 2025 10:00:00 GMT+0200",
    "Sat Mar 01 2025 10:00:00 GMT+0200 (Eastern European Standard Time)",
    "Sat, 01 Mar 2025 10:00:00 GMT",
    "March 1, 2025",
    "1 Mar 2025",
    "Mar 1",
    "12/31/99 11:59 pm",
    "2025-03-01\u00a010:00",
    "2025-03-01T10:00:00.0001239999999999Z",
    "Mar 1 2025 10:00 GMT+1193047:",
    "+275760-09-13T00:00:00",
    "-271821-04-20T00:00:00Z",
]
MUTATIONS = [*"0123456789-+:./ ()TtZ", "GMT", "PM", "Mar", "\x00", "\u3000"]


def _texts() -> list[str]:
    rng = random.Random(20250301)
    texts = [
        date + separator + clock + zone
        for date, separator, clock, zone in itertools.product(DATES, SEPARATORS, TIMES, ZONES)
        if rng.random() < 0.05
    ]
    texts += DATES + LEGACY
    seeds = list(texts)
    for _ in range(300):
        chars = list(rng.choice(seeds))
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(chars) + 1)
            if rng.random() < 0.5 or not chars:
                chars.insert(at, rng.choice(MUTATIONS))
            else:
                del chars[min(at, len(chars) - 1)]
        texts.append("".join(chars))
    return texts


def test_date_parse_agrees_with_node(pi16: PiReference) -> None:
    texts = _texts()
    expected = pi16.request("dateParse", texts=texts)
    assert len(expected) == len(texts)
    wrong = [
        f"{text!r}: node {ms}, pinb {parse_js_date(text)}"
        for text, ms in zip(texts, expected, strict=True)
        if parse_js_date(text) != ms
    ]
    assert not wrong, f"{len(wrong)} of {len(texts)} disagree:\n" + "\n".join(wrong)
    assert sum(ms is not None for ms in expected) > len(texts) // 4
