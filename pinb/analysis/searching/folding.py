"""How the search index folds a word, and every way a session file's bytes can spell it.

The index is SQLite FTS5 with the ``unicode61`` tokenizer and ``remove_diacritics 2``
(:data:`~pinb.analysis.searching.schema.TOKENIZER`). It folds each character on its own: a capital
to its small letter (Latin, Greek with final sigma, Cyrillic, Armenian, Georgian, Deseret,
the Kelvin and Ångström signs, fullwidth and other compatibility letters to their small
forms), a Latin letter with diacritics to its base letter (``é`` and ``É`` to ``e``,
``İ`` to ``i``), and it drops a combining diacritic inside a word (``e`` + U+0301 is
``e``). It folds nothing else: not as ``str.casefold`` does (``ß`` stays ``ß``, not
``ss``; ``ﬁ`` stays ``ﬁ``; Cherokee's small letters are not its capitals, nor Georgian
Mtavruli its Mkhedruli; Greek keeps its accents), and not by compatibility (a circled or
a mathematical letter is not a Latin one). That rule is the table here, read from SQLite
itself (:func:`probe`); a test reads it again from the running SQLite and compares every
code point.

A scan of the files (:mod:`pinb.analysis.searching.scanlines`) must never miss a line the index
would match. :func:`spelling` gives, for a word as the index folds it, every way a line of
JSON can spell it: each letter as any character that folds to it (by this table, and, to
be safe with another SQLite's table, by ``str.lower``/``upper``/``casefold``), written
as UTF-8 or as a JSON ``\\uXXXX`` escape (hex in either case; a surrogate pair beyond
the first plane), with dropped diacritics anywhere between its letters. What the scan
finds so is then judged by FTS5 itself, as the index judges it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

__all__ = ["DROPPED", "FOLDS", "Spelling", "fold", "preimages", "probe", "spelling", "word_tokens"]

#: FTS5's fold of every character it changes, as runs ``start[-end[/step]]>target`` (hex
#: code points; a run maps ``start + k*step`` to ``target + k*step``). Made by
#: :func:`probe` from SQLite 3.40's ``unicode61`` tokenizer with ``remove_diacritics 2``.
_FOLDS: Final = (
    "41-5a>61 b5>3bc c0>61 c1>61 c2>61 c3>61 c4>61 c5>61 c6>e6 c7>63 c8>65 c9>65 ca>65 "
    "cb>65 cc>69 cd>69 ce>69 cf>69 d0>f0 d1-d2>6e d3>6f d4>6f d5>6f d6>6f d8>f8 d9>75 da>75 "
    "db>75 dc>75 dd>79 de>fe e0>61 e1>61 e2>61 e3>61 e4>61 e5-e7/2>61 e8>65 e9>65 ea>65 "
    "eb>65 ec>69 ed>69 ee>69 ef>69 f1-f2>6e f3>6f f4>6f f5>6f f6>6f f9>75 fa>75 fb>75 fc>75 "
    "fd>79 ff>79 100>61 101>61 102>61 103>61 104>61 105>61 106>63 107>63 108>63 109>63 "
    "10a>63 10b>63 10c>63 10d-10e>63 10f>64 110>111 112>65 113>65 114>65 115>65 116>65 "
    "117>65 118>65 119>65 11a>65 11b>65 11c>67 11d>67 11e>67 11f>67 120>67 121>67 122>67 "
    "123-124>67 125>68 126>127 128>69 129>69 12a>69 12b>69 12c>69 12d>69 12e>69 12f>69 "
    "130>69 132>133 134>6a 135-136>6a 137>6b 139>6c 13a>6c 13b>6c 13c>6c 13d>6c 13e>6c "
    "13f-141/2>140 143>6e 144>6e 145>6e 146>6e 147>6e 148>6e 14a>14b 14c>6f 14d>6f 14e>6f "
    "14f>6f 150>6f 151>6f 152>153 154>72 155>72 156>72 157>72 158>72 159-15a>72 15b>73 "
    "15c>73 15d>73 15e>73 15f>73 160>73 161-162>73 163>74 164>74 165>74 166>167 168>75 "
    "169>75 16a>75 16b>75 16c>75 16d>75 16e>75 16f>75 170>75 171>75 172>75 173>75 174>77 "
    "175>77 176>79 177>79 178-179>79 17a>7a 17b>7a 17c>7a 17d>7a 17e>7a 17f>73 181>253 "
    "182-184/2>183 186>254 187>188 189-18a>256 18b>18c 18e>1dd 18f>259 190>25b 191>192 "
    "193>260 194>263 196>269 197>268 198>199 19c>26f 19d>272 19f>275 1a0>6f 1a1>6f "
    "1a2-1a4/2>1a3 1a6>280 1a7>1a8 1a9>283 1ac>1ad 1ae>288 1af>75 1b0>75 1b1-1b2>28a "
    "1b3-1b5/2>1b4 1b7>292 1b8>1b9 1bc>1bd 1c4>1c6 1c5>1c6 1c7>1c9 1c8>1c9 1ca>1cc 1cb>1cc "
    "1cd>61 1ce>61 1cf>69 1d0>69 1d1>6f 1d2>6f 1d3>75 1d4>75 1d5>75 1d6>75 1d7>75 1d8>75 "
    "1d9>75 1da>75 1db>75 1dc>75 1de>61 1df>61 1e0-1e4/2>1e1 1e6>67 1e7>67 1e8>6b 1e9>6b "
    "1ea>6f 1eb>6f 1ec>6f 1ed>6f 1ee>1ef 1f0>6a 1f1>1f3 1f2>1f3 1f4>67 1f5>67 1f6>195 "
    "1f7>1bf 1f8>6e 1f9>6e 1fa>61 1fb>61 1fc-1fe/2>1fd 200>61 201>61 202>61 203>61 204>65 "
    "205>65 206>65 207>65 208>69 209>69 20a>69 20b>69 20c>6f 20d>6f 20e>6f 20f>6f 210>72 "
    "211>72 212>72 213>72 214>75 215>75 216>75 217>75 218>73 219-21a>73 21b>74 21c>21d "
    "21e>68 21f>68 220>19e 222-224/2>223 226>61 227>61 228>65 229>65 22a>6f 22b>6f 22c>6f "
    "22d>6f 22e>6f 22f>6f 230>6f 231>6f 232>79 233>79 23a>2c65 23b>23c 23d>19a 23e>2c66 "
    "241>242 243>180 244>289 245>28c 246-24e/2>247 370-372/2>371 376>377 386>3ac "
    "388-38a>3ad 38c>3cc 38e-38f>3cd 391-3a1>3b1 3a3-3ab>3c3 3c2>3c3 3cf>3d7 3d0>3b2 "
    "3d1>3b8 3d5>3c6 3d6>3c0 3d8-3ee/2>3d9 3f0>3ba 3f1>3c1 3f4>3b8 3f5>3b5 3f7>3f8 3f9>3f2 "
    "3fa>3fb 3fd-3ff>37b 400-40f>450 410-42f>430 460-480/2>461 48a-4be/2>48b 4c0>4cf "
    "4c1-4cd/2>4c2 4d0-526/2>4d1 531-556>561 10a0-10c5>2d00 10c7>2d27 10cd>2d2d 1e00>61 "
    "1e01-1e02>61 1e03>62 1e04>62 1e05>62 1e06>62 1e07-1e08>62 1e09-1e0a>63 1e0b>64 1e0c>64 "
    "1e0d>64 1e0e>64 1e0f>64 1e10>64 1e11>64 1e12>64 1e13-1e14>64 1e15>65 1e16>65 1e17>65 "
    "1e18>65 1e19>65 1e1a>65 1e1b>65 1e1c>65 1e1d-1e1e>65 1e1f-1e20>66 1e21-1e22>67 1e23>68 "
    "1e24>68 1e25>68 1e26>68 1e27>68 1e28>68 1e29>68 1e2a>68 1e2b-1e2c>68 1e2d>69 1e2e>69 "
    "1e2f>69 1e30>6b 1e31>6b 1e32>6b 1e33>6b 1e34>6b 1e35-1e36>6b 1e37>6c 1e38>6c 1e39>6c "
    "1e3a>6c 1e3b>6c 1e3c>6c 1e3d-1e3e>6c 1e3f>6d 1e40>6d 1e41>6d 1e42>6d 1e43-1e44>6d "
    "1e45>6e 1e46>6e 1e47>6e 1e48>6e 1e49>6e 1e4a>6e 1e4b-1e4c>6e 1e4d>6f 1e4e>6f 1e4f>6f "
    "1e50>6f 1e51>6f 1e52>6f 1e53-1e54>6f 1e55>70 1e56>70 1e57>70 1e58>72 1e59>72 1e5a>72 "
    "1e5b>72 1e5c>72 1e5d>72 1e5e>72 1e5f-1e60>72 1e61>73 1e62>73 1e63>73 1e64>73 1e65>73 "
    "1e66>73 1e67>73 1e68>73 1e69-1e6a>73 1e6b>74 1e6c>74 1e6d>74 1e6e>74 1e6f>74 1e70>74 "
    "1e71-1e72>74 1e73>75 1e74>75 1e75>75 1e76>75 1e77>75 1e78>75 1e79>75 1e7a>75 "
    "1e7b-1e7c>75 1e7d>76 1e7e>76 1e7f-1e80>76 1e81>77 1e82>77 1e83>77 1e84>77 1e85>77 "
    "1e86>77 1e87>77 1e88>77 1e89-1e8a>77 1e8b>78 1e8c>78 1e8d-1e8e>78 1e8f-1e90>79 1e91>7a "
    "1e92>7a 1e93>7a 1e94>7a 1e95>7a 1e96>68 1e97>74 1e98>77 1e99>79 1e9b>73 1e9e>df "
    "1ea0>61 1ea1>61 1ea2>61 1ea3>61 1ea4>61 1ea5>61 1ea6>61 1ea7>61 1ea8>61 1ea9>61 "
    "1eaa>61 1eab>61 1eac>61 1ead>61 1eae>61 1eaf>61 1eb0>61 1eb1>61 1eb2>61 1eb3>61 "
    "1eb4>61 1eb5>61 1eb6>61 1eb7>61 1eb8>65 1eb9>65 1eba>65 1ebb>65 1ebc>65 1ebd>65 "
    "1ebe>65 1ebf>65 1ec0>65 1ec1>65 1ec2>65 1ec3>65 1ec4>65 1ec5>65 1ec6>65 1ec7>65 "
    "1ec8>69 1ec9>69 1eca>69 1ecb>69 1ecc>6f 1ecd>6f 1ece>6f 1ecf>6f 1ed0>6f 1ed1>6f "
    "1ed2>6f 1ed3>6f 1ed4>6f 1ed5>6f 1ed6>6f 1ed7>6f 1ed8>6f 1ed9>6f 1eda>6f 1edb>6f "
    "1edc>6f 1edd>6f 1ede>6f 1edf>6f 1ee0>6f 1ee1>6f 1ee2>6f 1ee3>6f 1ee4>75 1ee5>75 "
    "1ee6>75 1ee7>75 1ee8>75 1ee9>75 1eea>75 1eeb>75 1eec>75 1eed>75 1eee>75 1eef>75 "
    "1ef0>75 1ef1>75 1ef2>79 1ef3>79 1ef4>79 1ef5>79 1ef6>79 1ef7>79 1ef8>79 1ef9>79 "
    "1efa-1efe/2>1efb 1f08-1f0f>1f00 1f18-1f1d>1f10 1f28-1f2f>1f20 1f38-1f3f>1f30 "
    "1f48-1f4d>1f40 1f59-1f5f/2>1f51 1f68-1f6f>1f60 1f88-1f8f>1f80 1f98-1f9f>1f90 "
    "1fa8-1faf>1fa0 1fb8-1fb9>1fb0 1fba-1fbb>1f70 1fbc>1fb3 1fbe>3b9 1fc8-1fcb>1f72 "
    "1fcc>1fc3 1fd8-1fd9>1fd0 1fda-1fdb>1f76 1fe8-1fe9>1fe0 1fea-1feb>1f7a 1fec>1fe5 "
    "1ff8-1ff9>1f78 1ffa-1ffb>1f7c 1ffc>1ff3 2126>3c9 212a>6b 212b>61 2132>214e "
    "2160-216f>2170 2183>2184 2c00-2c2e>2c30 2c60>2c61 2c62>26b 2c63>1d7d 2c64>27d "
    "2c67-2c6b/2>2c68 2c6d>251 2c6e>271 2c6f>250 2c70>252 2c72>2c73 2c75>2c76 2c7e-2c7f>23f "
    "2c80-2ce2/2>2c81 2ceb-2ced/2>2cec 2cf2>2cf3 a640-a66c/2>a641 a680-a696/2>a681 "
    "a722-a72e/2>a723 a732-a76e/2>a733 a779-a77b/2>a77a a77d>1d79 a77e-a786/2>a77f "
    "a78b>a78c a78d>265 a790-a792/2>a791 a7a0-a7a8/2>a7a1 a7aa>266 ff21-ff3a>ff41 "
    "10400-10427>10428"
)
#: Characters FTS5 drops inside a word (combining diacritics), hex, as ranges.
_DROPPED: Final = "300-304 306-30c 30f 311 31b 323-328 32d-32e 330-331"


def _runs() -> dict[int, int]:
    folds: dict[int, int] = {}
    for run in "".join(_FOLDS).split():
        span, target = run.split(">")
        first, _, rest = span.partition("-")
        last, _, step = rest.partition("/")
        start = int(first, 16)
        end = int(last, 16) if last else start
        stride = int(step) if step else 1
        offset = int(target, 16) - start
        for code in range(start, end + 1, stride):
            folds[code] = code + offset
    return folds


def _dropped() -> frozenset[int]:
    found: set[int] = set()
    for item in _DROPPED.split():
        first, _, last = item.partition("-")
        found.update(range(int(first, 16), int(last or first, 16) + 1))
    return frozenset(found)


#: Code point -> its fold (only those FTS5 changes).
FOLDS: Final = _runs()
#: Code points FTS5 drops inside a word.
DROPPED: Final = _dropped()


def fold(text: str) -> str:
    """``text`` with each character as FTS5 folds it (diacritics it drops removed)."""
    return "".join("" if ord(ch) in DROPPED else chr(FOLDS.get(ord(ch), ord(ch))) for ch in text)


@lru_cache(maxsize=1)
def _inverse() -> dict[int, tuple[int, ...]]:
    found: dict[int, list[int]] = {}
    for code, target in FOLDS.items():
        found.setdefault(target, []).append(code)
    return {target: tuple(codes) for target, codes in found.items()}


def preimages(letter: str) -> tuple[str, ...]:
    """Every character the index reads as ``letter`` (a folded character): those FTS5
    folds to it, and its case forms by Python's rules (a safe superset), ``letter``
    first."""
    code = ord(letter)
    found = dict.fromkeys([code, *_inverse().get(code, ())])
    for form in (letter.upper(), letter.lower(), letter.casefold(), letter.title()):
        if len(form) == 1:
            found.setdefault(ord(form), None)
            for other in _inverse().get(ord(form), ()):
                found.setdefault(other, None)
    return tuple(chr(c) for c in found)


def _escape(code: int) -> str:
    """The JSON escape of a code point, as a pattern (its hex digits in either case)."""
    pattern = ""
    for unit in _escape_units(code):
        digits = f"{unit:04x}"
        pattern += r"\\u" + "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in digits)
    return pattern


def _escape_units(code: int) -> tuple[int, ...]:
    """The ``\\uXXXX`` units of a code point's escape (a surrogate pair beyond the BMP)."""
    if code < 0x10000:
        return (code,)
    return (0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF))


