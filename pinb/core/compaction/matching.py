"""Whether a text still carries a fact: verbatim, paraphrased (a stated normalisation) or lost.

One :class:`TextIndex` is built per text (a compaction's summary, or the messages it kept);
:func:`judge` then decides each fact by its kind's rule, and returns the passage of the text
that matched, so a reader can check the verdict. The rules (:data:`RULES`) are the ones the
docs state; nothing here guesses at meaning no string carries.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache, reduce
from operator import or_
from typing import Any, Final

from .facts import Fact, command_parts
from .words import (
    MAX_FACT_WORDS,
    content_words,
    fact_words,
    identifiers_in,
    normal_identifier,
    numbers_in,
)

__all__ = [
    "MAX_FACT_WORDS",
    "MIN_SHARED_WORDS",
    "PARAPHRASE_OVERLAP",
    "RULES",
    "WINDOW",
    "Match",
    "TextIndex",
    "judge",
]

#: Share of a fact's content words one window of the text must hold to paraphrase it.
PARAPHRASE_OVERLAP: Final = 0.4
#: ... and at least this many of them (all of them when the fact has fewer).
MIN_SHARED_WORDS: Final = 2
#: A window is this many consecutive passages (lines; long lines cut into sentences).
WINDOW: Final = 3
#: A line longer than this is cut into sentences, each its own passage.
_LONG_LINE: Final = 240
#: Up to this many windows every window is compared; beyond, only those holding a word.
_FEW_WINDOWS: Final = 64

_OVERLAP: Final = (
    f"paraphrased: one window of {WINDOW} passages holds at least {PARAPHRASE_OVERLAP:.0%} of "
    f"its content words (at least {MIN_SHARED_WORDS})"
)
#: How each kind is matched, in words (the docs and the views show these).
RULES: Final = {
    "file": "verbatim: the path; paraphrased: the path relative to the session's folder, "
    "its last two or more parts, or its file name",
    "command": "verbatim: the command (whitespace and case aside); paraphrased: its program "
    "and its target in one passage",
    "error": "verbatim: the line; " + _OVERLAP,
    "instruction": "verbatim: the text; " + _OVERLAP,
    "decision": "verbatim: the text; " + _OVERLAP,
    "identifier": "verbatim: the name as written; paraphrased: case, _ and - aside, or its "
    "parts as words",
    "number": "verbatim: the number and unit as written; paraphrased: the same value and unit "
    "(1,100 lines = 1100 lines, 3 seconds = 3 s)",
}

_PATH_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-/")
_SENTENCE: Final = re.compile(r"(?<=[.!?;])\s+(?=\S)")
_SECTION: Final = re.compile(r"^\s*(#{1,6}\s+.+|<[a-z-]+>)\s*$")
_CAMEL_PARTS: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@dataclass(frozen=True)
class Match:
    """A verdict: ``"verbatim"``, ``"paraphrased"`` or ``"lost"``, and its evidence.

    ``evidence`` is the passage that matched (``""`` when lost), ``section`` the heading
    or tag above it (``"## Next Steps"``, ``"<read-files>"``), ``rule`` which rule
    matched, and ``overlap`` the share of content words found, for the overlap rule.
    """

    verdict: str
    evidence: str = ""
    section: str = ""
    rule: str = ""
    overlap: float | None = None


_LOST: Final = Match("lost")


class TextIndex:
    """A text cut into passages, searchable by substring, word, name and number.

    Parameters
    ----------
    text:
        The text (a summary, or the kept messages' text joined by blank lines).
    """

    def __init__(self, text: str) -> None:
        passages: list[str] = []
        sections: list[str] = []
        section = ""
        for raw in text.splitlines():
            line = raw.strip()
            if not line:
                continue
            if _SECTION.match(line):
                section = line
            pieces = _SENTENCE.split(line) if len(line) > _LONG_LINE else [line]
            for piece in pieces:
                passages.append(piece)
                sections.append(section)
        self.passages = passages
        self.sections = sections
        folded = [" ".join(p.split()).casefold() for p in passages]
        self._starts: list[int] = []
        offset = 0
        for p in folded:
            self._starts.append(offset)
            offset += len(p) + 1
        self._folded = "\n".join(folded)
        self._original = "\n".join(passages)
        self._names: dict[str, int] = {}
        self._numbers: dict[tuple[str, str], int] = {}
        # Each word is a bit: a window is the OR of its passages' masks, and the words a
        # window shares with a fact are one AND and a bit count.
        self._bits: dict[str, int] = {}
        masks: list[int] = []
        for i, passage in enumerate(passages):
            mask = 0
            # Pi's file lists carry files (judged as files), not what was said about them.
            listed = sections[i].startswith("<") and sections[i].endswith("-files>")
            for word in () if listed else content_words(passage):
                bit = self._bits.get(word)
                if bit is None:
                    bit = self._bits[word] = 1 << len(self._bits)
                mask |= bit
            masks.append(mask)
            for name in identifiers_in(passage):
                self._names.setdefault(normal_identifier(name), i)
            for _, value in numbers_in(passage):
                self._numbers.setdefault(value, i)
        self._windows: list[int] = []
        for start in range(max(1, len(masks) - WINDOW + 1) if masks else 0):
            window = 0
            for mask in masks[start : start + WINDOW]:
                window |= mask
            self._windows.append(window)
        self._matches: dict[tuple[Any, ...], Match] = {}
        # In a long text, the passages holding each word (by its bit's position).
        self._holding: list[list[int]] = []
        if len(self._windows) > _FEW_WINDOWS:
            self._holding = [[] for _ in self._bits]
            for i, mask in enumerate(masks):
                while mask:
                    low = mask & -mask
                    self._holding[low.bit_length() - 1].append(i)
                    mask ^= low

    def __bool__(self) -> bool:
        return bool(self.passages)

    def _passage_at(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset) - 1

    def find(self, needle: str, *, bounded: bool = True, after_slash: bool = False) -> int:
        """The passage holding ``needle`` (case and whitespace aside), or -1.

        With ``bounded`` the match must not continue a longer word or path on either side;
        ``after_slash`` also accepts it right after a ``/`` (a relative path inside an
        absolute one).
        """
        for offset in _occurrences(self._folded, needle, bounded, after_slash):
            return self._passage_at(offset)
        return -1

    def passages_with(self, needle: str, *, after_slash: bool = False) -> list[int]:
        """Every passage holding ``needle`` (bounded, case and whitespace aside), in order."""
        found = (self._passage_at(o) for o in _occurrences(self._folded, needle, True, after_slash))
        return list(dict.fromkeys(found))

    def holds(self, passage: int, needle: str, *, after_slash: bool = False) -> bool:
        """Whether passage ``passage`` holds ``needle`` (bounded, case and whitespace aside)."""
        start = self._starts[passage]
        end = self._starts[passage + 1] - 1 if passage + 1 < len(self._starts) else None
        text = self._folded[start:end]
        return next(iter(_occurrences(text, needle, True, after_slash)), None) is not None

    def find_exact(self, needle: str) -> int:
        """The passage holding ``needle`` exactly as written (case kept), bounded, or -1."""
        for match in re.finditer(r"(?<![\w.])" + re.escape(needle) + r"(?![\w])", self._original):
            return self._original.count("\n", 0, match.start())
        return -1

    def name(self, normal: str) -> int:
        """The passage naming an identifier whose normal form is ``normal``, or -1."""
        return self._names.get(normal, -1)

    def number(self, value: tuple[str, str]) -> int:
        """The passage holding a number of this value and unit, or -1."""
        return self._numbers.get(value, -1)

    def _mask(self, words: Sequence[str]) -> int:
        return reduce(or_, filter(None, map(self._bits.get, words)), 0)

    def best_window(self, words: Sequence[str]) -> tuple[int, int]:
        """``(shared, first passage)`` of the window of :data:`WINDOW` passages holding most
        of ``words`` (distinct content words); ``(0, -1)`` when none holds any."""
        return self._best(self._mask(words))

    def _best(self, wanted: int) -> tuple[int, int]:
        """:meth:`best_window` of the words whose bits are ``wanted``.

        Only the windows holding one of the words can share any: in a long text they are
        found from each word's passages (the first window with the most is the same one).
        """
        if not wanted:
            return 0, -1
        windows = self._windows
        starts: Sequence[int] = range(len(windows))
        if len(windows) > _FEW_WINDOWS:
            holding = self._holding
            found: set[int] = set()
            bits = wanted
            while bits:
                low = bits & -bits
                found.update(holding[low.bit_length() - 1])
                if len(found) > len(windows) // 2:
                    break
                bits ^= low
            else:
                last = len(windows) - 1
                starts = sorted(
                    {s for p in found for s in range(max(0, p - WINDOW + 1), min(p, last) + 1)}
                )
        counts = [(wanted & windows[start]).bit_count() for start in starts]
        best = max(counts, default=0)
        return (best, starts[counts.index(best)]) if best else (0, -1)

    def could_hold(self, words: Sequence[str], needed: int) -> bool:
        """Whether the whole text holds at least ``needed`` of ``words`` (a quick test)."""
        return self._mask(words).bit_count() >= needed

    def match(self, key: tuple[Any, ...], make: Any) -> Match:
        """The verdict ``key`` stands for, made once per index (verdicts are values)."""
        found = self._matches.get(key)
        if found is None:
            found = self._matches[key] = make()
        return found

    def evidence(self, passage: int, span: int = 1) -> tuple[str, str]:
        """The text of ``span`` passages from ``passage`` and the section above them."""
        shown = " ".join(self.passages[passage : passage + span])
        return shown, self.sections[passage]


@lru_cache(maxsize=1024)
def _folded(needle: str) -> str:
    """``needle`` with its whitespace collapsed, case-folded (a fact is looked for twice)."""
    return " ".join(needle.split()).casefold()


def _occurrences(text: str, needle: str, bounded: bool, after_slash: bool) -> Iterator[int]:
    """Offsets of ``needle`` (whitespace collapsed, case-folded) in folded ``text``."""
    key = _folded(needle)
    if not key:
        return
    start = text.find(key)
    while start >= 0:
        end = start + len(key)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        after_next = text[end + 1] if end + 1 < len(text) else " "
        ok_before = (before not in _PATH_CHARS and before != ".") or (after_slash and before == "/")
        ok_after = after not in _PATH_CHARS and not (after == "." and after_next.isalnum())
        if not bounded or (ok_before and ok_after):
            yield start
        start = text.find(key, start + 1)


def _hit(index: TextIndex, passage: int, verdict: str, rule: str, span: int = 1) -> Match:
    def make() -> Match:
        text, section = index.evidence(passage, span)
        return Match(verdict, text, section, rule)

    return index.match(("hit", passage, verdict, rule, span), make)


def _file(index: TextIndex, path: str, cwd: str | None) -> Match:
    found = index.find(path)
    if found >= 0:
        return _hit(index, found, "verbatim", "the path")
    found = index.find(path, after_slash=True)
    if found >= 0:
        return _hit(index, found, "paraphrased", "the path inside a longer one")
    trimmed = path[2:] if path.startswith("./") else path
    if cwd and trimmed.startswith(cwd.rstrip("/") + "/"):
        relative = trimmed[len(cwd.rstrip("/")) + 1 :]
        found = index.find(relative, after_slash=True)
        if found >= 0:
            return _hit(index, found, "paraphrased", "the path relative to the session's folder")
    parts = [p for p in trimmed.split("/") if p]
    for cut in range(1, len(parts) - 1):
        tail = "/".join(parts[cut:])
        found = index.find(tail, after_slash=True)
        if found >= 0:
            return _hit(index, found, "paraphrased", f"its last {len(parts) - cut} parts")
    if parts:
        found = index.find(parts[-1], after_slash=True)
        if found >= 0:
            return _hit(index, found, "paraphrased", "its file name")
    return _LOST


def _command(index: TextIndex, command: str) -> Match:
    found = index.find(command)
    if found >= 0:
        return _hit(index, found, "verbatim", "the command")
    program, target = command_parts(command)
    if not program:
        return _LOST
    for i in index.passages_with(program):
        if target is None:
            return _hit(index, i, "paraphrased", "its program")
        if index.holds(i, target, after_slash=True) or index.holds(
            i, target.rsplit("/", 1)[-1], after_slash=True
        ):
            return _hit(index, i, "paraphrased", "its program and target")
    return _LOST


def _overlap(index: TextIndex, text: str) -> Match:
    found = index.find(text, bounded=False) if len(text) >= 8 else index.find(text)
    if found >= 0:
        return _hit(index, found, "verbatim", "the text")
    words = fact_words(text)
    if not words:
        return _LOST
    count = len(words)
    needed = max(min(MIN_SHARED_WORDS, count), math.ceil(PARAPHRASE_OVERLAP * count))
    wanted = index._mask(words)
    if wanted.bit_count() < needed:
        return index.match(
            ("few", needed, count),
            lambda: Match("lost", rule=f"fewer than {needed} of its {count} words anywhere"),
        )
    shared, start = index._best(wanted)
    share = round(shared / count, 3)
    if start >= 0 and shared >= needed:

        def paraphrased() -> Match:
            text_shown, section = index.evidence(start, WINDOW)
            rule = f"{shared} of its {count} content words in one window"
            return Match("paraphrased", text_shown, section, rule, share)

        return index.match(("window", start, shared, count), paraphrased)
    return index.match(
        ("best", shared, count),
        lambda: Match("lost", rule=f"best window: {shared} of {count} words", overlap=share),
    )


def _identifier(index: TextIndex, name: str) -> Match:
    found = index.find_exact(name)
    if found >= 0:
        return _hit(index, found, "verbatim", "the name")
    found = index.name(normal_identifier(name))
    if found >= 0:
        return _hit(index, found, "paraphrased", "the name, case, _ and - aside")
    parts = [p.casefold() for p in _CAMEL_PARTS.findall(name.rsplit(".", 1)[-1])]
    if len(parts) >= 2:
        found = index.find(" ".join(parts))
        if found >= 0:
            return _hit(index, found, "paraphrased", "its parts as words")
    return _LOST


def _number(index: TextIndex, written: str) -> Match:
    found = index.find(written)
    if found >= 0:
        return _hit(index, found, "verbatim", "the number as written")
    values = numbers_in(written)
    if values:
        found = index.number(values[0][1])
        if found >= 0:
            return _hit(index, found, "paraphrased", "the same value and unit")
    return _LOST


def judge(fact: Fact, index: TextIndex, *, cwd: str | None = None) -> Match:
    """Whether ``index``'s text keeps ``fact``, by the rule of its kind (:data:`RULES`)."""
    if not index:
        return _LOST
    kind = fact.kind
    if kind == "file":
        return _file(index, fact.text, cwd)
    if kind == "command":
        return _command(index, fact.text)
    if kind == "identifier":
        return _identifier(index, fact.text)
    if kind == "number":
        return _number(index, fact.text)
    return _overlap(index, fact.text)
