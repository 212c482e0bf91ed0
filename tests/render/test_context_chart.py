"""The context over requests, drawn: its figures are the token account's and the views'."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Annotation
from PIL import Image

from pinb.core import CompactionSettings, ExtractiveSummarizer, compact
from pinb.core.context.accounting import context_usage, thousands
from pinb.core.context.tokens import context_tokens_of_usage
from pinb.render import context_chart, draw_context_chart
from pinb.testing.story import EXTRA_TASKS, story_tasks, write_story_session
from pinb.views import CompactionView, ContextChartView
from tests.shells import pi_shell
from tests.views.sanitizers import displayed

WINDOW = 5_000


def _story(folder: Path) -> object:
    return write_story_session(folder, context_window=WINDOW, tasks=story_tasks(extras=EXTRA_TASKS))


def test_every_figure_is_the_accounts_and_the_compaction_views(tmp_path: Path) -> None:
    session = _story(tmp_path)
    chart = context_chart(session, window=WINDOW)
    compactions = [e for e in session.path_to() if e.type == "compaction"]
    assert len(chart.compactions) == len(compactions) >= 1
    leaf = context_usage(session.build_context(), window=WINDOW)
    assert (chart.window, chart.threshold) == (WINDOW, leaf.threshold)
    lines = chart.describe().splitlines()
    assert f"compacting above {thousands(leaf.threshold)}" in lines[0]
    for drawn, entry, line in zip(chart.compactions, compactions, lines[1:], strict=True):
        view = CompactionView(entry.id, session, context_window=WINDOW)
        r = view.report
        assert (drawn.entry_id, drawn.tokens_before) == (entry.id, r.tokens_before)
        assert (drawn.estimated_before, drawn.estimated_after) == (
            r.estimated_before,
            r.estimated_after,
        )
        # The same words as the view's own line: "chars/4 estimate X → Y tokens (saved Z (P%))".
        said = view.to_text().split(": ", 1)[1].split("; ")[0]
        assert said.startswith("chars/4 estimate ") and said in line
        assert f"({drawn.saved_text()})" in said and drawn.saved_text() in drawn.label()
        assert drawn.trigger == "threshold" and r.tokens_before > leaf.threshold
        # Right after it, Pi's own figure at the compaction entry (no usage to trust yet).
        assert drawn.tokens_after == context_usage(session.build_context(entry.id)).tokens
    # Each request's point is the usage its reply reported, as Pi's calculateContextTokens.
    replies = [e for e in session.path_to() if e.role == "assistant"]
    assert [r.entry_id for r in chart.requests] == [e.id for e in replies]
    assert [r.tokens for r in chart.requests] == [
        context_tokens_of_usage(e.message["usage"]) for e in replies
    ]


def test_the_picture_draws_those_figures(tmp_path: Path) -> None:
    chart = context_chart(_story(tmp_path), window=WINDOW)
    figure = draw_context_chart(chart)
    (ax,) = figure.axes
    levels = {line.get_ydata()[0] for line in ax.lines if len(set(line.get_ydata())) == 1}
    assert {WINDOW, chart.threshold} <= levels  # the window and the threshold lines
    drawn = {round(y) for line in ax.lines for y in line.get_ydata()}
    assert {r.tokens for r in chart.requests} <= drawn
    assert {c.tokens_after for c in chart.compactions} <= drawn
    labels = [text.get_text() for text in ax.texts if not isinstance(text, Annotation)]
    assert labels == [c.label() for c in chart.compactions]
    assert all("above the threshold" in label and "saved " in label for label in labels)
    # Each drop is an arrow from Pi's tokensBefore down to its figure right after.
    arrows = [(a.xyann[1], a.xy[1]) for a in ax.texts if isinstance(a, Annotation)]
    assert arrows == [(c.tokens_before, c.tokens_after) for c in chart.compactions]
    _, legend = ax.get_legend_handles_labels()
    assert f"window {thousands(WINDOW)} (setting)" in legend
    assert f"threshold {thousands(chart.threshold)} (window − reserve)" in legend


def test_labels_of_compactions_close_together_are_not_drawn_over_each_other(
    tmp_path: Path,
) -> None:
    session = _story(tmp_path)
    chart = context_chart(session, window=WINDOW)
    gaps = [
        b.after_request - a.after_request
        for a, b in zip(chart.compactions, chart.compactions[1:], strict=False)
    ]
    assert min(gaps) <= 3, gaps  # the story has compactions a few requests apart
    figure = draw_context_chart(chart)
    renderer = FigureCanvasAgg(figure).get_renderer()  # the PNG's own renderer
    figure.draw(renderer)
    boxes = [
        t.get_window_extent(renderer) for t in figure.axes[0].texts if not isinstance(t, Annotation)
    ]
    assert len(boxes) == len(chart.compactions)
    overlaps = [
        (i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes) if i < j and a.overlaps(b)
    ]
    assert overlaps == []


def test_the_view_shows_a_png_and_says_it_in_words(tmp_path: Path) -> None:
    session = _story(tmp_path)
    view = ContextChartView(session, context_window=WINDOW)
    data, metadata = displayed(view)
    assert set(data) == {"text/plain", "image/png"}
    assert data["text/plain"] == view.to_text() == view.chart.describe()
    image = Image.open(io.BytesIO(view.to_png()))
    width, height = metadata["image/png"]["width"], metadata["image/png"]["height"]
    assert image.size == (2 * width, 2 * height) and width >= 600
    # Without a window given, the one rule finds the same window as the compaction view,
    # and the chart says what contradicts it (here: the session's own compactions).
    found = ContextChartView(session)
    compaction = next(e for e in session.path_to() if e.type == "compaction")
    other = CompactionView(compaction.id, session)
    assert (found.chart.window, found.chart.usage.window_source) == (
        other.context_window,
        other.window_source,
    )
    assert other.window_note and other.window_note in found.to_text().splitlines()[0]


def test_a_compaction_by_hand_and_no_window(tmp_path: Path) -> None:
    session = write_story_session(tmp_path)  # no window: no automatic compaction
    compact(session, ExtractiveSummarizer(), settings=CompactionSettings(keep_recent_tokens=400))
    unknown = context_chart(session)
    assert unknown.window is None and unknown.threshold is None
    assert [c.trigger for c in unknown.compactions] == ["recorded"]
    assert "window" not in unknown.describe().splitlines()[0]
    big = context_chart(session, window=200_000)
    assert [c.trigger for c in big.compactions] == ["by hand"]
    assert "by hand (below the threshold)" in big.describe()
    _, legend = draw_context_chart(unknown).axes[0].get_legend_handles_labels()
    assert not [label for label in legend if label.startswith(("window", "threshold"))]
    _, legend = draw_context_chart(big).axes[0].get_legend_handles_labels()
    assert "window 200,000 (setting): above this chart" in legend  # named, not drawn


def test_pi_chart_magic(tmp_path: Path) -> None:
    session = _story(tmp_path)
    with pi_shell(context_window=WINDOW) as ip:  # %config PiMagics.context_window
        ip.run_line_magic("pi", f"open {session.path}")
        view = ip.run_line_magic("pi", "chart")
        assert isinstance(view, ContextChartView)
        assert view.to_text() == ContextChartView(session, context_window=WINDOW).to_text()
        first = view.chart.compactions[0]
        before = ip.run_line_magic("pi", f"chart --leaf {first.entry_id}")
        assert before.chart.compactions == (first,)


def test_an_overflow_compaction_is_labelled_as_one(tmp_path: Path) -> None:
    # A real overflow through the agent: the server's window is smaller than the model's,
    # the reply fails, Pi 1.6's recovery hides it (a context edit) and compacts.
    from pinb.agent import Agent, AgentConfig
    from pinb.core import Session
    from pinb.llm import ModelRegistry, RetryPolicy, get_model
    from pinb.testing.llm_server import LLMServer

    with LLMServer(context_window=3000, overflow_style="sse_error") as server:
        session = Session.create(tmp_path, tmp_path / "s")
        model = get_model(
            "llamacpp/smol",
            base_url=server.openai_base_url,
            registry=ModelRegistry(False),
            context_window=6000,  # the server is smaller than the model thinks
            timeout=5.0,
        )

        async def no_wait(_seconds: float) -> None:  # a retry would not wait in a test
            return None

        config = AgentConfig(
            compaction=CompactionSettings(keep_recent_tokens=300), retry=RetryPolicy(sleep=no_wait)
        )
        agent = Agent(session, model, [], config=config, summarizer=ExtractiveSummarizer())
        for i in range(5):
            server.reply(f"answer {i} " + "a" * 2400, usage={"input": 10, "output": 600})
            agent.prompt(f"question {i}")
        server.reply("short answer")
        agent.prompt("one more question")
    chart = context_chart(session, window=6000)
    assert [c.trigger for c in chart.compactions] == ["overflow"]
    failed = chart.compactions[0].after_request
    assert [r.tokens for r in chart.requests if r.number == failed] == [0]  # not drawn
    assert "after a context overflow" in chart.describe().splitlines()[1]
    assert "compaction 1: after a context overflow" in chart.compactions[0].label()


def test_a_window_far_above_the_session_is_named_not_drawn(tmp_path: Path) -> None:
    # 200,000 tokens of window over a story of 5,000: the line would be flat at the bottom.
    chart = context_chart(write_story_session(tmp_path), window=200_000)
    ax = draw_context_chart(chart).axes[0]
    largest = max(r.tokens for r in chart.requests)
    assert ax.get_ylim()[1] < 2 * largest
    _, legend = ax.get_legend_handles_labels()
    assert "window 200,000 (setting): above this chart" in legend
    assert f"threshold {thousands(chart.threshold)} (window − reserve): above this chart" in legend


def test_a_path_without_replies_draws_the_window_and_says_so() -> None:
    from pinb.core import Session

    session = Session.in_memory("/tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns of a legend with nothing in it
        empty = draw_context_chart(context_chart(session)).axes[0]
    assert empty.get_legend() is None
    assert [t.get_text() for t in empty.texts] == ["no reply with a usage on this path yet"]
    session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    chart = context_chart(session, window=1_000)
    assert chart.describe().startswith("0 requests, 0 compactions · a 1,000-token window")
    _, legend = draw_context_chart(chart).axes[0].get_legend_handles_labels()
    assert "window 1,000 (setting)" in legend
