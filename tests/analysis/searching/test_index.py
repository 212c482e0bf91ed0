"""The sidecar SQLite FTS5 index: same rows as the core listing, incremental, rebuildable."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from pinb.analysis.searching.index import (
    SearchIndexError,
    SessionCatalog,
    default_index_path,
    list_indexed,
    search,
)
from pinb.core import Session
from pinb.core.file.listing import list_all_sessions, list_sessions
from pinb.core.file.paths import sessions_root

from ..builders import CASES, assistant, build_demo, user


def _project(name: str) -> Path:
    return sessions_root() / f"--{name}--"


def _chat(folder: Path, question: str, answer: str) -> Path:
    session = Session.create(f"/{folder.name}", folder)
    session.append_message(user(question))
    session.append_message(assistant(answer, total=10))
    assert session.path is not None
    return session.path


def _digest(paths: list[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_listing_equals_the_core_listing_and_never_writes_sessions(
    isolated_agent_dir: Path,
) -> None:
    files = [
        build_demo(_project("a"))[0],
        _chat(_project("b"), "how do I parse dates", "use fromisoformat"),
    ]
    for case in CASES:
        target = _project("cases") / case.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(case.read_bytes())
        files.append(target)
    before = _digest(files)
    indexed = list_indexed(with_text=True)
    assert indexed == list_all_sessions()
    assert list_indexed(_project("b")) == [
        info.__class__(**{**info.__dict__, "all_messages_text": ""})
        for info in list_sessions(_project("b"))
    ]
    assert default_index_path().is_file()
    assert default_index_path().parent == isolated_agent_dir / "pinb-cache"
    assert _digest(files) == before


def test_refresh_reads_only_changed_files_and_forgets_deleted_ones() -> None:
    first = _chat(_project("p"), "alpha question", "alpha answer")
    second = _chat(_project("p"), "beta question", "beta answer")
    (_project("p") / "junk.jsonl").write_text("not a session\n")
    with SessionCatalog() as catalog:
        assert catalog.refresh().updated == 3
        assert catalog.refresh().updated == 0
        session = Session.open(first)
        session.append_message(user("gamma follow-up"))
        os.utime(first, ns=(1, os.stat(first).st_mtime_ns + 1_000_000))
        stats = catalog.refresh()
        assert (stats.updated, stats.removed) == (1, 0)
        assert [h.path for h in catalog.search("gamma")] == [first]
        second.unlink()
        assert catalog.refresh().removed == 1
        assert catalog.search("beta") == []
        assert [i.path for i in catalog.sessions()] == [first]


def test_search_words_snippets_scope_and_escaping() -> None:
    a = _chat(_project("one"), "The Café migration is flaky", "Try a retry loop")
    b = _chat(_project("two"), "flaky network <script>alert(1)</script>", "check the proxy")
    hits = search("flaky")
    assert {h.path for h in hits} == {a, b}
    assert [h.path for h in search("cafe MIGRATION")] == [a]  # accents and case folded
    # Every word, in one entry (each hit cites one entry).
    assert search("flaky proxy") == [] and search("check proxy")[0].path == b
    assert (
        search("flaky", _project("one"))[0].path == a and len(search("flaky", _project("one"))) == 1
    )
    assert "«flaky»" in search("flaky", _project("two"))[0].snippet
    # Quotes and operators in user text are words, not query syntax.
    assert search('"flaky') != [] and search("AND OR NOT") == []
    html = search("script")._repr_mimebundle_()["text/html"]
    assert "<script>" not in html and "&lt;" in html
    with pytest.raises(SearchIndexError):
        search("flaky AND (", raw=True)


def test_a_damaged_index_is_rebuilt() -> None:
    path = _chat(_project("d"), "delta words", "fine")
    default_index_path().parent.mkdir(parents=True, exist_ok=True)
    default_index_path().write_bytes(b"this is not a database" * 100)
    assert [h.path for h in search("delta")] == [path]
    # Another schema version is rebuilt too.
    db = sqlite3.connect(default_index_path())
    db.execute("PRAGMA user_version=99")
    db.close()
    assert [h.path for h in search("delta")] == [path]
    with SessionCatalog() as catalog:
        assert catalog.rebuild().updated == 1


def test_odd_text_and_odd_file_names_do_not_stop_ls_or_search(
    caplog: pytest.LogCaptureFixture,
) -> None:
    folder = _project("odd")
    path = _chat(folder, "hi \ud83d there", "a lone surrogate above")
    (folder / os.fsdecode(b"\xff-not-utf8.jsonl")).write_bytes(path.read_bytes())
    [info] = list_indexed(folder)
    assert info.path == path and info.first_message == "hi \ufffd there"
    [hit] = search("there", folder)
    assert hit.path == path and "«there»" in hit.snippet
    assert "not valid UTF-8" in caplog.text
