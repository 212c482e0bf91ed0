"""Summarizers for compaction and branch summaries: with a model, or offline (spec §7.5, §8.3).

A summarizer turns a serialized conversation into the structured checkpoint Pi uses, with
the same section headings. :class:`ModelSummarizer` asks any object with a ``complete``
method (``pinb.llm`` models, ``pinb.testing.ScriptedLLM``); :class:`ExtractiveSummarizer`
needs no model and builds the sections from the messages themselves.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol, runtime_checkable

from ...errors import CompactionError, SummaryCutError
from ..format.content import content_text
from ..js.jsontext import value_text

__all__ = [
    "BRANCH_INSTRUCTIONS",
    "HISTORY_INSTRUCTIONS",
    "SUMMARIZER_SYSTEM_PROMPT",
    "TURN_PREFIX_INSTRUCTIONS",
    "UPDATE_INSTRUCTIONS",
    "ExtractiveSummarizer",
    "ModelSummarizer",
    "Summarizer",
    "SummaryKind",
    "build_prompt",
]

SummaryKind = Literal["history", "turn_prefix", "branch"]

SUMMARIZER_SYSTEM_PROMPT: Final = (
    "You condense conversations between a user and an AI coding assistant into structured "
    "notes that another model will read to carry on the work. Reply with the summary only, "
    "in the requested format. Do not answer questions from the conversation, do not continue "
    "it, and do not add commentary."
)

_SECTIONS: Final = """## Goal
[What the user is trying to achieve; several goals as a short list]

## Constraints & Preferences
- [Requirements, conventions and preferences the user stated, or "(none)"]

## Progress
### Done
- [x] [Finished work]

### In Progress
- [ ] [Work underway]

### Blocked
- [Open problems, if any]

## Key Decisions
- **[Decision]**: [Why it was made]

