"""A memory database with flipped bits or invalid text, and a read-only one (issue 23,
reproduction 7): every memory command says one clear line, ``%%pi`` runs on, a read-only
database still lists and recalls.
"""

from __future__ import annotations

import io
import logging
import random
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from pinb.cli import main
from pinb.memory import MemoryStore, memory_prompt_section
from pinb.memory.records import default_db_path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


MEMORY_COMMANDS = [
    ["memory", "list"],
    ["memory", "list", "--all-projects"],
    ["memory", "recall", "tox"],
    ["memory", "save", "hello"],
    ["memory", "forget", "1", "--reason", "x"],
    ["memory", "edit", "1", "--text", "y"],
    ["memory", "promote", "1"],
    ["memory", "inject"],
    ["memory", "inject", "preview"],
]


def _filled_store() -> Path:
    store = MemoryStore()
    for number in range(3):
        store.save(f"We deploy with tox, note {number} é")
    path = default_db_path()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "text":  # one UTF-8 character of every note made invalid
        at = data.find("é".encode())
        while at != -1:
            data[at] = 0xFF
            at = data.find("é".encode(), at + 1)
    else:  # 200 bits flipped at random places: SQLite's own message is no longer UTF-8
        rng = random.Random(3)
        for _ in range(200):
            data[rng.randrange(100, len(data))] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["text", "bits"])
def test_a_damaged_memory_database_is_one_clear_message(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the notes and the commands are of one project
    _damage(_filled_store(), how)
    for argv in MEMORY_COMMANDS:
        code, out, err = _run(*argv)
        assert "internal error" not in err and "Traceback" not in err, (argv, err)
        if how == "text" and argv == ["memory", "inject"]:
            # Only the notes' text is damaged: the injection setting still reads.
            assert code == 0 and "memory injection is" in out, (argv, err)
            continue
        assert code == 1, (argv, err)
        assert len(err.strip().splitlines()) == 1, err
        assert "the memory database is damaged or is not a pinb memory file" in err, err
    # The memory step of %%pi warns in one line and lets the run go on.
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("pinb.memory").addHandler(handler)
    try:
        assert memory_prompt_section(force=True) is None
    finally:
        logging.getLogger("pinb.memory").removeHandler(handler)
    assert len(records) == 1 and "not injected" in records[0].getMessage()


def test_pi_cells_run_with_a_damaged_memory_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    _damage(_filled_store(), "bits")
    monkeypatch.chdir(tmp_path)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pinb")
    magics = shell.magics_manager.registry["PiMagics"]
    magics.session = None
    magics._model = None
    try:
        with capture_output() as captured:
            reply = shell.run_cell_magic("pi", "--model offline --no-tools", "hello there")
        assert reply is not None and reply.text.startswith("[offline demo model")
        assert "Traceback" not in captured.stderr
    finally:
        magics.session = None
        magics._model = None


def test_a_read_only_memory_database_lists_and_recalls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _filled_store()
    path.chmod(0o444)
    try:
        code, out, err = _run("memory", "list")
        assert code == 0, err
        assert out.count("We deploy with tox") == 3
        code, out, err = _run("memory", "recall", "tox")
        assert code == 0 and "note" in out, err
        code, _, err = _run("memory", "save", "more")
        assert code == 1 and "read-only" in err and "internal error" not in err
        assert MemoryStore().read_only
        assert len(MemoryStore().records(all_projects=True)) == 3
    finally:
        path.chmod(0o644)
