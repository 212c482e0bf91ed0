"""The streamed transcript and the reply object escape everything the model or a tool wrote;
the live display shows the whole run, and an event costs the same however many came before."""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from pinb.agent import transcript as transcript_module
from pinb.agent.events import (
    AgentEnd,
    CompactionDone,
    ModelEvent,
    Notice,
    RetryScheduled,
    ToolEnd,
    ToolStart,
    ToolUpdate,
    TurnStart,
)
from pinb.agent.tool import ToolResult
from pinb.core.compaction.reports import CompactionReport
from pinb.core.format.entries import Entry
from pinb.llm import Retry, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from pinb.notebook import live as live_module
from pinb.notebook import terminal as terminal_module
from pinb.notebook.live import SEGMENT_CHARS, AssistantReply, LiveRun, RunTranscript
from pinb.notebook.terminal import TerminalRun
from pinb.render import html as html_module

PAYLOAD = '<script>alert(1)</script><img src=x onerror=alert(2)>"><svg onload=alert(3)>'


def _events() -> list[object]:
    entry = Entry({"type": "message", "id": "x", "parentId": None, "timestamp": "t", "message": {}})
    report = CompactionReport(
        None,
        PAYLOAD,
        "x",
        10,
        before_by_role={"user": 10},
        after_by_role={"user": 5},
        reason="threshold",
    )
    return [
        TurnStart(1),
        ModelEvent(ThinkingDelta(0, PAYLOAD)),
        ModelEvent(TextDelta(1, "**bold** " + PAYLOAD)),
        ModelEvent(ToolCallStart(2, "c1", "bash" + PAYLOAD)),
        ModelEvent(ToolCallEnd(2, "c1", "bash", {"command": PAYLOAD})),
        ModelEvent(Retry(1, 3, 2.0, PAYLOAD)),
        ToolStart("c1", "bash", {"command": PAYLOAD}),
        ToolEnd("c1", "bash", ToolResult.text(PAYLOAD, is_error=True), entry),
        CompactionDone(report),
        AgentEnd(
            "stop",
            [{"role": "assistant", "content": [{"type": "text", "text": PAYLOAD}], "usage": {}}],
        ),
    ]


def _assert_inert(html: str) -> None:
    lowered = html.lower()
    for tag in ("<script", "<img", "<svg"):  # attributes inside escaped text are inert
        assert tag not in lowered
    assert "&lt;script&gt;" in html


def test_transcript_html_escapes_every_field() -> None:
    transcript = RunTranscript()
    for event in _events():
        transcript.add(event)  # type: ignore[arg-type]
    bundle = transcript._repr_mimebundle_()
    _assert_inert(bundle["text/html"])
    assert "<strong>bold</strong>" in bundle["text/html"]  # Markdown still works
    assert PAYLOAD in bundle["text/plain"]  # plain text keeps the words as they were


def test_reply_html_escapes_the_answer() -> None:
    end = _events()[-1]
    reply = AssistantReply(end)  # type: ignore[arg-type]
    _assert_inert(reply._repr_mimebundle_()["text/html"])


def test_live_run_updates_one_display_and_hides_the_final_answer() -> None:
    shown: list[object] = []

    class Handle:
        def update(self, obj: object) -> None:
            shown.append(obj)

    def display(obj: object, display_id: bool = False) -> Handle:
        shown.append(obj)
        return Handle()

    live = LiveRun(display, interval=0)
    for event in _events():
        live.add(event)  # type: ignore[arg-type]
    live.finish()
    final = live.transcript.text()
    assert "**bold**" not in final  # the answer is the cell's value, not repeated here
    assert "bash" in final and len(shown) > 2


def test_a_retry_is_shown_at_once_not_at_the_next_throttled_update() -> None:
    from pinb.agent.events import RetryScheduled

    shown: list[str] = []

    class Handle:
        def update(self, obj: RunTranscript) -> None:
            shown.append(obj.text())

    def display(obj: RunTranscript, display_id: bool = False) -> Handle:
        shown.append(obj.text())
        return Handle()

    live = LiveRun(display, interval=60)  # nothing else would be shown for a minute
    live.add(TurnStart(1))
    live.add(ModelEvent(TextDelta(0, "partial")))
    live.add(RetryScheduled(1, 3, 8.0, "Connection lost\nsecond line"))
    assert shown[-1].endswith("· retrying in 8 s (retry 1 of 3): Connection lost")