def _alternatives(chars: tuple[str, ...]) -> str:
    """A bytes pattern (as text of latin-1 escapes) matching any of ``chars`` as written in
    a JSON line: UTF-8 or an escape."""
    ascii_letters = sorted(c for c in chars if c.isascii())
    others = [c for c in chars if not c.isascii()]
    parts: list[str] = []
    if ascii_letters:
        parts.append("[" + "".join(re.escape(c) for c in ascii_letters) + "]")
    for ch in others:
        parts.append("".join(f"\\x{b:02x}" for b in ch.encode("utf-8")))
    parts += (_escape(ord(ch)) for ch in chars)
    return "(?:" + "|".join(parts) + ")"


@dataclass(frozen=True)
class Spelling:
    """Every way a JSON line can spell one word of a query, as the index folds it.

    Attributes
    ----------
    word:
        The word as the index keeps it (:func:`fold`).
    plain:
        Its bytes when it is all ASCII: the spelling of nearly every line (any ASCII case;
        compare with the line's ``bytes.lower()``). ``None`` for a word of other letters.
    pattern:
        A bytes expression matching every spelling: each letter as any character that
        folds to it, as UTF-8 or a JSON escape, dropped diacritics between letters.
    pairs:
        ``lead << 8 | next`` of the first two bytes of every spelling of a letter that is
        not plain ASCII (and of a dropped diacritic): a line that holds none of these and
        no ``\\u`` escape of :attr:`escaped` spells the word plainly or not at all.
    escaped:
        The code units whose ``\\uXXXX`` escapes may spell a letter of it.
    """

    word: str
    plain: bytes | None
    pattern: re.Pattern[bytes]
    pairs: frozenset[int]
    escaped: frozenset[int]


