"""The facts a continuation needs, read from the entries a compaction replaced.

Offline and deterministic: no model, only the messages as the summarizer was given them.
Each :class:`Fact` names the entry it comes from (its id and file line), so every fact can
be cited as ``path:line#entry-id`` and checked by a reader. The kinds:

``file``
    Paths of ``read``/``write``/``edit`` tool calls (Pi's own file tracking,
    :class:`pinb.core.FileOperations`), with what was done to them.
``command``
    Bash commands (the ``bash`` tool's ``command``, and ``!`` commands Pi records as
    ``bashExecution``), with whether the last run of each failed.
``error``
    The first meaningful line of each failed tool result, failed ``!`` command and failed
    reply (a line naming a failure, not a traceback frame).
``instruction``
    Each user request of at least :data:`MIN_WORDS` content words, and each sentence of
    the user's that sets a constraint (must, never, don't, always, only, …).
``decision``
    The assistant's final text of each turn (a turn ends at the next user message).
``identifier``
    Code-like names (``snake_case``, ``camelCase``, ``PascalCase``, ``a.b`` paths,
    ``ALL_CAPS_NAMES``) that the user's and the assistant's text, tool-call arguments and
    error lines name in at least two entries; the :data:`MAX_IDENTIFIERS` most named.
``number``
    Numbers with a unit (``340 ms``, ``12 MB``, ``3 tests``, ``45%``) that the user or
    the assistant wrote, or an error line holds (one mention is enough: a measurement is
    usually stated once).

Tool outputs other than errors are not mined for names and numbers: they are what the
agent read, not what the conversation settled on, and a file read holds thousands of names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..describe import node_key, one_line
from ..format.entries import Entry
from .fileops import FileOperations
from .words import (
    MAX_FACT_WORDS,
    content_words,
    has_content_words,
    identifiers_in,
    normal_identifier,
    numbers_in,
    remember_fact_words,
)

__all__ = [
    "FACT_KINDS",
    "KIND_LABELS",
    "MAX_IDENTIFIERS",
    "MAX_NUMBERS",
    "MIN_WORDS",
    "Fact",
    "FactCache",
    "command_parts",
    "content_words",
    "error_line",
    "extract_facts",
    "has_content_words",
    "identifiers_in",
    "message_said",
    "normal_identifier",
    "numbers_in",
]

#: Every kind of fact, in the order reports list them.
FACT_KINDS: Final = (
    "file",
    "command",
    "error",
    "instruction",
    "decision",
    "identifier",
    "number",
)
#: How each kind is named for people (the plural: "files", "commands", ...).
KIND_LABELS: Final = {
    "file": "files",
    "command": "commands",
    "error": "errors",
    "instruction": "instructions",
    "decision": "decisions",
    "identifier": "identifiers",
    "number": "numbers",
}
#: A request or a final text with fewer content words is not a fact ("ok", "go on").
MIN_WORDS: Final = 3
#: At most this many identifiers per span, the most named first.
MAX_IDENTIFIERS: Final = 40
#: At most this many numbers per span, the first written first.
MAX_NUMBERS: Final = 40
#: The longest fact text kept (an instruction or a final text is cut with ``…``).
TEXT_LIMIT: Final = 400


@dataclass(frozen=True)
class Fact:
    """One fact of a replaced span, and where it was first seen.

    Attributes
    ----------
    kind:
        One of :data:`FACT_KINDS`.
    text:
        The fact as matched and shown (a path, a command, a line, a name, ``"340 ms"``).
    entry_id / line:
        The entry it was first seen in, and that entry's 1-based line in its file.
    detail:
        What kind of that kind: ``"read"``/``"edited"``/``"written"`` for a file,
        ``"ok"``/``"failed"`` for a command (its last run), the tool for an error,
        ``"request"``/``"constraint"`` for an instruction.
    mentions:
        In how many entries of the span it was seen.
    """

    kind: str
    text: str
    entry_id: str
    line: int | None
    detail: str = ""
    mentions: int = 1


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- commands ----------------------------------------------------------------------------

#: Programs whose first argument is the real command (``npm run check``, ``git commit``).
_TWO_WORD: Final = _word_set(
    "npm pnpm yarn bun uv poetry cargo go git docker make kubectl pip gh dotnet deno npx "
    "pixi hatch nox tox"
)
#: Programs whose ``run`` runs another program (``uv run pytest`` is pytest).
_RUNNERS: Final = frozenset({"uv", "poetry", "pixi", "hatch", "pdm", "conda", "pipenv"})
_WRAPPERS: Final = frozenset({"sudo", "time", "env", "nice", "nohup", "exec", "command"})
#: The operators that chain commands. Literals only: each part's words come from
#: ``str.split``, so no space is matched here (``\s*`` around the operators backtracked
#: over a long run of spaces, quadratic in its length).
_SPLIT: Final = re.compile(r"&&|\|\||[;|]")
_ASSIGN: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def command_parts(command: str) -> tuple[str, str | None]:
    """``(program, target)`` of a shell command, for a normalised comparison.

    The first part of a chain that is not ``cd``/``export``; its program with
    environment assignments and wrappers (``sudo``, ``time``) dropped, and with its
    sub-command for tools that have one (``npm run``, ``git commit``, ``cargo test``);
    the target is the first argument after that which is not an option. ``.venv/bin/python
    -m pytest x`` is ``("pytest", "x")``.
    """
    for part in _SPLIT.split(command.strip()):
        words = part.split()
        while words and (_ASSIGN.match(words[0]) or words[0] in _WRAPPERS):
            words = words[1:]
        if not words or words[0] in ("cd", "export", "source", ".", "set", "echo"):
            continue
        program = words[0].rsplit("/", 1)[-1]
        rest = words[1:]
        if program in ("npx", "uvx", "bunx") and rest:
            program, rest = rest[0].rsplit("/", 1)[-1], rest[1:]  # the program it runs
        elif program in _RUNNERS and len(rest) >= 2 and rest[0] == "run":
            program, rest = rest[1].rsplit("/", 1)[-1], rest[2:]
        if program.startswith("python") and len(rest) >= 2 and rest[0] == "-m":
            program, rest = rest[1], rest[2:]
        elif program in _TWO_WORD and rest and not rest[0].startswith("-"):
            program, rest = f"{program} {rest[0]}", rest[1:]
        target = next((w.strip("'\"") for w in rest if not w.startswith("-")), None)
        return program, target or None
    words = command.split()
    return (words[0] if words else ""), None


# -- errors ------------------------------------------------------------------------------

_FAILURE: Final = re.compile(
    r"(?i)\b(\w*error\w*|\w*exception\w*|fail\w*|fatal|panic\w*|denied|not found|no such|"
    r"cannot|can't|unable|invalid|refused|timed out|timeout|abort\w*)\b"
)
_NOISE: Final = re.compile(
    r"^(traceback \(most recent call last\):|file \".*\", line \d+|at .+[:(]\d+|\^+|~+|[-=─_*#]+|"
    r"command exited with code \d+|exit code:? \d+|\s*\d+\s*[|│].*)$",
    re.IGNORECASE,
)


def error_line(text: str, limit: int = 200) -> str:
    """The first meaningful line of an error output.

    The first line naming a failure that is not a traceback frame, a code excerpt or
    Pi's "Command exited with code N"; else the first line that is not noise; else ``""``.
    """
    lines = [line.strip() for line in text.splitlines()]
    meaningful = [line for line in lines if line and not _NOISE.match(line)]
    found = next((line for line in meaningful if _FAILURE.search(line)), None)
    if found is None:
        found = meaningful[0] if meaningful else next((line for line in lines if line), "")
    return one_line(found, limit)


# -- the span ----------------------------------------------------------------------------

_CONSTRAINT: Final = re.compile(
    r"(?i)\b(must|mustn'?t|never|don'?t|do not|doesn'?t|always|only|should(?:n'?t)?|avoid|"
    r"without|make sure|ensure|prefer|no need|not allowed|cannot|can'?t|keep|instead of|"
    r"required?|forbid\w*)\b"
)
#: What a text matching :data:`_CONSTRAINT` holds, lower-cased, when it is plain ASCII: a
#: quick test first (other text is always read by the expression, whose case folding
#: knows more letters than ASCII's).
_CONSTRAINT_HINTS: Final = (
    "must", "never", "don", "do not", "doesn", "always", "only", "should", "avoid",
    "without", "make sure", "ensure", "prefer", "no need", "not allowed", "can", "keep",
    "instead of", "require", "forbid",
)  # fmt: skip
_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
#: Tool-call arguments holding text to write, not names: not mined for identifiers.
_TEXT_ARGUMENTS: Final = frozenset({"content", "oldText", "newText", "old_string", "new_string"})


#: :data:`_CONSTRAINT` for lower-case ASCII text (the same matches, without case folding).
_CONSTRAINT_LOWER: Final = re.compile(_CONSTRAINT.pattern.removeprefix("(?i)"))


def _constraint(text: str) -> bool:
    """Whether ``text`` sets a constraint (:data:`_CONSTRAINT` matches it)."""
    if text.isascii():
        low = text.lower()
        return any(hint in low for hint in _CONSTRAINT_HINTS) and bool(
            _CONSTRAINT_LOWER.search(low)
        )
    return _CONSTRAINT.search(text) is not None


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]


def _argument_text(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    return "\n".join(
        v for k, v in arguments.items() if isinstance(v, str) and k not in _TEXT_ARGUMENTS
    )


# What one message says, as steps replayed into a span's facts (its entry given then):
# the steps of a message depend on the message alone, so a message read in two spans (Pi
# 1.6 summarizes the kept range again) is read once with a FactCache.
_TURN = 0  # a user message: the turn before it ends, its final text becomes a decision
_FACT = 1  # (_FACT, kind, key, text, detail)
_FILE = 2  # (_FILE, path, verb)
_CALL = 3  # (_CALL, key, command, call id or None): a bash tool call
_BANG = 4  # (_BANG, key, command, "ok"/"failed"): a ``!`` command Pi ran
_RESULT = 5  # (_RESULT, call id, "ok"/"failed"): a tool result settles its call
_MINED = 6  # (_MINED, ((key, name), ...), ((value, written), ...)): names and numbers
_TEXT = 7  # (_TEXT, [flat text, decision]): an assistant's text, the turn's final so far
#: A text's decision not worked out yet: only a turn's final text needs it, once.
_UNDECIDED: Final[Any] = object()

Said = tuple[tuple[Any, ...], ...]


def _cut(flat: str) -> str:
    """``one_line(flat, TEXT_LIMIT)`` of a text already on one line."""
    return flat if len(flat) <= TEXT_LIMIT else flat[: TEXT_LIMIT - 1] + "…"


def _enough(flat: str, count: int) -> bool:
    """``has_content_words(flat, count)``, keeping the words of a fact it makes whole."""
    if len(flat) > TEXT_LIMIT or not flat.isascii():
        return has_content_words(flat, count)
    words = content_words(flat)
    if len(words) < count:
        return False
    remember_fact_words(flat, tuple(dict.fromkeys(words))[:MAX_FACT_WORDS])
    return True


def _mined(text: str) -> tuple[Any, ...] | None:
    """Names and numbers of a text the conversation wrote."""
    if not text:
        return None
    names = tuple(
        (normal_identifier(name) if "." not in name else name.casefold(), name)
        for name in identifiers_in(text)
    )
    numbers = tuple((value, written) for written, value in numbers_in(text))
    return (_MINED, names, numbers) if names or numbers else None


def _user_said(text: str) -> Said:
    said: list[tuple[Any, ...]] = [(_TURN,)]
    if mined := _mined(text):
        said.append(mined)
    flat = " ".join(text.split())
    constraints: list[str] = []
    whole_is_one = False
    if _constraint(text):
        sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
        constraints = [s for s in sentences if _constraint(s)]
        whole_is_one = len(sentences) == 1 and bool(constraints)
    if not whole_is_one and _enough(flat, MIN_WORDS):
        said.append((_FACT, "instruction", flat.casefold(), _cut(flat), "request"))
    for sentence in constraints:
        flat_sentence = " ".join(sentence.split())
        if _enough(flat_sentence, 2):
            key = flat_sentence.casefold()
            said.append((_FACT, "instruction", key, _cut(flat_sentence), "constraint"))
    return tuple(said)


def _error_said(said: list[tuple[Any, ...]], line_text: str, detail: str) -> None:
    said.append((_FACT, "error", line_text.casefold(), line_text, detail))
    if mined := _mined(line_text):
        said.append(mined)


def _assistant_said(message: dict[str, Any]) -> Said:
    said: list[tuple[Any, ...]] = []
    text = _texts(message.get("content"))
    if mined := _mined(text):
        said.append(mined)
    calls = _calls(message)
    if any(call.get("name") in ("read", "write", "edit") for call in calls):
        files = FileOperations()  # Pi's rule for which calls touch which file
        files.add_message(message)
        for verb, paths in (
            ("read", files.read),
            ("written", files.written),
            ("edited", files.edited),
        ):
            said.extend((_FILE, path, verb) for path in paths)
    for call in calls:
        arguments = call.get("arguments")
        if mined := _mined(_argument_text(arguments)):
            said.append(mined)
        command = arguments.get("command") if isinstance(arguments, dict) else None
        if call.get("name") == "bash" and isinstance(command, str) and command.strip():
            call_id = call.get("id")
            key = " ".join(command.split())
            said.append(
                (_CALL, key, command.strip(), call_id if isinstance(call_id, str) else None)
            )
    if text.strip():
        said.append((_TEXT, [" ".join(text.split()), _UNDECIDED]))
    if message.get("stopReason") == "error":
        reason = message.get("errorMessage")
        if isinstance(reason, str) and reason.strip():
            _error_said(said, error_line(reason), "reply failed")
    return tuple(said)


def _result_said(message: dict[str, Any]) -> Said:
    said: list[tuple[Any, ...]] = []
    failed = message.get("isError") is True
    call_id = message.get("toolCallId")
    if isinstance(call_id, str):
        said.append((_RESULT, call_id, "failed" if failed else "ok"))
    if failed:
        line_text = error_line(_texts(message.get("content")))
        if line_text:
            tool = message.get("toolName")
            _error_said(said, line_text, tool if isinstance(tool, str) else "")
    return tuple(said)


def _bash_said(message: dict[str, Any]) -> Said:
    command = message.get("command")
    if not isinstance(command, str) or not command.strip():
        return ()
    code = message.get("exitCode")
    failed = (isinstance(code, int) and code != 0) or message.get("cancelled") is True
    said: list[tuple[Any, ...]] = [
        (_BANG, " ".join(command.split()), command.strip(), "failed" if failed else "ok")
    ]
    if mined := _mined(command):
        said.append(mined)
    output = message.get("output")
    if failed and isinstance(output, str):
        line_text = error_line(output)
        if line_text:
            _error_said(said, line_text, "bash")
    return tuple(said)


def message_said(message: Any) -> Said:
    """What one message says, as the steps :func:`extract_facts` replays (any message)."""
    if not isinstance(message, dict):
        return ()
    role = message.get("role")
    if role == "user":
        return _user_said(_texts(message.get("content")))
    if role == "assistant":
        return _assistant_said(message)
    if role == "toolResult":
        return _result_said(message)
    if role == "bashExecution":
        return _bash_said(message)
    return ()


class FactCache:
    """What each message says (:func:`message_said`), kept while many spans are read.

    Pi 1.6 summarizes a compaction's kept range again in the next compaction, so those
    messages are in two spans; with one cache they are read once. Keyed by the message
    object, which the cache holds (its identity stays its own).

    A walk over a session's compactions in file order calls :meth:`next_span` after each
    span: what the spans before the last one said is let go (a later span shares messages
    with the one before it, not with older ones), so the cache holds at most two spans,
    whatever the file's length. Without it, it keeps everything (the what-if's columns
    are cuts of one context).
    """

    __slots__ = ("_current", "_said")

    def __init__(self) -> None:
        self._said: dict[int, tuple[Any, Said]] = {}  # the spans before (or all of them)
        self._current: dict[int, tuple[Any, Said]] = {}  # the span being read

    def __len__(self) -> int:
        return len(self._said) + sum(1 for key in self._current if key not in self._said)

    def said(self, message: Any) -> Said:
        key = id(message)
        found = self._current.get(key)
        if found is None or found[0] is not message:
            found = self._said.get(key)
            if found is None or found[0] is not message:
                found = (message, message_said(message))
            self._current[key] = found
        return found[1]

    def next_span(self) -> None:
        """The span is read: keep what its messages said, forget the spans before it."""
        self._said = self._current
        self._current = {}

    def clear(self) -> None:
        """Forget everything (no span is read after this one)."""
        self._said = {}
        self._current = {}


class _Collector:
    """Facts as they are found; a fact seen again counts a mention and keeps its first entry.

    A fact is ``[kind, text, entry id, line, detail, {entry ids}]``; a name or a number
    ``[text, entry id, line, {entry ids}]``.
    """

    def __init__(self) -> None:
        self.facts: dict[tuple[str, str], list[Any]] = {}
        self.names: dict[str, list[Any]] = {}
        self.numbers: dict[tuple[str, str], list[Any]] = {}
        self.calls: dict[str, list[Any]] = {}  # toolCallId -> the command fact it ran
        self.last: tuple[str, int | None, list[Any]] | None = None

    def add(
        self, kind: str, key: str, text: str, detail: str, entry_id: str, line: int | None
    ) -> list[Any]:
        found = self.facts.get((kind, key))
        if found is None:
            found = self.facts[(kind, key)] = [kind, text, entry_id, line, detail, {entry_id}]
        else:
            found[5].add(entry_id)
        return found

    def close_turn(self) -> None:
        """The turn's final text, if it says enough, is a decision."""
        last = self.last
        self.last = None
        if last is None:
            return
        entry_id, line, text = last
        decision = text[1]
        if decision is _UNDECIDED:
            flat = text[0]
            decision = (flat.casefold(), _cut(flat)) if _enough(flat, MIN_WORDS) else None
            text[1] = decision  # kept with what the message says, for the next span
        if decision is not None:
            self.add("decision", decision[0], decision[1], "final text", entry_id, line)

    def replay(self, said: Said, entry_id: str, line: int | None) -> None:
        for step in said:
            code = step[0]
            if code == _MINED:
                for table, pairs in ((self.names, step[1]), (self.numbers, step[2])):
                    for key, text in pairs:
                        seen = table.get(key)
                        if seen is None:
                            table[key] = [text, entry_id, line, {entry_id}]
                        else:
                            seen[3].add(entry_id)
            elif code == _FACT:
                self.add(step[1], step[2], step[3], step[4], entry_id, line)
            elif code == _TEXT:
                self.last = (entry_id, line, step[1])
            elif code == _TURN:
                self.close_turn()
            elif code == _FILE:
                verb = step[2]
                fact = self.add("file", step[1], step[1], verb, entry_id, line)
                if verb not in fact[4].split(", "):
                    fact[4] += f", {verb}"
            elif code == _CALL:
                fact = self.add("command", step[1], step[2], "no result", entry_id, line)
                if step[3] is not None:
                    self.calls[step[3]] = fact
            elif code == _RESULT:
                found = self.calls.get(step[1])
                if found is not None:
                    found[4] = step[2]
            elif code == _BANG:
                self.add("command", step[1], step[2], "", entry_id, line)[4] = step[3]