def test_a_saved_run_reads_the_same_untrusted_and_converted() -> None:
    # The saved output of a %%pi cell, opened untrusted or through nbconvert's sanitizer:
    # no tag may be dropped or shown as text (the old <details> and <style> were).
    from tests.views.sanitizers import check_html_survives, jupyterlab_mime

    transcript = RunTranscript()
    for event in _events():
        transcript.add(event)  # type: ignore[arg-type]
    reply = AssistantReply(_events()[-1])  # type: ignore[arg-type]
    for bundle in (transcript._repr_mimebundle_(), reply._repr_mimebundle_()):
        check_html_survives(bundle["text/html"])
        assert jupyterlab_mime(bundle) == "text/html"
    html = transcript._repr_mimebundle_()["text/html"]
    assert "thinking (" in html and "bash" in html and "— error" in html


def _tool_reply(calls: int) -> list[object]:
    entry = Entry({"type": "message", "id": "x", "parentId": None, "timestamp": "t", "message": {}})
    events: list[object] = [TurnStart(1), ModelEvent(TextDelta(0, "Reading them all."))]
    for n in range(calls):
        events.append(ModelEvent(ToolCallStart(n, f"c{n}", "read")))
        events.append(ModelEvent(ToolCallEnd(n, f"c{n}", "read", {"path": f"f{n}.txt"})))
    for n in range(calls):
        events.append(ToolStart(f"c{n}", "read", {"path": f"f{n}.txt"}))
        events.append(ToolEnd(f"c{n}", "read", ToolResult.text(f"body {n} " + PAYLOAD), entry))
    events += [TurnStart(2), ModelEvent(TextDelta(0, "All read.")), AgentEnd("stop", [])]
    return events


class _Recorder:
    """A display function that keeps what each display shows last, and the size of each
    update's HTML."""

    def __init__(self) -> None:
        self.last: list[Any] = []
        self.chars = 0
        self.sizes: list[int] = []

    def _shown(self, obj: Any) -> None:
        self.sizes.append(len(obj._repr_mimebundle_()["text/html"]))
        self.chars += self.sizes[-1]

    def __call__(self, obj: Any, display_id: bool = False) -> object:
        self.last.append(obj)
        self._shown(obj)
        index = len(self.last) - 1
        recorder = self

        class Handle:
            def update(self, new: Any) -> None:
                recorder.last[index] = new
                recorder._shown(new)

        return Handle()

    def whole(self) -> str:
        """The text of all the displays, top to bottom (empty ones left out)."""
        return "\n".join(text for obj in self.last if (text := obj.text()))

    def latest(self) -> str:
        return str(self.last[-1].text())


def _play(calls: int) -> tuple[LiveRun, _Recorder]:
    recorder = _Recorder()
    live = LiveRun(recorder, interval=0)
    for event in _tool_reply(calls):
        live.add(event)  # type: ignore[arg-type]
    live.finish()
    return live, recorder


def test_the_html_published_grows_linearly_with_the_run() -> None:
    small, _ = _play(100)
    large, large_seen = _play(400)
    assert large.published_chars == large_seen.chars  # the counter is what was shown
    # every event is shown (interval 0): quadratic growth would make this ratio 16
    assert large.published_chars / small.published_chars < 5
    assert large.updates > 800


def test_the_displays_together_show_the_whole_run_once_and_inert() -> None:
    from tests.views.sanitizers import check_html_survives

    live, seen = _play(60)
    assert len(seen.last) > 1  # the run went on in new displays
    shown = "\n".join(obj.text() for obj in seen.last)
    assert shown == live.transcript.text()  # each piece exactly once, in order
    assert "All read." not in shown  # the answer is the cell's value
    for obj in seen.last:
        html = obj._repr_mimebundle_()["text/html"]
        _assert_inert(html)
        check_html_survives(html)


