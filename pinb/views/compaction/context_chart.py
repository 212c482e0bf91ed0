"""``ContextChartView``: the context over a session's requests as a picture, with its words.

The figures are :func:`pinb.render.context_chart.context_chart`'s (the one token account);
the picture is an ``image/png`` output of its own, which an untrusted notebook shows and
nbconvert keeps, and its ``text/plain`` form says the same in lines, with the figures the
compaction views print.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from ...core import CompactionSettings, Session
from ...core.context.build import UNSET
from ...render.context_chart import ContextChart, context_chart, draw_context_chart
from ...render.html import mimebundle

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ContextChartView"]

#: CSS pixels per inch of the figure: its display size.
_DPI = 100


class ContextChartView:
    """The context request by request: its size, the window, the threshold, each compaction.

    Each point is the context right after an assistant reply, by the usage the reply
    reported (what Pi compares with the threshold); each compaction is a drop, labelled
    with what set it off and what it saved by the chars/4 estimate on both sides (the
    figure :class:`~pinb.views.CompactionView` prints for it).

    Parameters
    ----------
    session:
        The session to draw.
    leaf_id:
        Draw the path to this entry (default: the session's leaf).
    context_window / window_source:
        The window (and where it came from); without one, the window ``session`` last ran
        with, else the registry's entry for its recorded model, else unknown (then no
        window or threshold line is drawn).
    settings / fit:
        The compaction settings whose threshold is drawn, and whether to fit them to the
        window as pinb's agent does (``False``: as the user's own Pi uses them).
    """

    def __init__(
        self,
        session: Session,
        leaf_id: Any = UNSET,
        *,
        context_window: int | None = None,
        window_source: str | None = None,
        settings: CompactionSettings | None = None,
        fit: bool = True,
    ) -> None:
        from ...llm.window import resolve_window  # the LLM layer loads only when needed

        leaf = session.leaf_id if leaf_id is UNSET else leaf_id
        found = resolve_window(
            setting=context_window,
            setting_source=window_source,
            session=session,
            context=session.build_context(leaf),
        )
        #: The figures drawn (requests, compactions, the account at the leaf).
        self.chart: ContextChart = context_chart(
            session,
            leaf,
            window=found.tokens,
            window_source=found.source,
            settings=settings,
            fit=fit,
            window_note=found.note,
        )
        self._png: tuple[bytes, int, int] | None = None

    def to_text(self) -> str:
        """The picture in words: one line for the whole, one per compaction."""
        return self.chart.describe()

    def __repr__(self) -> str:
        return f"<ContextChartView {self.to_text()}>"

    def figure(self, ax: Axes | None = None) -> Figure:
        """The picture as a matplotlib ``Figure`` (on ``ax`` or a new one)."""
        return draw_context_chart(self.chart, ax)

    def to_png(self) -> bytes:
        """The picture as PNG, drawn at twice its display size (sharp on dense screens)."""
        return self._png_data()[0]

    def _png_data(self) -> tuple[bytes, int, int]:
        if self._png is None:
            figure = self.figure()
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=2 * _DPI)
            width, height = figure.get_size_inches()
            self._png = (buffer.getvalue(), round(width * _DPI), round(height * _DPI))
        return self._png

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """``text/plain``; IPython adds ``image/png`` from :meth:`_repr_png_`."""
        return mimebundle(self.to_text(), include=include, exclude=exclude)

    def _repr_png_(self) -> tuple[bytes, dict[str, int]] | None:
        try:
            png, width, height = self._png_data()
        except ImportError:  # no matplotlib: the text still shows
            return None
        return png, {"width": width, "height": height}
