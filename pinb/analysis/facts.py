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
from functools import lru_cache
from typing import Any, Final

from ..core.describe import node_key, one_line
from ..core.entries import Entry
from ..core.fileops import FileOperations

__all__ = [
    "FACT_KINDS",
    "MAX_IDENTIFIERS",
    "MAX_NUMBERS",
    "MIN_WORDS",
    "Fact",
    "command_parts",
    "content_words",
    "error_line",
    "extract_facts",
    "has_content_words",
    "identifiers_in",
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


# -- words -------------------------------------------------------------------------------

_STOPWORDS: Final = _word_set(
    "a about above after again against all also am an and any are aren as at be because "
    "been before being below between both but by can could did didn do does doesn doing "
    "don down during each few for from further had has hasn have haven having he her here "
    "hers herself him himself his how i if in into is isn it its itself just let ll me "
    "more most my myself no nor not now of off on once only or other our ours ourselves "
    "out over own re same she should so some such than that the their theirs them "
    "themselves then there these they this those through to too under until up ve very "
    "was wasn we were weren what when where which while who whom why will with won would "
    "you your yours yourself yourselves ok okay yes please thanks thank sure got get use "
    "using used one two also like want need make"
)
_WORD: Final = re.compile(r"_?[a-z0-9]+(?:_[a-z0-9]+)+|[^\W_]+(?:['’][a-z]+)?", re.IGNORECASE)
_SUFFIXES: Final = ("ing", "ed", "es", "s")


@lru_cache(maxsize=1 << 16)
def _content(word: str) -> str:
    """A folded word as a content word: lightly stemmed, or ``""`` for a stopword.

    The stem strips one suffix, so "fixed", "fixes" and "fixing" meet "fix".
    """
    if "'" in word or "’" in word:
        word = word.replace("’", "'").split("'", 1)[0]
    if len(word) < 3 or word in _STOPWORDS:
        return ""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def has_content_words(text: str, count: int = 3) -> bool:
    """Whether ``text`` has at least ``count`` content words (stops reading when it has)."""
    found = 0
    for match in _WORD.finditer(text):
        if _content(match.group(0).casefold()):
            found += 1
            if found >= count:
                return True
    return False


def content_words(text: str) -> list[str]:
    """The content words of ``text``, case-folded and lightly stemmed, in order, repeats kept.

    Stopwords, words of fewer than three characters and one-digit numbers are left out;
    ``snake_case`` names stay one word.
    """
    return [c for w in _WORD.findall(text.casefold()) if (c := _content(w))]


# -- commands ----------------------------------------------------------------------------

#: Programs whose first argument is the real command (``npm run check``, ``git commit``).
_TWO_WORD: Final = _word_set(
    "npm pnpm yarn bun uv poetry cargo go git docker make kubectl pip gh dotnet deno npx "
    "pixi hatch nox tox"
)
#: Programs whose ``run`` runs another program (``uv run pytest`` is pytest).
_RUNNERS: Final = frozenset({"uv", "poetry", "pixi", "hatch", "pdm", "conda", "pipenv"})
_WRAPPERS: Final = frozenset({"sudo", "time", "env", "nice", "nohup", "exec", "command"})
_SPLIT: Final = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
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


# -- names and numbers ---------------------------------------------------------------------

_IDENT: Final = re.compile(
    r"(?<![\w./\\-])(?=[\w.]*(?:[a-z0-9][A-Z]|[A-Z]{2}[a-z]|[A-Za-z0-9]_|_[A-Za-z]|\.[A-Za-z_]))"
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?![\w/\\-])"
)
_MAYBE_IDENT: Final = re.compile(
    r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]|[A-Za-z0-9]_|_[A-Za-z]|\w\.[A-Za-z_]"
)
_CAMEL: Final = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_EXTENSIONS: Final = _word_set(
    "py ts tsx js jsx mjs cjs json jsonl md txt toml yaml yml ini cfg rs go java c h cpp "
    "hpp cs rb php sh css html xml lock log csv sql ipynb svg png jpg"
)