## Next Steps
1. [What should happen next, in order]
"""

HISTORY_INSTRUCTIONS: Final = (
    "The messages above are a conversation to condense. Write a checkpoint that lets another "
    "model resume the work without the conversation, using exactly this layout:\n\n"
    + _SECTIONS
    + "\n## Critical Context\n- [Facts needed to continue: data, error messages, references, "
    'or "(none)"]\n\n'
    "Keep every section brief. Copy file paths, function names and error messages exactly."
)

UPDATE_INSTRUCTIONS: Final = (
    "The messages above are new since the checkpoint in <previous-summary>. Merge them into "
    "that checkpoint:\n"
    "- keep everything from the previous checkpoint that still holds;\n"
    "- add new progress, decisions and context;\n"
    "- move items from In Progress to Done once they are finished;\n"
    "- rewrite Next Steps from what was just done;\n"
    "- drop only what is clearly obsolete, and keep identifiers exact.\n\n"
    "Use exactly this layout:\n\n"
    + _SECTIONS
    + '\n## Critical Context\n- [Facts needed to continue, or "(none)"]\n\n'
    "Keep every section brief. Copy file paths, function names and error messages exactly."
)

TURN_PREFIX_INSTRUCTIONS: Final = (
    "The messages above are the first part of one turn that was too long to keep whole; its "
    "later part is kept verbatim after this summary. Summarize the first part so the kept part "
    "makes sense:\n\n"
    "## Original Request\n[What the user asked for in this turn]\n\n"
    "## Progress So Far\n- [Decisions made and work done in the first part]\n\n"
    "## Context Needed to Continue\n- [What is needed to understand the kept part]\n\n"
    "Only summarize what the messages above say; do not invent the later part."
)

BRANCH_INSTRUCTIONS: Final = (
    "The messages above are a branch of the conversation that the user is now leaving. "
    "Summarize it so the work can be picked up later, using exactly this layout:\n\n"
    + _SECTIONS
    + "\nKeep every section brief. Copy file paths, function names and error messages exactly."
)


def build_prompt(
    conversation: str,
    *,
    kind: SummaryKind = "history",
    previous_summary: str | None = None,
    instructions: str | None = None,
    replace_instructions: bool = False,
) -> str:
    """The user prompt Pi sends for a summary: the conversation, then what to do with it."""
    prompt = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if kind == "turn_prefix":
        base = TURN_PREFIX_INSTRUCTIONS
    elif kind == "branch":
        if instructions and replace_instructions:
            return prompt + instructions
        base = BRANCH_INSTRUCTIONS
    else:
        if previous_summary is not None:
            prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
        base = UPDATE_INSTRUCTIONS if previous_summary is not None else HISTORY_INSTRUCTIONS
    if instructions:
        base += f"\n\nAdditional focus: {instructions}"
    return prompt + base


@runtime_checkable
class Summarizer(Protocol):
    """Turns a serialized conversation into summary text.

    ``messages`` (the model messages behind ``conversation``) is passed when available,
    for summarizers that work on structure rather than text.
    """

    name: str

    def summarize(
        self,
        conversation: str,
        *,
        previous_summary: str | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
        kind: SummaryKind = "history",
        replace_instructions: bool = False,
        messages: Sequence[Any] | None = None,
    ) -> str: ...


class ModelSummarizer:
    """Summaries written by a model: Pi's prompts, initial or update mode, custom focus.

    Parameters
    ----------
    model:
        Anything with ``complete(messages, *, system_prompt, max_tokens, thinking_level)``
        returning a Pi assistant message (``pinb.llm`` models, ``ScriptedLLM``).
    thinking_level:
        Reasoning effort for history summaries (Pi v0.58.3 asks for ``high`` when the model
        reasons); turn-prefix and branch summaries use none.
    """

    def __init__(self, model: Any, *, thinking_level: str | None = None) -> None:
        self.model = model
        info = getattr(model, "info", None)
        reasons = bool(getattr(info, "reasoning", False))
        self.thinking_level = thinking_level or ("high" if reasons else "off")
        model_id = getattr(info, "id", None) or getattr(model, "name", None) or type(model).__name__
        self.name = str(model_id)

    def summarize(
        self,
        conversation: str,
        *,
        previous_summary: str | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
        kind: SummaryKind = "history",
        replace_instructions: bool = False,
        messages: Sequence[Any] | None = None,
    ) -> str:
        prompt = build_prompt(
            conversation,
            kind=kind,
            previous_summary=previous_summary,
            instructions=instructions,
            replace_instructions=replace_instructions,
        )
        request = [
            {
                "role": "user",
                "content": [{"type": "text", "text": prompt}],
                "timestamp": int(time.time() * 1000),
            }
        ]
        reply = self.model.complete(
            request,
            system_prompt=SUMMARIZER_SYSTEM_PROMPT,
            max_tokens=max_tokens,
            thinking_level=self.thinking_level if kind == "history" else "off",
        )
        stop = reply.get("stopReason")
        what = "Turn prefix summarization" if kind == "turn_prefix" else "Summarization"
        if stop in ("error", "aborted"):
            raise CompactionError(f"{what} failed: {reply.get('errorMessage') or stop}")
        if stop == "length":
            # A cut-off summary must not become the checkpoint the model continues from.
            raise SummaryCutError(
                f"{what} failed: the reply hit the output token limit and is incomplete"
            )
        if any(
            isinstance(b, dict) and b.get("type") == "toolCall" for b in reply.get("content", [])
        ):
            raise CompactionError(f"{what} failed: the model tried to call a tool")
        return "\n".join(
            block.get("text", "")
            for block in reply.get("content", [])
            if isinstance(block, dict) and block.get("type") == "text"
        )


# ---------------------------------------------------------------------------------------
# Offline extractive summarizer
# ---------------------------------------------------------------------------------------

EXTRACTIVE_NOTICE: Final = (
    "(Extractive summary: assembled offline from the messages themselves, without a model.)"
)

_CONSTRAINT = re.compile(
    r"\b(must|mustn't|should|shouldn't|don't|do not|never|always|prefer|avoid|only|"
    r"without|keep|make sure|please use|use)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|decide|instead|chose|choose|going with|i'll use|we'll use|let's use|switch(ed)? to)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _describe_call(name: str, arguments: dict[str, Any]) -> str:
    if "path" in arguments and isinstance(arguments["path"], str):
        verb = {"read": "read", "write": "wrote", "edit": "edited", "ls": "listed"}.get(name, name)
        return f"{verb} `{arguments['path']}`"
    if name == "bash" and isinstance(arguments.get("command"), str):
        return f"ran `{_clip(arguments['command'], 80)}`"
    if isinstance(arguments.get("pattern"), str):
        return f"{name} `{_clip(arguments['pattern'], 60)}`"
    return f"called `{name}`"


def _unique(items: list[str], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    values = list(seen)
    return values[-limit:]


def _previous_sections(summary: str | None) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    if not summary:
        return sections
    current = None
    for line in summary.splitlines():
        heading = re.match(r"#{2,3} (.+)", line)
        if heading:
            current = heading.group(1).strip()
            sections.setdefault(current, [])
        elif current and line.strip() and line.strip() != "(none)" and not line.startswith("<"):
            sections[current].append(line.rstrip())
    return sections


def _parse_serialized(conversation: str) -> list[dict[str, Any]]:
    """Recover rough messages from ``serialize_conversation`` text (when no messages given)."""
    messages: list[dict[str, Any]] = []
    for block in re.split(
        r"\n\n(?=\[(?:User|Assistant|Assistant thinking|Assistant tool calls|Tool result)\]: )",
        conversation,
    ):
        match = re.match(
            r"\[(User|Assistant|Assistant thinking|Assistant tool calls|Tool result)\]: ", block
        )
        if not match:
            continue
        body = block[match.end() :]
        role = {"User": "user", "Tool result": "toolResult"}.get(match.group(1), "assistant")
        if match.group(1) == "Assistant" or role != "assistant":
            messages.append({"role": role, "content": [{"type": "text", "text": body}]})
    return messages


#: Output cap of the extractive summarizer when the caller sets none.
_EXTRACTIVE_MAX_TOKENS: Final = 4096


_FAILURE = re.compile(
    r"(?i)\b(fail\w*|error\w*|exception|traceback|denied|not found|exited with)\b"
)


def _failure_line(text: str) -> str:
    """The line of a failed tool result that says what failed.

    A failing check run prints its passing tests first ("ok test_x"): the blocker is the
    first line naming a failure, else the last line (often the exit code), never a pass.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "error"
    found = next((line for line in lines if _FAILURE.search(line)), lines[-1])
    return _clip(found, 140)


