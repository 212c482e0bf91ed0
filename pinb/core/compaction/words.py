"""The words, code names and numbers of a text: one reading for the facts and the matching.

The facts (:mod:`pinb.core.compaction.facts`) use it to decide what is worth a fact, and the
matching (:mod:`pinb.core.compaction.matching`) to compare a fact with a summary's passages.

A word is a ``snake_case`` name kept whole, or a run of letters and digits with an
optional ``'s``-like tail; a content word is one of at least three characters that is not
a stopword, with one suffix stripped (``ing``, ``ed``, ``es``, ``s``), so "fixed", "fixes"
and "fixing" meet "fix".

Speed, not a second rule: in ASCII text no word crosses a character other than a letter,
a digit, ``_`` or ``'``, so the text is cut there at C speed, and only the pieces holding
``_`` or ``'`` go through the one regular expression (other text goes through it whole); a
name starts a whitespace-separated token, so tokens with no sign of one are passed over. The stems of words are
kept in a dictionary (at most :data:`MAX_MEMO` of them), and so are the words of the facts
(:func:`fact_words`), which the facts give and the matching takes.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "MAX_FACT_WORDS",
    "MAX_MEMO",
    "content_words",
    "fact_words",
    "forget_fact_words",
    "has_content_words",
    "identifiers_in",
    "normal_identifier",
    "numbers_in",
    "remember_fact_words",
]


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: A long fact is compared by its first this many distinct content words.
MAX_FACT_WORDS: Final = 40
#: The most stems (and fact word lists) kept; the memo starts again when it is full.
MAX_MEMO: Final = 1 << 17

_STOPWORDS: Final = _word_set(
    "a about above after again against all also am an and any are aren as at be because "
    "been before being below between both but by can could did didn do does doesn doing "
    "don down during each few for from further had has hasn have haven having he her here "
    "hers herself him himself his how i if in into is isn it its itself just let ll me "
    "more most my myself no nor not now of off on once only or other our ours ourselves "
    "out over own re same she should so some such than that the their theirs them "
    "themselves then there these they this those through to too under until up ve very "
    "was wasn we were weren what when where which while who whom why will with won would "
    "you your yours yourself yourselves ok okay yes please thanks thank sure got get use "
    "using used one two also like want need make"
)
_WORD: Final = re.compile(r"_?[a-z0-9]+(?:_[a-z0-9]+)+|[^\W_]+(?:['’][a-z]+)?", re.IGNORECASE)
_SUFFIXES: Final = ("ing", "ed", "es", "s")
#: Every ASCII character that is not a letter or a digit, as a space: the words of plain
#: ASCII text (no ``_``, no ``'``) are then what ``str.split`` gives.
_SEPARATORS: Final = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
#: The same keeping ``_`` and ``'``: no word of ASCII text crosses what it makes a space.
_CHUNKS: Final = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) in "_'")}
)


def _stem(word: str) -> str:
    """A folded word as a content word: lightly stemmed, or ``""`` for a stopword."""
    if "'" in word or "’" in word:
        word = word.replace("’", "'").split("'", 1)[0]
    if len(word) < 3 or word in _STOPWORDS:
        return ""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


class _Stems(dict[str, str]):
    """word -> :func:`_stem` of it, computed on first use (``map(stems.__getitem__, …)``)."""

    def __missing__(self, word: str) -> str:
        if len(self) >= MAX_MEMO:
            self.clear()
        stem = self[word] = _stem(word)
        return stem


_STEMS: Final = _Stems()
_stem_of = _STEMS.__getitem__


def _ascii_words(text: str) -> list[str]:
    """The words of ASCII ``text`` (``_WORD`` over its lower case, at C speed where it can)."""
    low = text.lower()
    if "_" not in low and "'" not in low:
        return low.translate(_SEPARATORS).split()
    words: list[str] = []
    for chunk in low.translate(_CHUNKS).split():
        if "_" in chunk or "'" in chunk:
            words += _WORD.findall(chunk)
        else:
            words.append(chunk)
    return words


def content_words(text: str) -> list[str]:
    """The content words of ``text``, case-folded and lightly stemmed, in order, repeats kept.

    Stopwords, words of fewer than three characters and one-digit numbers are left out;
    ``snake_case`` names stay one word.
    """
    words = _ascii_words(text) if text.isascii() else _WORD.findall(text.casefold())
    return list(filter(None, map(_stem_of, words)))


def has_content_words(text: str, count: int = 3) -> bool:
    """Whether ``text`` has at least ``count`` content words (stops reading when it has)."""
    found = 0
    if text.isascii():  # ASCII folds alike before and after it is cut into words
        for stem in map(_stem_of, _ascii_words(text)):
            if stem:
                found += 1
                if found >= count:
                    return True
        return False
    for match in _WORD.finditer(text):
        if _stem_of(match.group(0).casefold()):
            found += 1
            if found >= count:
                return True
    return False


_FACT_WORDS: Final[dict[str, tuple[str, ...]]] = {}


def fact_words(text: str) -> tuple[str, ...]:
    """The first :data:`MAX_FACT_WORDS` distinct content words of a fact's text."""
    words = _FACT_WORDS.get(text)
    if words is None:
        words = tuple(dict.fromkeys(content_words(text)))[:MAX_FACT_WORDS]
        remember_fact_words(text, words)
    return words


