"""The search index is a cache in every path: damaged, it is built again; any other
SQLite trouble gives the same answers without it and one warning; several processes may
build it at once; queries are bounded in size and time.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.searching import query as query_module
from pinb.analysis.searching.cite import indexed_entries
from pinb.analysis.searching.index import (
    SearchTimeoutError,
    SessionCatalog,
    default_index_path,
    list_indexed,
    search,
)
from pinb.analysis.searching.query import MAX_FILTERS, MAX_WORDS, SearchQueryError
from pinb.core import Session
from pinb.core.file.paths import sessions_root
from pinb.testing.generate import SessionShape, generate_session

from ..builders import CASES, user

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py

_QUERIES = ("parser", "parser cache", '"fix the"', "role:user", "tool:bash error", "-parser tree")


def _corpus(count: int = 24, entries: int = 80) -> list[Path]:
    paths = [
        generate_session(
            sessions_root() / f"--p{i % 3}--" / f"s{i:02d}.jsonl",
            SessionShape(entries=entries, main_depth=entries // 2),
            seed=i,
        )
        for i in range(count)
    ]
    for case in CASES:  # odd files: version 1 and 2, branches
        target = sessions_root() / "--cases--" / case.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(case.read_bytes())
        paths.append(target)
    return paths


def _answers(catalog: SessionCatalog) -> tuple[Any, ...]:
    """Everything a user sees: the rows, and each query's hits as cited and snipped."""
    hits = tuple(
        tuple((h.cite, h.copies, h.snippet, h.role, h.timestamp) for h in catalog.search(q))
        for q in _QUERIES
    )
    return tuple(catalog.sessions()), hits


