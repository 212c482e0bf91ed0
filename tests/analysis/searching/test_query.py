"""The search query language: a real tokenizer, and FTS5/SQL that user text cannot break."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinb.analysis.searching.query import (
    Filter,
    SearchQuery,
    SearchQueryError,
    Term,
    parse_query,
    parse_time,
    sql_filters,
)
from pinb.errors import PinbError, UsageError


def _terms(text: str) -> list[str]:
    return [str(t) for t in parse_query(text).terms]


def test_words_phrases_prefixes_and_exclusions() -> None:
    query = parse_query('flaky "exact  phrase" refact* -retry -"not this"')
    assert query.terms == (
        Term("flaky"),
        Term("exact  phrase", phrase=True),
        Term("refact", prefix=True),
        Term("retry", negated=True),
        Term("not this", phrase=True, negated=True),
    )
    assert query.match() == '"flaky" "exact  phrase" "refact"* NOT ("retry" OR "not this")'
    assert query.excluded() == '"retry" OR "not this"'


def test_escaped_quotes_and_backslashes() -> None:
    assert parse_query(r'"say \"hi\" now"').terms == (Term('say "hi" now', phrase=True),)
    assert parse_query(r'"a\\" b').terms == (Term("a\\", phrase=True), Term("b"))
    assert _terms(r"don\"t") == ['don"t']
    assert parse_query(r'"say \"hi\""').match() == '"say ""hi"""'


def test_quotes_behave_as_in_pi() -> None:
    # A quote starts a phrase even inside a word (pi's parseSearchQuery) ...
    assert parse_query('foo"bar baz"').terms == (Term("foo"), Term("bar baz", phrase=True))
    # ... and quotes that do not pair make the whole query plain words.
    assert _terms('unclosed "quote here') == ["unclosed", '"quote', "here"]
    assert _terms('a "b" "c') == ["a", '"b"', '"c']


def test_filters_fields_and_their_values() -> None:
    query = parse_query(
        "ROLE:toolresult tool:Bash file:./src/app.py session:01A2 after:2026-01-01 "
        'before:2026-02-01T12:00Z -role:user file:"my dir/a b.py"'
    )
    assert query.terms == ()
    assert query.filters == (
        Filter("role", "toolResult"),
        Filter("tool", "Bash"),
        Filter("file", "./src/app.py"),
        Filter("session", "01A2"),
        Filter("after", "2026-01-01"),
        Filter("before", "2026-02-01T12:00Z"),
        Filter("role", "user", negated=True),
        Filter("file", "my dir/a b.py"),
    )
    assert str(query.filters[-1]) == 'file:"my dir/a b.py"'


def test_unknown_fields_are_words_and_bad_values_say_why() -> None:
    assert _terms("foo:bar http://x.org col:val") == ["foo:bar", "http://x.org", "col:val"]
    assert parse_query("role: x").terms == (Term("role:"), Term("x"))  # no value: a word
    assert parse_query('file:"" x').ignored == ("file:",)
    with pytest.raises(SearchQueryError, match="unknown role 'robot'; use one of user"):
        parse_query("role:robot")
    with pytest.raises(SearchQueryError, match="not a date: 'yesterday'"):
        parse_query("after:yesterday")
    assert issubclass(SearchQueryError, UsageError) and issubclass(SearchQueryError, PinbError)
    assert parse_time("2026-01-01") == parse_time("2026-01-01T00:00:00Z")


@pytest.mark.parametrize("text", ["", "   ", "-", "***", '"', '""', "— …", "-- -"])
def test_queries_with_nothing_to_search(text: str) -> None:
    query = parse_query(text)
    assert query.empty and query.match() is None and query.excluded() is None


def test_operators_and_punctuation_are_words() -> None:
    query = parse_query('AND OR NOT NEAR(a b) foo-bar a*b {body}: ^x "')
    assert query.match() == '"AND" "OR" "NOT" "NEAR(a" "b)" "foo-bar" "a*b" "{body}:" "^x"'
    assert query.ignored == ('"',)  # the unpaired quote, alone, holds no word
    # NUL would end an FTS5 string early; a lone surrogate cannot be bound: both split.
    assert parse_query("a\x00b \ud800c").match() == '"a" "b" "c"'


def test_the_text_form_parses_back_to_the_same_query() -> None:
    text = r'x "a \"q\" b" -y pre* role:user -tool:bash file:"a b.py"'
    query = parse_query(text)
    again = parse_query(str(query))
    assert (again.terms, again.filters) == (query.terms, query.filters)


def test_filters_become_parameters_never_sql() -> None:
    query = parse_query(
        "tool:bash tool:read -role:user file:src/app.py session:ab' after:2026-01-01"
    )
    clauses, params = sql_filters(query)
    sql = " AND ".join(clauses)
    assert "bash" not in sql and "app.py" not in sql and "ab'" not in sql
    assert "(" in sql and sql.count("?") == len(params)
    assert params[:2] == ["bash", "read"]  # two on one field: either
    assert "NOT coalesce(" in sql  # a negated filter


_FTS = sqlite3.connect(":memory:")
_FTS.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
_FTS.execute("INSERT INTO t(body) VALUES ('foo bar'), ('AND OR NOT NEAR'), ('say \"hi\"')")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab -"\\*:()^{}+,.;\'=NOTANDORNEAR\u00e9\u2014\x00 ')),
               max_size=40))  # fmt: skip
def test_no_query_breaks_fts5(text: str) -> None:
    try:
        query = parse_query(text)
    except SearchQueryError:
        return  # a bad filter value, said in words
    for expression in (query.match(), query.excluded()):
        if expression is not None:
            _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_any_text_parses_or_says_what_is_wrong(text: str) -> None:
    try:
        query = parse_query(text)
    except SearchQueryError:
        return
    assert isinstance(query, SearchQuery)
    for expression in (query.match(), query.excluded()):
        if expression is not None:
            _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


def test_words_match_as_words_not_operators() -> None:
    def hits(text: str) -> list[int]:
        expression = parse_query(text).match()
        assert expression is not None
        return [r[0] for r in _FTS.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,))]

    assert hits("AND OR") == [2]
    assert hits("NOT NEAR") == [2]
    assert hits('"say \\"hi\\""') == [3]
    assert hits("fo*") == [1]
    assert hits("foo -bar") == []
