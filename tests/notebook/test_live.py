"""The streamed transcript and the reply object escape everything the model or a tool wrote."""

from __future__ import annotations

from pinb.agent.events import AgentEnd, CompactionDone, ModelEvent, ToolEnd, ToolStart, TurnStart
from pinb.agent.tool import ToolResult
from pinb.core.entries import Entry
from pinb.core.reports import CompactionReport
from pinb.llm import Retry, TextDelta, ThinkingDelta, ToolCallEnd, ToolCallStart
from pinb.notebook.live import AssistantReply, LiveRun, RunTranscript

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
    """A display function that keeps what each display shows last."""

    def __init__(self) -> None:
        self.last: list[object] = []
        self.chars = 0

    def __call__(self, obj: object, display_id: bool = False) -> object:
        self.last.append(obj)
        self.chars += len(obj._repr_mimebundle_()["text/html"])  # type: ignore[attr-defined]
        index = len(self.last) - 1
        recorder = self

        class Handle:
            def update(self, new: object) -> None:
                recorder.last[index] = new
                recorder.chars += len(new._repr_mimebundle_()["text/html"])  # type: ignore[attr-defined]

        return Handle()


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
    shown = "\n".join(obj.text() for obj in seen.last)  # type: ignore[attr-defined]
    assert shown == live.transcript.text()  # each piece exactly once, in order
    assert "All read." not in shown  # the answer is the cell's value
    for obj in seen.last:
        html = obj._repr_mimebundle_()["text/html"]  # type: ignore[attr-defined]
        _assert_inert(html)
        check_html_survives(html)


def test_the_compaction_note_groups_thousands() -> None:
    from io import StringIO

    from pinb.notebook.terminal import TerminalRun

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
    out = StringIO()
    terminal = TerminalRun(out)
    terminal.add(CompactionDone(report))
    terminal.finish()
    assert "≈30,546 → 29,232 tokens" in out.getvalue()