def test_the_compaction_note_groups_thousands() -> None:
    report = CompactionReport(
        None,
        "summary",
        "x",
        30_546,
        before_by_role={"user": 30_546},
        after_by_role={"user": 29_232},
        reason="threshold",
    )
    transcript = RunTranscript()
    transcript.add(CompactionDone(report))
    assert transcript.notes == [
        "compacted (threshold): 0 entries summarized, ≈30,546 → 29,232 tokens"
    ]
    out = io.StringIO()
    terminal = TerminalRun(out)
    terminal.add(CompactionDone(report))
    terminal.finish()
    assert "≈30,546 → 29,232 tokens" in out.getvalue()


# -- the cost of an event does not grow with the run --------------------------------------


def _ticks() -> Callable[[], float]:
    """A clock a second further at each reading: the live display shows every event."""
    return itertools.count(0.0, 1.0).__next__


#: The transcript the events go into, and the code that draws it.
_DISPLAY_CODE = {
    transcript_module.__file__,
    live_module.__file__,
    terminal_module.__file__,
    html_module.__file__,
}


class _LineCounter:
    """Counts the lines of pinb's display code run: the work an event costs, measured
    without a clock (the same on any machine, under any load)."""

    def __init__(self) -> None:
        self.lines = 0

    def _enter(self, frame: FrameType, event: str, arg: object) -> Any:
        return self._line if frame.f_code.co_filename in _DISPLAY_CODE else None

    def _line(self, frame: FrameType, event: str, arg: object) -> Any:
        self.lines += event == "line"
        return self._line

    def run(self, call: Callable[[], None]) -> int:
        before = self.lines
        previous = sys.gettrace()
        sys.settrace(self._enter)
        try:
            call()
        finally:
            sys.settrace(previous)
        return self.lines - before


def _work_per_event(run: LiveRun | TerminalRun, calls: int, window: int = 64) -> dict[str, float]:
    """Lines run per event for the last ``window`` calls of a reply with ``calls`` read-only
    calls, in the built-in agent's order: while they stream, start, and end."""
    events: list[object] = [TurnStart(1), ModelEvent(TextDelta(0, "Reading them all."))]
    for n in range(calls):
        events += [
            ModelEvent(ToolCallStart(n, f"c{n}", "read")),
            ModelEvent(ToolCallDelta(n, f"c{n}", '{"path": ')),
            ModelEvent(ToolCallEnd(n, f"c{n}", "read", {"path": f"f{n}.txt"})),
        ]
    phases = {"streamed": (len(events) - 3 * window, len(events))}
    events += [ToolStart(f"c{n}", "read", {"path": f"f{n}.txt"}) for n in range(calls)]
    phases["started"] = (len(events) - window, len(events))
    events += [ToolEnd(f"c{n}", "read", ToolResult.text(f"body {n}")) for n in range(calls)]
    phases["ended"] = (len(events) - window, len(events))
    counter = _LineCounter()
    work = dict.fromkeys(phases, 0.0)
    for i, event in enumerate(events):
        phase = next((p for p, (a, b) in phases.items() if a <= i < b), None)
        if phase is None:
            run.add(event)  # type: ignore[arg-type]
        else:
            work[phase] += counter.run(lambda e=event: run.add(e))  # type: ignore[misc]
    return {p: work[p] / (b - a) for p, (a, b) in phases.items()}


@pytest.mark.parametrize("kind", ["live", "terminal"])
def test_an_event_costs_the_same_after_100_or_10000_tool_calls(kind: str) -> None:
    # An adversarial run found the live display quadratic: a call was looked for through
    # all calls before it, and the line counting the calls not drawn walked all of them.
    def display() -> LiveRun | TerminalRun:
        if kind == "terminal":
            return TerminalRun(io.StringIO())
        return LiveRun(_Recorder(), clock=_ticks())

    shallow = _work_per_event(display(), 100)
    deep = _work_per_event(display(), 10_000)
    assert all(lines > 0 for lines in shallow.values())  # the probe sees the display's code
    for phase, lines in shallow.items():
        assert deep[phase] < 1.25 * lines + 20, (phase, shallow, deep)


def _usage(tokens_in: int, tokens_out: int) -> dict[str, object]:
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "cost": {"total": 0.0},
    }