def remember_fact_words(text: str, words: tuple[str, ...]) -> None:
    """Keep :func:`fact_words` of ``text`` (the facts know them when they make the fact)."""
    if len(_FACT_WORDS) >= MAX_MEMO:
        _FACT_WORDS.clear()
    _FACT_WORDS[text] = words


def forget_fact_words() -> None:
    """Let the kept :func:`fact_words` go: a walk over many spans calls it after each one
    is judged (a later span's facts are other texts), so they never pile up."""
    _FACT_WORDS.clear()


# -- names and numbers ---------------------------------------------------------------------

_IDENT: Final = re.compile(
    r"(?<![\w./\\-])(?=[\w.]*(?:[a-z0-9][A-Z]|[A-Z]{2}[a-z]|[A-Za-z0-9]_|_[A-Za-z]|\.[A-Za-z_]))"
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?![\w/\\-])"
)
_MAYBE_IDENT: Final = re.compile(
    r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]|[A-Za-z0-9]_|_[A-Za-z]|\w\.[A-Za-z_]"
)
_CAMEL: Final = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_EXTENSIONS: Final = _word_set(
    "py ts tsx js jsx mjs cjs json jsonl md txt toml yaml yml ini cfg rs go java c h cpp "
    "hpp cs rb php sh css html xml lock log csv sql ipynb svg png jpg"
)


def _is_identifier(word: str) -> bool:
    if len(word) < 4 or word.isdigit():
        return False
    if "." in word:
        parts = word.split(".")
        if parts[-1].lower() in _EXTENSIONS or any(not p for p in parts):
            return False  # a file name, not a name in code
        return all(p[0].isalpha() or p[0] == "_" for p in parts)
    core = word.strip("_")
    if "_" in core:
        return any(c.isalpha() for c in core)
    if word.startswith("_") and len(core) >= 3:
        return True
    return bool(_CAMEL.search(word)) and not word.isupper()


#: Punctuation around a token: it holds no name's sign (a dot there ends a sentence).
_EDGES: Final = "\"'`([{<*,;:!?)]}>."


def identifiers_in(text: str) -> list[str]:
    """The code-like names of ``text`` (see the module docstring), in order.

    A name starts where no name, path or option character precedes it, so each
    whitespace-separated token is read on its own; a token in lower case (or capitalised)
    with no ``_`` and no inner ``.`` holds none and is passed over.
    """
    if ("_" not in text and "." not in text and text.islower()) or not _MAYBE_IDENT.search(text):
        return []  # most prose has no name: quick scans first
    found: list[str] = []
    for token in text.split():
        if "_" not in token:
            core = token.strip(_EDGES)
            if "." not in core and (
                not core or core.islower() or (core[0].isupper() and core[1:].islower())
            ):
                continue
        for match in _IDENT.finditer(token):
            name = match.group(0)
            if _is_identifier(name):
                found.append(name)
    return found


def normal_identifier(name: str) -> str:
    """``AgentSession``, ``agent_session`` and ``agent-session`` all as ``agentsession``."""
    return re.sub(r"[_\-]", "", name.rsplit(".", 1)[-1]).casefold()


#: Each unit's one name, and the spellings it is written with.
_UNIT_SPELLINGS: Final = {
    "%": "% percent",
    "ms": "ms millisecond milliseconds",
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
    "µs": "µs us",
    "ns": "ns",
    "B": "b byte bytes",
    "KB": "kb kib",
    "MB": "mb mib",
    "GB": "gb gib",
    "TB": "tb",
    "k": "k",
    "×": "x ×",
    "tokens": "token tokens",
    "lines": "line lines",
    "files": "file files",
    "tests": "test tests",
    "entries": "entry entries",
    "errors": "error errors",
    "failures": "failure failures",
    "passed": "passed",
    "failed": "failed",
    "warnings": "warning warnings",
    "chars": "char chars character characters",
    "rows": "row rows",
    "calls": "call calls",
    "sessions": "session sessions",
    "compactions": "compaction compactions",
    "steps": "step steps",
    "items": "item items",
    "commits": "commit commits",
    "px": "px",
    "MHz": "mhz",
    "GHz": "ghz",
    "B/s": "byte/s",
    "req/s": "req/s",
    "ops/s": "ops/s",
    "loc": "loc kloc",
}
#: Unit spellings (lower case) and the one name each is compared by.
_UNITS: Final = {word: name for name, words in _UNIT_SPELLINGS.items() for word in words.split()}
_UNIT_PATTERN: Final = "|".join(
    re.escape(u) for u in sorted(_UNITS, key=len, reverse=True) if u not in ("%", "×")
)
_NUMBER: Final = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:\s?(%|×)|\s?(" + _UNIT_PATTERN + r")\b)",
    re.IGNORECASE,
)


_DIGIT: Final = re.compile(r"\d")


def numbers_in(text: str) -> list[tuple[str, tuple[str, str]]]:
    """``(as written, (value, unit))`` for each number with a unit in ``text``.

    The value loses its thousands separators and the unit takes one name
    (``"1,100 lines"`` and ``"1100 line"`` are both ``("1100", "lines")``).
    """
    found: list[tuple[str, tuple[str, str]]] = []
    if not _DIGIT.search(text):
        return found
    for match in _NUMBER.finditer(text):
        whole, fraction, symbol, word = match.groups()
        unit = _UNITS.get((symbol or word).lower(), "")
        if not unit:
            continue
        value = whole.replace(",", "") + (fraction or "")
        found.append((match.group(0), (value, unit)))
    return found
