"""The run's transcript model: events folded into turns, calls, notes and steps, as every front end reads them."""

from __future__ import annotations

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
    UsageEstimated,
)
from pinb.agent.tool import ToolResult
from pinb.agent.transcript import (
    CHANGES,
    Step,
    StreamedText,
    Transcript,
    compaction_line,
    result_text,
)
from pinb.core.compaction.reports import CompactionReport
from pinb.core.format.entries import Entry
from pinb.llm import Retry, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallEnd, ToolCallStart


def _feed(run: Transcript, events: list[object]) -> list[str]:
    """Feed ``events``; the kind of change each made (``-`` for none)."""
    kinds = []
    for event in events:
        change = run.add(event)  # type: ignore[arg-type]
        kinds.append("-" if change is None else change.kind)
    return kinds


def _report() -> CompactionReport:
    return CompactionReport(
        None,
        "summary",
        "x",
        30_546,
        before_by_role={"user": 30_546},
        after_by_role={"user": 29_232},
        reason="threshold",
    )


def test_streamed_text_keeps_every_piece_in_order_across_chunks() -> None:
    text = StreamedText()
    pieces = [f"{n:04d}" * 50 for n in range(60)]  # 200 characters each: many chunks
    for piece in pieces:
        text.add(piece)
    text.add("")
    whole = "".join(pieces)
    assert text.chars == len(whole) == 12_000
    for size in (1, 199, 200, 201, 1_024, 5_000, 11_999):
        assert text.tail(size) == whole[-size:], size
    assert text.tail(20_000) == whole
    assert text.value() == whole
    text.add("end")  # it goes on growing after being read whole
    assert text.value() == whole + "end"
    assert text.tail(5) == whole[-2:] + "end"
    assert bool(text) and not StreamedText()


def test_result_text_reads_text_blocks_and_names_images() -> None:
    content = [
        {"type": "text", "text": "first"},
        {"type": "image", "mimeType": "image/png", "data": "AAAA"},
        {"type": "thinking", "thinking": "not a result's"},
        {"type": "text", "text": "last"},
    ]
    assert result_text(content) == "first\n[image image/png]\nlast"
    assert result_text([]) == ""


def test_a_turn_folds_text_thinking_and_a_call_with_its_result() -> None:
    run = Transcript()
    kinds = _feed(
        run,
        [
            TurnStart(1),
            ModelEvent(ThinkingDelta(0, "Which file? ")),
            ModelEvent(ThinkingDelta(0, "The list.")),
            ModelEvent(TextDelta(1, "Looking")),
            ModelEvent(TextDelta(1, " now.")),
            ModelEvent(ToolCallStart(2, "c1", "ls")),
            ModelEvent(ToolCallDelta(2, "c1", '{"path"')),
            ModelEvent(ToolCallDelta(2, "c1", ': "."}')),
            ModelEvent(ToolCallEnd(2, "c1", "ls", {"path": "."})),
            ToolStart("c1", "ls", {"path": "."}),
            ToolUpdate("c1", "ls", ToolResult.text("a.py")),
            ToolEnd("c1", "ls", ToolResult.text("a.py\nb.py")),
        ],
    )
    assert kinds == [
        "turn",
        "thinking",
        "thinking",
        "text",
        "text",
        "call",
        "arguments",
        "arguments",
        "call-end",
        "tool-start",
        "tool-update",
        "tool-end",
    ]
    assert set(kinds) <= set(CHANGES)
    (turn,) = run.turns
    assert turn.index == 0
    assert turn.thinking.value() == "Which file? The list."
    assert turn.text.value() == "Looking now."
    (tool,) = turn.tools
    assert (tool.call_id, tool.name, tool.turn) == ("c1", "ls", 0)
    assert tool.arguments_text.value() == '{"path": "."}'
    assert tool.arguments == {"path": "."}
    assert tool.result == "a.py\nb.py"
    assert (tool.state, tool.done, tool.running, tool.began) == ("done", True, False, True)
    assert turn.began == 1
    assert run.running_tools == 0
    assert run.steps == [Step("text", 0, 0), Step("tool", 0, 0)]


def test_a_call_is_asked_then_running_then_done_or_failed_and_its_version_counts_changes() -> None:
    run = Transcript()
    run.add(TurnStart(1))
    asked = run.add(ModelEvent(ToolCallStart(0, "c1", "bash")))
    assert asked is not None and asked.tool is not None
    tool = asked.tool
    states = [(tool.state, tool.version)]
    run.add(ModelEvent(ToolCallEnd(0, "c1", "bash", {"command": "false"})))
    states.append((tool.state, tool.version))
    run.add(ToolStart("c1", "bash", {"command": "false"}))
    states.append((tool.state, tool.version))
    assert run.running_tools == 1
    run.add(ToolStart("c1", "bash", {"command": "false"}))  # a repeated start counts once
    assert run.running_tools == 1
    run.add(ToolEnd("c1", "bash", ToolResult.error("exit code 1")))
    states.append((tool.state, tool.version))
    assert states == [("asked", 0), ("asked", 1), ("running", 2), ("failed", 4)]
    assert (tool.result, tool.is_error, run.running_tools) == ("exit code 1", True, 0)