def _is_identifier(word: str) -> bool:
    if len(word) < 4 or word.isdigit():
        return False
    if "." in word:
        parts = word.split(".")
        if parts[-1].lower() in _EXTENSIONS or any(not p for p in parts):
            return False  # a file name, not a name in code
        return all(p[0].isalpha() or p[0] == "_" for p in parts)
    core = word.strip("_")
    if "_" in core:
        return any(c.isalpha() for c in core)
    if word.startswith("_") and len(core) >= 3:
        return True
    return bool(_CAMEL.search(word)) and not word.isupper()


def identifiers_in(text: str) -> list[str]:
    """The code-like names of ``text`` (see the module docstring), in order."""
    if ("_" not in text and "." not in text and text.islower()) or not _MAYBE_IDENT.search(text):
        return []  # most prose has no name: quick scans first
    return [m.group(0) for m in _IDENT.finditer(text) if _is_identifier(m.group(0))]


def normal_identifier(name: str) -> str:
    """``AgentSession``, ``agent_session`` and ``agent-session`` all as ``agentsession``."""
    return re.sub(r"[_\-]", "", name.rsplit(".", 1)[-1]).casefold()


#: Each unit's one name, and the spellings it is written with.
_UNIT_SPELLINGS: Final = {
    "%": "% percent",
    "ms": "ms millisecond milliseconds",
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
    "µs": "µs us",
    "ns": "ns",
    "B": "b byte bytes",
    "KB": "kb kib",
    "MB": "mb mib",
    "GB": "gb gib",
    "TB": "tb",
    "k": "k",
    "×": "x ×",
    "tokens": "token tokens",
    "lines": "line lines",
    "files": "file files",
    "tests": "test tests",
    "entries": "entry entries",
    "errors": "error errors",
    "failures": "failure failures",
    "passed": "passed",
    "failed": "failed",
    "warnings": "warning warnings",
    "chars": "char chars character characters",
    "rows": "row rows",
    "calls": "call calls",
    "sessions": "session sessions",
    "compactions": "compaction compactions",
    "steps": "step steps",
    "items": "item items",
    "commits": "commit commits",
    "px": "px",
    "MHz": "mhz",
    "GHz": "ghz",
    "B/s": "byte/s",
    "req/s": "req/s",
    "ops/s": "ops/s",
    "loc": "loc kloc",
}
#: Unit spellings (lower case) and the one name each is compared by.
_UNITS: Final = {word: name for name, words in _UNIT_SPELLINGS.items() for word in words.split()}
_UNIT_PATTERN: Final = "|".join(
    re.escape(u) for u in sorted(_UNITS, key=len, reverse=True) if u not in ("%", "×")
)
_NUMBER: Final = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:\s?(%|×)|\s?(" + _UNIT_PATTERN + r")\b)",
    re.IGNORECASE,
)


_DIGIT: Final = re.compile(r"\d")


def numbers_in(text: str) -> list[tuple[str, tuple[str, str]]]:
    """``(as written, (value, unit))`` for each number with a unit in ``text``.

    The value loses its thousands separators and the unit takes one name
    (``"1,100 lines"`` and ``"1100 line"`` are both ``("1100", "lines")``).
    """
    found: list[tuple[str, tuple[str, str]]] = []
    if not _DIGIT.search(text):
        return found
    for match in _NUMBER.finditer(text):
        whole, fraction, symbol, word = match.groups()
        unit = _UNITS.get((symbol or word).lower(), "")
        if not unit:
            continue
        value = whole.replace(",", "") + (fraction or "")
        found.append((match.group(0), (value, unit)))
    return found


# -- the span ----------------------------------------------------------------------------

_CONSTRAINT: Final = re.compile(
    r"(?i)\b(must|mustn'?t|never|don'?t|do not|doesn'?t|always|only|should(?:n'?t)?|avoid|"
    r"without|make sure|ensure|prefer|no need|not allowed|cannot|can'?t|keep|instead of|"
    r"required?|forbid\w*)\b"
)
_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
#: Tool-call arguments holding text to write, not names: not mined for identifiers.
_TEXT_ARGUMENTS: Final = frozenset({"content", "oldText", "newText", "old_string", "new_string"})


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


