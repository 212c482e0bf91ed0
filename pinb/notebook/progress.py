"""The progress bar of :mod:`pinb.render.progress`, drawn in the notebook and updated in place."""

from __future__ import annotations

from typing import Any

from IPython.display import HTML, display

from ..render.progress import ProgressBar, html_bar

__all__ = ["NotebookProgress"]


class NotebookProgress(ProgressBar):
    """An HTML ``<progress>`` bar in the cell's output, shown once the work has run
    ``after`` seconds and updated in place (``display(..., display_id=True)``)."""

    def __init__(self, *, after: float = 1.0) -> None:
        super().__init__(after=after)
        self._handle: Any = None

    def draw(self, what: str, done: int, total: int) -> None:
        body = HTML(html_bar(what, done, total))  # type: ignore[no-untyped-call]
        if self._handle is None:
            self._handle = display(body, display_id=True)  # type: ignore[no-untyped-call]
        else:
            self._handle.update(body)

    def finish(self) -> None:
        self._handle = None
