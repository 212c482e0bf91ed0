"""A progress bar for work over many files, shown only once it has taken more than a second.

One callable, ``progress(what, done, total)`` (:data:`pinb.core.file.listing.Progress`). Here it
is drawn on a terminal as one line rewritten in place on standard error;
:func:`html_bar` is the same bar as HTML, which the notebook draws in place
(``pinb.notebook.progress``). Work that finishes within the delay shows nothing.
"""

from __future__ import annotations

import sys
import time
from typing import IO

from .html import escape

__all__ = ["ProgressBar", "html_bar", "progress_for"]

_WIDTH = 30
_LABELS = {"listing": "reading sessions", "indexing": "building the search index"}


def _label(what: str) -> str:
    return _LABELS.get(what, what)


def html_bar(what: str, done: int, total: int) -> str:
    """The bar as sanitizer-safe HTML (a ``<progress>`` element and its count)."""
    return (
        f"<div>{escape(_label(what))}: <progress value='{done}' max='{max(total, 1)}'>"
        f"</progress> {done:,}/{total:,} files</div>"
    )


class ProgressBar:
    """``progress(what, done, total)`` as a bar, once the work has run ``after`` seconds.

    Parameters
    ----------
    after:
        Seconds of silence before the bar appears.
    stream:
        Where the bar is drawn (default standard error).
    """

    def __init__(self, *, after: float = 1.0, stream: IO[str] | None = None) -> None:
        self.after = after
        self.stream = stream if stream is not None else sys.stderr
        self._started: dict[str, float] = {}
        self._shown = False
        self._last = 0.0

    def __call__(self, what: str, done: int, total: int) -> None:
        now = time.monotonic()
        started = self._started.setdefault(what, now)
        if not self._shown and now - started < self.after and done < total:
            return
        if self._shown and done < total and now - self._last < 0.1:
            return  # at most ten redraws a second
        self._shown = True
        self._last = now
        self.draw(what, done, total)
        if done >= total:
            self.finish()
            self._shown = False
            self._started.clear()

    def draw(self, what: str, done: int, total: int) -> None:
        """Draw the bar (one line, rewritten in place)."""
        filled = _WIDTH * done // total if total else _WIDTH
        bar = "#" * filled + "-" * (_WIDTH - filled)
        self.stream.write(f"\r{_label(what)}: [{bar}] {done:,}/{total:,} files")
        self.stream.flush()

    def finish(self) -> None:
        """End the bar once the work is done."""
        self.stream.write("\n")
        self.stream.flush()


def progress_for(stream: IO[str] | None = None) -> ProgressBar | None:
    """A terminal bar, or ``None`` when ``stream`` (standard error) is not a terminal."""
    out = stream if stream is not None else sys.stderr
    return ProgressBar(stream=out) if out.isatty() else None