class _Collector:
    """Facts as they are found; a fact seen again counts a mention and keeps its first entry."""

    def __init__(self) -> None:
        self.facts: dict[tuple[str, str], dict[str, Any]] = {}
        self.names: dict[str, dict[str, Any]] = {}
        self.numbers: dict[tuple[str, str], dict[str, Any]] = {}
        self.entry: Entry | None = None

    def where(self) -> tuple[str, int | None]:
        entry = self.entry
        assert entry is not None
        return node_key(entry.id), entry.line

    def add(self, kind: str, key: str, text: str, detail: str = "") -> dict[str, Any]:
        found = self.facts.get((kind, key))
        entry_id, line = self.where()
        if found is None:
            found = {
                "kind": kind,
                "text": text,
                "entry_id": entry_id,
                "line": line,
                "detail": detail,
                "entries": {entry_id},
            }
            self.facts[(kind, key)] = found
        else:
            found["entries"].add(entry_id)
        return found

    def mine(self, text: str) -> None:
        """Names and numbers of a text the conversation wrote."""
        if not text:
            return
        entry_id, line = self.where()
        for name in identifiers_in(text):
            key = normal_identifier(name) if "." not in name else name.casefold()
            seen = self.names.get(key)
            if seen is None:
                self.names[key] = {
                    "text": name,
                    "entry_id": entry_id,
                    "line": line,
                    "entries": {entry_id},
                }
            else:
                seen["entries"].add(entry_id)
        for written, value in numbers_in(text):
            seen = self.numbers.get(value)
            if seen is None:
                self.numbers[value] = {
                    "text": written,
                    "entry_id": entry_id,
                    "line": line,
                    "entries": {entry_id},
                }
            else:
                seen["entries"].add(entry_id)


def _user(found: _Collector, text: str) -> None:
    found.mine(text)
    flat = " ".join(text.split())
    constraints: list[str] = []
    whole_is_one = False
    if _CONSTRAINT.search(text):
        sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
        constraints = [s for s in sentences if _CONSTRAINT.search(s)]
        whole_is_one = len(sentences) == 1 and bool(constraints)
    if not whole_is_one and has_content_words(flat, MIN_WORDS):
        found.add("instruction", flat.casefold(), one_line(flat, TEXT_LIMIT), "request")
    for sentence in constraints:
        flat_sentence = " ".join(sentence.split())
        if has_content_words(flat_sentence, 2):
            text_cut = one_line(flat_sentence, TEXT_LIMIT)
            found.add("instruction", flat_sentence.casefold(), text_cut, "constraint")


def extract_facts(
    items: Iterable[tuple[Entry, Sequence[Any]]],
    *,
    max_identifiers: int = MAX_IDENTIFIERS,
    max_numbers: int = MAX_NUMBERS,
) -> list[Fact]:
    """The facts of a span: ``(entry, messages it sent)`` pairs in path order.

    Give the messages as the summarizer saw them (a context's projected entries: edits
    applied, system messages left out). Facts come grouped by kind, in
    :data:`FACT_KINDS` order, each kind in the order first seen (identifiers: the most
    named first).
    """
    found = _Collector()
    calls: dict[str, dict[str, Any]] = {}  # toolCallId -> the command fact it ran
    last_text: tuple[Entry, str] | None = None

    def close_turn() -> None:
        nonlocal last_text
        if last_text is not None:
            entry, text = last_text
            found.entry, keep = entry, found.entry
            flat = " ".join(text.split())
            if has_content_words(flat, MIN_WORDS):
                found.add("decision", flat.casefold(), one_line(flat, TEXT_LIMIT), "final text")
            found.entry = keep
        last_text = None

    for entry, messages in items:
        found.entry = entry
        for message in messages:
            if not isinstance(message, dict):
                continue
            role = message.get("role")
            if role == "user":
                close_turn()
                found.entry = entry
                _user(found, _texts(message.get("content")))
            elif role == "assistant":
                _assistant(found, message, calls)
                text = _texts(message.get("content"))
                if text.strip():
                    last_text = (entry, text)
                if message.get("stopReason") == "error":
                    reason = message.get("errorMessage")
                    if isinstance(reason, str) and reason.strip():
                        line_text = error_line(reason)
                        found.add("error", line_text.casefold(), line_text, "reply failed")
                        found.mine(line_text)
            elif role == "toolResult":
                _tool_result(found, message, calls)
            elif role == "bashExecution":
                _bash_execution(found, message)
    close_turn()
    return _facts(found, max_identifiers, max_numbers)