def _scan() -> tuple[Any, ...]:
    """The answers of a scan of the files, with no index file."""
    with SessionCatalog(":memory:") as catalog:
        return _answers(catalog)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _damage_pages(path: Path, tables: tuple[str, ...]) -> list[int]:
    """Overwrite the page headers of the tables' leaf pages: what a torn write leaves."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            page
            for (page,) in db.execute(
                "SELECT pageno FROM dbstat WHERE pagetype = 'leaf' AND name IN"
                f" ({', '.join('?' * len(tables))})",
                tables,
            )
        ]
    db.close()
    with open(path, "r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * size)
            handle.write(b"\xee" * 64)
    return pages


@pytest.mark.parametrize("tables", [("sessions",), ("entries", "entry_texts_data")])
def test_a_damaged_index_is_let_go_with_one_warning_and_built_again(
    tables: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    _corpus()
    expected = _scan()
    with SessionCatalog() as catalog:
        assert _answers(catalog) == expected
    assert _damage_pages(default_index_path(), tables)
    with SessionCatalog() as catalog:
        assert _answers(catalog) == expected
        # SQLite's word for it: "database disk image is malformed", or the full-text
        # table's "vtable constructor failed".
        assert catalog.degraded is not None and "built again next time" in catalog.degraded
    [warning] = _warnings(caplog)
    assert catalog.degraded in warning and "without it this time" in warning
    caplog.clear()
    # The damaged file was removed: the next use builds it again, and uses it.
    with SessionCatalog() as catalog:
        assert _answers(catalog) == expected and catalog.degraded is None
    with sqlite3.connect(default_index_path()) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    assert _warnings(caplog) == []


def test_a_file_that_is_no_database_is_built_again_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _corpus(6)
    default_index_path().parent.mkdir(parents=True)
    default_index_path().write_bytes(b"not a database at all " * 500)
    with SessionCatalog() as catalog:
        assert _answers(catalog) == _scan() and catalog.degraded is None
    [warning] = _warnings(caplog)
    assert "was damaged" in warning and "built again" in warning


def test_a_read_only_agent_folder_lists_and_searches_without_the_cache(
    isolated_agent_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _corpus(9)
    expected = _scan()
    isolated_agent_dir.chmod(0o555)
    try:
        with SessionCatalog() as catalog:
            assert _answers(catalog) == expected
            assert catalog.degraded == f"{isolated_agent_dir} is read-only"
        assert not (isolated_agent_dir / "pinb-cache").exists()
    finally:
        isolated_agent_dir.chmod(0o755)
    [warning] = _warnings(caplog)
    assert "read-only" in warning and "without it" in warning


def test_a_read_only_cache_is_read_around_and_left_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    paths = _corpus(9)
    with SessionCatalog() as catalog:
        _answers(catalog)
    folder = default_index_path().parent
    Session.open(paths[0]).append_message(user("a new question about walruses"))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    default_index_path().chmod(0o444)
    folder.chmod(0o555)
    try:
        with SessionCatalog() as catalog:
            assert [h.path for h in catalog.search("walruses")] == [paths[0]]
            assert catalog.degraded is not None
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    finally:
        folder.chmod(0o755)
        default_index_path().chmod(0o644)
    assert len(_warnings(caplog)) == 1


def test_a_lock_held_too_long_is_waited_for_then_gone_around(
    caplog: pytest.LogCaptureFixture,
) -> None:
    paths = _corpus(6)
    with SessionCatalog() as catalog:
        _answers(catalog)
    Session.open(paths[0]).append_message(user("a question while the index is locked"))
    holder = sqlite3.connect(default_index_path(), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing, and never done
    try:
        with SessionCatalog(lock_wait=0.5) as catalog:
            assert _answers(catalog) == _scan()
            assert catalog.degraded == "locked by another process for over 0.5 s"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(_warnings(caplog)) == 1
    caplog.clear()
    with SessionCatalog() as catalog:  # the lock is free: the index is used, and catches up
        assert _answers(catalog) == _scan() and catalog.degraded is None
    assert _warnings(caplog) == []


def _build_and_search(root: str, index: str, start: Any, rounds: int, out: Any) -> None:
    """One of several processes that build the index and search it at once."""
    try:
        start.wait()
        found = []
        for _ in range(rounds):
            with SessionCatalog(index, root) as catalog:
                hits = catalog.search("parser", limit=200)
                assert catalog.degraded is None, catalog.degraded
            # Each hit cut from its own line, found at the offset the index keeps.
            assert all("«" in h.snippet for h in hits), [
                h.cite for h in hits if "«" not in h.snippet
            ]
            found = [(h.cite, h.copies) for h in hits]
        out.put(("ok", found))
    except BaseException as exc:  # reported to the test, not lost in a child
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def test_processes_building_and_searching_at_once_agree_with_a_scan() -> None:
    paths = _corpus(18)
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(3), context.Queue()
    args = (os.fspath(sessions_root()), os.fspath(default_index_path()), start)
    workers = [context.Process(target=_build_and_search, args=(*args, 8, out)) for _ in range(2)]
    for worker in workers:
        worker.start()
    start.wait(timeout=120)
    # Both build the index from nothing at once, then search it while the sessions
    # change under them: appended to (read from where they grew) and rewritten (read
    # whole: their rows are taken away and added again between a search's statements).
    done = 0
    while any(worker.is_alive() for worker in workers):
        path = paths[done % len(paths)]
        if done % 4 == 3:
            Session.open(path).append_message(user(f"parser question {done}"))
        else:  # replaced whole, as pinb and editors write a file
            data = path.read_bytes()
            path.with_suffix(".new").write_bytes(
                data.replace(b"parser", b"Parser") if b"parser" in data
                else data.replace(b"Parser", b"parser"))  # fmt: skip
            path.with_suffix(".new").replace(path)
        done += 1
    results = [out.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert [kind for kind, _ in results] == ["ok", "ok"], results
    # Every hit, each with its copies: the same as a scan's. (Their order may differ:
    # the words of rewritten entries stay in the index's statistics, see the design.)
    with SessionCatalog() as catalog:
        ours = sorted((h.cite, h.copies) for h in catalog.search("parser", limit=10_000))
    with SessionCatalog(":memory:") as catalog:
        assert ours == sorted((h.cite, h.copies) for h in catalog.search("parser", limit=10_000))
    # Nothing was indexed twice: one row per searchable entry of each file.
    with sqlite3.connect(default_index_path()) as db:
        for path in paths:
            rows = db.execute(
                "SELECT line FROM entries e JOIN sessions s ON s.rowid = e.session"
                " WHERE s.path = ? ORDER BY line",
                (os.fspath(path),),
            ).fetchall()
            assert [line for (line,) in rows] == [
                e.line for e in indexed_entries(Session.open(path))
            ], path.name
    db.close()


def test_queries_are_bounded_in_words_and_filters() -> None:
    _corpus(3)
    words = " ".join(f"word{i}" for i in range(3_000))
    with pytest.raises(SearchQueryError, match=r"query too long: 3,000 words; .* at most 64"):
        search(words)
    assert not default_index_path().exists()  # refused before anything was read
    with pytest.raises(SearchQueryError, match="query too long"):
        search(f'"{words}"')  # a phrase's words count one by one
    with pytest.raises(SearchQueryError, match="query too long"):
        search(" OR ".join(f"w{i}" for i in range(40)), raw=True)
    with pytest.raises(SearchQueryError, match="too many filters"):
        search("parser " + " ".join(f"file:f{i}.py" for i in range(MAX_FILTERS + 1)))
    many = search(" ".join(["parser"] * MAX_WORDS), limit=1_000)
    assert len(many) > 10 and {h.cite for h in many} == {
        h.cite for h in search("parser", limit=1_000)
    }


def test_a_search_past_its_deadline_stops_and_the_index_stays() -> None:
    _corpus()
    with SessionCatalog() as catalog:
        expected = [h.cite for h in catalog.search("parser")]
        with pytest.raises(SearchTimeoutError, match="longer than 0 s"):
            catalog.search("parser", timeout=0)
        assert catalog.degraded is None  # a deadline is not trouble with the index
        assert [h.cite for h in catalog.search("parser", timeout=None)] == expected
    assert default_index_path().is_file()


def test_results_are_the_same_with_and_without_the_index() -> None:
    paths = _corpus()
    assert list_indexed() == list(SessionCatalog(":memory:").sessions())
    with SessionCatalog() as catalog:
        assert _answers(catalog) == _scan()
    for number, path in enumerate(paths[:6]):
        Session.open(path).append_message(user(f"parser appended {number}"))
    with SessionCatalog() as catalog:
        assert _answers(catalog) == _scan()
    # A search of one folder ranks its hits as a search of all does: in the same order
    # from the index (built by earlier searches of every folder) and from a scan of the
    # files, which a read-only agent folder gets.
    folder = paths[0].parent
    cached = [(h.cite, h.copies, h.snippet) for h in search("parser", folder, limit=500)]
    default_index_path().parent.chmod(0o555)
    try:
        with SessionCatalog() as catalog:
            assert catalog.degraded is not None
            found = catalog.search("parser", folder, limit=500)
    finally:
        default_index_path().parent.chmod(0o755)
    assert [(h.cite, h.copies, h.snippet) for h in found] == cached


def test_the_word_limit_is_the_modules_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # The limit is read when a query is parsed: a caller that needs longer queries can
    # raise it (the Ctrl-C test of the command line does).
    monkeypatch.setattr(query_module, "MAX_WORDS", 3)
    with pytest.raises(SearchQueryError, match="at most 3"):
        query_module.parse_query("a b c d")


# A search stopped by Ctrl-C: run in a process of its own, whose SIGINT is the test's.
_STOPPED = r"""
import json, sys
import pinb.analysis.searching.query as query
from pinb.analysis.searching.index import SessionCatalog

