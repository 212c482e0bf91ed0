"""The index's fold is SQLite's own, and every spelling of a folded word is found in bytes:
each letter as any character FTS5 folds to it, as UTF-8 or a JSON escape, with dropped
diacritics between, by the word's expression and by the unusual-bytes finder alike."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from pinb.analysis.searching.folding import (
    DROPPED,
    FOLDS,
    fold,
    preimages,
    probe,
    spelling,
    word_tokens,
)
from pinb.analysis.searching.scanfiles import Unusual

#: Words of many scripts, as a user may type or a model write them.
WORDS = (
    "Москва", "МОСКВА", "Σίσυφος", "ΣΊΣΥΦΟΣ", "σίσυφοσ", "Երևան", "ԵՐԵՎԱՆ", "თბილისი",
    "ᲗᲑᲘᲚᲘᲡᲘ", "ႧႡႨႪႨႱႨ", "ᏣᎳᎩ", "ꮳꮃꭹ", "𐐔𐐯𐑅𐐨𐑉𐐯𐐻", "𐐼𐐯𐑅𐐨𐑉𐐯𐐻", "𐒰𐓘", "İstanbul", "ıstanbul",
    "Straße", "STRAẞE", "ﬁle", "\u212aelvin", "\u212bngström", "ＰＡＲＳＥＲ", "Ⅻ", "ⅻ",
    "𝐩𝐚𝐫𝐬𝐞𝐫", "Tiếng", "VIỆT", "Re\u0301sume\u0301", "naïve", "ǅemal", "µs", "ſtate",
)  # fmt: skip


def _lines(text: str) -> list[bytes]:
    """A JSON line holding ``text`` as Pi writes it (UTF-8), and as an ASCII-only writer
    does (every other character a ``\\u`` escape, in lower and in upper case hex)."""
    raw = json.dumps({"text": text}, ensure_ascii=False).encode()
    escaped = json.dumps({"text": text}).encode()
    upper = escaped.replace(b"\\u", b"\\U").upper().replace(b"\\U", b"\\u")
    return [raw, escaped, upper]


def test_the_table_is_the_running_sqlites_own() -> None:
    folds, dropped = probe()
    assert folds == FOLDS and dropped == DROPPED
    assert len(FOLDS) > 1000 and len(DROPPED) == 25


def test_fold_is_what_fts5_makes_of_each_word() -> None:
    db = sqlite3.connect(":memory:")
    for word, tokens in zip(WORDS, word_tokens(db, list(WORDS)), strict=True):
        assert tokens == [fold(word)], word
    assert fold("Москва") == "москва" and fold("\u212aelvin") == "kelvin"
    assert fold("Straße") == fold("STRAẞE") == "straße" != fold("STRASSE")
    assert fold("ΣΊΣΥΦΟΣ") == fold("σίσυφος") == "σίσυφοσ" != fold("ΣΙΣΥΦΟΣ")
    assert fold("İstanbul") == "istanbul" != fold("ıstanbul")
    assert fold("ＰＡＲＳＥＲ") == "ｐａｒｓｅｒ" != "parser"


def _found(text: str) -> None:
    """Every word FTS5 makes of ``text`` is found in each line spelling ``text``, and,
    spelled otherwise than in plain ASCII, the finder marks a place in it."""
    db = sqlite3.connect(":memory:")
    for word in word_tokens(db, [text])[0]:
        found = spelling(word)
        for line in _lines(text):
            assert found.pattern.search(line), (text, word, line)
            if found.plain is None or found.plain not in line.lower():
                for vectors in (True, False):
                    marks = Unusual(found.pairs, found.escaped, vectors=vectors).positions(line)
                    assert marks, (text, word, line, vectors)


@pytest.mark.parametrize("word", WORDS)
def test_a_word_is_found_however_it_is_written(word: str) -> None:
    for text in {word, word.upper(), word.lower(), word.casefold(), word.title()}:
        if fold(text) == fold(word):
            _found(f"before {text} after")


def test_every_character_that_folds_is_found_for_its_fold() -> None:
    # Each letter FTS5 folds, as the middle of a word, in every writing of the line.
    rng = random.Random(3)
    for code, target in sorted(FOLDS.items()):
        letter = chr(code)
        assert letter in preimages(chr(target))
        before, after = rng.choice("abcXYZ"), rng.choice(["", "q", "ž", "\u0301z"])
        _found(f"{before}{letter}{after}")


def test_dropped_diacritics_between_letters_are_found() -> None:
    for code in sorted(DROPPED):
        _found(f"re{chr(code)}sume")
        _found(f"Ж{chr(code)}{chr(code)}ук")


def test_plain_ascii_and_other_letters_are_not_marked() -> None:
    # Text of no letter of the word's (an em dash, box drawing, emoji, other scripts, the
    # escape of a control character) holds nothing that spells it unusually.
    found = spelling("parser")
    line = json.dumps(
        {"text": "plain — text │ ✓ 🙂 日本 Москва \x1b[31m"}, ensure_ascii=False
    ).encode()
    assert b"\\u001b" in line
    for vectors in (True, False):
        assert Unusual(found.pairs, found.escaped, vectors=vectors).positions(line) == []
    for text in ("pársér", "pa\u0301rser", "PARSÉR"):
        for line in _lines(text):
            assert Unusual(found.pairs, found.escaped).positions(line), line
