"""A chat message as the reply streams: the model's Markdown through the one policy, whole at the end."""

from __future__ import annotations

from pathlib import Path

from pinb.agent.events import AgentEnd, ModelEvent, ToolEnd, ToolStart
from pinb.agent.tool import ToolContext
from pinb.agent.tools import BashTool
from pinb.chat.transcript import ChatTranscript
from pinb.llm import TextDelta, ToolCallStart
from pinb.render.markdown import markdown_to_markdown

REPLY = (
    "Here is ![the chart][c] and a list:\n\n- one\n- two <img src=x>\n\n"
    "```\n<b>code</b>\n```\n\n[c]: http://203.0.113.7/c.png?d=secret\n"
)


def _streamed(transcript: ChatTranscript, text: str, step: int = 9) -> list[str]:
    shown = []
    for i in range(0, len(text), step):
        transcript.add(ModelEvent(TextDelta(0, text[i : i + step])))
        shown.append(transcript.markdown())
    return shown


def test_a_streamed_reply_never_shows_a_picture_and_ends_whole() -> None:
    transcript = ChatTranscript()
    for shown in _streamed(transcript, REPLY):
        assert "![" not in shown.replace("!\\[", "") and "<img" not in shown
    transcript.add(AgentEnd("stop", []))
    # The definition came last: the final message resolves it, as a whole render does.
    assert transcript.markdown() == markdown_to_markdown(REPLY)
    assert "[image: the chart](http://203.0.113.7/c.png?d=secret)" in transcript.markdown()


def test_text_followed_by_a_tool_call_is_rendered_whole() -> None:
    transcript = ChatTranscript()
    _streamed(transcript, REPLY)
    transcript.add(ModelEvent(ToolCallStart(1, "c1", "ls")))
    assert transcript.markdown().startswith(markdown_to_markdown(REPLY) + "\n\n- `ls`")


def test_a_tool_line_counts_what_the_command_printed_as_the_file_has_it(tmp_path: Path) -> None:
    """``true`` prints nothing: its result in the file is ``(no output)``, and the chat's line
    says so, not "1 line"; a command that prints two lines says 2."""
    transcript = ChatTranscript()
    context = ToolContext(cwd=tmp_path)
    for call_id, command in (("c1", "true"), ("c2", "printf 'a\\nb\\n'")):
        result = BashTool(temp_dir=tmp_path).execute({"command": command}, context)
        transcript.add(ToolStart(call_id, "bash", {"command": command}))
        transcript.add(ToolEnd(call_id, "bash", result))
    shown = transcript.markdown()
    assert "`true` — ✓ no output" in shown, shown
    assert "— ✓ 2 lines" in shown, shown