def test_a_reply_with_2000_tool_calls_ends_shown_whole() -> None:
    recorder = _Recorder()
    live = LiveRun(recorder, clock=_ticks())  # every event shown: the most updates
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": [], "usage": _usage(1_200, 20)},
        {"role": "assistant", "content": [{"type": "text", "text": "All read."}],
         "usage": _usage(51_000, 3)},
    ]  # fmt: skip
    end = AgentEnd("stop", messages)
    for event in [*_tool_reply(2000)[:-1], end]:
        live.add(event)  # type: ignore[arg-type]
    live.finish()
    whole = recorder.whole()
    assert whole == live.transcript.text()  # each piece once, in order
    assert whole.startswith("Reading them all.")
    assert whole.count("→ read(") == 2000 and whole.count("← body ") == 2000
    for n in (0, 1, 1998, 1999):
        assert f'→ read({{"path": "f{n}.txt"}})\n← body {n} <script>' in whole
    assert "more tool calls" not in whole  # the live display's counting line is gone
    assert "All read." not in whole  # the answer is the cell's value, with the footer
    for obj in recorder.last:
        _assert_inert(obj._repr_mimebundle_()["text/html"])
    # While it ran, no update carried much more than one segment: finished calls were
    # published for good as it went.
    assert max(recorder.sizes) < 3 * SEGMENT_CHARS
    reply = AssistantReply(end)._repr_mimebundle_()
    assert reply["text/plain"].startswith("All read.\n\nthis run (2 requests): input 52,200 ·")
    assert "output 23 · $0.0000" in reply["text/html"]


# -- what the display shows ---------------------------------------------------------------


def _calls(ids: list[str], name: str = "read") -> list[object]:
    events: list[object] = []
    for n, call_id in enumerate(ids):
        events.append(ModelEvent(ToolCallStart(n, call_id, name)))
        events.append(ModelEvent(ToolCallEnd(n, call_id, name, {"path": f"{call_id}.txt"})))
    return events


def _feed(live: LiveRun | RunTranscript, events: list[object]) -> None:
    for event in events:
        live.add(event)  # type: ignore[arg-type]


def test_a_call_id_used_again_in_a_later_turn_is_a_new_call() -> None:
    # Servers that send no ids get ``call_0`` in every reply (the scripted model ``call_1``):
    # the second turn's call once replaced the first turn's, and the second showed none.
    transcript = RunTranscript()
    for turn, path in ((1, "a.txt"), (2, "b.txt")):
        _feed(transcript, [
            TurnStart(turn),
            ModelEvent(TextDelta(0, f"turn {turn}")),
            ModelEvent(ToolCallStart(1, "call_1", "read")),
            ModelEvent(ToolCallEnd(1, "call_1", "read", {"path": path})),
            ToolStart("call_1", "read", {"path": path}),
            ToolEnd("call_1", "read", ToolResult.text(f"body of {path}")),
        ])  # fmt: skip
    _feed(transcript, [TurnStart(3), ModelEvent(TextDelta(0, "done")), AgentEnd("stop", [])])
    assert transcript.text().split("\n") == [
        "turn 1",
        '→ read({"path": "a.txt"})',
        "← body of a.txt",
        "turn 2",
        '→ read({"path": "b.txt"})',
        "← body of b.txt",
        "done",
    ]


def test_a_long_reply_is_published_whole_once_its_tool_calls_run() -> None:
    recorder = _Recorder()
    live = LiveRun(recorder, clock=_ticks())
    reply = "".join(f"word {n} " for n in range(4000))  # longer than STREAM_PREVIEW
    _feed(live, [TurnStart(1), *(ModelEvent(TextDelta(0, reply[i : i + 500]))
                                 for i in range(0, len(reply), 500))])  # fmt: skip
    assert "characters so far" in recorder.latest()  # while it streams, only its end
    _feed(live, [*_calls(["c1"]), ToolStart("c1", "read", {"path": "c1.txt"})])
    _feed(live, [ToolEnd("c1", "read", ToolResult.text("body")), TurnStart(2)])
    _feed(live, [ModelEvent(TextDelta(0, "Done.")), AgentEnd("stop", [])])
    live.finish()
    # It was once published for good as the preview of its end.
    assert recorder.whole() == f'{reply}\n→ read({{"path": "c1.txt"}})\n← body'


