"""Search queries as a Pi user types them: words, "phrases", -exclusions and field:filters.

The syntax, parsed by :func:`parse_query` into a :class:`SearchQuery`:

- ``word`` must occur (case and accents folded, whole words); ``refact*`` is a prefix.
- ``"exact phrase"`` must occur as written (``\\"`` is a quote inside it). As in Pi's
  session search (``parseSearchQuery`` in pi-mono's
  ``packages/coding-agent/src/modes/interactive/components/session-selector-search.ts``),
  a quote starts a phrase even inside a word, and a query whose quotes do not pair is
  read as plain words, quotes and all.
- ``-word``, ``-"phrase"`` and ``-field:value`` exclude.
- ``role:user`` (``assistant``, ``toolResult``, ``bashExecution``, ``custom``,
  ``branchSummary``, ``compactionSummary``), ``tool:bash`` (a call of the tool or its
  result), ``file:src/app.py`` (a file a tool call read, edited or wrote, or a path
  mentioned in its other arguments such as a command; matched by whole path components
  from the end, so ``file:app.py`` finds ``/home/me/src/app.py`` but not ``webapp.py``),
  ``session:<id prefix>``, ``after:2026-01-01`` and ``before:2026-02-01`` (UTC; a date
  or an ISO time) filter. Filters on different fields must all hold; several on one field: any.
- ``name:value`` for any other name is a plain word.

:meth:`SearchQuery.match` is the FTS5 expression: every word is a quoted FTS5 string
(``"`` doubled), so ``AND``, ``NEAR``, ``*``, ``-`` or a stray quote in user text are
words, never operators. Values of filters only ever reach SQL as bound parameters.

A query holds at most :data:`MAX_WORDS` words (those of its phrases and exclusions
counted) and :data:`MAX_FILTERS` filters: each word is a list of entries SQLite reads and
checks every candidate against, so a pasted page would run for minutes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from ...errors import UsageError

__all__ = [
    "FIELDS",
    "MAX_FILTERS",
    "MAX_WORDS",
    "ROLES",
    "Filter",
    "SearchQuery",
    "SearchQueryError",
    "Term",
    "check_raw_size",
    "parse_query",
    "sql_filters",
]

#: Roles a ``role:`` filter accepts (matched without regard to case).
ROLES: Final = (
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
)
#: Field names that filter; any other ``name:`` is a plain word.
FIELDS: Final = ("role", "tool", "file", "session", "after", "before")

#: Words a query may hold, in its words, phrases and exclusions together.
MAX_WORDS: Final = 64
#: Filters a query may hold.
MAX_FILTERS: Final = 32

_FIELD = re.compile(r"([A-Za-z]+):")
#: What FTS5's ``unicode61`` tokenizer makes one word of (letters and digits).
_WORD = re.compile(r"[^\W_]+")
#: What FTS5 and SQLite cannot take in a query: NUL ends an FTS5 string early, and a lone
#: surrogate cannot be encoded.
_UNUSABLE = re.compile("[\x00\ud800-\udfff]")


class SearchQueryError(UsageError):
    """A filter's value cannot be used (an unknown role, a date that is not one)."""


@dataclass(frozen=True)
class Term:
    """A word or phrase of a query."""

    text: str
    phrase: bool = False
    negated: bool = False
    #: A word typed with a trailing ``*``: matches words starting with ``text``.
    prefix: bool = False

    def fts(self) -> str:
        """This term as an FTS5 string: quoted, ``"`` doubled, ``*`` for a prefix."""
        return '"' + self.text.replace('"', '""') + '"' + ("*" if self.prefix else "")

    def __str__(self) -> str:
        sign = "-" if self.negated else ""
        if self.phrase:
            return sign + '"' + self.text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return sign + self.text + ("*" if self.prefix else "")


@dataclass(frozen=True)
class Filter:
    """A ``field:value`` filter (``value`` as typed; see :func:`sql_filters`)."""

    field: str
    value: str
    negated: bool = False

    def __str__(self) -> str:
        value = self.value
        if not value or any(ch.isspace() or ch == '"' for ch in value):
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return ("-" if self.negated else "") + f"{self.field}:{value}"