@lru_cache(maxsize=256)
def spelling(word: str) -> Spelling:
    """The :class:`Spelling` of a word (one FTS5 token; folded here if it is not)."""
    word = fold(word)
    letters = [preimages(letter) for letter in word]
    dropped = tuple(chr(c) for c in sorted(DROPPED))
    between = _alternatives(dropped) + "*"
    pattern = between.join(_alternatives(chars) for chars in letters)
    pairs: set[int] = set()
    escaped: set[int] = set()
    for chars in [*letters, dropped]:
        for ch in chars:
            escaped.update(_escape_units(ord(ch)))
            data = ch.encode("utf-8")
            if len(data) > 1:
                pairs.add(data[0] << 8 | data[1])
    plain = word.encode("ascii") if word.isascii() else None
    return Spelling(
        word,
        plain,
        re.compile(pattern.encode("latin-1")),
        frozenset(pairs),
        frozenset(escaped),
    )


def word_tokens(db: sqlite3.Connection, texts: list[str]) -> list[list[str]]:
    """The words FTS5 makes of each of ``texts``, folded, in order: the index's own
    tokenizer asked (``db``: any connection; a scratch table in its ``temp`` schema)."""
    from .schema import TOKENIZER

    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.words USING fts5(body, {TOKENIZER})")
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_seen USING fts5vocab(temp, words, instance)"
    )
    db.execute("DELETE FROM temp.words")
    db.executemany("INSERT INTO temp.words(rowid, body) VALUES (?, ?)", enumerate(texts))
    found: list[list[str]] = [[] for _ in texts]
    for term, row in db.execute("SELECT term, doc FROM temp.words_seen ORDER BY doc, offset"):
        found[row].append(term)
    db.execute("DELETE FROM temp.words")
    return found