def test_partial_results_show_as_they_come_and_only_the_final_one_stays() -> None:
    recorder = _Recorder()
    live = LiveRun(recorder, clock=_ticks(), segment_chars=500)  # publishes at once
    _feed(live, [TurnStart(1), *_calls(["c1"], "bash"), ToolStart("c1", "bash", {})])
    live.add(ToolUpdate("c1", "bash", ToolResult.text("line 1")))
    assert "line 1" in recorder.latest()
    live.add(ToolUpdate("c1", "bash", ToolResult.text("line 1\nline 2")))
    assert "line 2" in recorder.latest()  # a second partial result was not redrawn
    live.add(ToolEnd("c1", "bash", ToolResult.text("line 1\nline 2\nexit 0")))
    _feed(live, [TurnStart(2), ModelEvent(TextDelta(0, "ok")), AgentEnd("stop", [])])
    live.finish()
    # A partial result once counted as finished: it was published for good, running.
    assert recorder.whole() == "→ bash({})\n← line 1\n  line 2\n  exit 0"


def test_calls_a_failed_reply_never_ran_do_not_hold_the_display_back() -> None:
    # They never end, so nothing after them was published for good: every update
    # carried the rest of the run.
    recorder = _Recorder()
    live = LiveRun(recorder, clock=_ticks())
    _feed(live, [TurnStart(1), *_calls([f"cut{n}" for n in range(20)])])
    _feed(live, [RetryScheduled(1, 3, 2.0, "Connection lost"), *_tool_reply(300)])
    live.finish()
    assert max(recorder.sizes) < 3 * SEGMENT_CHARS
    whole = recorder.whole()
    assert whole == live.transcript.text()
    assert '→ read({"path": "cut19.txt"})\n· retrying in 2 s' in whole
    assert "← body 299 " in whole


def test_calls_ended_behind_a_running_one_are_counted_until_it_ends() -> None:
    # The user's Pi may end later calls first; they cannot be published for good above
    # the one still running, and drawing them all made each update longer.
    recorder = _Recorder()
    live = LiveRun(recorder, clock=_ticks())
    ids = [f"c{n}" for n in range(300)]
    _feed(live, [TurnStart(1), ModelEvent(TextDelta(0, "Reading.")), *_calls(ids)])
    _feed(live, [ToolStart(i, "read", {"path": f"{i}.txt"}) for i in ids])
    _feed(live, [ToolEnd(i, "read", ToolResult.text(f"body {i}")) for i in ids[1:]])
    assert max(recorder.sizes) < 3 * SEGMENT_CHARS
    latest = recorder.latest()
    assert latest.startswith('→ read({"path": "c0.txt"})\n→ read({"path": "c1.txt"})\n← body c1')
    assert latest.endswith(" more tool calls (read ×" + latest.rsplit("×", 1)[1])
    live.add(ToolEnd("c0", "read", ToolResult.text("body c0")))
    _feed(live, [TurnStart(2), ModelEvent(TextDelta(0, "Done.")), AgentEnd("stop", [])])
    live.finish()
    whole = recorder.whole()
    assert whole == live.transcript.text() and whole.count("← body c") == 300


def test_a_live_display_shows_the_last_notes_and_the_end_all_of_them() -> None:
    recorder = _Recorder()
    live = LiveRun(recorder, clock=_ticks())
    _feed(live, [TurnStart(1), ModelEvent(TextDelta(0, "Working."))])
    _feed(live, [Notice(f"extension says {n}") for n in range(500)])
    assert recorder.latest().split("\n")[1:3] == [
        "· … 492 earlier notes",
        "· extension says 492",
    ]
    assert max(recorder.sizes) < SEGMENT_CHARS
    _feed(live, [AgentEnd("stop", [])])
    live.finish()
    assert recorder.whole().split("\n") == [f"· extension says {n}" for n in range(500)]


def test_the_terminal_prints_the_start_of_a_long_result_on_one_line() -> None:
    out = io.StringIO()
    run = TerminalRun(out)
    body = "  first\n\n  words " + "x" * 300 + " " + "tail \n" * 200_000
    run.add(ToolEnd("c1", "bash", ToolResult.text(body)))
    assert out.getvalue() == "← " + ("first words " + "x" * 300)[:199] + "…\n"
