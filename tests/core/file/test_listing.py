"""Listing rows: the same whether lines are checked by msgspec or parsed whole, and Pi's.

A listing reads what its rows show (the first user message's content, not every
message's); the rows must be exactly those of a full parse of every line, and exactly
those Pi 1.6.0's ``SessionManager.listAll()`` (what ``/resume`` lists) gives for the same
sessions folder, odd files included.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import pinb.core.file.lazy as lazy
from pinb.analysis.searching.index import list_indexed
from pinb.core.file import listing
from pinb.core.file.listing import list_all_sessions, session_info_from_bytes
from pinb.core.file.paths import encode_cwd
from pinb.testing.generate import SessionShape, generate_session
from tests.core.file.test_lazy import ODD
from tests.pi.reference import PiReference
from tests.samples import CASE_FILES, TREES

_NAMED = b"".join(
    json.dumps(v).encode() + b"\n"
    for v in (
        {"type": "session", "version": 3, "id": "n1", "timestamp": "2026-02-01T10:00:00Z", "cwd": "/w"},
        {"type": "session_info", "id": "i1", "parentId": None, "timestamp": "t", "name": "  first  "},
        {"type": "message", "id": "m0", "parentId": None, "timestamp": "2026-02-01T10:00:01Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "before any user"}]}},
        {"type": "message", "id": "m1", "parentId": "m0", "timestamp": "2026-02-01T10:00:02Z",
         "message": {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": ""}]}},
        {"type": "message", "id": "m2", "parentId": "m1", "timestamp": "2026-02-01T10:00:03Z",
         "message": {"role": "user", "content": "the first words", "timestamp": 1767261600000}},
        {"type": "message", "id": "m3", "parentId": "m2", "timestamp": "2026-02-01T10:00:04Z",
         "message": {"role": "toolResult", "content": [{"type": "text", "text": "not listed"}]}},
        {"type": "session_info", "id": "i2", "parentId": "m3", "timestamp": "t", "name": "second"},
    )
)  # fmt: skip


#: Files Pi 1.6.0's listing leaves out (it throws reading them); pinb lists them.
_PI_LEAVES_OUT = {"case-null-contents.jsonl", "odd-3.jsonl"}


def _corpus(root: Path) -> Path:
    """An agent folder: generated sessions, the hand-written cases and the odd files."""
    sessions = root / "sessions"
    for i in range(6):
        cwd = f"/home/dev/p{i % 2}"
        folder = sessions / encode_cwd(cwd)
        generate_session(
            folder / f"2026-01-0{i + 1}T00-00-00-000Z_gen{i}.jsonl",
            SessionShape(entries=60 + 40 * i, main_depth=40 + 20 * i, compaction_every=50, cwd=cwd),
            seed=40 + i,
        )
    odd = sessions / "--odd--"
    odd.mkdir(parents=True)
    for path in [*CASE_FILES.values(), *TREES]:
        shutil.copyfile(path, odd / f"case-{path.stem}.jsonl")
    for i, data in enumerate(ODD.values()):
        # Nesting 2,000 deep is JSON.parse's but beyond pinb's exact parser (issue 23).
        data = b"\n".join(line for line in data.split(b"\n") if b"[" * 100 not in line)
        (odd / f"odd-{i}.jsonl").write_bytes(data)
    (odd / "named.jsonl").write_bytes(_NAMED)
    return root


def _rows(infos: list[listing.SessionInfo], *, text: bool = True) -> dict[str, dict[str, Any]]:
    rows = {}
    for info in infos:
        row = dataclasses.asdict(info)
        row.pop("problems")  # pinb's report beside the row, not a field of Pi's
        row["path"] = str(info.path)
        if not text:
            row.pop("all_messages_text")
        rows[row["path"]] = row
    return rows


def test_rows_are_those_of_a_full_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _corpus(tmp_path)
    files = sorted((root / "sessions").glob("*/*.jsonl"))
    assert len(files) > 30
    for path in files:
        data = path.read_bytes()
        with monkeypatch.context() as patch:
            patch.setattr(lazy, "_listing_reader", None)
            whole = session_info_from_bytes(data, path, 0.0)
        fast = session_info_from_bytes(data, path, 0.0)
        assert fast == whole, path.name
        short = session_info_from_bytes(data, path, 0.0, text=False)
        expected = dataclasses.replace(whole, all_messages_text="") if whole else None
        assert short == expected, path.name
    named = session_info_from_bytes(_NAMED, tmp_path / "named.jsonl", 0.0)
    assert named is not None
    assert (named.name, named.first_message, named.message_count) == (
        "second",
        "the first words",
        4,
    )
    assert named.all_messages_text == "before any user the first words"


def test_rows_are_pis_list_all(
    tmp_path: Path, pi16: PiReference, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _corpus(tmp_path)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(root))
    listing._cache.clear()
    theirs = pi16.request("benchList", agentDir=str(root), rows=True)["rows"]
    expected = {
        row["path"]: {
            "path": row["path"],
            "id": row["id"],
            "cwd": row["cwd"],
            "name": row["name"],
            "parent_session_path": row["parentSessionPath"] or None,
            "created": row["created"],
            "modified": row["modified"],
            "message_count": row["messageCount"],
            "first_message": row["firstMessage"],
            "all_messages_text": row["allMessagesText"],
        }
        for row in theirs
    }

    def ours(infos: list[listing.SessionInfo]) -> dict[str, dict[str, Any]]:
        rows = _rows(infos)
        for row in rows.values():
            created = row["created"]
            row["created"] = round(created.timestamp() * 1000) if created else None
            row["modified"] = round(row["modified"].timestamp() * 1000)
        return rows

    assert len(expected) > 30
    listed = ours(list_all_sessions())
    # Pi's listing throws on a user message whose content is null and on a message that is
    # not an object, and leaves those sessions out; pinb lists them (nothing is lost).
    assert {Path(p).name for p in set(listed) - set(expected)} == _PI_LEAVES_OUT
    listed = {p: row for p, row in listed.items() if Path(p).name not in _PI_LEAVES_OUT}
    assert listed == expected
    indexed = ours(list_indexed())  # what `pinb ls --all` shows: the rows without the text
    indexed = {p: row for p, row in indexed.items() if Path(p).name not in _PI_LEAVES_OUT}
    assert indexed == {p: {**row, "all_messages_text": ""} for p, row in expected.items()}
    # Pi's order (newest activity first) is pinb's too, apart from ties.
    order = [row["path"] for row in theirs]
    modified = {p: row["modified"] for p, row in expected.items()}
    assert [modified[p] for p in order] == sorted(modified.values(), reverse=True)
    shown = [str(i.path) for i in list_indexed() if i.path.name not in _PI_LEAVES_OUT]
    assert [modified[p] for p in shown] == [modified[p] for p in order]
