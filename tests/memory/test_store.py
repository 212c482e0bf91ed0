"""The SQLite store: round trips, BM25 ranking, filters, ties, scoping, concurrency, bad files."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pinb.core.file.paths import agent_dir
from pinb.memory import (
    InvalidMemoryError,
    MemoryCorruptError,
    MemoryLockedError,
    MemoryNotFoundError,
    MemoryStore,
    normalize_tags,
    project_id,
)
from pinb.memory.records import fts_query


def test_database_lives_in_the_agent_dir_in_wal_mode(store: MemoryStore) -> None:
    store.save("first note", project="p")
    assert store.path == agent_dir() / "memory" / "pinb-memory.sqlite"
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_save_get_recall_forget_round_trip(store: MemoryStore) -> None:
    saved = store.save(
        "  We deploy with tox on GitHub Actions  ",
        project="p",
        kind="decision",
        tags="CI, Deploy",
        source_session="/sessions/a.jsonl",
        source_entry="abcd1234",
    )
    assert saved.text == "We deploy with tox on GitHub Actions"
    assert saved.tags == ("ci", "deploy")
    assert saved.created_at == saved.updated_at and saved.created_at.endswith("Z")
    assert store.get(saved.id) == saved
    assert [r.id for r in store.recall("deploying", project="p")] == [saved.id]

    forgotten = store.forget(saved.id, "we moved to nox", project="p")
    assert forgotten.deleted and forgotten.deleted_reason == "we moved to nox"
    assert store.recall("deploy", project="p") == []
    assert store.records("p") == []
    # audited, not erased: the text is still there with the reason
    assert store.records("p", include_deleted=True)[0].text == saved.text
    assert store.history(saved.id)[-1]["action"] == "forget"
    with pytest.raises(InvalidMemoryError, match="already forgotten"):
        store.forget(saved.id, "again")


def test_forget_needs_a_reason_and_save_needs_text(store: MemoryStore) -> None:
    rec = store.save("a note", project="p")
    with pytest.raises(InvalidMemoryError, match="reason"):
        store.forget(rec.id, "  ")
    with pytest.raises(InvalidMemoryError, match="text"):
        store.save("   ", project="p")
    with pytest.raises(InvalidMemoryError, match="unknown memory kind"):
        store.save("x", project="p", kind="gossip")
    with pytest.raises(MemoryNotFoundError):
        store.forget(999, "no such note")


def _filler(store: MemoryStore, project: str, count: int = 8) -> None:
    topics = ["cats", "kernels", "fonts", "printers", "coffee", "trains", "poems", "bikes"]
    for topic in topics[:count]:
        store.save(f"an unrelated remark about {topic}", project=project)


def test_bm25_ranks_frequent_short_matches_first(store: MemoryStore) -> None:
    _filler(store, "p")
    long_once = store.save(
        "the deploy step runs every night after the long integration suite has finished "
        "and the artifacts were uploaded to the internal mirror",
        project="p",
    )
    short_once = store.save("deploy the docs", project="p")
    short_twice = store.save("deploy: deploy pipeline", project="p")
    results = store.recall("deploy", project="p")
    assert [r.id for r in results] == [short_twice.id, short_once.id, long_once.id]
    scores = [r.score for r in results]
    assert all(s is not None and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    # a record matching more of the words comes first
    both = store.recall("docs pipeline deploy", project="p")
    assert both[0].id in {short_once.id, short_twice.id} and len(both) == 3
    assert store.recall("deploy nothing", project="p", match_all=True) == []


def test_tags_are_searched_too(store: MemoryStore) -> None:
    _filler(store, "p")
    tagged = store.save("release checklist", project="p", tags=["deploy"])
    assert [r.id for r in store.recall("deploy", project="p")] == [tagged.id]


def test_recall_ties_are_broken_by_id(store: MemoryStore) -> None:
    _filler(store, "p")
    # The same text under three kinds: three records (one kind would be one note) that tie.
    kinds = ("note", "fact", "decision")
    ids = [store.save("flaky test in the parser", project="p", kind=k).id for k in kinds]
    first = [r.id for r in store.recall("flaky parser", project="p")]
    assert first == ids
    assert [r.id for r in store.recall("flaky parser", project="p")] == first


def test_recall_filters_by_kind_and_tags(store: MemoryStore) -> None:
    a = store.save("use ruff for linting", project="p", kind="decision", tags=["lint", "ci"])
    b = store.save("ruff runs in ci", project="p", kind="fact", tags=["ci"])
    c = store.save("user likes ruff", project="p", kind="preference")
    assert {r.id for r in store.recall("ruff", project="p")} == {a.id, b.id, c.id}
    assert [r.id for r in store.recall("ruff", project="p", kinds="decision")] == [a.id]
    assert {r.id for r in store.recall("ruff", project="p", kinds=["fact", "preference"])} == {
        b.id,
        c.id,
    }
    assert {r.id for r in store.recall("ruff", project="p", tags="ci")} == {a.id, b.id}
    assert [r.id for r in store.recall("ruff", project="p", tags=["ci", "lint"])] == [a.id]
    assert len(store.recall("ruff", project="p", limit=1)) == 1
    # an empty query lists the newest
    assert [r.id for r in store.recall("?!", project="p")] == [c.id, b.id, a.id]


def test_queries_with_fts_syntax_are_plain_text(store: MemoryStore) -> None:
    rec = store.save('quote " and NEAR(x) OR -minus', project="p")
    assert [r.id for r in store.recall('"NEAR( OR -minus*', project="p")] == [rec.id]
    assert fts_query("a-b") == '"a" OR "b"'


def test_projects_are_scoped_by_resolved_cwd(
    store: MemoryStore, project_dirs: tuple[Path, Path]
) -> None:
    one, two = project_dirs
    link = one.parent / "link-to-one"
    link.symlink_to(one)
    assert project_id(link) == project_id(one) != project_id(two)
    p1, p2 = store.ensure_project(one), store.ensure_project(two)
    rec = store.save("secret sauce recipe", project=p1)
    assert store.recall("sauce", project=p2) == []
    assert [r.id for r in store.recall("sauce", project=p1)] == [rec.id]
    with pytest.raises(MemoryNotFoundError):
        store.forget(rec.id, "wrong project", project=p2)
    assert not store.get(rec.id).deleted


def test_project_defaults_to_the_current_directory(
    store: MemoryStore, project_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project_dirs[0])
    rec = store.save("saved from inside project one")
    assert rec.project == project_id(project_dirs[0])
    assert store.records() == [rec]


def test_edit_and_promote_keep_history(store: MemoryStore) -> None:
    obs = store.save("tests run with xdist", project="p", kind="observation", proposed_kind="fact")
    with pytest.raises(InvalidMemoryError, match="not an observation"):
        store.promote(store.save("plain", project="p").id)
    promoted = store.promote(obs.id)
    assert promoted.kind == "fact"
    edited = store.edit(obs.id, text="tests run with pytest-xdist", tags="tests")
    assert edited.text == "tests run with pytest-xdist" and edited.tags == ("tests",)
    assert [h["action"] for h in store.history(obs.id)] == ["promote", "edit"]
    assert store.history(obs.id)[0]["text"] == "tests run with xdist"
    assert [r.id for r in store.recall("pytest", project="p")] == [obs.id]
    assert store.recall("xdist", project="p")[0].id == obs.id


def test_normalize_tags() -> None:
    assert normalize_tags(["B", "a", "#a", "two words"]) == ("a", "b", "two-words")
    assert normalize_tags(None) == ()


def test_injection_setting_is_persisted_per_project(store: MemoryStore) -> None:
    assert not store.injection("p1").enabled
    store.set_injection(True, project="p1", limit=3)
    again = MemoryStore()
    assert again.injection("p1").enabled and again.injection("p1").limit == 3
    assert not again.injection("p2").enabled
    again.set_injection(False, project="p1")
    assert not store.injection("p1").enabled and store.injection("p1").limit == 3


class _BagOfWords:
    """A deterministic toy embedder (no model): hashed word counts."""

    name = "bag-of-words-16"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        vectors = []
        for text in texts:
            vector = [0.0] * 16
            for word in text.lower().split():
                vector[sum(map(ord, word)) % 16] += 1.0
            vectors.append(vector)
        return vectors


def test_embedding_search_is_pluggable_and_cached(tmp_path: Path) -> None:
    embedder = _BagOfWords()
    store = MemoryStore(tmp_path / "m.sqlite", embedder=embedder)
    a = store.save("alpha beta", project="p")
    b = store.save("gamma delta", project="p")
    ranked = store.recall("gamma delta", project="p", method="embedding")
    assert [r.id for r in ranked] == [b.id, a.id] and ranked[0].score == pytest.approx(1.0)
    calls = embedder.calls
    store.recall("alpha beta", project="p", method="embedding")
    assert embedder.calls == calls + 1  # only the query: record vectors are stored
    hybrid = store.recall("alpha", project="p", method="hybrid")
    assert hybrid[0].id == a.id
    with pytest.raises(InvalidMemoryError, match="embedder"):
        MemoryStore(tmp_path / "m.sqlite").recall("alpha", project="p", method="embedding")


def test_corrupted_database_gives_a_clear_error(store: MemoryStore, write_session) -> None:
    session = write_session("/home/dev/proj", "0001-session")
    before = session.read_bytes()
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(b"this is not a database at all\n" * 200)
    with pytest.raises(MemoryCorruptError) as info:
        store.save("anything", project="p")
    message = str(info.value)
    assert str(store.path) in message and "Session files are not affected" in message
    assert info.value.path == store.path
    assert session.read_bytes() == before
    assert store.path.read_bytes().startswith(b"this is not a database")  # left as it was


def test_locked_database_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    MemoryStore(path).save("exists", project="p")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(MemoryLockedError, match="locked") as info:
            MemoryStore(path, timeout=0.2).save("blocked", project="p")
        assert time.monotonic() - started < 5
        assert str(path) in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pinb.memory import MemoryStore
    db, tag, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    store = MemoryStore(db, timeout=20)
    while not go.exists():
        time.sleep(0.005)
    for i in range(count):
        store.save(f"note {i} from writer {tag}", project="shared", tags=[tag])
    """
)


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite"
    go = tmp_path / "go"
    count = 40
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db), tag, str(count), str(go)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for tag in ("one", "two")
    ]
    time.sleep(0.3)
    go.touch()
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err.decode()
    records = MemoryStore(db).records("shared")
    assert len(records) == 2 * count
    assert len({r.id for r in records}) == 2 * count
    for tag in ("one", "two"):
        texts = {r.text for r in records if r.tags == (tag,)}
        assert texts == {f"note {i} from writer {tag}" for i in range(count)}
    assert len(MemoryStore(db).recall("writer", project="shared", limit=100)) == 2 * count


def test_saving_the_same_text_twice_keeps_one_note(store: MemoryStore) -> None:
    first, created = store.save_once("Use nox for tests", project="p", tags=["ci"])
    assert created
    again, created = store.save_once("  use NOX   for tests ", project="p", tags=["tooling"])
    assert not created and again.id == first.id
    assert again.text == "Use nox for tests" and again.tags == ("ci", "tooling")
    assert [r.id for r in store.records("p")] == [first.id]
    # Another kind, another project, or a forgotten note: a new record each time.
    assert store.save("Use nox for tests", project="p", kind="decision").id != first.id
    assert store.save("Use nox for tests", project="q").id != first.id
    store.forget(first.id, "changed our mind", project="p")
    assert store.save("Use nox for tests", project="p").id != first.id


def test_text_that_is_not_valid_unicode_is_stored_readably(store: MemoryStore) -> None:
    # Undecodable command-line bytes arrive as lone surrogates, which SQLite refuses.
    record = store.save("bad \udcff bytes", project="p", tags=["t\udcff"])
    assert record.text == "bad \ufffd bytes" and record.tags == ("t\ufffd",)
    assert [r.id for r in store.recall("bytes", project="p")] == [record.id]