def test_a_reused_call_id_in_a_later_turn_is_a_new_call() -> None:
    """A server that sends no ids gets ``call_0`` in every reply: each reply's is its own."""
    run = Transcript()
    _feed(
        run,
        [
            TurnStart(1),
            ModelEvent(ToolCallStart(0, "call_0", "ls")),
            ModelEvent(ToolCallEnd(0, "call_0", "ls", {})),
            ToolStart("call_0", "ls", {}),
            ToolEnd("call_0", "ls", ToolResult.text("first")),
            TurnStart(2),
            ModelEvent(ToolCallStart(0, "call_0", "read")),
            ModelEvent(ToolCallEnd(0, "call_0", "read", {"path": "a"})),
            ToolStart("call_0", "read", {"path": "a"}),
            ToolEnd("call_0", "read", ToolResult.text("second")),
        ],
    )
    first, second = (turn.tools for turn in run.turns)
    assert [(t.name, t.turn, t.result) for t in first] == [("ls", 0, "first")]
    assert [(t.name, t.turn, t.result) for t in second] == [("read", 1, "second")]


def test_a_running_call_of_an_earlier_turn_keeps_its_result() -> None:
    """A call that started and has not ended is still the one its id names, in a later turn."""
    run = Transcript()
    _feed(run, [TurnStart(1), ToolStart("c1", "bash", {}), TurnStart(2)])
    change = run.add(ToolEnd("c1", "bash", ToolResult.text("done")))
    assert change is not None and change.turn is run.turns[0]
    assert run.turns[0].tools[0].result == "done"
    assert run.turns[1].tools == []


def test_a_tool_event_without_the_models_call_makes_a_call_in_the_current_turn() -> None:
    """The user's Pi reports a tool start that no streamed call announced."""
    run = Transcript()
    run.add(ToolStart("p1", "read", {"path": "x"}))
    (turn,) = run.turns
    assert turn.index == 0
    (tool,) = turn.tools
    assert (tool.name, tool.arguments, tool.state) == ("read", {"path": "x"}, "running")


def test_steps_keep_the_order_text_calls_and_notes_came_in() -> None:
    run = Transcript()
    run.note("read 2 notes first")
    _feed(
        run,
        [
            TurnStart(1),
            ModelEvent(TextDelta(0, "One")),
            ModelEvent(TextDelta(0, "")),  # an empty piece is no stretch of its own
            ModelEvent(ToolCallStart(1, "c1", "ls")),
            ModelEvent(TextDelta(2, "Two")),
            ModelEvent(TextDelta(2, ", three")),
            ModelEvent(Retry(1, 3, 2.0, "overloaded")),
            ModelEvent(TextDelta(3, "Four")),
            Notice("saved"),
            TurnStart(2),
            ModelEvent(TextDelta(0, "Five")),
        ],
    )
    assert run.steps == [
        Step("run-note", -1, 0),
        Step("text", 0, 0),
        Step("tool", 0, 0),
        Step("text", 0, 1),
        Step("note", 0, 0),
        Step("text", 0, 2),
        Step("run-note", -1, 1),
        Step("text", 1, 0),
    ]
    first, second = run.turns
    assert [first.text_part(n) for n in range(3)] == ["One", "Two, three", "Four"]
    assert first.text.value() == "OneTwo, threeFour"
    assert second.text_part(0) == "Five"
    assert run.notes == ["read 2 notes first", "saved"]
    assert first.notes == ["retrying in 2 s (retry 1 of 3): overloaded"]


def test_notes_say_what_a_retry_and_a_compaction_did() -> None:
    run = Transcript()
    kinds = _feed(
        run,
        [
            TurnStart(1),
            RetryScheduled(2, 3, 4.0, "rate limited"),
            CompactionDone(_report()),
            Notice("the model stopped"),
        ],
    )
    assert kinds == ["turn", "retry", "compaction", "notice"]
    assert run.turns[0].notes == ["retrying in 4 s (retry 2 of 3): rate limited"]
    assert run.notes == [
        "compacted (threshold): 0 entries summarized, ≈30,546 → 29,232 tokens",
        "the model stopped",
    ]
    assert compaction_line(_report()) == run.notes[0]


def test_the_end_is_kept_and_ends_thinking_and_bookkeeping_events_change_nothing() -> None:
    run = Transcript()
    entry = Entry({"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}})
    kinds = _feed(
        run,
        [
            TurnStart(1),
            ModelEvent(ThinkingDelta(0, "hm")),
            UsageEstimated(entry, {"input": 5}),
            ModelEvent(object()),  # a model event no front end shows
        ],
    )
    assert kinds == ["turn", "thinking", "-", "-"]
    assert run.thinking is False  # the last model event was not thinking
    run.add(ModelEvent(ThinkingDelta(0, " more")))
    assert run.thinking is True
    end = AgentEnd("error", error="the server closed the stream")
    assert run.add(end) is not None
    assert (run.end, run.thinking) == (end, False)
    assert run.turns[0].thinking.value() == "hm more"
