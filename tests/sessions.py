"""Hand-written Pi session files for the tests: every rule of the format, as bytes on disk.

Each case is a small file written for one reading or context rule (branches, compactions,
context edits, system messages, legacy versions, broken lines, cycles...). The tests need
nothing outside the project: what Pi makes of these files comes from Pi itself (the
harness in ``tests/pi``), what pinb makes of them from pinb.

``CASES`` maps a case name to a function returning the file's bytes; ``write_case``
writes one into a folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinb.testing import messages

__all__ = ["CASES", "Builder", "assistant", "user", "write_case"]

USAGE = {
    "input": 100,
    "output": 20,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 120,
    "cost": {"input": 0.0003, "output": 0.0003, "cacheRead": 0, "cacheWrite": 0, "total": 0.0006},
}
ZERO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
BASE_MS = 1_740_823_200_000  # 2025-03-01T10:00:00Z


def _iso(second: int) -> str:
    minutes, seconds = divmod(second, 60)
    return f"2025-03-01T10:{minutes:02d}:{seconds:02d}.000Z"


def user(text: Any, ts: int = 0) -> dict[str, Any]:
    # A string stays the content itself (Pi's other shape of a user message).
    return messages.user(text, ts=BASE_MS + ts * 1000, block=False)


def assistant(
    text: str | None = "ok",
    *,
    thinking: str | None = None,
    calls: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
    usage: dict[str, Any] | None = None,
    total: int | None = None,
    stop: str | None = None,
    ts: int = 0,
    model: str = "claude-sonnet-4-5",
    provider: str = "anthropic",
    error: str | None = None,
) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if thinking is not None:
        blocks.append({"type": "thinking", "thinking": thinking, "thinkingSignature": "sig"})
    if text is not None:  # "" is an empty text block, as a provider may send one
        blocks.append(messages.text(text))
    return messages.assistant(
        blocks,
        calls=[(f"call_{ts}_{i}", name, arguments) for i, (name, arguments) in enumerate(calls)],
        usage=usage if usage is not None else {**USAGE, "totalTokens": total or 120},
        stop=stop,
        error=error,
        ts=BASE_MS + ts * 1000,
        model=model,
        provider=provider,
    )


def tool_result(
    name: str, text: Any, *, ts: int = 0, error: bool = False, call: str = "call"
) -> dict[str, Any]:
    return messages.tool_result(call, name, text, error=error, ts=BASE_MS + ts * 1000)


def system(content: Any = "", ts: int = 0, **fields: Any) -> dict[str, Any]:
    return {"role": "system", "content": content, **fields, "timestamp": BASE_MS + ts * 1000}


def bash(command: str, output: str, ts: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        **fields,
        "timestamp": BASE_MS + ts * 1000,
    }


class Builder:
    """Writes a session file line by line: ids ``e0000001``…, one second apart.

    ``add`` appends an entry as a child of the previous one unless ``parent`` is given;
    the returned id can be used as another entry's parent, target or kept entry.
    """

    def __init__(self, *, version: Any = 3, cwd: str = "/home/dev/proj", header: bool = True):
        self.lines: list[str] = []
        self.count = 0
        self.last: str | None = None
        if header:
            fields: dict[str, Any] = {"type": "session"}
            if version is not None:
                fields["version"] = version
            fields.update(id="0195a3c0-0000-7000-8000-0000000000aa", timestamp=_iso(0), cwd=cwd)
            self.raw(fields)

    def raw(self, value: Any) -> None:
        self.lines.append(
            value
            if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        )

    def add(self, entry_type: str, parent: Any = "prev", *, ids: bool = True, **fields: Any) -> str:
        self.count += 1
        entry_id = f"e{self.count:07d}"
        entry: dict[str, Any] = {"type": entry_type}
        if ids:
            entry["id"] = fields.pop("id", entry_id)
            entry["parentId"] = self.last if parent == "prev" else parent
        entry["timestamp"] = fields.pop("timestamp", _iso(self.count))
        entry.update(fields)
        self.raw(entry)
        self.last = entry.get("id", entry_id)
        return str(entry.get("id", entry_id))

    def message(self, message: dict[str, Any], parent: Any = "prev", **fields: Any) -> str:
        if "timestamp" in message:
            message = {**message, "timestamp": BASE_MS + (self.count + 1) * 1000}
        return self.add("message", parent, message=message, **fields)

    def text(self, *, newline: bool = True) -> bytes:
        body = "\n".join(self.lines) + ("\n" if newline else "")
        return body.encode("utf-8")


# --- the cases ---------------------------------------------------------------------------


def _linear() -> bytes:
    b = Builder()
    b.add("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    b.add("thinking_level_change", thinkingLevel="medium")
    b.message(user("What does main.py do?"))
    b.message(assistant("It prints a greeting.", thinking="Look at the file first."))
    b.message(user([{"type": "text", "text": "Make it say goodbye."}]))
    b.message(assistant("Changed the greeting.", model="gpt-5", provider="openai"))
    return b.text()


def _two_leaves() -> bytes:
    b = Builder()
    first = b.message(user("Pick a sort algorithm"))
    options = b.message(assistant("Quicksort or mergesort."), parent=first)
    b.message(user("Use quicksort"))
    b.message(assistant("Quicksort done."))
    b.message(user("Use mergesort"), parent=options)
    b.message(assistant("Mergesort done."))
    return b.text()


def _tools_and_files() -> bytes:
    b = Builder()
    b.message(user("Fix the failing test in app.py " + "please " * 40))
    b.message(assistant("Reading.", calls=[("read", {"path": "app.py"}), ("ls", {"path": "."})]))
    b.message(tool_result("read", "def add(a, b):\n    return a - b\n" * 60))
    b.message(tool_result("ls", "app.py\ntest_app.py\n"))
    b.message(
        assistant(
            None, calls=[("edit", {"path": "app.py", "oldText": "a - b", "newText": "a + b"})]
        )
    )
    b.message(tool_result("edit", "Edited app.py"))
    b.add("thinking_level_change", thinkingLevel="high")
    b.message(user("Now run the tests " + "and report " * 30))
    b.message(
        assistant(
            "Running.",
            calls=[
                ("bash", {"command": "pytest -q"}),
                ("write", {"path": "notes.md", "content": "x"}),
            ],
        )
    )
    b.message(tool_result("bash", "1 passed\n" + "." * 3000))
    b.message(tool_result("write", "Wrote notes.md"))
    b.message(assistant("All tests pass." * 20, thinking="Done " * 50))
    b.message(user("Thanks"))
    b.message(assistant("You're welcome."))
    return b.text()


def _compactions() -> bytes:
    b = Builder()
    b.message(user("Build a parser " * 20))
    b.message(
        assistant("Parser skeleton written. " * 10, calls=[("read", {"path": "grammar.txt"})])
    )
    b.message(tool_result("read", "expr := term '+' term\n" * 50))
    kept = b.message(user("Add error handling " * 10))
    b.message(assistant("Errors handled.", calls=[("edit", {"path": "parser.py"})]))
    b.message(tool_result("edit", "ok"))
    first = b.add(
        "compaction",
        summary="Parser built.",
        firstKeptEntryId=kept,
        tokensBefore=900,
        details={"readFiles": ["grammar.txt"], "modifiedFiles": ["parser.py"]},
    )
    b.message(user("Now the lexer " * 10))
    b.message(assistant("Lexer done. " * 10))
    b.message(user("And tests " * 10))
    last_kept = b.message(
        assistant("Tests written. " * 10, calls=[("write", {"path": "test_lexer.py"})])
    )
    b.message(tool_result("write", "ok"))
    b.add(
        "compaction",
        summary="Lexer and tests.",
        firstKeptEntryId=last_kept,
        tokensBefore=700,
        fromHook=True,
    )
    b.message(user("Refactor"))
    b.message(assistant("Refactored."))
    b.add(
        "compaction",
        parent=first,
        summary="Side summary",
        firstKeptEntryId="nowhere",
        tokensBefore=50,
    )
    b.message(user("Side question"))
    return b.text()


def _kept_span_compaction() -> bytes:
    # An older compaction lies inside the newer one's kept range: it contributes nothing.
    b = Builder()
    b.message(user("One"))
    b.message(assistant("A1"))
    kept = b.message(user("Two"))
    b.message(assistant("A2"))
    b.add("compaction", summary="S1", firstKeptEntryId=kept, tokensBefore=300)
    b.message(user("Three"))
    b.message(assistant("A3"))
    b.add("compaction", summary="S2", firstKeptEntryId=kept, tokensBefore=700)
    b.message(user("Four"))
    return b.text()


def _branch_summaries() -> bytes:
    b = Builder()
    root = b.message(user("Plan the release"))
    answer = b.message(assistant("Three steps.", calls=[("read", {"path": "CHANGELOG.md"})]))
    b.message(tool_result("read", "v1.0"))
    b.message(user("Write the notes"))
    b.message(assistant("Notes written.", calls=[("write", {"path": "NOTES.md"})]))
    b.add(
        "branch_summary",
        parent=answer,
        fromId="e0000005",
        summary="The user explored writing notes.",
        details={"readFiles": ["CHANGELOG.md"], "modifiedFiles": ["NOTES.md"]},
    )
    b.message(user("Tag instead"))
    b.add("branch_summary", parent=root, fromId="e0000007", summary="")
    b.message(assistant("Empty summary above."))
    b.add("branch_summary", parent="e0000009", fromId="x", summary="Hook summary", fromHook=True)
    b.message(user("Last"))
    return b.text()


def _custom_entries() -> bytes:
    b = Builder()
    b.message(user("Hello"))
    b.add("custom", customType="ext-state", data={"k": 1})
    b.add("custom_message", customType="reminder", content="Be brief.", display=True)
    b.add(
        "custom_message",
        customType="context",
        content=[{"type": "text", "text": "Extra context"}, IMAGE],
        display=False,
        details={"source": "ext"},
    )
    b.message(assistant("Noted."))
    b.add("label", targetId="e0000001", label="start")
    b.add("session_info", name="My session")
    b.message(
        {
            "role": "custom",
            "customType": "hookish",
            "content": "as a message",
            "display": True,
            "timestamp": 1,
        }
    )
    b.message(assistant("Done."))
    return b.text()


def _bash() -> bytes:
    b = Builder()
    b.message(bash("ls", "a.py\nb.py"))
    b.message(bash("false", "", exitCode=1))
    b.message(bash("secret", "hidden", excludeFromContext=True))
    b.message(bash("sleep 9", "", cancelled=True, exitCode=None))
    b.message(bash("cat big", "x" * 100, truncated=True, fullOutputPath="/tmp/out.txt"))
    b.message(user("What did you see?"))
    b.message(assistant("Files and a failure."))
    return b.text()


def _orphans_and_roots() -> bytes:
    b = Builder()
    b.message(user("Root one"))
    b.message(assistant("A"))
    b.message(user("Orphan"), parent="missing-parent")
    b.message(assistant("Orphan answer"))
    b.message(user("Second root"), parent=None)
    b.message(user("Empty parent"), parent="")
    b.raw(
        {
            "type": "message",
            "id": "noparent",
            "timestamp": _iso(30),
            "message": user("No parent key"),
        }
    )
    return b.text()


def _malformed_lines() -> bytes:
    b = Builder()
    b.message(user("Before"))
    b.raw("{not json")
    b.raw("")
    b.raw("   ")
    b.raw("123")
    b.raw('"a string"')
    b.raw("[1, 2]")
    b.raw("null")
    b.message(assistant("After"))
    b.raw('{"type":"session","version":3,"id":"dup-header","timestamp":"2025","cwd":"/"}')
    b.message(user("Last"))
    return b.text()


def _v1_legacy() -> bytes:
    b = Builder(version=None)
    b.add("message", ids=False, message=user("Old question"))
    b.add("message", ids=False, message=assistant("Old answer."))
    b.add("message", ids=False, message=user("Second question"))
    b.add("message", ids=False, message=assistant("Second answer."))
    b.add(
        "compaction", ids=False, summary="Legacy summary", firstKeptEntryIndex=3, tokensBefore=400
    )
    b.add("message", ids=False, message=user("Third question"))
    b.add("model_change", ids=False, provider="openai", modelId="gpt-5")
    b.add("message", ids=False, message=assistant("Third answer."))
    return b.text()


def _v2_hook_message() -> bytes:
    b = Builder(version=2)
    b.message(user("Start"))
    b.message(
        {
            "role": "hookMessage",
            "customType": "hook",
            "content": "from a hook",
            "display": True,
            "timestamp": 1,
        }
    )
    b.message(assistant("Seen the hook."))
    return b.text()


def _bom_before_header() -> bytes:
    return b"\xef\xbb\xbf" + _linear()


def _bom_line() -> bytes:
    return b"\xef\xbb\xbf\n" + _linear()


def _crlf() -> bytes:
    return _two_leaves().replace(b"\n", b"\r\n")


def _no_final_newline() -> bytes:
    return _two_leaves().rstrip(b"\n")


def _cycles() -> bytes:
    b = Builder()
    b.message(user("Root"))
    b.message(assistant("Fine"))
    b.message(user("Self"), id="self", parent="self")
    b.message(user("Loop A"), id="loopA", parent="loopB")
    b.message(user("Loop B"), id="loopB", parent="loopA")
    b.message(user("Last, fine"), parent="e0000002")
    return b.text()


def _duplicate_ids() -> bytes:
    b = Builder()
    b.message(user("First"))
    b.message(assistant("Reply"))
    b.message(user("Same id, later line wins"), id="e0000001", parent=None)
    b.message(assistant("Child of the duplicate"), parent="e0000001")
    b.message(user("Under the reply"), parent="e0000002")
    return b.text()


def _labels_and_names() -> bytes:
    b = Builder()
    b.message(user("One"))
    b.message(assistant("Two"))
    b.add("label", targetId="e0000001", label="first")
    b.add("label", targetId="e0000002", label="second")
    b.add("label", targetId="e0000001")
    b.add("label", targetId="e0000002", label="")
    b.add("label", targetId="e0000002", label="again")
    b.add("label", targetId="unknown", label="dangling")
    b.add("session_info", name="  Named\nsession  ")
    b.add("session_info", name="Final name ")
    b.message(user("Three"))
    return b.text()


def _names_cleared() -> bytes:
    b = Builder()
    b.message(user("One"))
    b.add("session_info", name="x")
    b.add("session_info", name="   ")
    b.message(assistant("Two"))
    return b.text()


def _astral_truncation() -> bytes:
    b = Builder()
    b.message(user([{"type": "text", "text": "Look at these"}, IMAGE]))
    b.message(assistant("Reading.", calls=[("read", {"path": "emoji.txt"})]))
    b.message(tool_result("read", [{"type": "text", "text": "y" * 1999 + "🎉" + "z" * 5}, IMAGE]))
    b.message(assistant("Long 😀 text " * 30))
    b.message(user("Ok"))
    return b.text()


def _sibling_order() -> bytes:
    b = Builder()
    root = b.message(user("Root"))
    b.message(user("Late"), parent=root, timestamp="2025-03-01T11:00:00.000Z")
    b.message(user("Bad time"), parent=root, timestamp="not a date")
    b.message(user("Early"), parent=root, timestamp="2025-03-01T09:00:00Z")
    b.message(user("Date only"), parent=root, timestamp="2025-03-01")
    b.message(user("Offset"), parent=root, timestamp="2025-03-01T12:00:00+02:00")
    b.message(user("Empty"), parent=root, timestamp="")
    return b.text()


def _stop_reasons() -> bytes:
    b = Builder()
    b.message(user("Go"))
    b.message(assistant("Partial", stop="aborted", total=9999))
    b.message(user("Again"))
    b.message(assistant(None, stop="error", error="overloaded", total=8888))
    b.message(user("Once more"))
    b.message(assistant("Cut", stop="length", total=300))
    b.message(user("Think only"))
    b.message(assistant(None, thinking="Only thinking here.", total=310))
    b.message(user("Zero usage now"))
    b.message(assistant("No usage reported", usage=ZERO_USAGE))
    b.message(user("Tail"))
    return b.text()


def _context_edits() -> bytes:
    b = Builder()
    b.message(user("Summarise notes.md"))
    b.message(assistant("Reading it.", calls=[("read", {"path": "notes.md"})]))
    b.message(tool_result("read", "secret token = 1234\nmeeting at 5"))
    b.message(assistant("The notes mention a token 1234 and a meeting."))
    b.add("custom_message", customType="reminder", content="Never repeat secrets.", display=True)
    b.add("context_edit", targetId="e0000003", replacement={"content": "[redacted tool output]"})
    b.add(
        "context_edit", targetId="e0000004", replacement={"content": "The notes mention a meeting."}
    )
    b.add(
        "context_edit",
        targetId="e0000001",
        replacement={"content": [{"type": "text", "text": "Summarise notes.md (no secrets)"}]},
    )
    b.add("context_edit", targetId="e0000005", replacement={"content": "Be brief."})
    b.message(user("Thanks"))
    return b.text()


def _edits_latest_wins() -> bytes:
    b = Builder()
    b.message(user("Try approach A"))
    b.message(assistant("Approach A failed with a long error " + "trace " * 50))
    b.message(user("Try approach B"))
    b.message(assistant("Approach B works."))
    b.add("context_edit", targetId="e0000002", replacement={"content": "Approach A failed."})
    b.add("context_edit", targetId="e0000002", replacement=None)
    b.add("context_edit", targetId="e0000003", replacement=None)
    b.add("context_edit", targetId="e0000003", replacement={"content": "Try B"})
    b.add("context_edit", targetId="e0000008", replacement=None)
    b.message(user("Ship it"))
    b.add("context_edit", parent="e0000004", targetId="e0000004", replacement=None)
    b.message(user("Side question"))
    b.add("context_edit", targetId="e0000013", replacement={"content": "edit ahead of its target"})
    b.message(user("Target named before it exists"))
    b.add("context_edit", targetId="e0000012", replacement={"nope": 1})
    b.add("context_edit", targetId="unknown", replacement=None)
    return b.text()


def _edits_and_compaction() -> bytes:
    b = Builder()
    b.message(user("Build the parser"))
    b.message(assistant("Parser skeleton written."))
    kept = b.message(user("Add error handling"))
    b.message(assistant("Errors handled."))
    b.add("context_edit", targetId=kept, replacement={"content": "Add error handling (strict)"})
    comp = b.add("compaction", summary="Parser built.", firstKeptEntryId=kept, tokensBefore=900)
    b.add("context_edit", targetId="e0000001", replacement={"content": "ignored: summarised"})
    b.add("context_edit", targetId="e0000004", replacement=None)
    b.message(user("Now the lexer"))
    b.add("context_edit", targetId=comp, replacement=None)
    b.message(user("Side"))
    b.add("context_edit", parent="e0000009", targetId=comp, replacement={"content": "not editable"})
    b.message(user("Other side"))
    return b.text()


def _retain_none() -> bytes:
    b = Builder()
    b.message(user("Draft a plan"))
    b.message(assistant("Plan v1."))
    b.add("context_edit", targetId="e0000005", replacement={"content": "Plan v2 (edited ahead)."})
    b.message(user("Refine"))
    b.message(assistant("Plan v2."))
    b.add("compaction", summary="Plan drafted.", firstKeptEntryId="e0000004", tokensBefore=400)
    b.message(user("Go"))
    b.add("compaction", summary="Everything so far.", firstKeptEntryId="e0000008", tokensBefore=450)
    b.message(user("Status?"))
    return b.text()


def _usage_entries() -> bytes:
    b = Builder()
    b.add("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    b.message(user("Long build running"))
    b.message(assistant("Waiting."))
    b.add("usage", kind="cache_warm", provider="anthropic", model="claude-sonnet-4-5", usage=USAGE)
    b.add(
        "usage",
        kind="cache_warm",
        provider="openai",
        model="gpt-5",
        usage=USAGE,
        note="idle refresh",
    )
    b.message(user("Done?"))
    b.add("context_edit", targetId="e0000004", replacement=None)
    b.message(assistant("Build finished."))
    return b.text()


def _system_messages() -> bytes:
    b = Builder()
    tools = [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]
    b.message(
        system(
            "",
            sections={"preamble": "You are a coding assistant.", "cwd": "/home/dev/proj"},
            toolsAdded=tools,
        )
    )
    b.message(user("Hello"))
    b.message(assistant("Hi."))
    kept = b.message(
        system("", sections={"skills": "<skills>lint</skills>"}, toolsRemoved=[{"name": "read"}])
    )
    b.message(user("Lint the repo"))
    b.message(assistant("Linted."))
    checkpoint = system(
        "",
        sections={
            "preamble": "You are a coding assistant.",
            "cwd": "/home/dev/proj",
            "skills": "<skills>lint</skills>",
        },
    )
    b.add(
        "compaction",
        summary="Greeted; linted.",
        firstKeptEntryId=kept,
        tokensBefore=500,
        systemMessage=checkpoint,
    )
    b.message(system([{"type": "text", "text": "Extra rule."}], sections={"cwd": None}))
    b.message(user("Next?"))
    b.message(assistant("Working.", usage={**USAGE, "totalTokens": 2000}))
    return b.text()


def _null_contents() -> bytes:
    b = Builder()
    b.message(system("Base prompt."))
    b.message(user("One"))
    kept = b.message(system("Mid-conversation rule."))
    b.message(assistant("Ack."))
    b.add("compaction", summary="S", firstKeptEntryId=kept, tokensBefore=50)
    b.message({"role": "user", "timestamp": 1})
    b.message({**assistant("x"), "content": None})
    b.add("custom_message", customType="note", display=False)
    b.message(system(None))
    return b.text()


def _unknown_types() -> bytes:
    b = Builder()
    b.message(user("Q1"))
    b.message(assistant("A1."))
    b.add("active_tools_change", activeToolNames=["read", "bash"])
    b.message(user("Q2"))
    b.add("bookmark_v9", note="from another tool")
    b.message(assistant("A2."))
    b.add("context_edit", targetId="e0000003", replacement=None)
    b.add("leaf", targetId="e0000002")
    return b.text()


def _recovery() -> bytes:
    # Pi 1.x's overflow recovery: the failed reply hidden, then a compaction, then a retry.
    b = Builder()
    for i in range(3):
        b.message(user(f"Question {i} " + "detail " * 60))
        b.message(assistant(f"Answer {i} " + "text " * 60))
    prompt = b.message(user("Paste of a huge log " + "line " * 400))
    failed = b.message(
        assistant(None, stop="error", error="prompt is too long", total=0, usage=ZERO_USAGE)
    )
    b.add("context_edit", targetId=failed, replacement=None)
    del prompt
    return b.text()


def _nested_calls() -> bytes:
    b = Builder()
    b.message(user("Run the script " * 30))
    b.message(assistant("Running.", calls=[("codemode", {"script": "..."})]))
    result = tool_result("codemode", "done")
    result["nestedCalls"] = {
        "calls": [
            {"name": "read", "arguments": {"path": "a.py"}},
            {"name": "edit", "arguments": {"path": "b.py"}},
        ]
    }
    b.message(result)
    b.message(assistant("Script ran. " * 20))
    b.message(user("Next " * 30))
    b.message(assistant("Ok. " * 20))
    return b.text()


def _header_only() -> bytes:
    return Builder().text()


def _no_header() -> bytes:
    b = Builder(header=False)
    b.message(user("No header"))
    return b.text()


def _odd_fields() -> bytes:
    b = Builder()
    b.message(user("x"), parent=5)
    b.message(user("y"), parent="", timestamp="")
    b.add("message", message=assistant("z"), parentId=None, timestamp="bad")
    b.add("label", targetId="e0000001", label=7)
    b.add("compaction", parent=False, summary="S", firstKeptEntryId="e0000005", tokensBefore=1)
    b.raw({"id": "notype", "parentId": "e0000001", "timestamp": _iso(40)})
    b.raw(
        {"type": "message", "parentId": "e0000005", "timestamp": _iso(41), "message": user("no id")}
    )
    return b.text()


CASES: dict[str, Callable[[], bytes]] = {
    "linear": _linear,
    "two-leaves": _two_leaves,
    "tools-and-files": _tools_and_files,
    "compactions": _compactions,
    "kept-span-compaction": _kept_span_compaction,
    "branch-summaries": _branch_summaries,
    "custom-entries": _custom_entries,
    "bash": _bash,
    "orphans-and-roots": _orphans_and_roots,
    "malformed-lines": _malformed_lines,
    "v1-legacy": _v1_legacy,
    "v2-hook-message": _v2_hook_message,
    "bom-before-header": _bom_before_header,
    "bom-line": _bom_line,
    "crlf": _crlf,
    "no-final-newline": _no_final_newline,
    "cycles": _cycles,
    "duplicate-ids": _duplicate_ids,
    "labels-and-names": _labels_and_names,
    "names-cleared": _names_cleared,
    "astral-truncation": _astral_truncation,
    "sibling-order": _sibling_order,
    "stop-reasons": _stop_reasons,
    "context-edits": _context_edits,
    "edits-latest-wins": _edits_latest_wins,
    "edits-and-compaction": _edits_and_compaction,
    "retain-none": _retain_none,
    "usage-entries": _usage_entries,
    "system-messages": _system_messages,
    "null-contents": _null_contents,
    "unknown-types": _unknown_types,
    "recovery": _recovery,
    "nested-calls": _nested_calls,
    "header-only": _header_only,
    "no-header": _no_header,
    "blank": lambda: b"",
    "whitespace-only": lambda: b"\n  \n",
    "odd-fields": _odd_fields,
}


def write_case(name: str, folder: Path) -> Path:
    """Write case ``name`` to ``folder/<name>.jsonl`` and return the path."""
    path = folder / f"{name}.jsonl"
    path.write_bytes(CASES[name]())
    return path


def set_parent_session(path: Path, parent: str | None) -> None:
    """Rewrite a test file's header to name ``parent`` (``None``: no parent), nothing else."""
    first, _, rest = path.read_bytes().partition(b"\n")
    header = json.loads(first)
    header.pop("parentSession", None)
    if parent is not None:
        header["parentSession"] = parent
    path.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + rest)