def _assistant(found: _Collector, message: dict[str, Any], calls: dict[str, Any]) -> None:
    found.mine(_texts(message.get("content")))
    files = FileOperations()  # Pi's rule for which calls touch which file
    files.add_message(message)
    for verb, paths in (("read", files.read), ("written", files.written), ("edited", files.edited)):
        for path in paths:
            fact = found.add("file", path, path, verb)
            if verb not in fact["detail"].split(", "):
                fact["detail"] += f", {verb}"
    for call in _calls(message):
        arguments = call.get("arguments")
        found.mine(_argument_text(arguments))
        command = arguments.get("command") if isinstance(arguments, dict) else None
        if call.get("name") == "bash" and isinstance(command, str) and command.strip():
            key = " ".join(command.split())
            fact = found.add("command", key, command.strip(), "no result")
            if isinstance(call.get("id"), str):
                calls[call["id"]] = fact


def _tool_result(found: _Collector, message: dict[str, Any], calls: dict[str, Any]) -> None:
    failed = message.get("isError") is True
    fact = calls.get(call_id) if isinstance(call_id := message.get("toolCallId"), str) else None
    if fact is not None:
        fact["detail"] = "failed" if failed else "ok"
    if failed:
        line_text = error_line(_texts(message.get("content")))
        if line_text:
            tool = message.get("toolName")
            found.add(
                "error", line_text.casefold(), line_text, tool if isinstance(tool, str) else ""
            )
            found.mine(line_text)


def _bash_execution(found: _Collector, message: dict[str, Any]) -> None:
    command = message.get("command")
    if not isinstance(command, str) or not command.strip():
        return
    code = message.get("exitCode")
    failed = (isinstance(code, int) and code != 0) or message.get("cancelled") is True
    key = " ".join(command.split())
    fact = found.add("command", key, command.strip())
    fact["detail"] = "failed" if failed else "ok"
    found.mine(command)
    output = message.get("output")
    if failed and isinstance(output, str):
        line_text = error_line(output)
        if line_text:
            found.add("error", line_text.casefold(), line_text, "bash")
            found.mine(line_text)


def _facts(found: _Collector, max_identifiers: int, max_numbers: int) -> list[Fact]:
    def fact(kind: str, item: dict[str, Any], detail: str = "") -> Fact:
        return Fact(
            kind,
            item["text"],
            item["entry_id"],
            item["line"],
            item.get("detail", detail),
            len(item["entries"]),
        )

    ordered = sorted(found.facts.values(), key=lambda f: FACT_KINDS.index(f["kind"]))
    facts = [fact(f["kind"], f) for f in ordered]
    file_names = {f.text.rsplit("/", 1)[-1].casefold() for f in facts if f.kind == "file"}
    names = [
        n
        for n in found.names.values()
        if len(n["entries"]) >= 2 and n["text"].casefold() not in file_names
    ]
    names.sort(key=lambda n: -len(n["entries"]))  # stable: first seen first among equals
    facts += [
        fact("identifier", n, f"{len(n['entries'])} entries") for n in names[:max_identifiers]
    ]
    numbers = list(found.numbers.values())[:max_numbers]
    facts += [fact("number", n) for n in numbers]
    return facts
