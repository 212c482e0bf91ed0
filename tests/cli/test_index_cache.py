"""``pinb ls`` and ``pinb search`` treat the index as a cache: a damaged one, a full disk
or a read-only agent folder gives the same answers without it and one warning line;
nothing is deleted but a damaged index; a query too long or too slow is one clear line.
"""

from __future__ import annotations

import resource
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.searching.index import default_index_path
from pinb.core.file.paths import sessions_root
from pinb.testing.generate import SessionShape, generate_session

_LS = ("ls", "--all")
_SEARCH = ("search", "--all", "--limit", "200", "parser")


def _sessions(first: int, count: int) -> None:
    for i in range(first, first + count):
        generate_session(
            sessions_root() / f"--p{i % 3}--" / f"s{i:02d}.jsonl",
            SessionShape(entries=60, main_depth=40),
            seed=i,
        )


def _pinb(*args: str, limit: Callable[[], None] | None = None) -> tuple[int, str, list[str]]:
    """Exit code, standard output and the lines of standard error of one ``pinb`` run."""
    result = subprocess.run(
        [sys.executable, "-m", "pinb.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard only
        preexec_fn=limit,
    )
    return result.returncode, result.stdout, result.stderr.splitlines()


def _answers(**kwargs: Any) -> tuple[tuple[int, str, list[str]], ...]:
    return _pinb(*_LS, **kwargs), _pinb(*_SEARCH, **kwargs)


def _healthy() -> None:
    with sqlite3.connect(default_index_path()) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_a_damaged_index_is_one_warning_and_then_built_again() -> None:
    _sessions(0, 24)
    (ls, ls_out, _), (found, found_out, _) = _answers()
    assert ls == found == 0 and "parser" in found_out
    with sqlite3.connect(default_index_path()) as db:
        size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name = 'sessions'")]
    db.close()
    with open(default_index_path(), "r+b") as handle:  # bytes in the middle of its pages
        handle.seek((pages[len(pages) // 2] - 1) * size + size // 2 - 300)
        handle.write(b"\xff" * 600)
    code, out, err = _pinb(*_LS)
    assert (code, out) == (0, ls_out)
    [warning] = err
    assert "malformed" in warning and "built again next time" in warning
    assert "internal error" not in warning
    assert _answers() == ((0, ls_out, []), (0, found_out, []))
    _healthy()


def _file_size_limit(size: int) -> Callable[[], None]:
    def limit() -> None:
        # A write past ``size`` fails as on a full disk (EFBIG; SQLite: a disk I/O error)
        # instead of killing the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@pytest.mark.parametrize("room", [8 * 1024, 64 * 1024])
def test_a_full_disk_deletes_nothing_and_answers_all_the_same(room: int) -> None:
    _sessions(0, 24)
    _answers()  # the index is built and up to date
    _sessions(24, 12)  # new sessions: the index must grow, and cannot
    index = default_index_path()
    before = index.stat()
    full = _answers(limit=_file_size_limit(room))
    assert index.exists() and index.stat().st_ino == before.st_ino
    assert index.stat().st_size >= before.st_size
    # Then with room again: the index is used and catches up; the answers are those.
    answers = _answers()
    assert [code for code, _, _ in answers] == [0, 0] and all(not err for *_, err in answers)
    assert [out for _, out, _ in full] == [out for _, out, _ in answers]
    assert "s35.jsonl" in answers[0][1]
    warnings = [err for _, _, err in full if err]
    assert warnings and all(len(err) == 1 and "is not used (disk I/O error)" in err[0]
                            for err in warnings)  # fmt: skip
    _healthy()


def test_a_read_only_agent_folder_lists_and_searches(isolated_agent_dir: Path) -> None:
    _sessions(0, 9)
    isolated_agent_dir.chmod(0o555)
    try:
        read_only = _answers()
        assert not (isolated_agent_dir / "pinb-cache").exists()
    finally:
        isolated_agent_dir.chmod(0o755)
    for code, _, err in read_only:
        assert code == 0 and len(err) == 1
        assert f"{isolated_agent_dir} is read-only" in err[0] and "without it" in err[0]
    cached = _answers()
    assert [out for _, out, _ in read_only] == [out for _, out, _ in cached]
    assert all(code == 0 and not err for code, _, err in cached)


def test_a_query_too_long_or_too_slow_is_one_clear_line() -> None:
    _sessions(0, 24)
    code, out, err = _pinb("search", "--all", *(f"word{i}" for i in range(3_000)))
    assert (code, out) == (2, "") and len(err) == 1
    assert err[0].startswith("pinb: query too long: 3,000 words; a search takes at most 64")
    assert not default_index_path().exists()
    code, out, err = _pinb(*_SEARCH, "--timeout", "0")
    assert (code, out) == (2, "") and len(err) == 1
    assert err[0].startswith("pinb: the search took longer than 0 s and was stopped")
    code, out, err = _pinb(*_SEARCH)
    assert code == 0 and "parser" in out and err == []
