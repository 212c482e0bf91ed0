"""How wide picture text is: DejaVu's advance widths, so a box laid out here holds its text.

The tree picture is drawn three ways: as SVG (the browser's fonts), as PNG (Pillow with the
DejaVu faces matplotlib ships) and with matplotlib (DejaVu again). DejaVu Sans is among the
widest of the common sans-serif faces (Helvetica, Arial, Segoe UI and San Francisco all
set the same text narrower), and every common monospace face advances 0.6 em, so text
measured here fits its box in each of them. Widths are in CSS pixels at ``size`` pixels
per em, rounded up to 1/1000 em; sans-serif text gets 4% more, for renderers that hint
glyph advances at small sizes (matplotlib's Agg sets DejaVu Sans about 2% wider). Characters without a table entry count a full em, wide
East Asian ones (``unicodedata.east_asian_width`` W/F) count 1.2 em even in monospace.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from typing import Literal

__all__ = [
    "ASCENT",
    "DESCENT",
    "MONO_ADVANCE",
    "SANS_SLACK",
    "Font",
    "fit",
    "text_width",
    "wrap_lines",
]

Font = Literal["sans", "mono"]

#: Ink above and below the baseline, in em (DejaVu: ascender 0.76, descender 0.24; a
#: little more so that accents and brackets stay inside).
ASCENT = 0.8
DESCENT = 0.25
#: Every monospace face's advance (DejaVu Sans Mono 0.603, Menlo 0.602, SF Mono 0.6).
MONO_ADVANCE = 0.603
#: Room for hinted advances (sans-serif only: monospace advances are whole cells).
SANS_SLACK = 1.04
#: A character not in the tables: a full em (wide symbols, other scripts).
_UNKNOWN = 1.0
_WIDE = 1.2

# Advance widths of DejaVu Sans (regular, bold) for U+0020…U+007E, in 1/1000 em.
_SANS = (
    "318 401 460 838 637 951 780 275 391 391 500 838 318 361 318 337 637 637 637 637 637 637 "
    "637 637 637 637 337 337 838 838 838 531 1000 685 687 699 771 632 576 775 752 295 295 656 "
    "558 863 749 788 604 788 695 635 611 732 685 989 686 611 686 391 337 391 838 500 500 613 "
    "635 550 635 616 353 635 634 278 278 580 278 975 634 612 635 635 412 521 393 634 592 818 "
    "592 592 525 637 337 637 838"
)
_SANS_BOLD = (
    "349 457 521 838 696 1002 873 307 458 458 523 838 380 416 380 366 696 696 696 696 696 696 "
    "696 696 696 696 400 400 838 838 838 581 1000 774 763 734 831 684 684 821 837 373 373 775 "
    "638 996 837 851 733 851 771 721 683 813 774 1104 771 725 726 458 366 458 838 500 500 675 "
    "716 593 716 679 436 716 712 343 343 666 343 1042 712 688 716 716 494 596 479 712 652 924 "
    "646 652 583 712 366 712 838"
)
# The symbols pinb's pictures use (regular, bold), in 1/1000 em.
_SANS_SYMBOLS = {
    "·": (318, 380),
    "…": (1000, 1000),
    "→": (838, 838),
    "←": (838, 838),
    "◀": (770, 770),
    "▶": (770, 770),
    "▲": (770, 770),
    "▼": (770, 770),
    "—": (1000, 1000),
    "–": (500, 500),
    "−": (838, 838),
    "×": (838, 838),
    "≈": (838, 838),
    "⋯": (1000, 1000),
    "⊞": (838, 838),
    "‘": (318, 380),
    "’": (318, 380),
    "“": (519, 658),
    "”": (519, 658),
    "•": (590, 640),
}


@cache
def _table(bold: bool) -> dict[str, float]:
    widths = (_SANS_BOLD if bold else _SANS).split()
    table = {chr(32 + i): int(w) / 1000 for i, w in enumerate(widths)}
    table.update({ch: pair[1 if bold else 0] / 1000 for ch, pair in _SANS_SYMBOLS.items()})
    return table


def _advance(ch: str, font: Font, table: dict[str, float]) -> float:
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return _WIDE
    if unicodedata.combining(ch) or ch in "\u200b\u200c\u200d\ufeff":
        return 0.0
    if font == "mono":
        return MONO_ADVANCE
    return table.get(ch, _UNKNOWN)


def text_width(text: str, size: float, *, font: Font = "sans", bold: bool = False) -> float:
    """Pixels ``text`` takes at ``size`` pixels per em (see the module's note)."""
    table = _table(bold)
    slack = SANS_SLACK if font == "sans" else 1.0
    return sum(_advance(ch, font, table) for ch in text) * size * slack


def fit(text: str, width: float, size: float, *, font: Font = "sans", bold: bool = False) -> str:
    """``text`` cut (ending in ``…``) so that it takes at most ``width`` pixels."""
    if text_width(text, size, font=font, bold=bold) <= width:
        return text
    table = _table(bold)
    room = width / size / (SANS_SLACK if font == "sans" else 1.0) - _advance("…", font, table)
    used = 0.0
    for i, ch in enumerate(text):
        used += _advance(ch, font, table)
        if used > room:
            return text[:i].rstrip() + "…" if room > 0 else ""
    return text  # pragma: no cover - the whole text fitted after all


def wrap_lines(
    text: str, width: float, size: float, *, font: Font = "sans", bold: bool = False
) -> list[str]:
    """``text`` broken between words into lines of at most ``width`` pixels.

    A word wider than a line on its own is cut (``fit``) rather than left to overflow.
    """
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if not line or text_width(candidate, size, font=font, bold=bold) <= width:
            line = candidate
            continue
        lines.append(line)
        line = word
    lines.append(line)
    return [fit(line, width, size, font=font, bold=bold) for line in lines]