@dataclass(frozen=True)
class SearchQuery:
    """A parsed query: terms (words and phrases) and filters.

    Attributes
    ----------
    text:
        The query as typed.
    terms, filters:
        In the order typed.
    ignored:
        Words dropped because they hold nothing searchable (``***``, ``—``).
    """

    text: str = ""
    terms: tuple[Term, ...] = ()
    filters: tuple[Filter, ...] = ()
    ignored: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        """Nothing to search for: no term and no filter."""
        return not self.terms and not self.filters

    def match(self) -> str | None:
        """The FTS5 expression every hit must match (``None``: no required term).

        Required terms are joined by FTS5's implicit AND; excluded ones follow a ``NOT``
        when there is a required one (otherwise see :meth:`excluded`).
        """
        required = [t.fts() for t in self.terms if not t.negated]
        if not required:
            return None
        excluded = self.excluded()
        return " ".join(required) + (f" NOT ({excluded})" if excluded else "")

    def excluded(self) -> str | None:
        """The FTS5 expression no hit may match: excluded terms joined by OR."""
        terms = [t.fts() for t in self.terms if t.negated]
        return " OR ".join(terms) if terms else None

    def __str__(self) -> str:
        return " ".join([*map(str, self.terms), *map(str, self.filters)])


def _searchable(text: str) -> bool:
    """Whether FTS5's ``unicode61`` tokenizer finds a token in ``text`` (letters, digits)."""
    return any(ch.isalnum() for ch in text)


