"""A seeded fuzz test: odd session files through every command, export and view.

The files come from :func:`pinb.testing.fuzz.odd_session_bytes`: every entry kind, then
deep values (900–1,500 levels, past Python's recursion limit and orjson's 1,024), integers
of 5,000 digits, odd number forms, escapes such as ``\\r\\n``, U+0085, U+2028 and lone
surrogates, control characters in entry ids, and values of the wrong type anywhere but
the id, parent and type fields. Each file goes through the operations of
:mod:`tests.fuzz_ops` (the CLI in-process, the exports, the core, every view's bundle,
the pictures, the widget, the frames). Nothing may raise, print "internal error", hang
(each file is bounded in time) or change the file.

Every operation is cheap but there are many: to keep the test near a minute, file ``i``
runs the CLI commands, exports and views whose turn it is (a quarter of them, rotating,
so each one still sees about 60 files), the core calls on every file, and the slow
matplotlib picture on one file in twelve.
"""

from __future__ import annotations

import time
import zlib

import pytest

from pinb.core.file.paths import sessions_root
from pinb.testing.fuzz import odd_session_bytes
from tests.fuzz_ops import OPERATIONS, run_all

pytestmark = pytest.mark.slow(seconds=45)  # scheduled first: see tests/conftest.py

#: Files in the corpus, and how many of them each operation sees at least.
FILES = 240
SHARES = 4
#: Seconds one file may take through its operations (a hang fails, never blocks).
PER_FILE_SECONDS = 300.0  # a hang guard, generous on a loaded machine


def _operations(index: int) -> dict[str, object]:
    chosen = {}
    for name, operation in OPERATIONS.items():
        turn = zlib.crc32(name.encode()) % SHARES
        if name == "matplotlib":
            if index % 12 == 0:
                chosen[name] = operation
        elif name == "core" or index % SHARES == turn:
            chosen[name] = operation
    return chosen


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
def test_odd_files_through_every_command_export_and_view() -> None:
    # Inside the (test's own) sessions folder, so `pinb ls --all` lists them too.
    corpus = sessions_root() / "--home-dev-fuzz--"
    corpus.mkdir(parents=True)
    failures = []
    seen: dict[str, int] = {}
    for index in range(FILES):
        path = corpus / f"odd-{index:03d}.jsonl"
        path.write_bytes(odd_session_bytes(20_000 + index, size=12))
        operations = _operations(index)
        started = time.monotonic()
        failures += run_all([path], operations)  # type: ignore[arg-type]
        took = time.monotonic() - started
        assert took < PER_FILE_SECONDS, f"{path.name} took {took:.1f} s: a hang?"
        for name in operations:
            seen[name] = seen.get(name, 0) + 1
    assert not failures, "\n".join(str(f) for f in failures[:20])
    assert set(seen) == set(OPERATIONS)
    assert min(seen.values()) >= FILES // 12
