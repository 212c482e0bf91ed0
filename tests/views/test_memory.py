"""MemoryView renders escaped HTML without widgets."""

from __future__ import annotations

from pathlib import Path

from pinb.memory import MemoryStore
from pinb.views.memory import MemoryView
from tests.memory.fixtures import store

__all__ = ["store"]  # the fixture: the standard database in the isolated agent dir

EVIL = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'


def test_memory_view_escapes_every_string(store: MemoryStore, tmp_path: Path) -> None:
    source = tmp_path / 'we"ird<dir>' / "s<1>.jsonl"
    rec = store.save(EVIL, project="p", kind="decision", tags=["<b>bold</b>"],
                     source_session=source, source_entry='e"1<')  # fmt: skip
    gone = store.save("old <i>note</i>", project="p")
    store.forget(gone.id, "<script>reason</script>")
    store.mark_source_deleted(source)
    view = MemoryView(store, "p", include_deleted=True)
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    page = bundle["text/html"]
    assert "<script>" not in page and "<img" not in page and "<b>bold" not in page
    assert "<i>note" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img" in page
    assert "&lt;script&gt;reason&lt;/script&gt;" in page
    assert "s&lt;1&gt;.jsonl" in page and "e&quot;1&lt;" in page
    assert "(deleted)" in page  # the source session was removed
    assert bundle["text/plain"].splitlines()[0] == "Memory: 2 records"
    assert f"#{rec.id} [decision]" in bundle["text/plain"]


def test_memory_view_links_live_sources(store: MemoryStore, tmp_path: Path) -> None:
    source = tmp_path / "a b" / "s.jsonl"
    store.save("linked", project="p", source_session=source, source_entry="e1")
    page = MemoryView(store, "p")._repr_html_()
    assert 'href="file://' in page and "a%20b/s.jsonl" in page and "s.jsonl</a> · e1" in page


def test_memory_view_of_records_and_empty() -> None:
    empty = MemoryView([])
    assert repr(empty) == "Memory: 0 records" and "no memories" in empty._repr_html_()


def test_memory_view_reads_the_same_after_sanitizers(store: MemoryStore, tmp_path: Path) -> None:
    from tests.views.sanitizers import check_html_survives

    store.save(EVIL, project="p", tags=["t"], source_session=tmp_path / "s.jsonl")
    gone = store.save("old note", project="p")
    store.forget(gone.id, "superseded")
    check_html_survives(MemoryView(store, "p", include_deleted=True)._repr_html_())
    check_html_survives(MemoryView([])._repr_html_())