def _read_quoted(text: str, start: int) -> tuple[str, int] | None:
    """The phrase opened by the quote at ``start`` and the index after its closing quote;
    ``None`` when it is never closed. ``\\"`` and ``\\\\`` are escapes inside it."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '"\\':
            out.append(text[i + 1])
            i += 2
            continue
        if ch == '"':
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return None


def _tokens(text: str, *, quotes: bool) -> list[tuple[str, bool, bool, str | None]]:
    """``(text, phrase, negated, field)`` tokens; with ``quotes=False`` a quote is text.

    Raises ``ValueError`` when a quote is left open (the caller falls back, as Pi does).
    """
    tokens: list[tuple[str, bool, bool, str | None]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        negated = text[i] == "-" and i + 1 < n and not text[i + 1].isspace()
        if negated:
            i += 1
        name: str | None = None
        found = _FIELD.match(text, i)
        if found and found.group(1).lower() in FIELDS:
            after = found.end()
            if after < n and not text[after].isspace():
                name, i = found.group(1).lower(), after
        if quotes and text[i] == '"':
            quoted = _read_quoted(text, i)
            if quoted is None:
                raise ValueError("unclosed quote")
            value, i = quoted
            tokens.append((value, True, negated, name))
            continue
        out: list[str] = []
        while i < n and not text[i].isspace():
            ch = text[i]
            if ch == "\\" and i + 1 < n and text[i + 1] in '"\\':
                out.append(text[i + 1])
                i += 2
                continue
            if quotes and ch == '"':
                break  # a quote inside a word starts a phrase, as in Pi
            out.append(ch)
            i += 1
        word = "".join(out)
        if word or name is not None:
            tokens.append((word, False, negated, name))
    return tokens


def parse_query(text: str) -> SearchQuery:
    """Parse a query (see the module docstring for the syntax).

    Raises
    ------
    SearchQueryError
        A ``role:`` that is not a role, or an ``after:``/``before:`` that is not a date.
    """
    usable = _UNUSABLE.sub(" ", text)
    try:
        tokens = _tokens(usable, quotes=True)
    except ValueError:
        tokens = _tokens(usable, quotes=False)  # unpaired quotes: plain words, as in Pi
    terms: list[Term] = []
    filters: list[Filter] = []
    ignored: list[str] = []
    for value, phrase, negated, name in tokens:
        if name is not None:
            if value:
                filters.append(_filter(name, value, negated))
            else:
                ignored.append(f"{name}:")
            continue
        prefix = not phrase and value.endswith("*") and _searchable(value)
        word = value.rstrip("*") if prefix else value
        if not _searchable(word):
            ignored.append(value)
            continue
        terms.append(Term(word, phrase=phrase, negated=negated, prefix=prefix))
    _check_size(sum(_words(term.text) for term in terms), len(filters))
    return SearchQuery(text, tuple(terms), tuple(filters), tuple(ignored))


def _words(text: str) -> int:
    return sum(1 for _ in _WORD.finditer(text))


def _check_size(words: int, filters: int) -> None:
    if words > MAX_WORDS:
        raise SearchQueryError(
            f"query too long: {words:,} words; a search takes at most {MAX_WORDS} "
            "(search for a few telling words or a short phrase, and add filters)"
        )
    if filters > MAX_FILTERS:
        raise SearchQueryError(
            f"too many filters: {filters:,}; a search takes at most {MAX_FILTERS}"
        )


def check_raw_size(text: str) -> None:
    """Refuse a raw FTS5 query of more than :data:`MAX_WORDS` words (operators counted).

    Raises
    ------
    SearchQueryError
        When it has more.
    """
    _check_size(_words(_UNUSABLE.sub(" ", text)), 0)


def _filter(name: str, value: str, negated: bool) -> Filter:
    if name == "role":
        roles = {r.lower(): r for r in ROLES}
        role = roles.get(value.lower())
        if role is None:
            raise SearchQueryError(f"unknown role {value!r}; use one of {', '.join(ROLES)}")
        value = role
    elif name in ("after", "before"):
        parse_time(value)  # checked now, so the error names the query
    return Filter(name, value, negated)


def parse_time(value: str) -> float:
    """Unix seconds of a date (``2026-01-01``, UTC midnight) or an ISO time (``Z`` = UTC).

    Raises
    ------
    SearchQueryError
        When ``value`` is neither.
    """
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise SearchQueryError(
            f"not a date: {value!r}; write after:2026-01-31 or after:2026-01-31T12:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def sql_filters(query: SearchQuery) -> tuple[list[str], list[object]]:
    """SQL conditions (over ``entries e`` and ``sessions s``) and their bound parameters.

    Filters on one field are alternatives (OR); the fields all hold (AND); a negated
    filter must not hold. Values are parameters, never part of the SQL text.
    """
    by_field: dict[tuple[str, bool], list[Filter]] = {}
    for item in query.filters:
        by_field.setdefault((item.field, item.negated), []).append(item)
    clauses: list[str] = []
    params: list[object] = []
    for (name, negated), items in by_field.items():
        parts: list[str] = []
        for item in items:
            sql, values = _condition(name, item.value)
            parts.append(sql)
            params.extend(values)
        joined = "(" + " OR ".join(parts) + ")"
        # A filter on a missing value (no timestamp) does not hold, so its negation does.
        clauses.append(f"NOT coalesce({joined}, 0)" if negated else joined)
    return clauses, params


def _condition(name: str, value: str) -> tuple[str, list[object]]:
    if name == "role":
        return "e.role = ?", [value]
    if name == "tool":
        sql = "EXISTS (SELECT 1 FROM entry_tools t WHERE t.entry = e.rowid AND t.tool = ?)"
        return sql, [value.lower()]
    if name == "file":
        path = value[2:] if value.startswith("./") else value
        sql = (
            "EXISTS (SELECT 1 FROM entry_files f WHERE f.entry = e.rowid"
            " AND (f.path = ? OR substr(f.path, -length(?) - 1) = '/' || ?))"
        )
        return sql, [path, path, path]
    if name == "session":
        return "substr(s.id, 1, length(?)) = ?", [value.lower(), value.lower()]
    if name == "after":
        return "e.timestamp >= ?", [parse_time(value)]
    if name == "before":
        return "e.timestamp < ?", [parse_time(value)]
    raise AssertionError(f"no condition for {name!r}")  # FIELDS and this list agree