def extract_facts(
    items: Iterable[tuple[Entry, Sequence[Any]]],
    *,
    max_identifiers: int = MAX_IDENTIFIERS,
    max_numbers: int = MAX_NUMBERS,
    cache: FactCache | None = None,
) -> list[Fact]:
    """The facts of a span: ``(entry, messages it sent)`` pairs in path order.

    Give the messages as the summarizer saw them (a context's projected entries: edits
    applied, system messages left out). Facts come grouped by kind, in
    :data:`FACT_KINDS` order, each kind in the order first seen (identifiers: the most
    named first). ``cache`` keeps what each message says for the next span.
    """
    found = _Collector()
    said = message_said if cache is None else cache.said
    for entry, messages in items:
        entry_id, line = node_key(entry.id), entry.line
        for message in messages:
            found.replay(said(message), entry_id, line)
    found.close_turn()
    return _facts(found, max_identifiers, max_numbers)


_KIND_ORDER: Final = {kind: i for i, kind in enumerate(FACT_KINDS)}


def _facts(found: _Collector, max_identifiers: int, max_numbers: int) -> list[Fact]:
    ordered = sorted(found.facts.values(), key=lambda f: _KIND_ORDER[f[0]])
    facts = [Fact(f[0], f[1], f[2], f[3], f[4], len(f[5])) for f in ordered]
    file_names = {f.text.rsplit("/", 1)[-1].casefold() for f in facts if f.kind == "file"}
    names = [
        n for n in found.names.values() if len(n[3]) >= 2 and n[0].casefold() not in file_names
    ]
    names.sort(key=lambda n: -len(n[3]))  # stable: first seen first among equals
    facts += [
        Fact("identifier", n[0], n[1], n[2], f"{len(n[3])} entries", len(n[3]))
        for n in names[:max_identifiers]
    ]
    numbers = list(found.numbers.values())[:max_numbers]
    facts += [Fact("number", n[0], n[1], n[2], "", len(n[3])) for n in numbers]
    return facts
