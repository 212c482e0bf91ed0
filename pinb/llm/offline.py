"""The offline demo model: a provider that needs no key or network (``--model offline``).

It is not an AI. It follows a fixed script so notebooks and CI can show the whole flow —
streaming, a tool call, the tool's result, a final answer — without a key or a network:
for a new prompt it looks around with one tool (``read`` for a file named in the prompt,
else ``ls``), then answers by quoting what the tool returned. (Was ``pinb.testing.demo``.)
"""

from __future__ import annotations

import re
from typing import Any

from .scripted import Reply, ScriptedCall, ScriptedLLM

__all__ = ["DEMO_LABEL", "OfflineDemoModel"]

#: Every reply of the demo model starts with this, so nobody mistakes it for a real model.
DEMO_LABEL = "[offline demo model — scripted, not an AI]"

_FILE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|txt|toml|json|csv|ipynb|yaml|yml|cfg|ini))\b"
)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


class OfflineDemoModel(ScriptedLLM):
    """A :class:`ScriptedLLM` whose replies are computed from the conversation.

    Parameters
    ----------
    use_tools:
        Whether to call a tool before answering (when tools are offered).
    """

    def __init__(self, *, use_tools: bool = True, delay: float = 0.0) -> None:
        super().__init__(provider="pinb", model="offline-demo", context_window=32_000)
        self.use_tools = use_tools
        self.delay = delay

    def _script(self, call: ScriptedCall) -> Reply:
        messages = call.messages
        last = messages[-1] if messages else {}
        tool_names = {t.name for t in call.tools}
        if last.get("role") == "user":
            prompt = _text(last)
            match = _FILE.search(prompt)
            if self.use_tools and match and "read" in tool_names:
                return Reply(
                    text=f"{DEMO_LABEL} Let me look at `{match.group(1)}` first.",
                    tool_calls=[("read", {"path": match.group(1)})],
                    delay=self.delay,
                )
            if self.use_tools and "ls" in tool_names:
                return Reply(
                    text=f"{DEMO_LABEL} Let me see what is in the project folder.",
                    tool_calls=[("ls", {"path": "."})],
                    delay=self.delay,
                )
            words = len(prompt.split())
            return Reply(
                text=f"{DEMO_LABEL}\n\nYou asked (in {words} words):\n\n> {prompt.strip()[:500]}\n\n"
                "Configure a real model to get a real answer (see `%pi help`).",
                delay=self.delay,
            )
        if last.get("role") == "toolResult":
            output = _text(last).strip()
            lines = output.splitlines()
            shown = "\n".join(lines[:15]) + ("\n…" if len(lines) > 15 else "")
            return Reply(
                text=f"{DEMO_LABEL}\n\nThe `{last.get('toolName')}` tool returned {len(lines)} line(s):\n\n"
                f"```\n{shown}\n```\n\nA real model would now reason about this; "
                "configure one to continue (see `%pi help`).",
                delay=self.delay,
            )
        return Reply(text=f"{DEMO_LABEL} Nothing to do.", delay=self.delay)

    async def astream(self, messages: Any, **options: Any) -> Any:
        self.add(self._script)
        async for event in super().astream(messages, **options):
            yield event
