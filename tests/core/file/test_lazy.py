"""A lazy open (message lines kept as bytes and a head) reads every file as an eager one does.

Each file is opened twice, with the head reader and without it (every line parsed whole,
as when msgspec is not installed), and everything a user can see is compared: the
problems (known at open, before anything is decoded), the leaf, the tree, the context,
every entry's wire dict and line number.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

import pinb.core.file.lazy as lazy
import pinb.core.file.read as store
import pinb.core.file.readahead as readahead
from pinb.core import Session
from pinb.core.js.wire import dumps
from pinb.testing.generate import SessionShape, generate_session
from tests.samples import CASE_FILES, LEGACY, TREES

pytestmark = pytest.mark.skipif(lazy.head_reader() is None, reason="msgspec is not installed")

_HEADER = {
    "type": "session",
    "version": 3,
    "id": "s1",
    "timestamp": "2026-01-01T00:00:00Z",
    "cwd": "/p",
}


def _message(entry_id: str, parent: str | None, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:0{len(entry_id) % 10}Z",
        "message": {
            "role": role,
            "content": [{"type": "text", "text": f"text {entry_id}"}],
            "timestamp": 1,
        },
        **extra,
    }


def _lines(*values: Any) -> bytes:
    return b"".join(
        (value if isinstance(value, bytes) else json.dumps(value, ensure_ascii=False).encode())
        + b"\n"
        for value in values
    )


#: Lines a lazy reader must not take at its head's word: each is read whole (or refused).
#: Each file ends with a leaf ``z`` under the root, so the odd lines are off the leaf's
#: context and stay undecoded after open if the head reader took them.
_ODD = {
    "duplicate keys (the last wins)": _lines(
        _HEADER,
        _message("a", None),
        b'{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","role":"assistant","content":"x"},"id":"c"}',
        b'{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"user","content":"x"},"type":"label"}',
    ),
    "torn line, then an append after it": _lines(_HEADER, _message("a", None))
    + b'{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"x'
    + _lines(_message("c", "a")),
    "torn last line": _lines(_HEADER, _message("a", None))
    + b'{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"ro',
    "odd fields": _lines(
        _HEADER,
        _message("a", None),
        {**_message("n", "a"), "id": 5},
        {**_message("p", "a"), "parentId": 7},
        {k: v for k, v in _message("q", "a").items() if k != "parentId"},
        {**_message("r", "a"), "timestamp": 12},
        {**_message("s", "a"), "message": "not an object"},
        {**_message("t", "a"), "message": {"content": "no role"}},
        {**_message("u", "a"), "message": None},
        {**_message("v", "a"), "type": ["message"]},
        _message("w", ""),
    ),
    "odd JSON": _lines(
        _HEADER,
        _message("a", None),
        b'{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"\\ud800 lone"}}',
        b'{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"user","content":"bad \xff byte"}}',
        b'{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"user","content":[1e400, 123456789012345678901234567890]}}',
        b'{"type":"message","id":"e","parentId":"d","timestamp":"t","message":{"role":"user","content":NaN}}',
        b'{"type":"message","id":"f","parentId":"d","timestamp":"t","message":{"role":"user","content":'
        + b"[" * 2000
        + b"]" * 2000
        + b"}}",
        b'  {"type":"message","id":"g","parentId":"d","timestamp":"t","message":{"role":"user","content":"x"}}  \r',
        b"",
        b"   ",
        b"[1, 2]",
        b"null",
        b'{"type":"message","id":"h","parentId":"g","timestamp":"t","message":{"role":"assistant","content":[]}} trailing',
        _message("i", "g"),
    ),
    "repeated ids and a cycle": _lines(
        _HEADER,
        _message("a", None),
        _message("b", "a"),
        _message("a", "b"),
        _message("c", "a"),
    ),
    "version 2 header (migrated, so read whole)": _lines(
        {**_HEADER, "version": 2}, _message("a", None), _message("b", "a", role="hookMessage")
    ),
}
ODD = {name: data + _lines(_message("z", "a")) for name, data in _ODD.items()}


def _open(path: Path, monkeypatch: pytest.MonkeyPatch, *, eager: bool, pi: str) -> Session:
    with monkeypatch.context() as patch:
        if eager:
            patch.setattr(lazy, "_reader", None)
        return Session.open(path, pi=pi, strict=False)


def _seen(session: Session) -> dict[str, Any]:
    seen: dict[str, Any] = {
        "heads": [
            (e.line, e.type, e.id, e.parent_id, e.timestamp, e.role) for e in session.entries
        ],
        "problems": [(p.kind, p.line, p.message) for p in session.problems],
        "leaf": session.leaf_id,
        "tree": [
            (node.entry.line, depth, node.label)
            for root in session.tree()
            for node, depth in root.walk()
        ],
        "name": session.index.session_name(),
        # where appends and new bytes are read from
        "sizes": session.loaded
        and (
            session.loaded.size,
            session.loaded.complete_size,
            session.loaded.newlines,
            session.loaded.ends_with_newline,
        ),
    }
    # As JSON text: a line nested thousands deep is read (as JSON.parse reads it), and ``==``
    # on such values would recurse past Python's limit.
    seen["context"] = dumps(session.build_context().messages)
    seen["entries"] = [
        (e.line, dumps(e.value), e.type, e.id, e.parent_id, e.timestamp, e.role)
        for e in session.entries
    ]
    seen["problems after"] = [(p.kind, p.line, p.message) for p in session.problems]
    return seen


def _files(tmp_path: Path) -> list[Path]:
    odd = []
    for i, data in enumerate(ODD.values()):
        path = tmp_path / f"odd-{i}.jsonl"
        path.write_bytes(data)
        odd.append(path)
    big = generate_session(
        tmp_path / "generated.jsonl",
        SessionShape(entries=3000, main_depth=1800, compaction_every=500, branch_every=40),
        seed=3,
    )
    return [*CASE_FILES.values(), *TREES, *LEGACY.values(), *odd, big]


@pytest.mark.parametrize(
    ("pi", "pieces"),
    [("1.6", None), ("0.58", None), ("1.6", (1, 16)), ("1.6", (7, 64)), ("1.6", (4096, 8192))],
    ids=["1.6", "0.58", "1.6-read-ahead-1-16", "1.6-read-ahead-7", "1.6-read-ahead-4k"],
)
def test_lazy_open_sees_what_an_eager_open_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pi: str, pieces: tuple[int, int] | None
) -> None:
    if pieces is not None:  # every file read ahead by a thread, in pieces this small
        monkeypatch.setattr(store, "READ_AHEAD_MIN", 0)
        monkeypatch.setattr(readahead, "_FIRST", pieces[0])
        monkeypatch.setattr(readahead, "_LARGEST", pieces[1])
    compared = kept_lazy = 0
    for path in _files(tmp_path):
        try:
            eager = _open(path, monkeypatch, eager=True, pi=pi)
        except Exception as exc:  # refused files must be refused the same way
            with pytest.raises(type(exc)):
                _open(path, monkeypatch, eager=False, pi=pi)
            continue
        opened = _open(path, monkeypatch, eager=False, pi=pi)
        assert _seen(opened) == _seen(eager), path.name
        compared += 1
        kept_lazy += path.name.startswith("odd-") and not all(e.decoded for e in _open(
            path, monkeypatch, eager=False, pi=pi).entries)  # fmt: skip
    assert compared >= len(ODD) + len(TREES)
    assert kept_lazy >= len(ODD) - 2  # the odd files did have lines left to decode


def test_open_decodes_only_the_leafs_context(tmp_path: Path) -> None:
    path = generate_session(
        tmp_path / "s.jsonl",
        SessionShape(entries=4000, main_depth=3000, compaction_every=800, branch_every=50),
        seed=5,
    )
    session = Session.open(path)
    lazy_entries = [e for e in session.entries if e.type == "message"]
    decoded = {id(e) for e in session.entries if e.decoded}
    needed = {id(e) for e in session.build_context().sources}
    assert needed <= decoded  # the first context after open parses nothing
    assert len(decoded) < len(lazy_entries) / 2  # and most lines were never built
    entry = next(e for e in session.entries if not e.decoded)
    assert entry.raw == json.loads(path.read_text().splitlines()[entry.line - 1])
    assert entry.decoded


def test_what_an_open_builds_skips_the_young_collections(tmp_path: Path) -> None:
    path = generate_session(
        tmp_path / "s.jsonl", SessionShape(entries=30_000, main_depth=18_000), seed=6
    )
    gc.collect()
    session = Session.open(path)
    young = {id(o) for o in gc.get_objects(0)} | {id(o) for o in gc.get_objects(1)}
    assert not any(id(e) in young for e in session.entries[:: len(session.entries) // 50])
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_lazily_opened_session_pickles_as_an_eager_one(tmp_path: Path) -> None:
    import pickle

    path = tmp_path / "odd.jsonl"
    # Without the line nested 2,000 deep: pickle itself recurses over nested values.
    lines = ODD["odd JSON"].split(b"\n")
    path.write_bytes(b"\n".join(line for line in lines if b"[" * 2000 not in line))
    session = Session.open(path)
    assert not all(e.decoded for e in session.entries)
    again = pickle.loads(pickle.dumps(session))
    assert [(e.line, e.value, e.raw) for e in again.entries] == [
        (e.line, e.value, e.raw) for e in session.entries
    ]
    assert again.build_context().messages == session.build_context().messages


def test_lazy_lines_are_views_of_bytes_nobody_else_can_change(tmp_path: Path) -> None:
    shape = SessionShape(entries=600, main_depth=300, compaction_every=100, branch_every=20)
    path = generate_session(tmp_path / "s.jsonl", shape, seed=7)
    data = bytearray(path.read_bytes())
    session = Session.from_bytes(data)  # bytes given as a bytearray the caller keeps
    undecoded = [e for e in session.entries if not e.decoded]
    assert undecoded
    data[:] = b"{}"  # the caller reuses its buffer: it can be resized, and changes nothing
    lines = path.read_text().splitlines()
    for entry in undecoded:
        assert entry.raw == json.loads(lines[entry.line - 1])
    # the newline count comes from the same walk over the bytes
    opened = Session.open(path)
    assert opened.loaded is not None
    assert opened.loaded.newlines == path.read_bytes().count(b"\n")


def _compaction(entry_id: str, parent: str, first_kept: str) -> dict[str, Any]:
    return {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:09Z",
        "summary": "s",
        "firstKeptEntryId": first_kept,
        "tokensBefore": 10,
    }


#: Compactions whose kept range is odd: it holds a system message (Pi 1.x leaves it out),
#: its first kept entry is on another branch or nowhere, and two compactions in a row.
_KEPT = _lines(
    _HEADER,
    _message("a", None),
    _message("b", "a", role="system"),
    _message("c", "b"),
    _compaction("k1", "c", "b"),
    _message("d", "k1"),
    _compaction("k2", "d", "nowhere"),
    _message("e", "k2"),
    _message("f", "a"),
    _compaction("k3", "e", "f"),
    _compaction("k4", "k3", "k3"),
    _message("g", "k4"),
)


@pytest.mark.parametrize("pi", ["1.6", "0.58"])
def test_what_open_decodes_is_what_the_context_reads_at_every_leaf(tmp_path: Path, pi: str) -> None:
    from pinb.core.context.build import context_entries, select_context_entries

    (tmp_path / "kept.jsonl").write_bytes(_KEPT)
    files = [*_files(tmp_path), tmp_path / "kept.jsonl"]
    leaves = 0
    for path in files:
        try:
            index = Session.open(path, pi=pi, strict=False).index
        except Exception:
            continue  # refused, as the comparison above checks
        for leaf in index.entries[:: max(1, len(index.entries) // 40)] + index.entries[-1:]:
            if not (isinstance(leaf.id, str) and leaf.id) or index.get(leaf.id) is not leaf:
                continue  # no id names it (an odd id, an earlier line of a repeated id)
            path_entries = index.path_from(leaf)
            compaction = next((e for e in reversed(path_entries) if e.type == "compaction"), None)
            expected = select_context_entries(path_entries, compaction, index_pi(pi))
            got = context_entries(index, leaf.id, pi=pi)
            assert [e.line for e in got] == [e.line for e in expected], (path.name, leaf.line)
            leaves += 1
    assert leaves > 200


def index_pi(pi: str) -> Any:
    from pinb.core.format.target import Pi

    return Pi.resolve(pi)


def test_lines_decoded_for_now_go_back_to_their_bytes(tmp_path: Path) -> None:
    import threading

    from pinb.core.format.entries import transient_decoding

    path = generate_session(
        tmp_path / "s.jsonl", SessionShape(entries=600, main_depth=400, branch_every=40), seed=6
    )
    session = Session.open(path)
    lines = path.read_text().splitlines()
    before = [e for e in session.entries if e.decoded]
    lazy_ones = [e for e in session.entries if not e.decoded]
    elsewhere = lazy_ones[-1]
    with transient_decoding() as release:
        seen = [e.raw for e in lazy_ones[:50]]
        worker = threading.Thread(target=lambda: elsewhere.raw)  # another thread's decoding
        worker.start()
        worker.join()
        assert all(e.decoded for e in lazy_ones[:50]) and session.entries[0].raw
        assert release() == 50
        assert not any(e.decoded for e in lazy_ones[:50])
        assert release() == 0  # each line once
    assert elsewhere.decoded  # only this thread's decoding was recorded
    assert all(e.decoded for e in before)  # what was decoded before the block stays so
    for entry, raw in zip(lazy_ones[:50], seen, strict=True):
        again = entry.raw  # decoded again: an equal object, not the same one
        assert again == raw == json.loads(lines[entry.line - 1]) and again is not raw
        assert entry.role == raw["message"]["role"] and entry.id == raw["id"]
    assert lazy_ones[60].raw  # decoded outside a block: nothing lets it go
    with transient_decoding() as release:
        pass
    assert lazy_ones[60].decoded and release() == 0