class ExtractiveSummarizer:
    """A deterministic summary built from the messages, with no model call.

    It fills Pi's sections: the goal from the first user request, constraints from the
    user's wording, done / in-progress / blocked from tool calls and their results, key
    decisions from the assistant's wording, next steps from the latest request. Its first
    line says that it is extractive. For teaching, CI and cheap compaction.
    """

    name = "offline-extractive"

    def __init__(self, *, max_items: int = 12) -> None:
        self.max_items = max_items

    def summarize(
        self,
        conversation: str,
        *,
        previous_summary: str | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
        kind: SummaryKind = "history",
        replace_instructions: bool = False,
        messages: Sequence[Any] | None = None,
    ) -> str:
        items = [
            m
            for m in (messages if messages is not None else _parse_serialized(conversation))
            if isinstance(m, dict)
        ]
        facts = self._extract(items)
        previous = _previous_sections(previous_summary)
        if kind == "turn_prefix":
            text = self._turn_prefix(facts)
        else:
            text = self._checkpoint(facts, previous, critical=kind == "history")
        if instructions:
            text += f"\n\n(Requested focus, not applied by the extractive summarizer: {_clip(instructions, 200)})"
        limit = (max_tokens or _EXTRACTIVE_MAX_TOKENS) * 4
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def _extract(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        user_texts = [
            content_text(m.get("content"))
            for m in messages
            if m.get("role") == "user" and content_text(m.get("content")).strip()
        ]
        requests = [
            t
            for t in user_texts
            if not t.startswith(("Ran `", "The conversation history", "The following is a summary"))
        ]
        calls: dict[str, str] = {}
        done: list[str] = []
        failed: dict[str, str] = {}  # the latest failure of each call, until it succeeds
        decisions: list[str] = []
        errors: list[str] = []
        answered_after_last_request = False
        for message in messages:
            role = message.get("role")
            if role == "user" and content_text(message.get("content")) in requests:
                answered_after_last_request = False
            if role == "assistant":
                text = content_text(message.get("content"))
                if text.strip():
                    answered_after_last_request = True
                    for sentence in _SENTENCE.split(text):
                        if _DECISION.search(sentence) and len(sentence) > 12:
                            decisions.append(_clip(sentence, 160))
                for block in message.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "toolCall":
                        raw_arguments = block.get("arguments")
                        arguments = raw_arguments if isinstance(raw_arguments, dict) else {}
                        calls[value_text(block.get("id"))] = _describe_call(
                            value_text(block.get("name")), arguments
                        )
                if message.get("stopReason") == "error" and message.get("errorMessage"):
                    errors.append(_clip(str(message["errorMessage"]), 200))
            elif role == "toolResult":
                described = (
                    calls.pop(value_text(message.get("toolCallId")), None)
                    or f"called `{message.get('toolName')}`"
                )
                if message.get("isError"):
                    reason = _failure_line(content_text(message.get("content")))
                    failed.pop(described, None)  # the latest failure last
                    failed[described] = f"{described}: {reason}"
                    errors.append(f"{described}: {reason}")
                else:
                    failed.pop(described, None)  # the same call succeeded since: not blocked
                    done.append(described)
        constraints = [
            _clip(sentence, 160)
            for text in requests
            for sentence in _SENTENCE.split(text)
            if _CONSTRAINT.search(sentence) and len(sentence.strip()) > 8
        ]
        return {
            "goal": requests[0] if requests else "",
            "latest": requests[-1] if requests else "",
            "answered": answered_after_last_request,
            "constraints": constraints,
            "done": done,
            "pending": list(calls.values()),
            "failed": list(failed.values()),
            "decisions": decisions,
            "errors": errors,
        }

    def _checkpoint(
        self, facts: dict[str, Any], previous: dict[str, list[str]], *, critical: bool
    ) -> str:
        n = self.max_items

        def merged(section: str, new: list[str], prefix: str) -> list[str]:
            old = [
                line for line in previous.get(section, []) if line.startswith(prefix.split(" ")[0])
            ]
            return _unique(old + [f"{prefix}{item}" for item in new], n)

        goal = previous.get("Goal") or (
            [_clip(facts["goal"], 400)] if facts["goal"] else ["(not stated)"]
        )
        lines = [EXTRACTIVE_NOTICE, "", "## Goal", *goal, "", "## Constraints & Preferences"]
        lines += merged("Constraints & Preferences", facts["constraints"], "- ") or ["(none)"]
        lines += ["", "## Progress", "### Done"]
        lines += merged("Done", facts["done"], "- [x] ") or ["(none)"]
        lines += ["", "### In Progress"]
        lines += _unique([f"- [ ] {item}" for item in facts["pending"]], n) or ["(none)"]
        lines += ["", "### Blocked"]
        lines += _unique([f"- {item}" for item in facts["failed"]], n) or ["(none)"]
        lines += ["", "## Key Decisions"]
        lines += merged("Key Decisions", [f"**Noted**: {d}" for d in facts["decisions"]], "- ") or [
            "(none)"
        ]
        lines += ["", "## Next Steps"]
        if facts["latest"] and not facts["answered"]:
            lines.append(f"1. Answer the latest request: {_clip(facts['latest'], 300)}")
        elif facts["pending"] or facts["failed"]:
            lines.append("1. Finish the work in progress and resolve what is blocked.")
        else:
            lines.append(
                f"1. Continue from the latest request: {_clip(facts['latest'], 300) or '(none)'}"
            )
        if critical:
            lines += ["", "## Critical Context"]
            lines += merged("Critical Context", facts["errors"], "- ") or ["(none)"]
        return "\n".join(lines)

    def _turn_prefix(self, facts: dict[str, Any]) -> str:
        lines = [
            EXTRACTIVE_NOTICE,
            "",
            "## Original Request",
            _clip(facts["goal"], 400) or "(not stated)",
        ]
        lines += ["", "## Progress So Far"]
        lines += _unique([f"- {item}" for item in facts["done"]], self.max_items) or ["(none)"]
        lines += ["", "## Context Needed to Continue"]
        context = [f"- {item}" for item in facts["pending"] + facts["failed"]]
        lines += _unique(context, self.max_items) or ["(none)"]
        return "\n".join(lines)
