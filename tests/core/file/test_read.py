"""Reading follows Pi's line rules (§2.4), tolerates its defects (§12) and never writes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pinb.core import Session
from pinb.core.js.wire import MISSING
from pinb.errors import InvalidHeaderError, UnsupportedVersionError
from tests.samples import CASE_FILES, LEGACY

HEADER = (
    '{"type":"session","version":3,"id":"s1","timestamp":"2025-03-01T10:00:00.000Z","cwd":"/p"}'
)


def _msg(i: str, parent: str | None, text: str) -> str:
    p = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{i}","parentId":{p},"timestamp":"2025-03-01T10:00:0{len(i) % 9}.000Z",'
        f'"message":{{"role":"user","content":"{text}","timestamp":1}}}}'
    )


def test_bom_crlf_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    text = (
        "\ufeff\r\n\n"
        + HEADER
        + "\r\n"
        + _msg("a", None, "x")
        + "\r\n\r\n"
        + _msg("b", "a", "y")
        + "\r\n"
    )
    path.write_bytes(text.encode())
    session = Session.open(path)
    assert [e.id for e in session.entries] == ["a", "b"]
    assert [e.line for e in session.entries] == [4, 6]
    assert session.problems == []


def test_malformed_lines_are_skipped_and_reported_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                HEADER,
                _msg("a", None, "x"),
                "{not json",
                "123",
                _msg("b", "a", "y"),
                '{"type":"session","id":"dup"}',
            ]
        )
        + "\n"
    )
    session = Session.open(path)
    # A line that is JSON but not an object stays, as in Pi: an inert entry without fields.
    assert [e.id for e in session.entries] == ["a", MISSING, "b"]
    assert session.entries[1].value == 123 and session.entries[1].raw == {}
    kinds = {(p.kind, p.line) for p in session.problems}
    assert kinds == {("malformed-line", 3), ("not-an-entry", 4), ("duplicate-header", 6)}
    assert all(p.path == path for p in session.problems)
    assert str(session.problems[0]).startswith(f"{path}:3:")


def test_garbage_before_the_header_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("garbage\n" + HEADER + "\n" + _msg("a", None, "x") + "\n")
    assert [e.id for e in Session.open(path).entries] == ["a"]


def test_invalid_header_raises_and_leaves_the_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    original = b'{"type":"message","id":"x"}\n'
    path.write_bytes(original)
    with pytest.raises(InvalidHeaderError, match=str(path)):
        Session.open(path)
    assert path.read_bytes() == original


def test_version_4_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"kind":"header","version":4,"id":"x","createdAt":1,"cwd":"/"}\n')
    with pytest.raises(UnsupportedVersionError, match="version 4"):
        Session.open(path)
    path.write_text('{"type":"session","version":4,"id":"x","timestamp":"t","cwd":"/"}\n')
    with pytest.raises(UnsupportedVersionError):
        Session.open(path)


def test_non_strict_reads_invalid_files_as_pi_does_and_refuses_to_write(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"message"}\n')
    session = Session.open(path, strict=False)
    assert session.entries == []
    with pytest.raises(Exception, match="will not write"):
        session.append_message({"role": "user", "content": "x", "timestamp": 1})
    assert path.read_text() == '{"type":"message"}\n'


def test_cycles_and_self_parents_never_hang(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([HEADER, _msg("a", "b", "x"), _msg("b", "a", "y"), _msg("c", "c", "z")]) + "\n"
    )
    session = Session.open(path)
    assert [e.id for e in session.path_to("a")] == ["b", "a"]
    assert [e.id for e in session.path_to("c")] == ["c"]
    assert any(p.kind == "cycle" for p in session.problems)
    assert [n.entry.id for n in session.tree()] == ["c"]  # the a<->b cycle has no root


def test_orphans_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([HEADER, _msg("a", None, "x"), _msg("b", "zzz", "y")]) + "\n")
    session = Session.open(path)
    assert [m["content"] for m in session.build_context().messages] == ["y"]
    orphan = [p for p in session.problems if p.kind == "orphan"]
    assert len(orphan) == 1 and orphan[0].line == 3


def test_duplicate_ids_later_line_wins(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([HEADER, _msg("x", None, "one"), _msg("y", "x", "two"), _msg("x", None, "three")])
        + "\n"
    )
    session = Session.open(path)
    assert [m["content"] for m in session.build_context().messages] == ["three"]
    assert [m["content"] for m in session.build_context("y").messages] == ["three", "two"]
    assert any(p.kind == "duplicate-id" and p.line == 4 for p in session.problems)


def test_reading_never_writes() -> None:
    files = [*LEGACY.values(), *CASE_FILES.values()]
    assert files
    for path in files:
        before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        session = Session.open(path, strict=False)
        session.build_context()
        session.tree()
        assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before
        assert not list(path.parent.glob(path.name + ".*"))


def test_v1_fixture_migrates_in_memory_with_injected_ids() -> None:
    counter = iter(range(10_000))
    session = Session.open(
        LEGACY["before-compaction.jsonl"],
        id_generator=lambda: f"{next(counter):08x}",
    )
    assert session.header["version"] == 3
    assert session.entries[0].id == "00000000" and session.entries[0].parent_id is None
    assert session.entries[5].parent_id == "00000004"
    compactions = [e for e in session.entries if e.type == "compaction"]
    assert all(
        "firstKeptEntryIndex" not in e.raw and e.raw["firstKeptEntryId"] for e in compactions
    )


@pytest.mark.parametrize("path", sorted(CASE_FILES.values())[:12], ids=lambda p: p.name)
def test_bytes_from_elsewhere_read_like_the_file(path: Path) -> None:
    ids = iter(f"{n:08x}" for n in range(10**6))
    ids_again = iter(f"{n:08x}" for n in range(10**6))
    from_disk = Session.open(path, strict=False, id_generator=lambda: next(ids))
    from_bytes = Session.from_bytes(
        path.read_bytes(),
        source="s3://bucket/x.jsonl",
        strict=False,
        id_generator=lambda: next(ids_again),
    )
    assert from_bytes.path is None
    assert [e.raw for e in from_bytes.entries] == [e.raw for e in from_disk.entries]
    assert from_bytes.leaf_id == from_disk.leaf_id
    assert [p.kind for p in from_bytes.problems] == [p.kind for p in from_disk.problems]
    assert from_bytes.build_context().messages == from_disk.build_context().messages


def test_bytes_from_elsewhere_name_their_source_and_stay_in_memory() -> None:
    with pytest.raises(InvalidHeaderError, match=r"^s3://bucket/a\.jsonl:1: not a Pi session"):
        Session.from_bytes(b'{"not":"a session"}\n', source="s3://bucket/a.jsonl")
    data = (HEADER + "\n" + _msg("a", None, "x") + "\n").encode()
    session = Session.from_bytes(data, source="memory://a.jsonl")
    added = session.append_message({"role": "user", "content": "more", "timestamp": 2})
    assert session.leaf_id == added.id and len(session.entries) == 2
    assert session.path is None and not session.is_persisted
