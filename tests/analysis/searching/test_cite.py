"""Search hits are citable (``path:line#entry-id``), folded over copies, filtered, and safe."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pinb.analysis.searching.index import SearchHit, SessionCatalog, default_index_path, search
from pinb.analysis.searching.query import SearchQueryError
from pinb.core import Session
from pinb.core.file.paths import sessions_root
from pinb.core.forks import clone_session
from pinb.memory import MemoryStore
from pinb.testing import SessionShape, generate_session
from pinb.testing.story import write_story_session
from tests.views.sanitizers import check_html_survives

from ..builders import SCRIPT, assistant, tool_result, user


def _project(name: str) -> Path:
    return sessions_root() / f"--{name}--"


def _line_json(path: Path, line: int) -> dict[str, object]:
    """The JSON object on 1-based physical line ``line`` of the file, read independently."""
    value = json.loads(path.read_bytes().split(b"\n")[line - 1])
    assert isinstance(value, dict)
    return value


def _assert_cited(hit: SearchHit) -> None:
    assert hit.cite == f"{hit.path}:{hit.line}#{hit.entry_id}"
    assert _line_json(hit.path, hit.line)["id"] == hit.entry_id
    for copy in hit.copies:
        assert _line_json(copy.path, copy.line)["id"] == copy.entry_id


@pytest.fixture
def story() -> Session:
    return write_story_session(_project("textstats"), seed=11)


def test_every_hit_names_the_line_and_id_of_its_entry(story: Session) -> None:
    hits = search("median", limit=100, fold=False)
    assert len(hits) > 5
    for hit in hits:
        _assert_cited(hit)
        assert "median" in json.dumps(_line_json(hit.path, hit.line)).lower()
        # Open it: the session holds that entry, at that line.
        session = hit.open()
        assert session[hit.entry_id].line == hit.line
        assert hit.citation.open().path == story.path
    assert {hit.role for hit in hits} >= {"user", "assistant", "toolResult"}


def test_citations_survive_blank_lines_and_old_file_versions() -> None:
    folder = _project("old")
    legacy = generate_session(
        folder / "legacy.jsonl", SessionShape(entries=60, main_depth=40), seed=2, legacy=True
    )
    spaced = folder / "spaced.jsonl"
    Session.create("/p", folder).append_message(user("placeholder"))  # a real v3 file
    first = next(p for p in folder.glob("*.jsonl") if p not in (legacy,))
    lines = first.read_bytes().split(b"\n")
    spaced.write_bytes(b"\n\n".join(lines))  # blank lines between every line
    first.unlink()
    [hit] = search("placeholder", folder)
    assert hit.path == spaced and hit.line == 3  # header 1, blank 2, the message 3
    assert _line_json(spaced, 3)["id"] == hit.entry_id
    # A version 1 file has no ids: the hit names the id pinb gives it, stable across opens.
    text = next(
        v["message"]["content"][0]["text"]
        for v in map(json.loads, legacy.read_bytes().splitlines())
        if v.get("type") == "message" and v["message"]["role"] == "user"
    )
    hits = search(text.split()[0], folder, limit=200, fold=False)
    old = [h for h in hits if h.path == legacy]
    assert old and all(h.open()[h.entry_id].line == h.line for h in old)
    assert all(h.open()[h.entry_id].line == h.line for h in old)  # again: the same ids


def test_fork_copies_and_repeats_fold_into_the_original(story: Session) -> None:
    clone = clone_session(story)
    [hit] = search('"empty list" role:user')
    assert hit.path == story.path  # the original: same time, older session
    assert [c.path for c in hit.copies] == [clone.path]
    assert hit.copies[0].entry_id == hit.entry_id  # a fork keeps the entry's id
    _assert_cited(hit)
    unfolded = search('"empty list" role:user', fold=False)
    assert {h.path for h in unfolded} == {story.path, clone.path}
    # The same words typed in another session fold in too, as a repeat.
    other = Session.create("/elsewhere", _project("elsewhere"))
    question = next(e for e in story.entries if e.role == "user" and "empty list" in str(e.raw))
    other.append_message(user(question.message["content"][0]["text"]))  # type: ignore[index]
    [again] = search('"empty list" role:user')
    assert {again.path, *(c.path for c in again.copies)} == {story.path, clone.path, other.path}


def test_role_tool_file_session_and_time_filters() -> None:
    folder = _project("filters")
    s = Session.create("/p", folder)
    s.append_message(user("please check the app", ts=1_767_225_600_000))  # 2026-01-01
    calls = (("c1", "read", {"path": "src/app.py"}), ("c2", "bash", {"command": "pytest tests/test_app.py -q"}))  # fmt: skip
    s.append_message(assistant("checking the app", calls=calls, ts=1_767_225_601_000))
    s.append_message(tool_result("c1", "read", "app source here", ts=1_767_225_602_000))
    s.append_message(
        tool_result("c2", "bash", "1 passed, app ok", ts=1_767_312_000_000)
    )  # 2026-01-02
    s.append_message(user("webapp.py is different", ts=1_767_312_001_000))

    def roles(text: str) -> list[str | None]:
        return sorted(h.role or "" for h in search(text, folder))

    assert roles("app role:user") == ["user"]
    assert roles("app -role:user") == ["assistant", "toolResult", "toolResult"]
    assert roles("tool:bash") == ["assistant", "toolResult"]  # the call and its result
    assert roles("tool:BASH app") == ["assistant", "toolResult"]
    assert roles("file:app.py") == ["assistant", "toolResult"]  # read path and its result
    assert roles("file:tests/test_app.py") == ["assistant", "toolResult"]  # in a command
    assert roles("file:pp.py") == []  # whole path components only
    assert roles("file:app.py role:toolResult app") == ["toolResult"]
    assert roles("app after:2026-01-02") == ["toolResult"]
    assert roles("app before:2026-01-02") == ["assistant", "toolResult", "user"]
    assert roles(f"session:{s.id[:6]} app") == roles("app")
    assert roles("session:ffffffffff app") == []
    # The bash result names tests/test_app.py, not app.py; its call also read src/app.py.
    assert roles("tool:bash -file:app.py") == ["toolResult"]
    with pytest.raises(SearchQueryError):
        search("role:robot", folder)


def test_user_text_cannot_inject_sql_or_fts_syntax() -> None:
    folder = _project("inject")
    s = Session.create("/p", folder)
    s.append_message(user("robert'); DROP TABLE entries; -- was here"))
    s.append_message(user('a "quoted" word and NEAR AND OR NOT'))
    for text in (
        "'); DROP TABLE entries; --",
        "x' OR '1'='1",
        "session:%",
        "file:%",
        "file:' OR 1=1 --",
        "tool:*",
        '"unbalanced',
        "NEAR(robert here)",
        "{body}: robert",
        "robert*)",
        "\\",
    ):
        search(text, folder)  # never raises
    assert [h.path for h in search("DROP TABLE entries", folder)] == [s.path]
    assert search("session:%", folder) == [] and search("file:%", folder) == []
    assert len(search('"quoted" NEAR AND OR NOT', folder)) == 1
    db = sqlite3.connect(default_index_path())
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 2
    db.close()


def test_filters_alone_list_the_newest_first() -> None:
    folder = _project("recent")
    s = Session.create("/p", folder)
    s.append_message(user("first", ts=1_000))
    s.append_message(user("second", ts=2_000))
    hits = search("role:user", folder)
    assert [h.snippet for h in hits] == ["second", "first"] and hits[0].score == 0.0
    assert [h.snippet for h in search("role:user -second", folder)] == ["first"]


def test_the_results_view_cites_and_escapes() -> None:
    folder = _project("view")
    s = Session.create("/p", folder)
    s.append_message(user(f"flaky {SCRIPT} <img src=x onerror=alert(1)>"))
    s.set_name("flaky «name» <b>")
    results = search("flaky", folder)
    bundle = results._repr_mimebundle_()
    html = bundle["text/html"]
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "<style" not in html and "<mark" not in html and "<svg" not in html
    assert "<strong>flaky</strong>" in html
    for hit in results:
        # Shown relative to the sessions folder; the hit keeps the whole path.
        shown = results.shown_cite(hit)
        assert hit.cite.endswith(shown) and not shown.startswith("/")
        assert shown in bundle["text/plain"] and f"<code>{shown}</code>" in html
        assert hit.cite in results.to_text(full_paths=True)
    # A literal « in the text is text, not a mark.
    assert "&lt;b&gt;" in html and "«name»" in html
    check_html_survives(html)  # the same untrusted and after nbconvert's sanitizer


def test_an_index_of_the_old_layout_is_rebuilt(story: Session) -> None:
    default_index_path().parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(default_index_path())
    db.execute("CREATE TABLE sessions(x)")
    db.execute("PRAGMA user_version=1")
    db.close()
    assert search("median", limit=1)[0].path == story.path
    with SessionCatalog() as catalog:
        assert catalog.refresh().updated == 0


def test_memory_notes_cite_themselves_and_their_source(story: Session) -> None:
    entry = next(e for e in story.entries if e.role == "user")
    store = MemoryStore()
    note = store.save(
        "median raises on an empty list",
        project="p",
        source_session=story.path,
        source_entry=entry.id,
    )
    [recalled] = store.recall("median", project="p")
    assert recalled.cite == f"memory:{note.id}" and recalled.to_dict()["cite"] == recalled.cite
    assert recalled.source_cite() == f"{story.path}:{entry.line}#{entry.id}"
    assert store.save("no source", project="p").source_cite() is None