def probe(db: sqlite3.Connection | None = None) -> tuple[dict[int, int], frozenset[int]]:
    """Read FTS5's fold from SQLite itself: ``(fold of every code point it changes,
    the code points it drops inside a word)``, over every code point but the surrogates.

    Each code point is written between two ``x``: the word FTS5 makes of it is ``x`` + its
    fold + ``x``, or ``xx`` when it is dropped, or two words ``x`` when it separates
    words. :data:`FOLDS` and :data:`DROPPED` are what this gave; a test compares them.
    """
    from .schema import TOKENIZER

    own = db is None
    connection = sqlite3.connect(":memory:") if db is None else db
    try:
        connection.execute(f"CREATE VIRTUAL TABLE temp.probe USING fts5(body, {TOKENIZER})")
        connection.execute(
            "CREATE VIRTUAL TABLE temp.probe_seen USING fts5vocab(temp, probe, instance)"
        )
        codes = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
        rows = (
            (n, " ".join(f"x{chr(c)}x" for c in codes[start : start + 2000]))
            for n, start in enumerate(range(0, len(codes), 2000))
        )
        connection.executemany("INSERT INTO temp.probe(rowid, body) VALUES (?, ?)", rows)
        terms = [
            t
            for (t,) in connection.execute("SELECT term FROM temp.probe_seen ORDER BY doc, offset")
        ]
    finally:
        if own:
            connection.close()
    folds: dict[int, int] = {}
    dropped: set[int] = set()
    at = 0
    for code in codes:
        term = terms[at]
        if term == "x":  # a separator: "x", "x"
            at += 2
            continue
        at += 1
        if term == "xx":
            dropped.add(code)
        elif ord(term[1]) != code:
            folds[code] = ord(term[1])
    return folds, frozenset(dropped)
