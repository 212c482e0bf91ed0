"""The search index is built only when a search needs it, resumes after a kill, and
re-reads only the files that changed since their entries were indexed."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from pinb.analysis.searching.index import SessionCatalog, default_index_path, list_indexed, search
from pinb.core import Session
from pinb.core.file.paths import sessions_root

from ..builders import assistant, user


def _chat(name: str, words: str) -> Path:
    session = Session.create(f"/{name}", sessions_root() / f"--{name}--")
    session.append_message(user(f"question about {words}"))
    session.append_message(assistant(f"answer about {words}", total=10))
    assert session.path is not None
    return session.path


def _indexed_rows() -> int:
    with sqlite3.connect(default_index_path()) as db:
        return int(db.execute("SELECT count(*) FROM entries").fetchone()[0])


def _indexed_files() -> set[str]:
    with sqlite3.connect(default_index_path()) as db:
        return {
            Path(path).name
            for (path,) in db.execute("SELECT path FROM sessions WHERE entries_key IS NOT NULL")
        }


@pytest.mark.usefixtures("isolated_agent_dir")
def test_a_listing_indexes_nothing_and_the_first_search_builds_the_index() -> None:
    paths = [_chat(f"p{i}", f"topic{i}") for i in range(5)]
    assert len(list_indexed()) == 5
    assert _indexed_rows() == 0 and _indexed_files() == set()
    reports: list[tuple[str, int, int]] = []
    hits = search("topic3", progress=lambda *report: reports.append(report))
    assert [hit.path for hit in hits] == [paths[3], paths[3]]
    assert reports[-1] == ("indexing", 5, 5)
    assert [done for what, done, _ in reports if what == "indexing"] == sorted(
        done for what, done, _ in reports if what == "indexing"
    )
    assert _indexed_files() == {p.name for p in paths}
    reports.clear()
    search("topic1", progress=lambda *report: reports.append(report))
    assert reports == []  # nothing changed: nothing read


@pytest.mark.usefixtures("isolated_agent_dir")
def test_an_interrupted_build_keeps_what_it_finished_and_goes_on_from_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pinb.analysis.searching.index as index

    monkeypatch.setattr(index, "_ENTRY_BATCH", 2)
    paths = [_chat(f"q{i}", f"word{i}") for i in range(7)]

    def killed(what: str, done: int, total: int) -> None:
        if what == "indexing" and done >= 4:
            raise KeyboardInterrupt  # the user pressed ^C (or the kernel died) here

    with pytest.raises(KeyboardInterrupt), SessionCatalog(progress=killed) as catalog:
        catalog.search("word6")
    assert len(_indexed_files()) == 4  # two whole transactions, nothing half-written
    read: list[str] = []
    real = index._entries
    monkeypatch.setattr(index, "_entries", lambda path: read.append(path) or real(path))
    assert [hit.path for hit in search("word6")] == [paths[6], paths[6]]
    assert len(read) == 3 and _indexed_files() == {p.name for p in paths}


def _rowids(path: Path) -> list[int]:
    with sqlite3.connect(default_index_path()) as db:
        return [
            rowid
            for (rowid,) in db.execute(
                "SELECT e.rowid FROM entries e JOIN sessions s ON s.rowid = e.session"
                " WHERE s.path = ? ORDER BY e.line",
                (str(path),),
            )
        ]


@pytest.mark.usefixtures("isolated_agent_dir")
def test_a_grown_file_is_indexed_by_its_new_bytes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import pinb.analysis.searching.index as index

    paths = [_chat(f"r{i}", f"thing{i}") for i in range(4)]
    assert len(search("thing0")) == 2
    kept = _rowids(paths[2])
    session = Session.open(paths[2])
    session.append_message(user("a later remark about zebras"))
    os.utime(paths[2], ns=(1, os.stat(paths[2]).st_mtime_ns + 1_000_000))
    whole: list[str] = []
    grown: list[tuple[str, int]] = []
    real_entries, real_appended = index._entries, index._appended
    monkeypatch.setattr(index, "_entries", lambda path: whole.append(path) or real_entries(path))

    def appended(path: str, size: int, lines: int, tail: str) -> object:
        grown.append((path, size))
        return real_appended(path, size, lines, tail)

    monkeypatch.setattr(index, "_appended", appended)
    rows = list_indexed()  # the listing sees the change at once; the index waits
    assert next(r for r in rows if r.path == paths[2]).message_count == 3
    assert whole == grown == []
    hits = search("zebras")
    assert [(hit.path, hit.line) for hit in hits] == [(paths[2], 4)]
    assert whole == [] and [path for path, _ in grown] == [os.fspath(paths[2])]
    assert _rowids(paths[2])[:-1] == kept  # the old rows stay, one row is added
    # A file rewritten (not only grown) is read whole again.
    paths[1].write_bytes(paths[3].read_bytes().replace(b"thing3", b"walrus"))
    os.utime(paths[1], ns=(1, os.stat(paths[1]).st_mtime_ns + 2_000_000))
    assert {hit.path for hit in search("walrus")} == {paths[1]}
    assert whole == [os.fspath(paths[1])]
    assert search("thing1") == []


def _sizes() -> tuple[int, int, int]:
    """Bytes of the index (after a checkpoint), its word rows and its live entry rows."""
    with sqlite3.connect(default_index_path()) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        page = db.execute("PRAGMA page_size").fetchone()[0]
        words = db.execute("SELECT count(*) FROM entry_texts_docsize").fetchone()[0]
        live = db.execute("SELECT count(*) FROM entries").fetchone()[0]
    return pages * page, words, live


@pytest.mark.usefixtures("isolated_agent_dir")
def test_the_index_holds_words_not_text() -> None:
    from pinb.analysis.searching.cite import indexed_entries
    from pinb.testing.generate import SessionShape, generate_session

    folder = sessions_root() / "--gen--"
    paths = [
        generate_session(folder / f"s{i}.jsonl", SessionShape(entries=120, main_depth=80), seed=i)
        for i in range(12)
    ]
    text = sum(len(e.body.encode()) for p in paths for e in indexed_entries(Session.open(p)))
    hits = search("parser")
    assert hits and "«parser»" in hits[0].snippet  # snippets are cut from the lines
    size, words, live = _sizes()
    assert words == live > 1000
    assert size <= text, (size, text)


@pytest.mark.usefixtures("isolated_agent_dir")
def test_words_of_gone_entries_are_dropped_once_they_outnumber_the_live(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pinb.analysis.searching.index as index

    monkeypatch.setattr(index, "_STALE_SLACK", 0)
    path = _chat("w", "first")
    other = _chat("x", "steady")
    assert len(search("first")) == 2
    for round_ in range(3):  # rewritten, not grown: read whole, old words left behind
        path.write_bytes(path.read_bytes().replace(b"first" if round_ == 0 else
                                                   f"word{round_ - 1}".encode(),
                                                   f"word{round_}".encode()))  # fmt: skip
        os.utime(path, ns=(1, os.stat(path).st_mtime_ns + (round_ + 1) * 1_000_000))
        assert {h.path for h in search(f"word{round_}")} == {path}
        assert search("first") == []
        _, words, live = _sizes()
        assert words <= 2 * live
    assert {h.path for h in search("steady")} == {other}


def test_a_hits_line_is_read_alone_from_its_offset_as_a_split_would_find_it() -> None:
    import io

    import pinb.analysis.searching.entrylines as entrylines

    long = b"x" * (3 * (1 << 16) + 5)  # longer than the pieces it is read in
    for data in (b"", b"a", b"a\n", b"a\n\nb\r\n", b"\n\n", b"{}\n{\"x\":1}\nlast",
                 long + b"\n" + long, b"q\n" + long + b"\nz\n"):  # fmt: skip
        offset = 0
        for line in data.split(b"\n"):
            assert entrylines.line_at(io.BytesIO(data), offset) == line, (data[:20], offset)
            offset += len(line) + 1
