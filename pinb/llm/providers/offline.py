"""The offline demo model: a provider that needs no key or network (``--model offline``).

It is not an AI, and every reply says so. It follows a fixed script so notebooks and CI can
show the whole flow — streaming, a tool call, the tool's result, a final answer — without a
key or a network, and the script follows what the prompt asks in the plainest way:

- run the tests or checks: ``bash`` runs ``check.py`` if the folder has one, else pytest;
- a command in backticks that the prompt asks to run: ``bash`` runs it;
- a file named in the prompt: ``read`` it;
- a question about the folder's files: ``ls``;
- anything else: no tool, an answer that says a real model is needed.

The answer after a tool never repeats what the tool just showed (the cell shows it): it
says what came back in a line or two, e.g. how many checks passed and which failed.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Unpack

from pinb.llm.types import CancelToken, RequestFields, RequestOptions, StreamEvent

from ...core.describe import output_lines
from ...core.format.content import content_text
from .scripted import Reply, ScriptedCall, ScriptedLLM

__all__ = ["DEMO_LABEL", "OFFLINE_MODEL", "OFFLINE_WINDOW", "OfflineDemoModel"]

#: Every reply of the demo model starts with this, so nobody mistakes it for a real model.
DEMO_LABEL = "[offline demo model — scripted, not an AI]"

#: ``(provider, modelId)`` the demo model writes into sessions, and its context window: a
#: session it wrote shows this window anywhere (`pinb.llm.window.resolve_window`).
OFFLINE_MODEL = ("pinb", "offline-demo")
OFFLINE_WINDOW = 32_000

_FILE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|txt|toml|json|csv|ipynb|yaml|yml|cfg|ini))\b"
)
_TESTS = re.compile(r"(?i)\b(run|rerun|re-run|execute)\b.{0,40}\b(tests?|checks?|test suite)\b")
_COMMAND = re.compile(r"(?i)\b(run|execute)\b[^`]{0,30}`([^`\n]{1,200})`")
_LISTING = re.compile(r"(?i)\b(what|which|list|show)\b.{0,30}\b(files?|folder|directory)\b")
#: What the demo runs for "run the tests": the project's own check script, else pytest.
TEST_COMMAND = "if [ -f check.py ]; then python3 check.py; else python3 -m pytest -q; fi"


def _intent(prompt: str, tools: set[str]) -> tuple[str, str, dict[str, Any]] | None:
    """``(what it says, tool, arguments)`` for the prompt, or ``None`` for no tool."""
    command = _COMMAND.search(prompt)
    if command and "bash" in tools:
        return f"Running `{command.group(2)}`.", "bash", {"command": command.group(2)}
    if _TESTS.search(prompt) and "bash" in tools:
        return "Running the project's checks.", "bash", {"command": TEST_COMMAND}
    match = _FILE.search(prompt)
    if match and "read" in tools:
        return f"Let me look at `{match.group(1)}` first.", "read", {"path": match.group(1)}
    if _LISTING.search(prompt) and "ls" in tools:
        return "Let me see what is in the project folder.", "ls", {"path": "."}
    return None


def _outcome(tool: str, output: str, is_error: bool) -> str:
    """What a tool's output amounts to, in a line or two, without repeating it."""
    lines = output_lines(output)
    if tool == "bash":
        failed = [
            line.split()[1].rstrip(":")
            for line in lines
            if line.startswith("FAIL ") and len(line.split()) > 1
        ]
        passed = sum(1 for line in lines if line.startswith("ok "))
        status = re.search(r"exited with code (\d+)", output)
        ended = (
            f"it exited with code {status.group(1)}"
            if status
            else ("it failed" if is_error else "it succeeded")
        )
        if failed or passed:
            text = f"{passed} check(s) passed and {len(failed)} failed"
            if failed:
                text += f" ({', '.join(f'`{name}`' for name in failed[:5])})"
            return f"{text}; {ended}."
        if not lines:
            return f"The command printed nothing; {ended}."
        return f"The command printed {len(lines)} line(s); {ended}."
    if tool == "read":
        defs = re.findall(r"^(?:def|class) (\w+)", output, flags=re.M)
        found = f", defining {', '.join(f'`{d}`' for d in defs[:12])}" if defs else ""
        return f"The file has {len(output.splitlines())} line(s){found}."
    if tool == "ls":
        folders = sum(1 for line in lines if line.endswith("/"))
        return f"The folder holds {len(lines) - folders} file(s) and {folders} folder(s)."
    return f"The `{tool}` tool returned {len(lines)} line(s)" + (
        " (an error)." if is_error else "."
    )


class OfflineDemoModel(ScriptedLLM):
    """A :class:`ScriptedLLM` whose replies are computed from the conversation.

    Parameters
    ----------
    use_tools:
        Whether to call a tool before answering (when tools are offered and the prompt
        asks for one).
    """

    def __init__(self, *, use_tools: bool = True, delay: float = 0.0) -> None:
        super().__init__(
            provider=OFFLINE_MODEL[0],
            model=OFFLINE_MODEL[1],
            context_window=OFFLINE_WINDOW,
            window_source="model",
        )
        self.use_tools = use_tools
        self.delay = delay

    def _script(self, call: ScriptedCall) -> Reply:
        messages = call.messages
        last = messages[-1] if messages else {}
        tool_names = {t.name for t in call.options.tools}
        if last.get("role") == "user":
            prompt = content_text(last.get("content"), "")
            intent = _intent(prompt, tool_names) if self.use_tools else None
            if intent is not None:
                said, tool, arguments = intent
                return Reply(
                    text=f"{DEMO_LABEL} {said}", tool_calls=[(tool, arguments)], delay=self.delay
                )
            words = len(prompt.split())
            return Reply(
                text=f"{DEMO_LABEL}\n\nYou asked (in {words} words):\n\n> {prompt.strip()[:500]}\n\n"
                "Configure a real model to get a real answer (see `%pi help`).",
                delay=self.delay,
            )
        if last.get("role") == "toolResult":
            outcome = _outcome(
                str(last.get("toolName")),
                content_text(last.get("content"), ""),
                bool(last.get("isError")),
            )
            return Reply(
                text=f"{DEMO_LABEL} {outcome} The output is above; a real model would now "
                "reason about it (configure one, see `%pi help`).",
                delay=self.delay,
            )
        return Reply(text=f"{DEMO_LABEL} Nothing to do.", delay=self.delay)

    async def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: RequestOptions | None = None,
        *,
        cancel: CancelToken | None = None,
        **fields: Unpack[RequestFields],
    ) -> AsyncIterator[StreamEvent]:
        self.add(self._script)
        async for event in super().astream(messages, options, cancel=cancel, **fields):
            yield event
