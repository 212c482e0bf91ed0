"""A progress bar for work over many files, shown only once it has taken more than a second.

One callable, ``progress(what, done, total)`` (:data:`pinb.core.listing.Progress`), drawn
on a terminal as one line rewritten in place on standard error, and in a notebook as an
HTML ``<progress>`` element updated in place (``display(..., display_id=True)``). Work that
finishes within the delay shows nothing.
"""

from __future__ import annotations

import html
import sys
import time
from typing import IO, Any

__all__ = ["ProgressBar", "progress_for"]

_WIDTH = 30
_LABELS = {"listing": "reading sessions", "indexing": "building the search index"}


class ProgressBar:
    """``progress(what, done, total)`` as a bar, once the work has run ``after`` seconds.

    Parameters
    ----------
    after:
        Seconds of silence before the bar appears.
    stream:
        Where a terminal bar is drawn (default standard error); ignored in a notebook.
    notebook:
        Draw an HTML bar in the notebook instead of text (default: when IPython's kernel
        is running).
    """

    def __init__(
        self, *, after: float = 1.0, stream: IO[str] | None = None, notebook: bool | None = None
    ) -> None:
        self.after = after
        self.stream = stream if stream is not None else sys.stderr
        self.notebook = _in_notebook() if notebook is None else notebook
        self._started: dict[str, float] = {}
        self._handle: Any = None
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
        label = _LABELS.get(what, what)
        if self.notebook:
            self._draw_html(label, done, total)
        else:
            self._draw_text(label, done, total)
        if done >= total:
            self._finish()

    def _draw_text(self, label: str, done: int, total: int) -> None:
        filled = _WIDTH * done // total if total else _WIDTH
        bar = "#" * filled + "-" * (_WIDTH - filled)
        self.stream.write(f"\r{label}: [{bar}] {done:,}/{total:,} files")
        self.stream.flush()

    def _draw_html(self, label: str, done: int, total: int) -> None:
        from IPython.display import HTML, display

        body = HTML(  # type: ignore[no-untyped-call]
            f"<div>{html.escape(label)}: <progress value='{done}' max='{max(total, 1)}'>"
            f"</progress> {done:,}/{total:,} files</div>"
        )
        if self._handle is None:
            self._handle = display(body, display_id=True)  # type: ignore[no-untyped-call]
        else:
            self._handle.update(body)

    def _finish(self) -> None:
        if not self.notebook:
            self.stream.write("\n")
            self.stream.flush()
        self._shown = False
        self._handle = None
        self._started.clear()


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:  # pragma: no cover - IPython is in the notebook extra
        return False
    return ip is not None and getattr(ip, "kernel", None) is not None


def progress_for(stream: IO[str] | None = None) -> ProgressBar | None:
    """A bar for a terminal or a notebook, or ``None`` where nobody would see one
    (standard error is not a terminal and no kernel runs)."""
    if _in_notebook():
        return ProgressBar(notebook=True)
    out = stream if stream is not None else sys.stderr
    return ProgressBar(stream=out, notebook=False) if out.isatty() else None
