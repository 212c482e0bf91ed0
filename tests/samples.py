"""Sample session files every test can read: written once per test run, in a temp folder.

Nothing here comes from outside the project: the hand-written cases of
``tests/sessions.py``, random trees of ``pinb.testing.fuzz``, and long generated sessions
in Pi's legacy version 1 format standing in for Pi's own real sessions (one with two
compactions, one long and linear). Tests must copy a sample before writing to it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from pinb.testing.fuzz import random_session_bytes
from pinb.testing.generate import SessionShape, generate_session
from tests.sessions import CASES, write_case

__all__ = ["CASE_FILES", "LEGACY", "READABLE_CASES", "SAMPLES", "TREES"]

SAMPLES = Path(tempfile.mkdtemp(prefix="pinb-samples-"))
atexit.register(shutil.rmtree, SAMPLES, ignore_errors=True)

#: Every hand-written case, by name.
CASE_FILES: dict[str, Path] = {name: write_case(name, SAMPLES) for name in sorted(CASES)}

#: The cases today's Pi opens (the others are refused: no header, a BOM before it...).
READABLE_CASES = [
    path
    for name, path in CASE_FILES.items()
    if name not in ("bom-before-header", "no-header", "whitespace-only", "blank")
]


def _tree(name: str, seed: int, *, version: int = 3, newer: bool = True) -> Path:
    path = SAMPLES / name
    path.write_bytes(random_session_bytes(seed, 60, newer=newer, version=version))
    return path


#: Random trees: three current files, a version 1 and a version 2 file.
TREES = [
    _tree("tree-a.jsonl", 11),
    _tree("tree-b.jsonl", 12),
    _tree("tree-c.jsonl", 13),
    _tree("legacy-v1.jsonl", 14, version=1, newer=False),
    _tree("legacy-v2.jsonl", 15, version=2),
]

#: Long single-branch sessions in the version 1 format of Pi's oldest files.
LEGACY = {
    "before-compaction.jsonl": generate_session(
        SAMPLES / "before-compaction.jsonl",
        SessionShape(entries=900, main_depth=900, branch_every=0, compaction_every=350),
        seed=21,
        legacy=True,
    ),
    "large-session.jsonl": generate_session(
        SAMPLES / "large-session.jsonl",
        SessionShape(entries=1000, main_depth=1000, branch_every=0, compaction_every=0),
        seed=22,
        legacy=True,
    ),
}