query.MAX_WORDS = 10_000  # a query far past the limit, to run long enough to be stopped
words = open(sys.argv[1]).read()
with SessionCatalog() as catalog:
    before = [h.cite for h in catalog.search("parser")]  # the index is built first
    print("ready", flush=True)
    try:
        catalog.search(words, timeout=None)
        report = {"stopped": "ran to its end"}
    except KeyboardInterrupt as exc:
        # Inside SQLite: its "interrupted" error; between two statements: Python's own.
        report = {"stopped": getattr(exc.__cause__, "sqlite_errorname", "in Python")}
    report["same after"] = [h.cite for h in catalog.search("parser")] == before
    report["degraded"] = catalog.degraded
print(json.dumps(report), flush=True)
"""


def test_ctrl_c_stops_a_long_query_and_the_index_stays(tmp_path: Path) -> None:
    import random
    import signal
    import subprocess
    import sys
    import time

    from pinb.testing.generate import _WORDS

    _corpus(30, entries=150)
    # 3,000 words that all occur: uninterrupted, this runs for seconds to minutes.
    words = tmp_path / "words.txt"
    words.write_text(" ".join(random.Random(7).choices(_WORDS, k=3_000)))
    stops = []
    # The query's statements come first (about 1.5 s on a quiet machine, longer on a
    # loaded one), then the snippets, whose Python a signal stops as well. A signal can
    # also land in the Python between two statements: a stop just as good, but not the one
    # this test is about, so another is tried (at most four times), early in the query.
    for delay in (0.3, 0.6, 0.9, 0.45):
        with subprocess.Popen(
            [sys.executable, "-c", _STOPPED, os.fspath(words)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as child:
            assert child.stdout is not None
            assert child.stdout.readline() == "ready\n"
            time.sleep(delay)  # into the query (parsing it takes milliseconds)
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=120)  # a hang guard only
        assert child.returncode == 0, err
        report = json.loads(out)
        # Stopped (never run to its end), and the index the same after it.
        assert report["stopped"] in ("SQLITE_INTERRUPT", "in Python"), report
        assert report["same after"] is True and report["degraded"] is None, report
        stops.append(report["stopped"])
        if report["stopped"] == "SQLITE_INTERRUPT":
            break
    # Stopped inside SQLite (not after the statement ran to its end).
    assert stops[-1] == "SQLITE_INTERRUPT", stops
    with sqlite3.connect(default_index_path()) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_only_damage_is_a_reason_to_remove_the_file(tmp_path: Path) -> None:
    from pinb.analysis.searching.sidecar import describe, is_busy, is_damage

    def error_of(*statements: str, path: Path = tmp_path / "full.sqlite") -> sqlite3.Error:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            for statement in statements:
                db.execute(statement)
        except sqlite3.Error as exc:
            return exc
        finally:
            db.close()
        raise AssertionError("no error")

    # SQLite's own "database or disk is full" (its page limit stands in for the disk).
    full = error_of("CREATE TABLE t(x)", "PRAGMA max_page_count=3",
                    "INSERT INTO t SELECT zeroblob(50000)")  # fmt: skip
    assert describe(full) == "database or disk is full" and not is_damage(full)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00not a database" * 400)
    assert is_damage(error_of("SELECT * FROM sqlite_master", path=junk))
    locked = tmp_path / "locked.sqlite"
    holder = sqlite3.connect(locked, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        busy = error_of("PRAGMA busy_timeout=0", "BEGIN IMMEDIATE", path=locked)
    finally:
        holder.close()
    assert is_busy(busy) and not is_damage(busy)


def test_a_looping_link_is_left_out_with_a_note_in_the_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _corpus(count=6)
    other = sessions_root() / "--p2--"
    (other / "a.jsonl").symlink_to(other / "b.jsonl")
    (other / "b.jsonl").symlink_to(other / "a.jsonl")
    loops = {str(other / "a.jsonl"), str(other / "b.jsonl")}
    with SessionCatalog(build=None) as catalog:
        rows = catalog.sessions()
        assert {s.path for s in catalog.skipped} == loops
        assert {s.reason for s in catalog.skipped} == {"a symbolic link that loops"}
        for using in ("scan", "index"):
            hits = catalog.search("parser", sessions_root() / "--p0--", using=using)
            assert hits and {s.path for s in hits.skipped} == loops
    assert len(rows) == 6 + len(CASES)
    assert {s.path for s in search("parser", limit=5).skipped} == loops
    assert len(list_indexed()) == len(rows)
    noted = [w for w in _warnings(caplog) if "symbolic link that loops" in w]
    assert {w.split(": ")[1] for w in noted} == loops  # "note: PATH: why; left out …"
    # Once the links are gone, nothing is left out.
    for link in loops:
        Path(link).unlink()
    with SessionCatalog(build=None) as catalog:
        assert catalog.search("parser").skipped == [] and catalog.skipped == []
